"""The reverse direction: a copy of a LangChain message carrying the core's shortened text.

When a kept message had to be shortened to fit, the caller gets a copy in the original's
own shape: block by block, ids, tool calls and block types kept; media become a short text
placeholder; signed or redacted thinking is left intact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_window_budget._blocks import MEDIA_KINDS, block_sources
from langchain_window_budget._digest import digest_record
from window_budget.digest import SESSION_HEADER
from window_budget.messages import AgentMessage, Block, TextBlock, ThinkingBlock, ToolCallBlock

__all__ = ["shortened_copy"]

_STALE_BLOCK_KEYS = ("annotations", "citations")
"""Keys of a text block that point into its text; dropped when the text is shortened."""


def _placeholder(kind: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    mime = raw.get("mime_type") or raw.get("media_type") or ""
    what = f"{kind} {mime}".strip()
    return {"type": "text", "text": f"[{what} removed by window-budget to fit the context window]"}


def _block_text(block: Block) -> str | None:
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ThinkingBlock):
        return block.thinking
    return None


def _rebuilt_block(raw: object, old: Block, new: Block) -> object:
    """The LangChain form of one shortened block, in the shape of its original ``raw``."""
    text = _block_text(new)
    if isinstance(raw, str):
        return text if text is not None else raw
    if not isinstance(raw, dict):
        return {"type": "text", "text": text or ""}
    kind = str(raw.get("type"))
    if kind == "redacted_thinking" or (kind == "thinking" and raw.get("signature")):
        return raw  # opaque or signed: the provider verifies it byte for byte
    if kind in ("image", "image_url") or kind in MEDIA_KINDS or text is None:
        return _placeholder(kind, raw)
    if kind == "text":
        return {**{k: v for k, v in raw.items() if k not in _STALE_BLOCK_KEYS}, "text": text}
    if kind == "thinking" and isinstance(new, ThinkingBlock):
        return {**raw, "thinking": text}
    if kind == "reasoning":
        # OpenAI Responses / v1 reasoning: keep the type and id, rewrite the readable text.
        if isinstance(raw.get("summary"), list):
            return {**raw, "summary": [{"type": "summary_text", "text": text}]}
        field_name = "reasoning" if "reasoning" in raw or "text" not in raw else "text"
        return {**raw, field_name: text}
    # A provider block billed as its JSON: a shortened JSON dump helps no one.
    return _placeholder(kind, raw)


def _rebuilt_content(
    raw_content: str | list[Any], sources: list[tuple[int, Block]], new_blocks: Sequence[Block]
) -> str | list[Any]:
    changed = {
        i: (old, new) for (i, old), new in zip(sources, new_blocks, strict=True) if new != old
    }
    if not changed:
        return raw_content
    if isinstance(raw_content, str):
        _, new = changed[0]
        text = _block_text(new)
        return text if text is not None else raw_content
    return [
        _rebuilt_block(raw, *changed[i]) if i in changed else raw
        for i, raw in enumerate(raw_content)
    ]


def shortened_copy(
    original: BaseMessage, shortened: AgentMessage, *, key: bytes | None = None
) -> BaseMessage:
    """A copy of ``original`` carrying the shortened text of ``shortened``.

    Block by block, in the original's own shape: ids, tool calls, block types and
    ``additional_kwargs`` are kept; a shortened ``reasoning_content`` stays in
    ``additional_kwargs``; images, files, audio and video become a short text placeholder;
    signed or redacted thinking is left intact. Returns ``original`` when nothing changed.
    ``key`` is the memory store's (it tells a digest from a look-alike).
    """
    summary = getattr(shortened, "summary", None)
    if isinstance(summary, str) and getattr(shortened, "content", None) is None:
        return original.model_copy(update={"content": summary})
    content = getattr(shortened, "content", None)
    if content is None:
        return original
    if isinstance(content, str):
        if (
            isinstance(original.content, str)
            and isinstance(original, HumanMessage)
            and digest_record(original, key=key) is not None
            and content.startswith(SESSION_HEADER)
            and not original.content.startswith(SESSION_HEADER)
        ):
            content = content[len(SESSION_HEADER) :].lstrip("\n")
        return original.model_copy(update={"content": content})
    new_blocks = list(content)
    update: dict[str, Any] = {}
    if isinstance(original, AIMessage):
        sources = block_sources(original.content, skip_tool_use=True)
        extra = original.additional_kwargs or {}
        reasoning = extra.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            first = new_blocks.pop(0)
            text = _block_text(first)
            if text is not None and text != reasoning:
                update["additional_kwargs"] = {**extra, "reasoning_content": text}
        new_blocks = [b for b in new_blocks if not isinstance(b, ToolCallBlock)]
    else:
        sources = block_sources(original.content, skip_tool_use=False)
    if len(sources) != len(new_blocks):  # an unexpected shape: fall back to plain text
        texts = [t for b in new_blocks if (t := _block_text(b)) is not None]
        update["content"] = "\n".join(texts)
    else:
        update["content"] = _rebuilt_content(original.content, sources, new_blocks)
    return original.model_copy(update=update)
