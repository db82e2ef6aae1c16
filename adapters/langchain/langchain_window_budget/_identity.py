"""What decides a LangChain message's conversion, and cheap tests that two messages convert alike.

:func:`message_key` is exact (the id and the content themselves, never a hash), so equal
keys mean equal core messages; :func:`same_messages` compares whole lists of messages with
C-level comparisons of their classes and field dicts, for a thread a checkpointer hands back
as new objects every turn.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Final

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_window_budget._digest import DIGEST_KEY

__all__ = [
    "KEYED",
    "META_KEYS",
    "MessageFields",
    "message_fields",
    "message_key",
    "same_message",
    "same_messages",
]

META_KEYS: Final = (
    "model_name",
    "model",
    "model_id",
    "model_provider",
    "finish_reason",
    "stop_reason",
    DIGEST_KEY,
)
"""The ``response_metadata`` entries :func:`to_core` reads (the rest never reaches it)."""


def _ai_key(m: AIMessage, content: str, kwargs: str) -> Hashable:
    meta = m.response_metadata or {}
    return (
        "ai",
        m.id,
        content,
        kwargs,
        repr(m.tool_calls) if m.tool_calls else "",
        repr(m.invalid_tool_calls) if m.invalid_tool_calls else "",
        repr(m.usage_metadata) if m.usage_metadata else "",
        repr([meta.get(k) for k in META_KEYS]) if meta else "",
    )


KEYED = frozenset({HumanMessage, AIMessage, ToolMessage, SystemMessage})
_KEY_NAMES: dict[type, str] = {HumanMessage: "human", SystemMessage: "system"}


def message_key(message: object) -> Hashable | None:
    """What decides ``to_core(message)``: its id and content, exactly; None when unknown.

    Survives a checkpointer's round trip (LangGraph gives every message an id), and
    changes whenever anything the conversion reads changes, so content edited under the
    same id converts afresh.
    """
    kind = type(message)
    if kind not in KEYED:
        return None  # a subclass or an unusual message: converted every time
    m: Any = message
    content = m.content if type(m.content) is str else repr(m.content)
    kwargs = repr(m.additional_kwargs) if m.additional_kwargs else ""
    if kind is AIMessage:
        return _ai_key(m, content, kwargs)
    # Names, not classes, in keys: a tuple of strings is not tracked by the cyclic garbage
    # collector, and a large cache of tracked tuples slows every collection of the process.
    if kind is ToolMessage:
        return ("tool", m.id, content, kwargs, m.tool_call_id, m.name, m.status)
    return (_KEY_NAMES[kind], m.id, content, kwargs)


def same_message(a: Any, b: Any) -> bool:
    """True when ``b`` converts exactly as ``a`` does (same type, equal fields it reads)."""
    kind = type(a)
    if kind is not type(b) or kind not in KEYED:
        return False
    if (
        a.content != b.content
        or a.additional_kwargs != b.additional_kwargs
        or a.response_metadata != b.response_metadata
        or a.name != b.name
    ):
        return False
    if kind is AIMessage:
        return bool(
            a.tool_calls == b.tool_calls
            and a.usage_metadata == b.usage_metadata
            and a.invalid_tool_calls == b.invalid_tool_calls
        )
    if kind is ToolMessage:
        return bool(a.tool_call_id == b.tool_call_id and a.status == b.status)
    return True


MessageFields = tuple[list[type], list[dict[str, Any]]]
"""Per message its class and its fields (the instance ``__dict__``): see :func:`same_messages`."""


def message_fields(messages: Sequence[object]) -> MessageFields | None:
    """The classes and field dicts of ``messages`` (C-level maps; the dicts are not copied).

    None when an object has no ``__dict__``.
    """
    try:
        return list(map(type, messages)), list(map(vars, messages))
    except TypeError:
        return None


def same_messages(
    new: Sequence[object], old: Sequence[object], *, old_fields: MessageFields | None = None
) -> bool:
    """True when ``new[i]`` converts exactly as ``old[i]`` does, for every ``i``.

    Made for a checkpointer's thread: the same messages as new objects each turn. Compares
    the classes and then every field (the instances' ``__dict__``, which holds all of a
    LangChain message's declared fields, so nothing :func:`to_core` reads is left out)
    with C-level list comparisons: no Python call per message, no key built, no content
    hashed. ``old_fields`` is :func:`message_fields` of ``old`` when the caller kept it.
    Objects without a ``__dict__`` compare False.
    """
    if len(new) != len(old):
        return False
    mine = message_fields(new)
    theirs = old_fields if old_fields is not None else message_fields(old)
    return mine is not None and mine == theirs
