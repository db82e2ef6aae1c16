"""Reading foreign transcripts: Claude Code stream-json events and plain chat dicts.

:func:`read_event` turns one event or chat dict into what the scratch model records: what
the human said (:class:`Said`), a tool call (:class:`Called`) and a tool's answer
(:class:`Answered`). Everything in an event is data; a field of the wrong type reads as empty.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from window_budget.messages import tool_arguments

__all__ = ["Answered", "Called", "Observation", "Said", "extract_text", "read_event"]


def extract_text(content: object) -> str:
    r"""The text of a message content: a string, or a list of text blocks (dicts or strings).

    Non-text blocks (tool results, images, tool calls) contribute nothing.

    >>> extract_text([{"type": "text", "text": "hello"}, {"type": "image"}, "world"])
    'hello\nworld'
    """
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif getattr(block, "text", None) is not None and not isinstance(block, Mapping):
                parts.append(str(block.text))
        return "\n".join(p for p in parts if p)
    return ""


@dataclass(frozen=True, slots=True)
class Said:
    """Text the human typed."""

    text: str


@dataclass(frozen=True, slots=True)
class Called:
    """A tool call the agent made."""

    call_id: str
    name: str
    arguments: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class Answered:
    """A tool's answer to the call ``call_id``."""

    call_id: str
    is_error: bool
    text: str


Observation: TypeAlias = Said | Called | Answered
"""One thing :func:`read_event` found in an event."""


def read_event(event: Mapping[str, Any]) -> Iterator[Observation]:
    """What one stream-json event or ``{"role": ..., "content": ...}`` dict holds, in order.

    >>> list(read_event({"type": "tool_use", "id": "t1", "name": "Write", "input": {}}))
    [Called(call_id='t1', name='Write', arguments={})]
    """
    kind = event.get("type")
    message = event.get("message")
    if kind in ("user", "assistant") and isinstance(message, Mapping):
        yield from _read_chat(str(message.get("role", kind)), message)
    elif kind == "tool_use":
        yield Called(
            str(event.get("id", "")), str(event.get("name", "")), tool_arguments(event.get("input"))
        )
    elif kind == "tool_result":
        yield Answered(
            str(event.get("tool_use_id", "")),
            bool(event.get("is_error")),
            _result_text(event.get("content")),
        )
    elif kind is None and "role" in event:
        yield from _read_chat(str(event["role"]), event)


def _read_chat(role: str, message: Mapping[str, Any]) -> Iterator[Observation]:
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    if role == "user":
        # A user turn carries tool results too; only its text is the human speaking.
        text = extract_text(content)
        if text and not text.startswith("[session digest"):
            yield Said(text)
        for block in blocks:
            if isinstance(block, Mapping) and block.get("type") == "tool_result":
                yield Answered(
                    str(block.get("tool_use_id", "")),
                    bool(block.get("is_error")),
                    _result_text(block.get("content")),
                )
    elif role == "assistant":
        for block in blocks:
            if isinstance(block, Mapping) and block.get("type") == "tool_use":
                yield Called(
                    str(block.get("id", "")),
                    str(block.get("name", "")),
                    tool_arguments(block.get("input")),
                )
        for call in message.get("tool_calls") or ():  # OpenAI-style chat dict
            if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                fn = call["function"]
                yield Called(
                    str(call.get("id", "")),
                    str(fn.get("name", "")),
                    tool_arguments(fn.get("arguments")),
                )
    elif role == "tool":
        yield Answered(
            str(message.get("tool_call_id", "")),
            bool(message.get("is_error")),
            _result_text(content),
        )


def _result_text(content: object) -> str:
    return extract_text(content) if not isinstance(content, str) else content
