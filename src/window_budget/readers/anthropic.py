"""Anthropic Messages API logs: ``{system?, messages: [{role, content}]}``.

Content is a string or blocks: ``text``, ``image`` {source}, ``tool_use``, ``tool_result``,
``thinking`` {thinking, signature}, ``redacted_thinking`` and ``compaction`` (the server's
own compaction, kept verbatim as a ``ProviderCompactionBlock``). A user message carrying
tool results becomes one core ``ToolResultMessage`` per result, then a user message for
any text beside them. The same block mapping serves the Claude Code reader.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import IO, Any

from window_budget.budget import usage_from_anthropic
from window_budget.messages import (
    REDACTED_THINKING,
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
)
from window_budget.readers._base import (
    Collector,
    Transcript,
    foreign_dump,
    load_json,
    records,
)
from window_budget.readers._records import (
    FieldTally,
    KeyFields,
    guess_image_type,
    tag,
    text_of,
)
from window_budget.readers._render import render_as_text

__all__ = [
    "REDACTED_THINKING",
    "blocks_from_anthropic",
    "read_anthropic",
    "simplify",
    "to_anthropic",
    "usage_from_anthropic",
    "write_anthropic",
]


def _image(block: Mapping[str, Any]) -> ImageBlock:
    source = block.get("source") or {}
    if source.get("type") == "url":
        url = str(source["url"])
        return ImageBlock(url, str(source.get("media_type") or guess_image_type(url)))
    return ImageBlock(str(source.get("data", "")), str(source.get("media_type", "image/png")))


def blocks_from_anthropic(
    content: Any, names: dict[str, str]
) -> tuple[list[Block], list[ToolResultMessage]]:
    """Split Anthropic content into core blocks and the tool results it carries.

    ``names`` maps ``tool_use`` ids to tool names (filled from calls, read for results).
    """
    if isinstance(content, str):
        return [TextBlock(content)], []
    if not isinstance(content, list):
        raise TypeError(
            f"content must be a string or a list of blocks, not {type(content).__name__}"
        )
    blocks: list[Block] = []
    results: list[ToolResultMessage] = []
    for block in content:
        kind = block["type"]
        if kind == "text":
            blocks.append(TextBlock(str(block["text"])))
        elif kind == "thinking":
            blocks.append(ThinkingBlock(str(block["thinking"]), block.get("signature")))
        elif kind == "redacted_thinking":
            blocks.append(ThinkingBlock(REDACTED_THINKING, str(block.get("data", ""))))
        elif kind == "server_tool_use":
            # The provider ran this tool itself and put its result in the same reply; as a
            # tool call it would have no tool_result after it, which no API accepts back.
            args = block.get("input")
            blocks.append(
                TextBlock(
                    f"[server tool call {block.get('name', '')}: "
                    f"{json.dumps(args, ensure_ascii=False)}]"
                )
            )
        elif kind == "tool_use":
            names[str(block["id"])] = str(block["name"])
            args = block.get("input")
            blocks.append(
                ToolCallBlock(
                    str(block["id"]),
                    str(block["name"]),
                    dict(args) if isinstance(args, Mapping) else {"_raw": args},
                )
            )
        elif kind == "image":
            blocks.append(_image(block))
        elif kind == "compaction":
            compaction = ProviderCompactionBlock.from_provider(block, "anthropic")
            assert compaction is not None
            blocks.append(compaction)
        elif kind == "tool_result":
            call_id = str(block["tool_use_id"])
            inner = block.get("content")
            result_blocks: list[Block] = []
            if isinstance(inner, list):
                for part in inner:
                    if part.get("type") == "image":
                        result_blocks.append(_image(part))
                    else:
                        result_blocks.append(TextBlock(text_of([part]) or json.dumps(part)))
            results.append(
                ToolResultMessage(
                    call_id,
                    names.get(call_id, ""),
                    tuple(result_blocks) if isinstance(inner, list) else text_of(inner),
                    is_error=bool(block.get("is_error", False)),
                )
            )
        else:
            # Documents, search results, ...: counted from their JSON rather than dropped.
            blocks.append(TextBlock(json.dumps(block, ensure_ascii=False)))
    return blocks, results


def simplify(blocks: list[Block]) -> str | tuple[Block, ...]:
    """A lone text block as a plain string; anything else as a tuple of blocks."""
    if len(blocks) == 1 and isinstance(blocks[0], TextBlock):
        return blocks[0].text
    return tuple(blocks)


def messages_from_anthropic(raw: Mapping[str, Any], names: dict[str, str]) -> list[AgentMessage]:
    """One Anthropic message as core messages (tool results first, then any user text)."""
    role = raw["role"]
    blocks, results = blocks_from_anthropic(raw["content"], names)
    if role == "assistant":
        return [
            AssistantMessage(
                simplify(blocks),
                usage=usage_from_anthropic(raw.get("usage")),
                model=raw.get("model"),
                stop_reason=raw.get("stop_reason"),
            )
        ]
    if role == "user":
        out: list[AgentMessage] = list(results)
        if blocks or not results:
            out.append(UserMessage(simplify(blocks)))
        return out
    raise ValueError(
        f"unknown role {role!r} (expected user or assistant; the system prompt "
        "goes in the top-level 'system' field)"
    )


_OPENAI_ONLY_KEYS = ("tool_calls", "tool_call_id", "function_call")
_OPENAI_ONLY_ROLES = frozenset({"system", "developer", "tool", "function"})


def _has_anthropic_fields(record: Mapping[str, Any]) -> bool | str:
    other = foreign_dump(record)
    if other:
        return other
    for key in _OPENAI_ONLY_KEYS:
        if key in record:
            return f"its records carry OpenAI {key!r}, which Anthropic messages do not have"
    if tag(record.get("role")) in _OPENAI_ONLY_ROLES:
        return (
            f"a record has the OpenAI role {record['role']!r}; Anthropic keeps the system "
            "prompt apart and tool results inside user messages"
        )
    return "role" in record and isinstance(record.get("content"), str | list)


ANTHROPIC_FIELDS = KeyFields(
    "anthropic", "a role with string or block content", _has_anthropic_fields
)
"""What makes a record an Anthropic message (for a forced reader's check)."""


def read_anthropic(stream: IO[str], *, path: str = "", skip_bad: bool = False) -> Transcript:
    """Read an Anthropic Messages log (an object with ``messages``, or a bare list).

    Records of another format (OpenAI tool calls and roles, framework dumps) raise a
    :class:`~window_budget.readers.ReadError` instead of being read as a guess.
    """
    doc = load_json(stream, path, "anthropic")
    tally = FieldTally(ANTHROPIC_FIELDS, path)
    for raw in records(doc, path, fmt="anthropic"):
        tally.add(raw)
    tally.finish("record")
    collector = Collector(path, skip_bad=skip_bad, unit="record")
    system: list[str] = []
    if isinstance(doc, Mapping) and doc.get("system"):
        system.append(text_of(doc["system"]))
    out: list[AgentMessage] = []
    names: dict[str, str] = {}
    for where, raw in enumerate(records(doc, path), start=1):

        def one(raw: Any = raw) -> None:
            if not isinstance(raw, Mapping):
                raise TypeError(f"a message must be a JSON object, not {type(raw).__name__}")
            out.extend(messages_from_anthropic(raw, names))

        collector.guard(where, one)
    meta = {"model": doc["model"]} if isinstance(doc, Mapping) and "model" in doc else {}
    return Transcript(
        messages=tuple(out),
        system=tuple(system),
        format="anthropic",
        path=path,
        skipped=tuple(collector.skipped),
        meta=meta,
    )


def block_to_anthropic(block: Block) -> dict[str, Any]:
    """One core block as an Anthropic content block."""
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ThinkingBlock):
        if block.thinking == REDACTED_THINKING and block.signature:
            return {"type": "redacted_thinking", "data": block.signature}
        out: dict[str, Any] = {"type": "thinking", "thinking": block.thinking}
        if block.signature is not None:
            out["signature"] = block.signature
        return out
    if isinstance(block, ProviderCompactionBlock):
        return dict(block.payload)  # sent back verbatim, as the provider asks
    if isinstance(block, ToolCallBlock):
        return {
            "type": "tool_use",
            "id": block.id,
            "name": block.name,
            "input": dict(block.arguments),
        }
    if block.data.startswith(("http://", "https://")):
        return {"type": "image", "source": {"type": "url", "url": block.data}}
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": block.mime_type, "data": block.data},
    }


