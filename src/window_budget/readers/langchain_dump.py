"""LangChain ``messages_to_dict`` dumps: ``[{type: human|ai|tool|system|..., data: {...}}]``.

Parsed from the JSON alone, without importing LangChain. ``ai`` messages bring their
``tool_calls`` and ``usage_metadata`` (input tokens there include cache reads, which are
split out into the core's ``Usage``); ``tool`` messages with ``status: "error"`` are
failed results.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import IO, Any

from window_budget.budget import usage_from_langchain
from window_budget.messages import (
    REDACTED_THINKING,
    TOOL_CALL_PARTS,
    AgentMessage,
    AssistantMessage,
    Block,
    ImageBlock,
    ProviderCompactionBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    content_blocks,
    content_text,
    tool_arguments,
)
from window_budget.readers._base import (
    Transcript,
)
from window_budget.readers._digests import (
    DIGEST_KEY,
    digest_from_info,
    digest_info,
    find_digest_record,
)
from window_budget.readers._records import (
    KeyFields,
    image_to_url,
    read_message_records,
)
from window_budget.readers._render import render_as_text
from window_budget.readers.anthropic import simplify

__all__ = ["read_langchain", "to_langchain", "write_langchain"]


def _content(content: Any, names: dict[str, str]) -> list[Block]:
    if content is None:
        return []
    if not isinstance(content, str | list):
        raise TypeError(f"content must be a string or a list, not {type(content).__name__}")
    for part in content if isinstance(content, list) else ():
        if isinstance(part, Mapping) and part.get("type") in TOOL_CALL_PARTS:
            # The same calls are listed in ``tool_calls``: that list is the one kept.
            names[str(part.get("id"))] = str(part.get("name"))
    return [block for _, block in content_blocks(content, skip_tool_calls=True)]


def message_from_langchain(
    raw: Mapping[str, Any], names: dict[str, str], system: list[str]
) -> AgentMessage | None:
    """One dumped LangChain message as a core message (None for a system prompt)."""
    kind = raw["type"]
    data = raw["data"]
    if kind == "chat":
        kind = {"user": "human", "assistant": "ai"}.get(str(data.get("role")), "human")
    blocks = _content(data.get("content"), names)
    if kind == "system":
        system.append(content_text(tuple(blocks)))
        return None
    if kind in ("human", "HumanMessageChunk"):
        content = simplify(blocks) if blocks else ""
        extra = data.get("additional_kwargs")
        # The adapters write the same record under the same key as the writers.
        info = find_digest_record(extra)
        return digest_from_info(content, info) or UserMessage(content)
    if kind in ("ai", "AIMessageChunk"):
        extra = data.get("additional_kwargs")
        reasoning = extra.get("reasoning_content") if isinstance(extra, Mapping) else None
        if isinstance(reasoning, str) and reasoning:  # DeepSeek, Qwen, ... via LangChain
            blocks.insert(0, ThinkingBlock(reasoning))
        for call in data.get("tool_calls") or ():
            names[str(call["id"])] = str(call["name"])
            args = call.get("args")
            blocks.append(
                ToolCallBlock(
                    str(call["id"]),
                    str(call["name"]),
                    dict(args) if isinstance(args, Mapping) else {},
                )
            )
        for call in data.get("invalid_tool_calls") or ():
            # A call whose arguments did not parse: as a tool call it would need a result,
            # and a provider would reject it written back; keep what was attempted as text.
            error = call.get("error")
            blocks.append(
                TextBlock(
                    f"[invalid tool call {call.get('name') or ''}: "
                    f"{call.get('args') or ''}" + (f" — {error}" if error else "") + "]"
                )
            )
        legacy = extra.get("function_call") if isinstance(extra, Mapping) else None
        if isinstance(legacy, Mapping) and legacy.get("name"):
            # OpenAI's legacy function calling: its result is a ``function`` message.
            call_id, name = f"fc_{legacy['name']}", str(legacy["name"])
            names[call_id] = name
            blocks.append(ToolCallBlock(call_id, name, tool_arguments(legacy.get("arguments"))))
        meta = data.get("response_metadata") or {}
        model = meta.get("model_name") or meta.get("model")
        return AssistantMessage(
            simplify(blocks) if blocks else "",
            usage=usage_from_langchain(data.get("usage_metadata")),
            model=str(model) if model else None,
            stop_reason=meta.get("finish_reason") or meta.get("stop_reason"),
        )
    if kind in ("tool", "function"):
        call_id = str(data.get("tool_call_id") or f"fc_{data.get('name', '')}")
        name = str(data.get("name") or names.get(call_id, ""))
        return ToolResultMessage(
            call_id,
            name,
            simplify(blocks) if blocks else "",
            is_error=data.get("status") == "error",
        )
    raise ValueError(
        f"unknown message type {kind!r} (expected human, ai, tool, system, chat or function)"
    )


LANGCHAIN_FIELDS = KeyFields(
    "langchain",
    "a type with a data object",
    lambda record: "type" in record and isinstance(record.get("data"), Mapping),
)
"""What makes a record a ``messages_to_dict`` entry (for a forced reader's check)."""


def read_langchain(stream: IO[str], *, path: str = "", skip_bad: bool = False) -> Transcript:
    """Read a ``messages_to_dict`` dump (a list, or an object with a ``messages`` list)."""
    return read_message_records(
        stream,
        path=path,
        skip_bad=skip_bad,
        fmt="langchain",
        convert=message_from_langchain,
        fields=LANGCHAIN_FIELDS,
    )


def _parts(content: str | tuple[Block, ...]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for b in content:
        if isinstance(b, TextBlock):
            parts.append({"type": "text", "text": b.text})
        elif isinstance(b, ThinkingBlock) and b.thinking == REDACTED_THINKING and b.signature:
            parts.append({"type": "redacted_thinking", "data": b.signature})  # as it came
        elif isinstance(b, ThinkingBlock):
            part: dict[str, Any] = {"type": "thinking", "thinking": b.thinking}
            if b.signature:
                part["signature"] = b.signature
            parts.append(part)
        elif isinstance(b, ImageBlock):
            parts.append({"type": "image_url", "image_url": {"url": image_to_url(b)}})
        elif isinstance(b, ProviderCompactionBlock):
            parts.append(dict(b.payload))  # as langchain-anthropic / -openai keep it
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def _record(kind: str, **data: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "content": "",
        "additional_kwargs": {},
        "response_metadata": {},
        "type": kind,
        "name": None,
        "id": None,
    }
    base.update(data)
    return {"type": kind, "data": base}


def to_langchain(
    messages: Iterable[AgentMessage],
    system: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """Core messages in ``messages_to_dict`` shape (kinds LangChain lacks become human text)."""
    out = [_record("system", content=s) for s in system]
    for msg in messages:
        if isinstance(msg, AssistantMessage):
            extra: dict[str, Any] = {}
            if msg.usage is not None:
                u = msg.usage
                extra["usage_metadata"] = {
                    "input_tokens": u.prompt_tokens,
                    "output_tokens": u.output_tokens,
                    "total_tokens": u.prompt_tokens + u.output_tokens,
                    "input_token_details": {
                        "cache_read": u.cache_read_tokens,
                        "cache_creation": u.cache_creation_tokens,
                    },
                }
            content = (
                msg.content
                if isinstance(msg.content, str)
                else tuple(b for b in msg.content if not isinstance(b, ToolCallBlock))
            )
            out.append(
                _record(
                    "ai",
                    content=_parts(content),
                    response_metadata={"model_name": msg.model} if msg.model else {},
                    tool_calls=[
                        {"name": c.name, "args": dict(c.arguments), "id": c.id, "type": "tool_call"}
                        for c in msg.tool_calls
                    ],
                    invalid_tool_calls=[],
                    **extra,
                )
            )
        elif isinstance(msg, ToolResultMessage):
            out.append(
                _record(
                    "tool",
                    content=_parts(msg.content),
                    name=msg.tool_name,
                    tool_call_id=msg.tool_call_id,
                    artifact=None,
                    status="error" if msg.is_error else "success",
                )
            )
        elif isinstance(msg, UserMessage):
            info = digest_info(msg)
            out.append(
                _record(
                    "human",
                    content=_parts(msg.content),
                    additional_kwargs={} if info is None else {DIGEST_KEY: info},
                )
            )
        else:
            out.append(_record("human", content=render_as_text(msg)))
    return out


def write_langchain(
    messages: Iterable[AgentMessage], stream: IO[str], *, system: Iterable[str] = ()
) -> None:
    """Write core messages as a ``messages_to_dict`` dump (``messages_from_dict`` reads it)."""
    json.dump(to_langchain(messages, system), stream, ensure_ascii=False, indent=1)
    stream.write("\n")
