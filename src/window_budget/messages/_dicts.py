"""Messages as plain dicts (JSON) and back, checked field by field."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from window_budget.errors import MessageError
from window_budget.messages._blocks import (
    Block,
    Content,
    ImageBlock,
    ProviderCompactionBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from window_budget.messages._kinds import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    DigestMessage,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from window_budget.messages._text import serialize_unknown

# ------------------------------------------------------------ (de)serialize


def block_to_dict(block: Block) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ThinkingBlock):
        out: dict[str, Any] = {"type": "thinking", "thinking": block.thinking}
        if block.signature is not None:
            out["signature"] = block.signature
        return out
    if isinstance(block, ToolCallBlock):
        return {
            "type": "toolCall",
            "id": block.id,
            "name": block.name,
            "arguments": dict(block.arguments),
        }
    if isinstance(block, ProviderCompactionBlock):
        return {
            "type": "providerCompaction",
            "provider": block.provider,
            "summary": block.summary,
            "payload": dict(block.payload),
        }
    return {"type": "image", "data": block.data, "mimeType": block.mime_type}


def block_from_dict(raw: Mapping[str, Any], where: str) -> Block:
    kind = raw.get("type")
    try:
        if kind == "text":
            return TextBlock(str(raw["text"]))
        if kind == "thinking":
            return ThinkingBlock(str(raw["thinking"]), raw.get("signature"))
        if kind == "toolCall":
            args = raw.get("arguments") or {}
            if not isinstance(args, Mapping):
                args = {"_raw": args}
            return ToolCallBlock(str(raw["id"]), str(raw["name"]), dict(args))
        if kind == "image":
            return ImageBlock(str(raw["data"]), str(raw.get("mimeType", "image/png")))
        if kind == "providerCompaction":
            payload = raw.get("payload")
            return ProviderCompactionBlock(
                str(raw["provider"]),
                raw.get("summary") if isinstance(raw.get("summary"), str) else None,
                dict(payload) if isinstance(payload, Mapping) else {},
            )
    except KeyError as exc:
        raise MessageError(f"{where}: {kind} block is missing {exc.args[0]!r}") from None
    raise MessageError(f"{where}: unknown block type {kind!r}")


def _content_to_json(content: Content) -> str | list[dict[str, Any]]:
    return content if isinstance(content, str) else [block_to_dict(b) for b in content]


def _content_from_json(raw: object, where: str) -> Content:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        blocks = []
        for i, b in enumerate(raw):
            if not isinstance(b, Mapping):
                raise MessageError(f"{where}: content block {i} is not an object")
            blocks.append(block_from_dict(b, f"{where} block {i}"))
        return tuple(blocks)
    raise MessageError(f"{where}: content must be a string or a list of blocks")


def _digest_fields(message: DigestMessage) -> dict[str, Any]:
    """What a digest adds to a user message, as JSON."""
    out: dict[str, Any] = {
        "covered": message.covered_count,
        "kept": message.kept_count,
        "fallback": message.fallback,
    }
    if message.facts is not None:
        out["facts"] = message.facts
    return out


def _assistant_to_dict(message: AssistantMessage) -> dict[str, Any]:
    """An assistant message as JSON; usage, model and stop reason only when known."""
    out: dict[str, Any] = {"role": "assistant", "content": _content_to_json(message.content)}
    if message.usage is not None:
        u = message.usage
        out["usage"] = {
            "input": u.input_tokens,
            "output": u.output_tokens,
            "cacheRead": u.cache_read_tokens,
            "cacheWrite": u.cache_creation_tokens,
        }
    if message.model is not None:
        out["model"] = message.model
    if message.stop_reason is not None:
        out["stopReason"] = message.stop_reason
    return out


def message_to_dict(message: AgentMessage) -> dict[str, Any]:
    """A JSON-ready dict for a message; unknown messages keep their serialized form.

    >>> message_to_dict(UserMessage("hi"))
    {'role': 'user', 'content': 'hi'}
    """
    out: dict[str, Any]
    if isinstance(message, UserMessage):
        out = {"role": "user", "content": _content_to_json(message.content)}
        if isinstance(message, DigestMessage):
            out["digest"] = _digest_fields(message)
    elif isinstance(message, AssistantMessage):
        out = _assistant_to_dict(message)
    elif isinstance(message, ToolResultMessage):
        out = {
            "role": "toolResult",
            "toolCallId": message.tool_call_id,
            "toolName": message.tool_name,
            "content": _content_to_json(message.content),
            "isError": message.is_error,
        }
    elif isinstance(message, BashExecutionMessage):
        out = {
            "role": "bashExecution",
            "command": message.command,
            "output": message.output,
            "exitCode": message.exit_code,
            "cancelled": message.cancelled,
            "truncated": message.truncated,
        }
    elif isinstance(message, CustomMessage):
        out = {
            "role": "custom",
            "customType": message.custom_type,
            "content": _content_to_json(message.content),
            "display": message.display,
        }
        if message.details is not None:
            out["details"] = dict(message.details)
    elif isinstance(message, BranchSummaryMessage):
        out = {"role": "branchSummary", "summary": message.summary}
        if message.from_id is not None:
            out["fromId"] = message.from_id
    elif isinstance(message, CompactionSummaryMessage):
        out = {
            "role": "compactionSummary",
            "summary": message.summary,
            "tokensBefore": message.tokens_before,
        }
        if message.kept_count is not None:
            out["keptCount"] = message.kept_count
    else:
        role = getattr(message, "role", None)
        return {"role": str(role), "serialized": serialize_unknown(message)}
    timestamp = getattr(message, "timestamp", None)
    if timestamp is not None:
        out["timestamp"] = timestamp
    return out


def _whole(value: object, where: str, name: str) -> int:
    """A count read from JSON: an int, a whole finite float, or a short string of digits.

    ``int()`` alone would raise a bare ``OverflowError`` on ``1e400`` (JSON reads it as
    infinity) and a bare ``ValueError`` on a 5,000-digit string.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 18:
        return int(value)
    shown = repr(value) if isinstance(value, float) else type(value).__name__
    raise MessageError(f"{where}: {name} must be a whole number, not {shown}")


