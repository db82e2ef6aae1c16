"""OpenAI Chat Completions message lists.

``[{role: system|developer|user|assistant|tool, content, tool_calls, tool_call_id, name}]``,
as a JSON list, an object with a ``messages`` or ``traj`` list (one run), or JSONL with
one message a line (streamed). ``content`` may be null, a string or a list of parts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import IO, Any

from window_budget.budget import usage_from_openai
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    Block,
    DigestMessage,
    ImageBlock,
    ProviderCompactionBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    content_text,
    tool_arguments,
)
from window_budget.readers._base import (
    Transcript,
    foreign_dump,
)
from window_budget.readers._digests import (
    DIGEST_KEY,
    digest_from_info,
    digest_info,
    find_digest_record,
)
from window_budget.readers._records import (
    KeyFields,
    image_from_url,
    image_to_url,
    read_message_records,
)
from window_budget.readers._render import render_as_text

__all__ = [
    "content_from_openai",
    "message_from_openai",
    "openai_fields",
    "read_openai",
    "to_openai",
    "usage_from_openai",
    "write_openai",
]


def content_from_openai(content: Any) -> str | tuple[Block, ...]:
    """A Chat Completions ``content`` (text, null or a list of parts) as core content."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise TypeError(
            f"content must be a string, null or a list of parts, not {type(content).__name__}"
        )
    blocks: list[Block] = []
    for part in content:
        if isinstance(part, str):
            blocks.append(TextBlock(part))
            continue
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text", "refusal"):
            blocks.append(TextBlock(str(part.get("text", part.get("refusal", "")))))
        elif kind in ("image_url", "input_image"):
            url = part["image_url"]
            blocks.append(image_from_url(url["url"] if isinstance(url, Mapping) else str(url)))
        elif kind == "compaction":
            blocks.append(ProviderCompactionBlock("openai", None, dict(part)))
        else:
            # Audio, files, ...: counted from their JSON rather than dropped.
            blocks.append(TextBlock(json.dumps(part, ensure_ascii=False)))
    return tuple(blocks)


def message_from_openai(
    raw: Mapping[str, Any], names: dict[str, str], system: list[str]
) -> AgentMessage | None:
    """One Chat Completions message as a core message (None for a system prompt, kept apart).

    ``names`` maps tool-call ids to tool names, so a result without ``name`` gets one. A
    Responses API ``compaction`` item (no role) is the provider's compaction, kept verbatim.
    """
    if "role" not in raw and raw.get("type") == "compaction":
        return AssistantMessage((ProviderCompactionBlock("openai", None, dict(raw)),))
    role = raw["role"]
    if role in ("system", "developer"):
        system.append(content_text(content_from_openai(raw.get("content"))))
        return None
    if role == "user":
        content = content_from_openai(raw.get("content"))
        return digest_from_info(content, find_digest_record(raw)) or UserMessage(content)
    if role == "assistant":
        content = content_from_openai(raw.get("content"))
        before: list[Block] = []
        reasoning = raw.get("reasoning_content") or raw.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            before.append(ThinkingBlock(reasoning))
        calls: list[Block] = []
        for call in raw.get("tool_calls") or ():
            fn = call["function"]
            names[str(call["id"])] = str(fn["name"])
            calls.append(
                ToolCallBlock(str(call["id"]), str(fn["name"]), tool_arguments(fn.get("arguments")))
            )
        legacy = raw.get("function_call")
        if isinstance(legacy, Mapping):
            calls.append(
                ToolCallBlock(
                    f"fc_{legacy['name']}",
                    str(legacy["name"]),
                    tool_arguments(legacy.get("arguments")),
                )
            )
        final: str | tuple[Block, ...] = content
        if before or calls:
            body: tuple[Block, ...] = (
                ((TextBlock(content),) if content else ()) if isinstance(content, str) else content
            )
            final = (*before, *body, *calls)
        return AssistantMessage(
            final, usage=usage_from_openai(raw.get("usage")), model=raw.get("model")
        )
    if role in ("tool", "function"):
        call_id = str(raw.get("tool_call_id") or f"fc_{raw.get('name', '')}")
        name = str(raw.get("name") or names.get(call_id, ""))
        return ToolResultMessage(call_id, name, content_from_openai(raw.get("content")))
    raise ValueError(f"unknown role {role!r} (expected system, developer, user, assistant or tool)")


_OPENAI_KEYS = ("content", "tool_calls", "tool_call_id", "function_call")
_ANTHROPIC_ONLY = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


