"""Conversion between LlamaIndex ``ChatMessage`` objects and the core's message kinds.

Only the direction LlamaIndex → core is lossy by design: the core message exists to be
counted and flattened for the summarizer, while the caller always gets its own
``ChatMessage`` objects back (as copies) for the part of the history that is kept.
Everything a provider would be billed for is counted: text, thinking, tool-call names,
ids and arguments, citations, images and any content block this module does not know,
which is estimated from its serialized form.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    MessageRole,
)
from llama_index.core.base.llms.types import (
    ImageBlock as LIImageBlock,
)
from llama_index.core.base.llms.types import (
    TextBlock as LITextBlock,
)
from llama_index.core.base.llms.types import (
    ThinkingBlock as LIThinkingBlock,
)
from llama_index.core.base.llms.types import (
    ToolCallBlock as LIToolCallBlock,
)

from window_budget import bridge
from window_budget.digest import SESSION_HEADER
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    Block,
    CustomMessage,
    ImageBlock,
    ProviderCompactionBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    content_text,
    json_text,
    merged_tool_calls,
)

__all__ = [
    "RECORD_KEY",
    "SYSTEM_ROLES",
    "LlamaIndexCodec",
    "digest_covered",
    "from_core_shortened",
    "is_digest",
    "make_digest_chat_message",
    "message_key",
    "seal_key",
    "sealed_with",
    "split_pinned",
    "to_core",
    "tool_calls_of",
]

RECORD_KEY = bridge.RECORD_KEY
"""``additional_kwargs`` key of the digest record (the same record, under the same key, as
the LangChain adapter's: every field of the core's digest travels in it)."""

SYSTEM_ROLES = frozenset({MessageRole.SYSTEM, MessageRole.DEVELOPER})
"""Roles that carry instructions; a leading run of them is pinned."""
_ASSISTANT_ROLES = frozenset({MessageRole.ASSISTANT, MessageRole.CHATBOT, MessageRole.MODEL})
_TOOL_ROLES = frozenset({MessageRole.TOOL, MessageRole.FUNCTION})
# Keys whose content is converted explicitly; anything else in additional_kwargs is
# provider metadata that still travels with the message and is counted as such.
_HANDLED_KWARGS = frozenset(
    {"tool_calls", "tool_call_id", "name", "tool_name", "is_error", RECORD_KEY}
)


def _plain(value: Any) -> Any:
    """A JSON-friendly form of a pydantic model, dataclass-ish object or mapping."""
    if hasattr(value, "model_dump"):
        try:
            return value.model_dump(mode="json")
        except Exception:
            return repr(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "__dict__"):
        return {k: _plain(v) for k, v in vars(value).items() if not k.startswith("_")}
    return value


def tool_calls_of(message: ChatMessage) -> list[ToolCallBlock]:
    """Every tool call ``message`` makes, each once: blocks first, then ``additional_kwargs``.

    Function-calling LLMs often store the same call twice (a ``ToolCallBlock`` and the
    provider's raw entry in ``additional_kwargs["tool_calls"]``); the core's
    ``merged_tool_calls`` counts it once, as the reader of LlamaIndex dumps does.
    """
    blocks = [
        (i, b.tool_call_id, b.tool_name, _plain(b.tool_kwargs))
        for i, b in enumerate(message.blocks)
        if isinstance(b, LIToolCallBlock)
    ]
    entries = message.additional_kwargs.get("tool_calls")
    if isinstance(entries, list | tuple):
        entries = [_plain(entry) for entry in entries]
    return merged_tool_calls(blocks, entries)


def _block(block: Any) -> list[Block]:
    """Core blocks for one LlamaIndex content block (tool calls are handled separately)."""
    if isinstance(block, LITextBlock):
        return [TextBlock(block.text)]
    if isinstance(block, LIThinkingBlock):
        info = block.additional_information or {}
        # Where LlamaIndex's integrations keep a provider item to send back (OpenAI's
        # reasoning items): a compaction item there is the provider's own compaction.
        compaction = ProviderCompactionBlock.from_provider(info)
        if compaction is not None:
            return [compaction]
        signature = info.get("signature")
        # A signed block is never shortened by the core: a provider rejects a changed one.
        return [ThinkingBlock(block.content or "", str(signature) if signature else None)]
    if isinstance(block, LIToolCallBlock):
        return []
    if isinstance(block, LIImageBlock):
        ref = str(block.url or block.path or "inline")
        return [ImageBlock(ref, block.image_mimetype or "image/png")]
    kind = getattr(block, "block_type", type(block).__name__)
    if kind == "citation":
        cited = block.cited_content
        inner = _block(cited)
        return [TextBlock(f"[cited {block.title} — {block.source}]"), *inner]
    if kind == "citable":
        out: list[Block] = [TextBlock(f"[source {block.title} — {block.source}]")]
        for part in block.content:
            out.extend(_block(part))
        return out
    # Audio, video, documents, cache points and anything newer: keep a text stand-in
    # sized from the serialized block (binary payloads counted as a flat media cost).
    try:
        data = block.model_dump(mode="json", exclude={"audio", "video", "data", "image"})
    except Exception:
        data = repr(block)
    parts: list[Block] = [TextBlock(f"[{kind}] {json_text(data)}")]
    if any(getattr(block, f, None) for f in ("audio", "video", "data")):
        parts.append(ImageBlock(f"{kind}-payload", "application/octet-stream"))
    return parts


def _content_origins(message: ChatMessage) -> list[tuple[Block, int]]:
    """Core blocks of ``message``'s content, each with the index of the block it came from.

    The index is ``-1`` for the stand-in of unknown ``additional_kwargs``.
    """
    out: list[tuple[Block, int]] = []
    for i, b in enumerate(message.blocks):
        out.extend((core, i) for core in _block(b))
    extra = {k: v for k, v in message.additional_kwargs.items() if k not in _HANDLED_KWARGS}
    if extra:
        out.append((TextBlock(f"[metadata] {json_text(_plain(extra))}"), -1))
    return out


def _content(message: ChatMessage) -> list[Block]:
    return [core for core, _ in _content_origins(message)]


_DIGEST_ROLES = frozenset({MessageRole.USER, MessageRole.SYSTEM})
"""Where this memory writes digests (``digest_role="system"`` hands them over as system)."""


_SEAL_KEY: ContextVar[bytes | None] = ContextVar("window_budget_seal_key", default=None)


def seal_key() -> bytes | None:
    """The key digest records are read and written under here (see :func:`sealed_with`)."""
    return _SEAL_KEY.get()


_KNOWN_KEYS: dict[bytes, None] = {}
"""Keys memories of this process sealed with, newest last: :func:`is_digest` outside a
memory's operations tries them, so a caller's own check recognises its memory's digests."""
_KNOWN_LOCK = threading.Lock()


@contextmanager
def sealed_with(key: bytes | None) -> Iterator[None]:
    """Within the block, digest records are sealed and checked with ``key``.

    ``key`` is the memory's (its memory store's, else the one kept in its chat store; a
    memory enters this around every operation); None leaves the key as it is (by default
    ``$WINDOW_BUDGET_SECRET`` or the process key).
    """
    if key is None:
        yield
        return
    with _KNOWN_LOCK:
        _KNOWN_KEYS.pop(key, None)
        _KNOWN_KEYS[key] = None
        while len(_KNOWN_KEYS) > 64:
            del _KNOWN_KEYS[next(iter(_KNOWN_KEYS))]
    token = _SEAL_KEY.set(key)
    try:
        yield
    finally:
        _SEAL_KEY.reset(token)


def _record(message: ChatMessage) -> dict[str, Any] | None:
    """The digest record of ``message``, only where the memory writes digests.

    A record on a tool result or an assistant turn is that message's own metadata.
    """
    if message.role not in _DIGEST_ROLES:
        return None
    key, text = _SEAL_KEY.get(), message.content or ""
    raw = message.additional_kwargs.get(RECORD_KEY) if message.additional_kwargs else None
    if raw is not None:
        for candidate in _candidate_keys(key):
            record = bridge.verified_record(raw, text, key=candidate)
            if record is not None:
                return record
    # None, logging once when the message claims to be a digest it cannot prove it is.
    return bridge.read_digest_record(message.additional_kwargs, text, key=key)


def _candidate_keys(key: bytes | None) -> list[bytes]:
    """The memory's key inside a memory; outside one, this process's and every key one used.

    A client cannot forge a record sealed under any key this process holds, so a caller's
    own ``is_digest`` recognises its memories' digests.
    """
    if key is not None:
        return [key]
    with _KNOWN_LOCK:
        return [bridge.record_key(), *reversed(_KNOWN_KEYS)]


def is_digest(message: ChatMessage) -> bool:
    """True for a digest message this memory wrote (or an older version of it).

    The same question as the core's :func:`window_budget.is_digest`, asked of a
    ``ChatMessage``.
    """
    return _record(message) is not None


def digest_covered(message: ChatMessage) -> int:
    """How many original messages a digest stands for (0 for any other message)."""
    record = _record(message)
    if record is None:
        return 0
    return bridge.digest_from_record("", record).covered_count


def to_core(message: ChatMessage) -> AgentMessage:
    """The core message ``message`` is counted and summarized as.

    System and developer messages that are not pinned become a ``custom`` message (they
    are counted and kept in order); every other role maps onto user, assistant or tool
    result. Tool results carry ``additional_kwargs["tool_call_id"]`` (and ``"is_error"``).
    """
    role = message.role
    # A digest is one whatever role a view gave it (``digest_role="system"`` hands it
    # over as a system message): a view passed back to ``set`` still folds as a digest.
    record = _record(message)
    if record is not None:
        return bridge.digest_from_record(message.content or SESSION_HEADER, record)
    blocks = _content(message)
    if role == MessageRole.USER:
        return UserMessage(tuple(blocks))
    if role in _ASSISTANT_ROLES:
        return AssistantMessage((*blocks, *tool_calls_of(message)))
    if role in _TOOL_ROLES:
        kw = message.additional_kwargs
        call_id = kw.get("tool_call_id") or kw.get("tool_id") or ""
        name = kw.get("name") or kw.get("tool_name") or role.value
        # ``is_error`` as window-budget's LlamaIndex writer puts it (LlamaIndex's agents keep
        # a failure in the tool output, not the message): a failed result is an error fact.
        failed = kw.get("is_error") is True
        return ToolResultMessage(str(call_id), str(name), tuple(blocks), is_error=failed)
    return CustomMessage(str(getattr(role, "value", role)), tuple(blocks))


def split_pinned(messages: Sequence[ChatMessage]) -> int:
    """How many leading messages are system/developer instructions (pinned, never evicted)."""
    return bridge.pinned_count(LlamaIndexCodec(_SEAL_KEY.get()), messages)


def make_digest_chat_message(
    text: str, covered: int, *, source: object = None, compactions: int | None = None
) -> ChatMessage:
    """The digest as LlamaIndex stores it: one user message carrying the bridge's record.

    ``source`` is the core's digest (``Summary.message``): every field it has beyond
    ``covered`` (the turns kept with it, a fact ledger, ...) travels in the record too;
    ``compactions`` (see :func:`window_budget.bridge.head_counts`) when known.
    """
    digest = bridge.digest_of(text, source, covered_count=covered)
    extra: dict[str, Any] = {} if compactions is None else {"compactions": compactions}
    return ChatMessage(
        role=MessageRole.USER,
        content=text,
        additional_kwargs={RECORD_KEY: bridge.digest_record(digest, key=_SEAL_KEY.get(), **extra)},
    )


def message_key(message: ChatMessage) -> Hashable | None:
    """What decides ``to_core(message)``, exactly: role, blocks and ``additional_kwargs``.

    Survives a store's round trip (to disk and back), so a memory built per request
    converts only what it has not seen in this process.
    """
    parts: list[Hashable] = []
    for block in message.blocks:
        parts.append(block.text if type(block) is LITextBlock else repr(block))
    kwargs = message.additional_kwargs
    return (message.role, tuple(parts), repr(kwargs) if kwargs else "")


class LlamaIndexCodec:
    """The bridge codec for LlamaIndex messages (see :class:`window_budget.bridge.Codec`).

    ``record_key`` is a memory store's key: digest records are checked with it (and the
    codec's name, part of the conversion cache's keys, tells it apart).
    """

    def __init__(self, record_key: bytes | None = None) -> None:
        self.record_key = record_key
        """The key digest records are checked with (None: the default)."""
        self.name = "llama_index"
        """Names the codec in cache keys."""
        if record_key is not None:
            self.name += ":sealed:" + hashlib.sha256(record_key).hexdigest()[:16]

    def key(self, message: ChatMessage) -> Hashable | None:
        """See :func:`message_key`."""
        return message_key(message)

    def to_core(self, message: ChatMessage) -> AgentMessage:
        """See :func:`to_core`."""
        with sealed_with(self.record_key):
            return to_core(message)

    def is_pinned(self, message: ChatMessage) -> bool:
        """Leading system and developer messages are pinned (a digest never is)."""
        with sealed_with(self.record_key):
            return message.role in SYSTEM_ROLES and not is_digest(message)


def _from_core_block(block: Block, original: Any) -> Any | None:
    """A LlamaIndex block for one shortened core block (``original``: where it came from)."""
    if isinstance(block, ThinkingBlock):
        info = (
            dict(getattr(original, "additional_information", None) or {})
            if isinstance(original, LIThinkingBlock)
            else {}
        )
        info.pop("signature", None)  # the text changed: the old signature no longer holds
        return LIThinkingBlock(content=block.thinking, additional_information=info)
    if isinstance(block, TextBlock):
        return LITextBlock(text=block.text)
    return None  # an image the core left whole inside a cut block: it never does


def from_core_shortened(original: ChatMessage, shortened: AgentMessage) -> ChatMessage:
    """A deep copy of ``original`` carrying the core's shortened content, block for block.

    The core shortens block by block (same count, same order), so each LlamaIndex block
    is kept as it was when the core left its parts alone, and otherwise rebuilt from the
    shortened parts: text stays text, unsigned thinking stays thinking, an image the core
    replaced becomes its text placeholder. Tool-call blocks and ``additional_kwargs`` are
    kept as they were: integrations send them back, so a view never drops them. The core
    cuts what it counts for unknown metadata (the ``[metadata]`` stand-in) like any text,
    so a copy with such metadata costs up to what was cut from it more than ``shortened``;
    the views count the copies themselves and never hand over more than the limit.
    """
    copy = original.model_copy(deep=True)
    content = getattr(shortened, "content", None)
    if content is None:
        return copy
    calls = {i: b for i, b in enumerate(copy.blocks) if isinstance(b, LIToolCallBlock)}
    if isinstance(content, str):  # a digest stored as plain text
        copy.blocks = [LITextBlock(text=content), *calls.values()]
        return copy
    origins = _content_origins(original)
    core_content = [b for b in content if not isinstance(b, ToolCallBlock)]
    if len(core_content) != len(origins):  # not the core's block-for-block shape
        copy.blocks = [LITextBlock(text=content_text(content)), *calls.values()]
        return copy
    per_block: dict[int, list[tuple[Block, Block]]] = {}
    for (before, origin), after in zip(origins, core_content, strict=True):
        per_block.setdefault(origin, []).append((before, after))
    blocks: list[Any] = []
    for i, block in enumerate(copy.blocks):
        pairs = per_block.get(i)
        if i in calls or not pairs or all(a == b for a, b in pairs):
            blocks.append(block)
        else:
            rebuilt = (_from_core_block(after, block) for _, after in pairs)
            blocks.extend(b for b in rebuilt if b is not None)
    copy.blocks = blocks
    return copy