@dataclass(frozen=True, slots=True)
class _OpaqueMessage:
    """A message of a role the core does not know, restored from its serialized form."""

    role: str
    serialized: str


def parse_timestamp(raw: object) -> float | None:
    """Seconds since the epoch from a number or an ISO 8601 string; None for anything else.

    Timestamps are metadata: a record whose time cannot be read keeps its content.
    """
    if type(raw) in (int, float):
        value = float(raw)  # type: ignore[arg-type]
        return value if math.isfinite(value) else None
    if isinstance(raw, str) and len(raw) <= 64:
        try:
            return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _facts_or_none(raw: object) -> dict[str, Any] | None:
    """A digest's ledger as read from a file: a mapping, or None (the text still holds it)."""
    return dict(raw) if isinstance(raw, Mapping) else None


def message_from_dict(raw: Mapping[str, Any]) -> AgentMessage:
    """Rebuild a message from :func:`message_to_dict` output.

    Raises:
        MessageError: the record is not a message; the sentence names what is wrong.

    """
    if not isinstance(raw, Mapping):
        raise MessageError(f"a message must be a JSON object, not {type(raw).__name__}")
    role = raw.get("role")
    ts = parse_timestamp(raw.get("timestamp"))
    where = f"{role} message"
    try:
        if role == "user":
            return _user_from_dict(raw, where, ts)
        if role == "assistant":
            return _assistant_from_dict(raw, where, ts)
        if role == "toolResult":
            return ToolResultMessage(
                str(raw["toolCallId"]),
                str(raw.get("toolName", "")),
                _content_from_json(raw["content"], where),
                is_error=bool(raw.get("isError", False)),
                timestamp=ts,
            )
        if role == "bashExecution":
            return BashExecutionMessage(
                str(raw["command"]),
                str(raw.get("output", "")),
                exit_code=raw.get("exitCode"),
                cancelled=bool(raw.get("cancelled", False)),
                truncated=bool(raw.get("truncated", False)),
                timestamp=ts,
            )
        if role == "custom":
            return CustomMessage(
                str(raw.get("customType", "custom")),
                _content_from_json(raw.get("content", ""), where),
                display=bool(raw.get("display", True)),
                details=raw.get("details"),
                timestamp=ts,
            )
        if role == "branchSummary":
            return BranchSummaryMessage(
                str(raw["summary"]), from_id=raw.get("fromId"), timestamp=ts
            )
        if role == "compactionSummary":
            kept = raw.get("keptCount")
            return CompactionSummaryMessage(
                str(raw["summary"]),
                _whole(raw.get("tokensBefore", 0), where, "tokensBefore"),
                timestamp=ts,
                kept_count=kept
                if isinstance(kept, int) and not isinstance(kept, bool) and kept >= 0
                else None,
            )
    except KeyError as exc:
        raise MessageError(f"{where} is missing {exc.args[0]!r}") from None
    if not isinstance(role, str) or not role:
        raise MessageError("a message needs a non-empty string 'role'")
    return _OpaqueMessage(role, str(raw.get("serialized", json.dumps(dict(raw), default=repr))))


def _user_from_dict(raw: Mapping[str, Any], where: str, ts: float | None) -> UserMessage:
    content = _content_from_json(raw["content"], where)
    info = raw.get("digest")
    if not isinstance(info, Mapping):
        return UserMessage(content, timestamp=ts)
    kept = info.get("kept")
    return DigestMessage(
        content,
        timestamp=ts,
        covered_count=_whole(info.get("covered", 0), where, "digest.covered"),
        kept_count=None if kept is None else _whole(kept, where, "digest.kept"),
        fallback=bool(info.get("fallback", False)),
        facts=_facts_or_none(info.get("facts")),
    )


def _assistant_from_dict(raw: Mapping[str, Any], where: str, ts: float | None) -> AssistantMessage:
    usage = None
    if isinstance(raw.get("usage"), Mapping):
        u = raw["usage"]
        usage = Usage(
            *(
                _whole(u.get(k, 0), where, f"usage.{k}")
                for k in ("input", "output", "cacheRead", "cacheWrite")
            )
        )
    return AssistantMessage(
        _content_from_json(raw["content"], where),
        usage=usage,
        model=raw.get("model"),
        stop_reason=raw.get("stopReason"),
        timestamp=ts,
    )
