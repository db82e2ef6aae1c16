"""Conversion from ``langchain_core`` messages to the core's message contract.

Only the direction LangChain → core is a full conversion: the core measures, slices and
summarizes the converted copies, and the caller gets back its *own* LangChain objects
for the kept tail. The reverse direction builds just two things: the digest message
(``_digest``) and, when a tail message had to be shortened to fit, a shortened copy of the
original (``_shorten``).

Conversions go through the bridge's process-wide content cache, keyed by the message id
and content (``_identity.message_key``), so a thread a checkpointer deserializes every turn
is converted once, not once per turn.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from langchain_window_budget._blocks import blocks, core_content, dump
from langchain_window_budget._digest import DIGEST_KEY, digest_record
from langchain_window_budget._identity import KEYED, message_key, same_message, same_messages
from langchain_window_budget._usage import (
    chat_model_provider,
    mark_usage_stale,
    other_provider,
    reply_model,
    usage,
    usage_is_stale,
)
from window_budget import bridge
from window_budget.budget import cached_estimates
from window_budget.digest import SESSION_HEADER
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
)
from window_budget.pipeline import provider_boundary

__all__ = [
    "Converted",
    "Converter",
    "LangChainCodec",
    "OpaqueMessage",
    "chat_model_id",
    "chat_model_provider",
    "mark_usage_stale",
    "to_core",
    "usage_is_stale",
]


@dataclass(frozen=True, slots=True)
class OpaqueMessage:
    """A message of a kind the adapter does not know, carried for counting only."""

    role: str
    """The object's type name (or its ``type`` field)."""
    serialized: str
    """Its JSON form: what the heuristic bills it for."""


def chat_model_id(chat_model: object) -> str | None:
    """The model name a chat model reports (``ls_model_name``, ``model_name`` or ``model``)."""
    try:
        params = chat_model._get_ls_params()  # type: ignore[attr-defined]
        name = params.get("ls_model_name")
        if isinstance(name, str) and name:
            return name
    except Exception:
        pass
    for attr in ("model_name", "model", "model_id"):
        value = getattr(chat_model, attr, None)
        if isinstance(value, str) and value:
            return value
    return None


def _ai(
    message: AIMessage, *, trust_usage: bool, model_id: str | None, provider: str | None = None
) -> AssistantMessage:
    parts = blocks(message.content, skip_tool_use=True)
    extra = message.additional_kwargs or {}
    reasoning = extra.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        parts.insert(0, ThinkingBlock(reasoning))
    for call in message.tool_calls:
        parts.append(
            ToolCallBlock(str(call.get("id") or ""), call["name"], dict(call.get("args") or {}))
        )
    for i, bad in enumerate(message.invalid_tool_calls):
        # Providers get malformed calls back too, and a result may answer one.
        parts.append(
            ToolCallBlock(
                str(bad.get("id") or f"invalid-{i}"),
                str(bad.get("name") or ""),
                {"_raw": bad.get("args"), "_error": bad.get("error")},
            )
        )
    fn = extra.get("function_call")
    if isinstance(fn, dict) and fn.get("name"):
        parts.append(
            ToolCallBlock(f"function:{fn['name']}", str(fn["name"]), {"_raw": fn.get("arguments")})
        )
    trusted = trust_usage and not usage_is_stale(message) and not other_provider(message, provider)
    figure = usage(message) if trusted else None
    replied_by = reply_model(message)
    meta = message.response_metadata or {}
    stop = meta.get("finish_reason") or meta.get("stop_reason")
    return AssistantMessage(
        tuple(parts),
        usage=figure,
        # The core ignores a figure whose model differs from the guarded model; without a
        # known id on both sides there is nothing to compare, so the figure is trusted.
        model=replied_by if model_id is not None else None,
        stop_reason=stop if isinstance(stop, str) else None,
    )


def _opaque(message: object) -> OpaqueMessage:
    if isinstance(message, BaseMessage):
        try:
            payload: object = message.model_dump()
        except Exception:
            payload = repr(message)
        return OpaqueMessage(str(getattr(message, "type", type(message).__name__)), dump(payload))
    return OpaqueMessage(
        type(message).__name__,
        dump(message if isinstance(message, Mapping | list | str) else repr(message)),
    )


