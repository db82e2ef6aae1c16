"""LlamaIndex ``ChatMessage.model_dump(mode="json")`` lists: ``[{role, blocks | content, ...}]``.

Parsed from the JSON alone, without importing LlamaIndex. Tool calls come either as
``tool_call`` blocks or, from OpenAI-style LLMs, under ``additional_kwargs["tool_calls"]``;
a ``tool`` message names its call in ``additional_kwargs["tool_call_id"]``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import IO, Any

from window_budget.messages import (
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
    content_text,
    merged_tool_calls,
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
    read_message_records,
)
from window_budget.readers._render import render_as_text
from window_budget.readers.anthropic import simplify

__all__ = ["read_llama_index", "to_llama_index", "write_llama_index"]


def _block(block: Mapping[str, Any]) -> list[Block]:
    kind = block["block_type"]
    if kind == "text":
        return [TextBlock(str(block["text"]))] if block.get("text") else []
    if kind == "image":
        data = block.get("image") or block.get("url") or block.get("path") or ""
        return [ImageBlock(str(data), str(block.get("image_mimetype") or "image/png"))]
    if kind == "thinking":
        info = block.get("additional_information")
        info = info if isinstance(info, Mapping) else {}
        compaction = ProviderCompactionBlock.from_provider(info)
        signature = info.get("signature")
        return [
            compaction
            or ThinkingBlock(
                str(block.get("content") or ""), signature if isinstance(signature, str) else None
            )
        ]
    if kind == "tool_call":
        return []  # the calls are read apart (see message_from_llama_index)
    if kind in ("citation", "citable"):  # a cited source: its label, then what it holds
        label = "cited" if kind == "citation" else "source"
        inner = block.get("cited_content") if kind == "citation" else block.get("content")
        parts = inner if isinstance(inner, list) else [inner] if isinstance(inner, Mapping) else []
        head = TextBlock(f"[{label} {block.get('title')} — {block.get('source')}]")
        return [head, *(b for part in parts for b in _block(part))]
    return [TextBlock(json.dumps(block, ensure_ascii=False))]


def _blocks(raw: Mapping[str, Any]) -> list[Block]:
    if "blocks" not in raw:
        content = raw.get("content")
        return [TextBlock(str(content))] if content else []
    return [b for block in raw["blocks"] for b in _block(block)]


def _calls(raw: Mapping[str, Any], extra: Mapping[str, Any]) -> list[ToolCallBlock]:
    """The message's calls, each once (a call block and its raw entry are one call)."""
    blocks = [
        (i, b.get("tool_call_id"), b.get("tool_name"), b.get("tool_kwargs"))
        for i, b in enumerate(raw.get("blocks") or ())
        if b["block_type"] == "tool_call"
    ]
    return merged_tool_calls(blocks, extra.get("tool_calls"))


def message_from_llama_index(
    raw: Mapping[str, Any], names: dict[str, str], system: list[str]
) -> AgentMessage | None:
    """One dumped ``ChatMessage`` as a core message (None for a system prompt)."""
    role = raw["role"]
    extra = raw.get("additional_kwargs") or {}
    blocks = _blocks(raw)
    if role in ("system", "developer"):
        system.append(content_text(tuple(blocks)))
        return None
    if role == "user":
        content = simplify(blocks) if blocks else ""
        return digest_from_info(content, find_digest_record(extra)) or UserMessage(content)
    if role in ("assistant", "model", "chatbot"):
        blocks.extend(_calls(raw, extra))
        for block in blocks:
            if isinstance(block, ToolCallBlock):
                names[block.id] = block.name
        return AssistantMessage(simplify(blocks) if blocks else "")
    if role in ("tool", "function"):
        call_id = str(extra.get("tool_call_id") or extra.get("id") or "")
        name = str(extra.get("name") or names.get(call_id, ""))
        return ToolResultMessage(
            call_id,
            name,
            simplify(blocks) if blocks else "",
            is_error=bool(extra.get("is_error", False)),
        )
    raise ValueError(f"unknown role {role!r} (expected system, user, assistant or tool)")


