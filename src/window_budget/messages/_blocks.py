"""The content blocks a message holds: text, thinking, tool calls, images, provider compactions."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias

from window_budget.errors import MessageError
from window_budget.messages._checks import MAP, OPT_STR, check

# --------------------------------------------------------------------- blocks


@dataclass(frozen=True, slots=True)
class TextBlock:
    """Plain text inside a message."""

    text: str
    """The text itself."""
    type: ClassVar[Literal["text"]] = "text"

    def __post_init__(self) -> None:
        if type(self.text) is not str:
            check(self, "text", str)


@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    """A model's reasoning, kept so it can be counted and flattened as a plan."""

    thinking: str
    """The reasoning text."""
    signature: str | None = None
    """Provider signature that must travel with the block, if any."""
    type: ClassVar[Literal["thinking"]] = "thinking"

    def __post_init__(self) -> None:
        if type(self.thinking) is not str:
            check(self, "thinking", str)
        if type(self.signature) not in OPT_STR:
            check(self, "signature", *OPT_STR)


@dataclass(frozen=True, slots=True)
class ToolCallBlock:
    """A request from the assistant to run a tool."""

    id: str
    """Provider id of the call; the matching ``ToolResultMessage`` carries it."""
    name: str
    """Name of the tool."""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    """Arguments as parsed JSON. A raw, unparsable string is kept under ``"_raw"``."""
    type: ClassVar[Literal["toolCall"]] = "toolCall"

    def __post_init__(self) -> None:
        if type(self.id) is not str:
            check(self, "id", str)
        if type(self.name) is not str:
            check(self, "name", str)
        if type(self.arguments) not in MAP:
            check(self, "arguments", *MAP)


@dataclass(frozen=True, slots=True)
class ImageBlock:
    """An image; counted at a flat rate whatever its resolution."""

    data: str
    """Base64 payload or a URL."""
    mime_type: str = "image/png"
    """MIME type of the payload."""
    type: ClassVar[Literal["image"]] = "image"

    def __post_init__(self) -> None:
        if type(self.data) is not str:
            check(self, "data", str)
        if type(self.mime_type) is not str:
            check(self, "mime_type", str)


@dataclass(frozen=True, slots=True)
class ProviderCompactionBlock:
    """A provider's own compaction of everything before it, carried through unchanged.

    Anthropic's server-side compaction returns a ``compaction`` content block (a readable
    summary in ``content``); OpenAI's Responses API a ``compaction`` item (an opaque
    ``encrypted_content``). Either must go back to the provider verbatim on the next
    request, and the provider drops what came before it: the message carrying it is a
    boundary (``window_budget.pipeline.provider_boundary``), never split, shortened or
    summarized again.

    >>> item = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAB"}
    >>> ProviderCompactionBlock("openai", None, item).text
    'gAAB'
    """

    provider: str
    """``"anthropic"``, ``"openai"`` or another provider's name."""
    summary: str | None = None
    """The summary text the provider shows (Anthropic's ``content``); None when opaque."""
    payload: Mapping[str, Any] = field(default_factory=dict)
    """The block or item exactly as the provider sent it (JSON), to send back verbatim."""
    type: ClassVar[Literal["providerCompaction"]] = "providerCompaction"
    made: ClassVar[bool] = False
    """True once one was made in this process: until then no transcript holds one, and the
    boundary search (a scan of the whole transcript) is skipped."""

    def __post_init__(self) -> None:
        ProviderCompactionBlock.made = True
        check(self, "provider", str)
        check(self, "summary", *OPT_STR)
        check(self, "payload", *MAP)

    @classmethod
    def from_provider(
        cls, raw: Mapping[str, Any], provider: str | None = None
    ) -> ProviderCompactionBlock | None:
        """The core block for a provider's ``compaction`` block or item; None for others.

        LangChain's standard-content wrapper (``{"type": "non_standard", "value": {...}}``)
        is looked through. Without ``provider``, a block with Anthropic's ``content`` or
        ``signature`` field is Anthropic's, any other OpenAI's.
        """
        inner = raw.get("value") if raw.get("type") == "non_standard" else raw
        if not isinstance(inner, Mapping) or inner.get("type") != "compaction":
            return None
        if provider is None:
            provider = "anthropic" if "content" in inner or "signature" in inner else "openai"
        summary = inner.get("content")
        return cls(provider, summary if isinstance(summary, str) else None, dict(inner))

    @property
    def text(self) -> str:
        """What it is billed for: the summary, else the opaque payload's characters.

        The provider expands an opaque ``encrypted_content`` into tokens of its own that
        no client can see; its length is the only size a client has, so it is counted.
        """
        if self.summary is not None:
            return self.summary
        opaque = self.payload.get("encrypted_content")
        if isinstance(opaque, str):
            return opaque
        return json.dumps(dict(self.payload), ensure_ascii=False, default=repr, sort_keys=True)


Block: TypeAlias = TextBlock | ThinkingBlock | ToolCallBlock | ImageBlock | ProviderCompactionBlock
"""Any block a message's content may hold."""

Content: TypeAlias = str | tuple[Block, ...]
"""Message content: text, or a tuple of blocks."""

BLOCK_TYPES = (TextBlock, ThinkingBlock, ToolCallBlock, ImageBlock, ProviderCompactionBlock)


def normalize_content(owner: str, content: object) -> Content:
    if isinstance(content, str):
        return content
    # tuple and list first: the ABC check is slow and runs for every message built.
    if type(content) in (tuple, list) or (
        isinstance(content, Sequence) and not isinstance(content, bytes | bytearray)
    ):
        blocks: tuple[Any, ...] = tuple(content)  # type: ignore[arg-type]
        for i, block in enumerate(blocks):
            if type(block) not in BLOCK_TYPES and not isinstance(block, BLOCK_TYPES):
                raise MessageError(
                    f"{owner} content block {i} is a {type(block).__name__}; expected "
                    "TextBlock, ThinkingBlock, ToolCallBlock, ImageBlock or ProviderCompactionBlock"
                )
        return blocks
    raise MessageError(
        f"{owner} content must be a str or a sequence of blocks, not {type(content).__name__}"
    )