def to_core(
    message: object,
    *,
    trust_usage: bool = True,
    model_id: str | None = None,
    key: bytes | None = None,
    provider: str | None = None,
) -> AgentMessage:
    """The core's view of one LangChain message (a new value; ``message`` is not touched).

    A ``HumanMessage`` is a digest only when its record verifies (under ``key``, the memory
    store's, when given); any other is the user's message it looks like.
    """
    if isinstance(message, HumanMessage):
        record = digest_record(message, key=key)
        content = core_content(message.content)
        if record is not None:
            if isinstance(content, str) and not content.startswith(SESSION_HEADER):
                content = f"{SESSION_HEADER}\n\n{content}"
            return bridge.digest_from_record(content, record)
        extra = message.additional_kwargs or {}
        if extra.get("lc_source") == "summarization" and DIGEST_KEY not in extra:
            # LangChain's SummarizationMiddleware summary: carried in like a digest.
            return CompactionSummaryMessage(message.text)
        return UserMessage(content)  # a lookalike without a verified record is the user's
    if isinstance(message, AIMessage):
        return _ai(message, trust_usage=trust_usage, model_id=model_id, provider=provider)
    if isinstance(message, ToolMessage):
        return ToolResultMessage(
            str(message.tool_call_id),
            message.name or "",
            core_content(message.content),
            is_error=message.status == "error",
        )
    if isinstance(message, FunctionMessage):
        return ToolResultMessage(
            f"function:{message.name}", message.name, core_content(message.content)
        )
    if isinstance(message, SystemMessage):
        return CustomMessage("system", core_content(message.content))
    if isinstance(message, ChatMessage):
        if message.role in ("user", "human"):
            return UserMessage(core_content(message.content))
        return CustomMessage(f"chat:{message.role}", core_content(message.content))
    return _opaque(message)


# --------------------------------------------------------------- the codec

_MESSAGE_ID, _NATIVE, _CORE = attrgetter("id"), itemgetter(0), itemgetter(1)
_MEMO_LIMIT = 50_000


class LangChainCodec:
    """The bridge codec for LangChain messages (see :class:`window_budget.bridge.Codec`)."""

    def __init__(
        self,
        *,
        trust_usage: bool = True,
        model_id: str | None = None,
        key: bytes | None = None,
        provider: str | None = None,
    ) -> None:
        self.trust_usage = trust_usage
        """Whether ``usage_metadata`` becomes the core's usage (the anchor)."""
        self.model_id = model_id
        """Id of the guarded model."""
        self.record_key = key
        """The memory store's key digest records are verified with (None: the default)."""
        # A digest honoured under one key is an ordinary message under another: the key
        # is part of the cache keys, by a hash that tells nothing of it.
        sealed = hashlib.sha256(key).hexdigest()[:16] if key is not None else "-"
        self.provider = provider
        """The guarded model's provider: a reply naming another one does not anchor."""
        self.name = f"langchain:{trust_usage}:{model_id}:{provider}:{sealed}"
        """Names the codec and its options (part of every cache key)."""
        # One run asks for a message's key twice (remembered digests, then conversion):
        # an identity memo makes the second time a dict lookup.
        self._memo: dict[int, tuple[object, Hashable | None]] = {}
        self._by_id: dict[str, tuple[object, Hashable | None]] = {}

    def forget(self) -> None:
        """Drop the key memo (it holds the messages: keep it to one run's worth)."""
        self._memo.clear()

    def key(self, message: object) -> Hashable | None:
        """See :func:`message_key`."""
        memo = self._memo
        hit = memo.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        if len(memo) > _MEMO_LIMIT:
            memo.clear()
        # A new object under an id seen before, every field equal: the same key, without
        # building it (a checkpointer hands back the thread this way each turn).
        mid = getattr(message, "id", None)
        prev = self._by_id.get(mid) if mid is not None else None
        if prev is not None and same_message(prev[0], message):
            key = prev[1]
        else:
            key = message_key(message)
            if mid is not None:
                if len(self._by_id) > _MEMO_LIMIT:
                    self._by_id.clear()
                self._by_id[mid] = (message, key)
        memo[id(message)] = (message, key)
        return key

    def to_core(self, message: object) -> AgentMessage:
        """See :func:`to_core`."""
        return to_core(
            message,
            trust_usage=self.trust_usage,
            model_id=self.model_id,
            key=self.record_key,
            provider=self.provider,
        )

    def is_pinned(self, message: object) -> bool:
        """Leading ``SystemMessage`` objects are pinned."""
        return isinstance(message, SystemMessage)


