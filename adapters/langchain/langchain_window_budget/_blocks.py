"""LangChain content (a string or a list of blocks) as the core's blocks.

Text, thinking and reasoning, images and tool-use blocks have core counterparts, and so has
a provider's ``compaction`` block (langchain-anthropic) or item (langchain-openai's Responses
API), kept verbatim as a ``ProviderCompactionBlock``; anything else (files, citations, other
provider blocks) is billed as its JSON. Each core block remembers
the index of the raw block it came from, so a shortened copy can be rebuilt in the
original's shape (see ``_shorten``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from window_budget.messages import (
    Block,
    ImageBlock,
    ProviderCompactionBlock,
    TextBlock,
    ThinkingBlock,
)

__all__ = ["MEDIA_KINDS", "block_sources", "blocks", "core_content", "dump"]


def dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=repr, separators=(",", ":"))


def _image_block(block: Mapping[str, Any]) -> ImageBlock:
    mime = str(block.get("mime_type") or block.get("media_type") or "image/png")
    data = block.get("data") or block.get("base64") or block.get("url") or ""
    if not data and isinstance(block.get("image_url"), Mapping | str):
        url = block["image_url"]
        data = url.get("url", "") if isinstance(url, Mapping) else url
    if not data and isinstance(block.get("source"), Mapping):
        src = block["source"]
        data = src.get("data") or src.get("url") or ""
        mime = str(src.get("media_type") or mime)
    data = str(data)
    # The core bills images at a flat rate: inline data is cut short, but a URL is kept
    # whole (up to 2 KiB) so the summary request can name it, as LangChain's does.
    keep = 2048 if data.startswith(("https://", "http://")) else 64
    return ImageBlock(data[:keep], mime)


def _reasoning_text(block: Mapping[str, Any]) -> str:
    text = block.get("reasoning") or block.get("thinking") or block.get("text")
    if isinstance(text, str):
        return text
    summary = block.get("summary")  # OpenAI Responses: a list of summary parts
    if isinstance(summary, list):
        return "\n".join(str(p.get("text", "")) for p in summary if isinstance(p, Mapping))
    return dump(dict(block))


MEDIA_KINDS = frozenset(
    {"file", "audio", "video", "input_audio", "document", "media", "input_file", "pdf"}
)
"""Block types carrying binary data; shortened, they become a text placeholder."""


def block_sources(
    content: str | list[Any],
    *,
    skip_tool_use: bool,
) -> list[tuple[int, Block]]:
    """The core blocks of ``content``, each with the index of the raw block it came from."""
    if isinstance(content, str):
        return [(0, TextBlock(content))] if content else []
    out: list[tuple[int, Block]] = []
    for i, raw in enumerate(content):
        if isinstance(raw, str):
            out.append((i, TextBlock(raw)))
            continue
        if not isinstance(raw, dict):  # LangChain content blocks are plain dicts
            out.append((i, TextBlock(dump(raw))))
            continue
        kind = raw.get("type")
        if kind == "text":
            out.append((i, TextBlock(str(raw.get("text", "")))))
        elif kind == "thinking":
            sig = raw.get("signature")
            out.append(
                (
                    i,
                    ThinkingBlock(
                        str(raw.get("thinking", "")), sig if isinstance(sig, str) else None
                    ),
                )
            )
        elif kind in ("reasoning", "redacted_thinking"):
            out.append(
                (
                    i,
                    ThinkingBlock(
                        _reasoning_text(raw) if kind == "reasoning" else str(raw.get("data", ""))
                    ),
                )
            )
        elif kind in ("image", "image_url"):
            out.append((i, _image_block(raw)))
        elif kind in ("tool_use", "tool_call", "server_tool_call") and skip_tool_use:
            # The same call is listed in ``AIMessage.tool_calls``; count it once.
            continue
        elif (compaction := ProviderCompactionBlock.from_provider(raw)) is not None:
            out.append((i, compaction))
        else:
            # Anything else (files, citations, provider blocks) is billed as its JSON.
            out.append((i, TextBlock(dump(dict(raw)))))
    return out


def blocks(content: str | list[Any], *, skip_tool_use: bool) -> list[Block]:
    return [b for _, b in block_sources(content, skip_tool_use=skip_tool_use)]


def core_content(content: str | list[Any]) -> str | tuple[Block, ...]:
    if isinstance(content, str):
        return content
    return tuple(blocks(content, skip_tool_use=False))
