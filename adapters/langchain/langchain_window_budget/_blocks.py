"""LangChain content (a string or a list of blocks) as the core's blocks.

The parts are read by the core (``window_budget.messages.content_blocks``, which the reader
of ``messages_to_dict`` dumps shares); here, what the adapter asks of it: inline image data
cut short (an image is counted at a flat rate, and the caller keeps its own message), and
each core block's part index, so a shortened copy is rebuilt in the original's shape (see
``_shorten``).
"""

from __future__ import annotations

from typing import Any, Final

from window_budget.messages import Block, content_blocks, json_text

__all__ = ["MEDIA_KINDS", "block_sources", "blocks", "core_content", "dump"]

IMAGE_DATA: Final = 64
"""Characters of inline image data kept in the core's copy."""

MEDIA_KINDS: Final = frozenset(
    {"file", "audio", "video", "input_audio", "document", "media", "input_file", "pdf"}
)
"""Block types carrying binary data; shortened, they become a text placeholder."""

dump = json_text


def block_sources(content: str | list[Any], *, skip_tool_use: bool) -> list[tuple[int, Block]]:
    """The core blocks of ``content``, each with the index of the raw block it came from."""
    return content_blocks(content, skip_tool_calls=skip_tool_use, image_limit=IMAGE_DATA)


def blocks(content: str | list[Any], *, skip_tool_use: bool) -> list[Block]:
    return [b for _, b in block_sources(content, skip_tool_use=skip_tool_use)]


def core_content(content: str | list[Any]) -> str | tuple[Block, ...]:
    if isinstance(content, str):
        return content
    return tuple(blocks(content, skip_tool_use=False))
