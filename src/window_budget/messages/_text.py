"""Reading a message: its text, its blocks, its tool calls; any object as text."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from window_budget.messages._blocks import Block, Content, TextBlock, ToolCallBlock
from window_budget.messages._kinds import AgentMessage, AssistantMessage, message_kind
from window_budget.messages._parts import json_text

# ------------------------------------------------------------------ helpers


def content_text(content: Content) -> str:
    """The text blocks of ``content`` joined with newlines (thinking and calls excluded)."""
    if isinstance(content, str):
        return content
    return "\n".join(b.text for b in content if isinstance(b, TextBlock))


def message_text(message: AgentMessage) -> str:
    """The human-readable text of a message: text content, summary, or command output."""
    kind = message_kind(message)
    if kind is None:
        return serialize_unknown(message)
    body = getattr(message, kind.body)
    text: str = content_text(body) if kind.has_blocks else body
    if kind.lead:
        return "\n".join([*(getattr(message, name) for name in kind.lead), text])
    return text


def message_blocks(message: object) -> tuple[Block, ...]:
    """The content blocks of a message; empty when its content is plain text or it has none.

    >>> from window_budget.messages import BashExecutionMessage, ImageBlock, UserMessage
    >>> message_blocks(UserMessage([TextBlock("look"), ImageBlock("aGk=")]))[1].mime_type
    'image/png'
    >>> message_blocks(BashExecutionMessage("ls", "a.txt"))
    ()
    """
    kind = message_kind(message)
    if kind is None or not kind.has_blocks:
        return ()
    content: Content = getattr(message, kind.body)
    return () if isinstance(content, str) else content


def tool_calls(message: object) -> tuple[ToolCallBlock, ...]:
    """The tool calls a message makes, in order (empty for every kind but an assistant reply)."""
    return message.tool_calls if isinstance(message, AssistantMessage) else ()


def tool_call_ids(message: AgentMessage) -> tuple[str, ...]:
    """Ids of the tool calls an assistant message makes (empty for every other message)."""
    return tuple(c.id for c in tool_calls(message))


def serialize_unknown(message: object) -> str:
    """A stable text form of an object the core does not know, for counting and flattening."""
    payload: object
    if dataclasses.is_dataclass(message) and not isinstance(message, type):
        payload = {f.name: getattr(message, f.name) for f in dataclasses.fields(message)}
    elif isinstance(message, Mapping):
        payload = dict(message)
    elif hasattr(message, "__dict__"):
        payload = {k: v for k, v in vars(message).items() if not k.startswith("_")}
    else:
        payload = repr(message)
    try:
        return json_text(payload)
    except (TypeError, ValueError):
        return repr(payload)