def content_to_anthropic(content: str | tuple[Block, ...]) -> str | list[dict[str, Any]]:
    """Core content as Anthropic content."""
    return content if isinstance(content, str) else [block_to_anthropic(b) for b in content]


def tool_result_to_anthropic(msg: ToolResultMessage) -> dict[str, Any]:
    """A core tool result as a ``tool_result`` block."""
    out: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": msg.tool_call_id,
        "content": content_to_anthropic(msg.content),
    }
    if msg.is_error:
        out["is_error"] = True
    return out


def to_anthropic(messages: Iterable[AgentMessage]) -> list[dict[str, Any]]:
    """Core messages as Anthropic messages; consecutive tool results share one user turn."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        if isinstance(msg, AssistantMessage):
            rec: dict[str, Any] = {
                "role": "assistant",
                "content": content_to_anthropic(msg.content),
            }
            if msg.model:
                rec["model"] = msg.model
            out.append(rec)
            continue
        if isinstance(msg, ToolResultMessage):
            block = tool_result_to_anthropic(msg)
            if (
                out
                and out[-1]["role"] == "user"
                and isinstance(out[-1]["content"], list)
                and all(b.get("type") == "tool_result" for b in out[-1]["content"])
            ):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
            continue
        content = (
            content_to_anthropic(msg.content)
            if isinstance(msg, UserMessage)
            else render_as_text(msg)
        )
        out.append({"role": "user", "content": content})
    return out


def write_anthropic(
    messages: Iterable[AgentMessage], stream: IO[str], *, system: Iterable[str] = ()
) -> None:
    """Write core messages as an Anthropic ``{system, messages}`` document."""
    doc: dict[str, Any] = {}
    prompts = list(system)
    if prompts:
        doc["system"] = "\n\n".join(prompts)
    doc["messages"] = to_anthropic(messages)
    json.dump(doc, stream, ensure_ascii=False, indent=1)
    stream.write("\n")
