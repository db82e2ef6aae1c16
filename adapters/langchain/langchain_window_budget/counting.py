"""LangChain's message-based token counters as ``counter=``.

LangChain counts *messages* (``count_tokens_approximately``, a chat model's
``get_num_tokens_from_messages``, any ``Callable[[list[BaseMessage]], int]``); the core
counts text. A messages counter handed a string iterates its characters as messages and
answers a figure many times too large, so the kind of a callable is decided first and a
messages counter is wrapped: each text is counted as one ``HumanMessage`` (the per-message
framing included, a small, safe overcount).

The decision reads the signature (the first parameter's name and annotation, the method's
name) and only when that says nothing calls the function with a probe text: no tokenizer
gives more tokens than a plain English text has characters, a messages counter does.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Literal

from langchain_core.messages import HumanMessage

from window_budget.budget import CallableCounter
from window_budget.errors import ConfigError

__all__ = ["counter_kind", "messages_counter"]

CounterKind = Literal["text", "messages"]

_MESSAGE_PARAMS = frozenset({"messages", "msgs", "message_list", "chat_history", "history"})
_TEXT_PARAMS = frozenset({"text", "string", "s", "txt", "prompt", "content"})
_PROBE = "window budget counts the tokens of this probe sentence. " * 4


def _describe(fn: Callable[..., Any]) -> str:
    return str(
        getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    )


def _signature_kind(fn: Callable[..., Any]) -> CounterKind | None:
    if getattr(fn, "__name__", "") in (
        "get_num_tokens_from_messages",
        "count_tokens_approximately",
    ):
        return "messages"
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not positional:
        return None
    first = positional[0]
    note = first.annotation
    text = note if isinstance(note, str) else getattr(note, "__name__", None) or repr(note)
    if note is not inspect.Parameter.empty:
        if "Message" in text or text.startswith(("list", "Sequence", "Iterable")):
            return "messages"
        if text in ("str", "'str'"):
            return "text"
    if first.name in _MESSAGE_PARAMS:
        return "messages"
    if first.name in _TEXT_PARAMS:
        return "text"
    return None


def counter_kind(fn: Callable[..., Any]) -> CounterKind:
    """Whether ``fn`` counts a text (``str -> int``) or a list of LangChain messages.

    Raises:
        ConfigError: neither reading its signature nor a probe call can tell, or it fails
            on both; the message names the function and what to pass instead.

    """
    kind = _signature_kind(fn)
    if kind is not None:
        return kind
    try:
        as_text = fn(_PROBE)
    except Exception:
        as_text = None
    if isinstance(as_text, int) and not isinstance(as_text, bool) and 0 <= as_text <= len(_PROBE):
        return "text"
    try:
        as_messages = fn([HumanMessage(_PROBE)])
    except Exception:
        as_messages = None
    # A real messages counter gives the probe's text at least a token per 16 characters;
    # a text counter handed a list answers from the list's length (one item): far less.
    if (
        isinstance(as_messages, int)
        and not isinstance(as_messages, bool)
        and as_messages >= len(_PROBE) // 16
    ):
        return "messages"
    raise ConfigError(
        f"cannot tell what counter {_describe(fn)} counts: it answered neither for a text "
        "(str -> int) nor for a list of messages; name its first parameter 'text' or "
        "'messages' (or annotate it) so window-budget knows which"
    )


def messages_counter(
    fn: Callable[[list[Any]], int],
    name: str | None = None,
) -> CallableCounter:
    """A core counter over a LangChain messages counter: each text is one ``HumanMessage``."""

    def count(text: str) -> int:
        return fn([HumanMessage(content=text)])

    return CallableCounter(count, name=name or f"langchain:{_describe(fn)}")


def recognise(fn: Callable[..., Any]) -> CallableCounter | None:
    """The bridge's recogniser: a messages counter wrapped, None for a ``str -> int``."""
    if counter_kind(fn) == "messages":
        return messages_counter(fn)
    return None