def _has_llama_index_fields(record: Mapping[str, Any]) -> bool | str:
    if "tool_calls" in record or "tool_call_id" in record:
        return "its records carry OpenAI tool_calls / tool_call_id at the top level"
    if "type" in record and isinstance(record.get("data"), Mapping):
        return "its records are LangChain {type, data} dumps"
    return "role" in record and ("blocks" in record or "additional_kwargs" in record)


LLAMA_INDEX_FIELDS = KeyFields(
    "llama-index", "a role with blocks or additional_kwargs", _has_llama_index_fields
)
"""What makes a record a dumped ``ChatMessage`` (for a forced reader's check)."""


def read_llama_index(stream: IO[str], *, path: str = "", skip_bad: bool = False) -> Transcript:
    """Read a list of dumped ``ChatMessage`` objects (or an object with a ``messages`` list)."""
    return read_message_records(
        stream,
        path=path,
        skip_bad=skip_bad,
        fmt="llama-index",
        convert=message_from_llama_index,
        fields=LLAMA_INDEX_FIELDS,
    )


def _blocks_out(content: str | tuple[Block, ...]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"block_type": "text", "text": content}]
    out: list[dict[str, Any]] = []
    for b in content:
        if isinstance(b, TextBlock):
            out.append({"block_type": "text", "text": b.text})
        elif isinstance(b, ThinkingBlock):
            thinking: dict[str, Any] = {"block_type": "thinking", "content": b.thinking}
            if b.signature:  # where LlamaIndex's integrations keep it (read back the same)
                thinking["additional_information"] = {"signature": b.signature}
            out.append(thinking)
        elif isinstance(b, ToolCallBlock):
            out.append(
                {
                    "block_type": "tool_call",
                    "tool_call_id": b.id,
                    "tool_name": b.name,
                    "tool_kwargs": dict(b.arguments),
                }
            )
        elif isinstance(b, ProviderCompactionBlock):
            # The provider's block rides where LlamaIndex keeps provider reasoning items.
            out.append(
                {
                    "block_type": "thinking",
                    "content": b.summary,
                    "additional_information": dict(b.payload),
                }
            )
        else:
            is_url = b.data.startswith(("http://", "https://"))
            out.append(
                {
                    "block_type": "image",
                    "image": None if is_url else b.data,
                    "url": b.data if is_url else None,
                    "image_mimetype": b.mime_type,
                }
            )
    return out


def to_llama_index(
    messages: Iterable[AgentMessage],
    system: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """Core messages as dumped ``ChatMessage`` dicts (``ChatMessage.model_validate`` reads them)."""
    out = [{"role": "system", "additional_kwargs": {}, "blocks": _blocks_out(s)} for s in system]
    for msg in messages:
        if isinstance(msg, AssistantMessage):
            out.append(
                {"role": "assistant", "additional_kwargs": {}, "blocks": _blocks_out(msg.content)}
            )
        elif isinstance(msg, ToolResultMessage):
            out.append(
                {
                    "role": "tool",
                    "additional_kwargs": {
                        "tool_call_id": msg.tool_call_id,
                        "name": msg.tool_name,
                        **({"is_error": True} if msg.is_error else {}),
                    },
                    "blocks": _blocks_out(msg.content),
                }
            )
        elif isinstance(msg, UserMessage):
            info = digest_info(msg)
            out.append(
                {
                    "role": "user",
                    "additional_kwargs": {} if info is None else {DIGEST_KEY: info},
                    "blocks": _blocks_out(msg.content),
                }
            )
        else:
            out.append(
                {
                    "role": "user",
                    "additional_kwargs": {},
                    "blocks": _blocks_out(render_as_text(msg)),
                }
            )
    return out


def write_llama_index(
    messages: Iterable[AgentMessage], stream: IO[str], *, system: Iterable[str] = ()
) -> None:
    """Write core messages as a list of dumped ``ChatMessage`` dicts."""
    json.dump(to_llama_index(messages, system), stream, ensure_ascii=False, indent=1)
    stream.write("\n")