def _has_openai_fields(record: Mapping[str, Any]) -> bool | str:
    other = foreign_dump(record)
    if other:
        return other
    content = record.get("content")
    if isinstance(content, list):
        odd = sorted(
            {str(p.get("type")) for p in content if isinstance(p, Mapping)} & _ANTHROPIC_ONLY
        )
        if odd:
            return (
                f"its content holds Anthropic {', '.join(odd)} blocks, which OpenAI "
                "messages do not have"
            )
    return "role" in record and any(k in record for k in _OPENAI_KEYS)


def openai_fields(fmt: str) -> KeyFields:
    """What makes a record a Chat Completions message (for a forced reader's check)."""
    return KeyFields(fmt, "a role with content, tool_calls or tool_call_id", _has_openai_fields)


def read_openai(
    stream: IO[str], *, path: str = "", skip_bad: bool = False, jsonl: bool = False
) -> Transcript:
    """Read a Chat Completions message list (JSON, a run object, or JSONL).

    Records of another format (LlamaIndex blocks, LangChain dumps, Anthropic tool blocks)
    raise a :class:`~window_budget.readers.ReadError` instead of being read as a guess.
    """
    fmt = "openai-jsonl" if jsonl else "openai"
    return read_message_records(
        stream,
        path=path,
        skip_bad=skip_bad,
        fmt=fmt,
        convert=message_from_openai,
        keys=("messages", "traj"),
        jsonl=jsonl,
        fields=openai_fields(fmt),
    )


def _content_out(content: str | tuple[Block, ...]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    if all(isinstance(b, TextBlock) for b in content):
        return "\n".join(b.text for b in content if isinstance(b, TextBlock))
    parts: list[dict[str, Any]] = []
    for b in content:
        if isinstance(b, TextBlock):
            parts.append({"type": "text", "text": b.text})
        elif isinstance(b, ImageBlock):
            parts.append({"type": "image_url", "image_url": {"url": image_to_url(b)}})
    return parts


def to_openai(
    messages: Iterable[AgentMessage], system: Iterable[str] = (), *, digests: bool = False
) -> list[dict[str, Any]]:
    """Core messages as Chat Completions dicts (kinds OpenAI lacks become user text).

    With ``digests``, a digest's record rides under ``window_budget`` (the adapters' key)
    (for files read back by this library, never for an API request).
    """
    out: list[dict[str, Any]] = [{"role": "system", "content": s} for s in system]
    for msg in messages:
        if digests and isinstance(msg, DigestMessage):
            out.append(
                {"role": "user", "content": _content_out(msg.content), DIGEST_KEY: digest_info(msg)}
            )
            continue
        if isinstance(msg, AssistantMessage):
            compactions = [b for b in msg.content if isinstance(b, ProviderCompactionBlock)]
            # Each is an item of its own, as the Responses API returns and takes it back.
            out.extend(dict(b.payload) for b in compactions)
            if compactions and len(compactions) == len(msg.content):
                continue
            rec: dict[str, Any] = {"role": "assistant"}
            if isinstance(msg.content, str):
                rec["content"] = msg.content
            else:
                text = [b for b in msg.content if isinstance(b, TextBlock | ImageBlock)]
                rec["content"] = _content_out(tuple(text)) if text else None
                thinking = [b.thinking for b in msg.content if isinstance(b, ThinkingBlock)]
                if thinking:
                    rec["reasoning_content"] = "\n".join(thinking)
                if msg.tool_calls:
                    rec["tool_calls"] = [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {
                                "name": c.name,
                                "arguments": c.arguments.get("_raw")
                                if set(c.arguments) == {"_raw"}
                                else json.dumps(dict(c.arguments), ensure_ascii=False),
                            },
                        }
                        for c in msg.tool_calls
                    ]
            if msg.model:
                rec["model"] = msg.model
            out.append(rec)
        elif isinstance(msg, ToolResultMessage):
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": msg.tool_call_id,
                    "name": msg.tool_name,
                    "content": _content_out(msg.content),
                }
            )
        elif isinstance(msg, UserMessage):
            out.append({"role": "user", "content": _content_out(msg.content)})
        else:
            out.append({"role": "user", "content": render_as_text(msg)})
    return out


def write_openai(
    messages: Iterable[AgentMessage],
    stream: IO[str],
    *,
    system: Iterable[str] = (),
    jsonl: bool = False,
) -> None:
    """Write core messages as a Chat Completions list (or JSONL, one message a line)."""
    records_out = to_openai(messages, system)
    if jsonl:
        for rec in records_out:
            stream.write(json.dumps(rec, ensure_ascii=False) + "\n")
    else:
        json.dump(records_out, stream, ensure_ascii=False, indent=1)
        stream.write("\n")