# --------------------------------------------------------------- transcripts


@dataclass(slots=True)
class Converted:
    """A LangChain transcript seen by the core."""

    pinned: int
    """How many leading system messages are pinned (kept outside the core transcript)."""
    pinned_tokens: int
    """Their estimated tokens, handed to the core as ``pinned_tokens``."""
    core: list[AgentMessage] = field(default_factory=list)
    """The converted messages the core measures and slices."""
    origin: list[int] = field(default_factory=list)
    """``origin[i]`` is the index in the LangChain list that ``core[i]`` came from."""


class Converter:
    """Converts transcripts, reusing the previous conversion when a list only grew.

    The core's token ledger recognises messages by identity, so handing it the *same*
    converted objects for the same LangChain objects keeps re-gating a growing
    transcript proportional to the new messages only. A LangChain message mutated in
    place after it was converted is not noticed; build a new message instead.
    """

    def __init__(
        self,
        *,
        model_id: str | None = None,
        counter: Any = None,
        use_usage: bool = True,
        key: bytes | None = None,
        provider: str | None = None,
    ) -> None:
        self.model_id = model_id
        """Id of the guarded model (compared with each reply's ``model_name``)."""
        self.use_usage = use_usage
        """False: never anchor on ``usage_metadata`` (the caller does not store the result)."""
        self._counter = counter
        self.record_key = key
        """The memory store's key digest records are verified with (None: the default)."""
        self._trusted = LangChainCodec(
            trust_usage=use_usage, model_id=model_id, key=key, provider=provider
        )
        self._untrusted = LangChainCodec(
            trust_usage=False, model_id=model_id, key=key, provider=provider
        )
        self._last_input: list[object] = []
        self._last: Converted | None = None
        self._ids: set[int] = set()  # ids of ``_last.core``: a repeated object is re-made
        self._stale_until = -1  # index (in the LangChain list) up to which usage is stale
        self._view: tuple[Converted, Converted] | None = None

    def convert(self, messages: Sequence[object]) -> Converted:
        """Convert ``messages``; leading system messages are pinned, never converted.

        A provider's compaction block pins more: see :meth:`_past_provider_compaction`.
        """
        return self._past_provider_compaction(self._convert(messages))

    def _past_provider_compaction(self, raw: Converted) -> Converted:
        """``raw`` with everything up to the newest provider compaction pinned too.

        The provider folded what came before its compaction block and drops it from the
        window: those messages are kept verbatim, in place, and not counted; the reply
        carrying the block (with the results of its calls) is kept and counted as pinned.
        The core sees only what followed, so a digest of ours goes after the block.
        """
        if self._view is not None and self._view[0] is raw:
            return self._view[1]  # the same conversion: the same view (the ledger's list)
        bound = provider_boundary(raw.core)
        view = raw
        if bound is not None:
            start, end = bound
            tokens = sum(cached_estimates(raw.core[start:end], self._counter))
            pinned, core, origin = raw.origin[end - 1] + 1, raw.core[end:], raw.origin[end:]
            view = Converted(pinned, raw.pinned_tokens + tokens, core, origin)
        self._view = (raw, view)
        return view

    def _convert(self, messages: Sequence[object]) -> Converted:
        last, known = self._last, self._last_input
        k = len(known)
        if (
            last is not None
            and k
            and len(messages) >= k
            and messages[k - 1] is known[-1]
            and last.pinned < k
        ):
            if len(messages) == k and type(messages) is list and messages == known:
                # The same list again: one comparison of pointers, and the same result
                # (callers treat it as read-only), so the core's ledger sees the same list.
                return last
            if list(messages[:k]) != known:
                return self._convert_from(messages, None)
            return self._convert_from(messages, last)
        return self._convert_from(messages, None)

    def _convert_from(self, messages: Sequence[object], last: Converted | None) -> Converted:
        if last is not None:
            start = len(self._last_input)
            out = Converted(last.pinned, last.pinned_tokens, list(last.core), list(last.origin))
        else:
            pinned = bridge.pinned_count(self._trusted, messages)
            tokens = sum(
                cached_estimates(bridge.convert(self._trusted, messages[:pinned]), self._counter)
            )
            out = Converted(pinned, tokens)
            start = pinned
            self._ids = set()  # rebuilt from the first message
            self._stale_until = self._find_stale(messages, pinned)
        # An instruction to the graph's reducer is not context.
        if KEYED.issuperset(map(type, messages[start:])):  # the rule: no reducer command
            origin = list(range(start, len(messages)))
        else:
            origin = [
                i
                for i in range(start, len(messages))
                if type(messages[i]) in KEYED or not isinstance(messages[i], RemoveMessage)
            ]
        # Usage figures up to the newest digest's kept turns are stale: converted untrusted.
        split = next((j for j, i in enumerate(origin) if i > self._stale_until), len(origin))
        if len(origin) == len(messages) - start:  # contiguous: slices, not a lookup each
            chosen = list(messages[start:])
        else:
            chosen = [messages[i] for i in origin]
        new = [
            *self._by_id(self._untrusted, chosen[:split]),
            *self._by_id(self._trusted, chosen[split:]),
        ]
        seen = self._ids
        fresh = set(map(id, new))
        if len(fresh) == len(new) and seen.isdisjoint(fresh):
            seen |= fresh
        else:
            # The same core object twice would confuse the mapping back: re-make repeats.
            for j, c in enumerate(new):
                if id(c) in seen:
                    new[j] = (self._untrusted if j < split else self._trusted).to_core(
                        messages[origin[j]]
                    )
                seen.add(id(new[j]))
        out.core.extend(new)
        out.origin.extend(origin)
        self._last_input = list(messages)
        self._last = out
        return out

    def _by_id(self, codec: LangChainCodec, messages: list[Any]) -> list[AgentMessage]:
        """Conversions, first by message id: an equal message under a known id is a hit.

        A checkpointer hands back new objects with the ids they had, to this engine or to
        a new one (the memo, :data:`window_budget.bridge.RECOGNISED`, is process-wide).
        All ids are looked up at once; when the leading run of known ids (all but what was
        appended, as a rule) holds messages equal to the remembered ones field for field
        (:func:`same_messages`: C-level comparisons, no content hashed) their core messages
        are the answer. Anything else is checked on its own, and what is still unknown goes
        through the bridge's content cache.
        """
        memo = bridge.RECOGNISED
        name = codec.name
        hits: list[Any] = memo.get_many(name, list(map(_MESSAGE_ID, messages)))
        try:
            k = hits.index(None)  # usually the messages appended since: at the end
        except ValueError:
            k = len(hits)
        out: list[AgentMessage | None]
        if k and same_messages(messages[:k], list(map(_NATIVE, hits[:k]))):
            out = [*map(_CORE, hits[:k]), *[None] * (len(messages) - k)]
        else:
            out, k = [None] * len(messages), 0
        missing: list[int] = []
        for i in range(k, len(messages)):
            hit = hits[i]
            if hit is not None and same_message(hit[0], messages[i]):
                out[i] = hit[1]
            else:
                missing.append(i)
        if missing:
            fresh = bridge.convert(codec, [messages[i] for i in missing])
            for i, core in zip(missing, fresh, strict=True):
                out[i] = core
            memo.put_many(
                name, [(messages[i].id, messages[i], fresh[j]) for j, i in enumerate(missing)]
            )
        return out  # type: ignore[return-value]

    def forget(self) -> None:
        """Drop the codecs' per-run key memos."""
        self._trusted.forget()
        self._untrusted.forget()

    @property
    def first_core(self) -> AgentMessage | None:
        """The first core message of the last conversion (what the condenser knows it by)."""
        return self._view[1].core[0] if self._view is not None and self._view[1].core else None

    @property
    def codec(self) -> LangChainCodec:
        """The codec for messages whose usage figures are trusted."""
        return self._trusted

    def _find_stale(self, messages: Sequence[object], start: int) -> int:
        """Last index whose usage figure predates the newest digest (-1 when none does).

        The tail a compaction kept still carries the usage its model reported *before*
        the digest existed; the record's ``kept`` count says how many messages that is.
        """
        for i in range(len(messages) - 1, start - 1, -1):
            m = messages[i]
            if type(m) is not HumanMessage or not m.additional_kwargs:
                continue  # the common case, without the record lookup
            record = digest_record(m, key=self.record_key)
            if record is not None:
                kept = record.get("kept")
                return i + (kept if isinstance(kept, int) and kept >= 0 else 0)
        return -1
