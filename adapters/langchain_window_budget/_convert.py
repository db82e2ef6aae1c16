"""Conversion between ``langchain_core`` messages and the core's message contract.

Only the direction LangChain → core is a full conversion: the core measures, slices and
summarizes the converted copies, and the caller gets back its *own* LangChain objects
for the kept tail. The reverse direction builds just two things: the digest message and,
when a tail message had to be shortened to fit, a shortened copy of the original.

The digest is a ``HumanMessage`` whose text starts with the core's header and whose
``additional_kwargs["window_budget"]`` holds the bridge's digest record (see
:func:`digest_record`; the LlamaIndex adapter writes the same record under the same key).
Conversions go through the bridge's process-wide content cache, keyed by the message id
and content (:func:`message_key`), so a thread a checkpointer deserializes every turn is
converted once, not once per turn.
``additional_kwargs`` was chosen over ``response_metadata`` because LangChain's own
``SummarizationMiddleware`` marks its summaries there too, and chat-model integrations
do not forward unknown ``additional_kwargs`` keys of a human message to the provider.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
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

from window_budget import bridge
from window_budget.budget import cached_estimates, usage_from_langchain
from window_budget.digest import SESSION_HEADER
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    Block,
    CompactionSummaryMessage,
    CustomMessage,
    DigestMessage,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from window_budget.pipeline.summarize import DigestAudit

__all__ = [
    "DIGEST_KEY",
    "Converted",
    "Converter",
    "OpaqueMessage",
    "build_digest",
    "chat_model_id",
    "digest_record",
    "is_digest",
    "is_window_budget_digest",
    "mark_usage_stale",
    "message_fields",
    "message_key",
    "same_messages",
    "shortened_copy",
    "usage_is_stale",
]

DIGEST_KEY = bridge.RECORD_KEY
"""Key under ``additional_kwargs`` that marks a window-budget digest and holds its record."""


@dataclass(frozen=True, slots=True)
class OpaqueMessage:
    """A message of a kind the adapter does not know, carried for counting only."""

    role: str
    """The object's type name (or its ``type`` field)."""
    serialized: str
    """Its JSON form: what the heuristic bills it for."""


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=repr, separators=(",", ":"))


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


def _reply_model(message: AIMessage) -> str | None:
    meta = message.response_metadata or {}
    for key in ("model_name", "model", "model_id"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def digest_record(message: object) -> dict[str, Any] | None:
    """The record a window-budget digest carries, or None for any other message.

    ``covered`` and ``kept`` count the messages it stands for and the turns kept with it;
    ``fallback`` marks the network-free digest; every other field of the core's
    ``DigestMessage`` travels too, with ``compactions``, ``archive`` (where the dropped
    head went) and, for a model-written digest, ``audit`` (``in_ledger``, ``checked``,
    ``found``, ``appended``, ``left_out``: the facts the model's text kept and those
    pinned back) from this adapter.
    """
    if not isinstance(message, HumanMessage):
        return None
    return bridge.read_digest_record(message.additional_kwargs, message.text)


_NODE_NAMES: set[str] = set()
"""Names of the graph nodes window-budget's middleware runs as (``<name>.before_model``)."""


def register_node_name(name: str) -> None:
    """Remember a middleware's name, so its nodes' stream output is recognised."""
    _NODE_NAMES.add(name)


def is_digest(
    message: object,
    metadata: Mapping[str, Any] | None = None,
) -> bool:
    """True for a digest this adapter wrote, or for anything window-budget streamed.

    Without ``metadata``: recognises the digest message (or chunk) by its record. With the
    metadata of a ``stream_mode="messages"`` item (``for chunk, metadata in
    agent.stream(..., stream_mode="messages")``) it also recognises what the middleware's
    own node streams beside the digest (the ``RemoveMessage`` of a state rewrite) and any
    token of a summary call (tagged ``window-budget``), so a UI skips all of it with one
    test: ``if is_digest(chunk, metadata): continue``.

    The same question as the core's :func:`window_budget.is_digest`, asked of LangChain
    messages and stream items; ``is_window_budget_digest`` is its former name, kept as an
    alias.
    """
    if digest_record(message) is not None:
        return True
    if not metadata:
        return False
    node = metadata.get("langgraph_node")
    if isinstance(node, str) and node.partition(".")[0] in _NODE_NAMES:
        return True
    tags = metadata.get("tags")
    return isinstance(tags, list | tuple) and "window-budget" in tags


is_window_budget_digest = is_digest
"""Former name of :func:`is_digest`, kept so existing imports keep working."""


# ------------------------------------------------------------------ content


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
    return ImageBlock(str(data)[:64], mime)  # the core bills images at a flat rate


def _reasoning_text(block: Mapping[str, Any]) -> str:
    text = block.get("reasoning") or block.get("thinking") or block.get("text")
    if isinstance(text, str):
        return text
    summary = block.get("summary")  # OpenAI Responses: a list of summary parts
    if isinstance(summary, list):
        return "\n".join(str(p.get("text", "")) for p in summary if isinstance(p, Mapping))
    return _dump(dict(block))


_MEDIA_KINDS = frozenset(
    {"file", "audio", "video", "input_audio", "document", "media", "input_file", "pdf"}
)
"""Block types carrying binary data; shortened, they become a text placeholder."""


def _block_sources(
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
            out.append((i, TextBlock(_dump(raw))))
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
        else:
            # Anything else (files, citations, provider blocks) is billed as its JSON.
            out.append((i, TextBlock(_dump(dict(raw)))))
    return out


def _blocks(content: str | list[Any], *, skip_tool_use: bool) -> list[Block]:
    return [b for _, b in _block_sources(content, skip_tool_use=skip_tool_use)]


def _content(content: str | list[Any]) -> str | tuple[Block, ...]:
    if isinstance(content, str):
        return content
    return tuple(_blocks(content, skip_tool_use=False))


def _usage(message: AIMessage) -> Usage | None:
    return usage_from_langchain(message.usage_metadata) if message.usage_metadata else None


def usage_is_stale(message: object) -> bool:
    """True for an ``AIMessage`` this adapter marked: its usage measured another request."""
    if not isinstance(message, AIMessage):
        return False
    mark = (message.response_metadata or {}).get(DIGEST_KEY)
    return isinstance(mark, dict) and mark.get("stale_usage") is True


def mark_usage_stale(message: BaseMessage) -> BaseMessage:
    """A copy of an ``AIMessage`` whose usage figure the gate will no longer anchor on.

    Used when the figure measured a list other than the one the message now sits in (a
    trimmed transcript, a request condensed for one call only). ``usage_metadata`` itself
    is kept for cost accounting; the mark lives in ``response_metadata``, which chat-model
    integrations do not send back to the provider. Other messages come back unchanged.
    """
    if not isinstance(message, AIMessage) or not message.usage_metadata or usage_is_stale(message):
        return message
    meta = dict(message.response_metadata or {})
    meta[DIGEST_KEY] = {**(meta.get(DIGEST_KEY) or {}), "stale_usage": True}
    return message.model_copy(update={"response_metadata": meta})


def _ai(message: AIMessage, *, trust_usage: bool, model_id: str | None) -> AssistantMessage:
    blocks = _blocks(message.content, skip_tool_use=True)
    extra = message.additional_kwargs or {}
    reasoning = extra.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        blocks.insert(0, ThinkingBlock(reasoning))
    for call in message.tool_calls:
        blocks.append(
            ToolCallBlock(str(call.get("id") or ""), call["name"], dict(call.get("args") or {}))
        )
    for i, bad in enumerate(message.invalid_tool_calls):
        # Providers get malformed calls back too, and a result may answer one.
        blocks.append(
            ToolCallBlock(
                str(bad.get("id") or f"invalid-{i}"),
                str(bad.get("name") or ""),
                {"_raw": bad.get("args"), "_error": bad.get("error")},
            )
        )
    fn = extra.get("function_call")
    if isinstance(fn, dict) and fn.get("name"):
        blocks.append(
            ToolCallBlock(f"function:{fn['name']}", str(fn["name"]), {"_raw": fn.get("arguments")})
        )
    usage = _usage(message) if trust_usage and not usage_is_stale(message) else None
    reply_model = _reply_model(message)
    meta = message.response_metadata or {}
    stop = meta.get("finish_reason") or meta.get("stop_reason")
    return AssistantMessage(
        tuple(blocks),
        usage=usage,
        # The core ignores a figure whose model differs from the guarded model; without a
        # known id on both sides there is nothing to compare, so the figure is trusted.
        model=reply_model if model_id is not None else None,
        stop_reason=stop if isinstance(stop, str) else None,
    )


def _opaque(message: object) -> OpaqueMessage:
    if isinstance(message, BaseMessage):
        try:
            payload: object = message.model_dump()
        except Exception:
            payload = repr(message)
        return OpaqueMessage(str(getattr(message, "type", type(message).__name__)), _dump(payload))
    return OpaqueMessage(
        type(message).__name__,
        _dump(message if isinstance(message, Mapping | list | str) else repr(message)),
    )


def to_core(
    message: object, *, trust_usage: bool = True, model_id: str | None = None
) -> AgentMessage:
    """The core's view of one LangChain message (a new value; ``message`` is not touched)."""
    if isinstance(message, HumanMessage):
        record = digest_record(message)
        content = _content(message.content)
        if record is not None:
            if isinstance(content, str) and not content.startswith(SESSION_HEADER):
                content = f"{SESSION_HEADER}\n\n{content}"
            return bridge.digest_from_record(content, record)
        if (message.additional_kwargs or {}).get("lc_source") == "summarization":
            # LangChain's SummarizationMiddleware summary: carried in like a digest.
            return CompactionSummaryMessage(message.text)
        if record is not None:  # only a marked digest is trusted as one, never a lookalike
            return DigestMessage(content)
        return UserMessage(content)
    if isinstance(message, AIMessage):
        return _ai(message, trust_usage=trust_usage, model_id=model_id)
    if isinstance(message, ToolMessage):
        return ToolResultMessage(
            str(message.tool_call_id),
            message.name or "",
            _content(message.content),
            is_error=message.status == "error",
        )
    if isinstance(message, FunctionMessage):
        return ToolResultMessage(
            f"function:{message.name}", message.name, _content(message.content)
        )
    if isinstance(message, SystemMessage):
        return CustomMessage("system", _content(message.content))
    if isinstance(message, ChatMessage):
        if message.role in ("user", "human"):
            return UserMessage(_content(message.content))
        return CustomMessage(f"chat:{message.role}", _content(message.content))
    return _opaque(message)


# --------------------------------------------------------------- the codec

_META_KEYS = ("model_name", "model", "model_id", "finish_reason", "stop_reason", DIGEST_KEY)
"""The ``response_metadata`` entries :func:`to_core` reads (the rest never reaches it)."""


def _ai_key(m: AIMessage, content: str, kwargs: str) -> Hashable:
    meta = m.response_metadata or {}
    return (
        "ai",
        m.id,
        content,
        kwargs,
        repr(m.tool_calls) if m.tool_calls else "",
        repr(m.invalid_tool_calls) if m.invalid_tool_calls else "",
        repr(m.usage_metadata) if m.usage_metadata else "",
        repr([meta.get(k) for k in _META_KEYS]) if meta else "",
    )


_MESSAGE_ID, _NATIVE, _CORE = attrgetter("id"), itemgetter(0), itemgetter(1)
_KEYED = frozenset({HumanMessage, AIMessage, ToolMessage, SystemMessage})
_KEY_NAMES: dict[type, str] = {HumanMessage: "human", SystemMessage: "system"}
_MEMO_LIMIT = 50_000
"""Messages a codec remembers the key of (by identity) before it starts over."""


def message_key(message: object) -> Hashable | None:
    """What decides ``to_core(message)``: its id and content, exactly; None when unknown.

    Survives a checkpointer's round trip (LangGraph gives every message an id), and
    changes whenever anything the conversion reads changes, so content edited under the
    same id converts afresh.
    """
    kind = type(message)
    if kind not in _KEYED:
        return None  # a subclass or an unusual message: converted every time
    m: Any = message
    content = m.content if type(m.content) is str else repr(m.content)
    kwargs = repr(m.additional_kwargs) if m.additional_kwargs else ""
    if kind is AIMessage:
        return _ai_key(m, content, kwargs)
    # Names, not classes, in keys: a tuple of strings is not tracked by the cyclic garbage
    # collector, and a large cache of tracked tuples slows every collection of the process.
    if kind is ToolMessage:
        return ("tool", m.id, content, kwargs, m.tool_call_id, m.name, m.status)
    return (_KEY_NAMES[kind], m.id, content, kwargs)


def _same_message(a: Any, b: Any) -> bool:
    """True when ``b`` converts exactly as ``a`` does (same type, equal fields it reads)."""
    kind = type(a)
    if kind is not type(b) or kind not in _KEYED:
        return False
    if (
        a.content != b.content
        or a.additional_kwargs != b.additional_kwargs
        or a.response_metadata != b.response_metadata
        or a.name != b.name
    ):
        return False
    if kind is AIMessage:
        return bool(
            a.tool_calls == b.tool_calls
            and a.usage_metadata == b.usage_metadata
            and a.invalid_tool_calls == b.invalid_tool_calls
        )
    if kind is ToolMessage:
        return bool(a.tool_call_id == b.tool_call_id and a.status == b.status)
    return True


MessageFields = tuple[list[type], list[dict[str, Any]]]
"""Per message its class and its fields (the instance ``__dict__``): see :func:`same_messages`."""


def message_fields(messages: Sequence[object]) -> MessageFields | None:
    """The classes and field dicts of ``messages`` (C-level maps; the dicts are not copied).

    None when an object has no ``__dict__``.
    """
    try:
        return list(map(type, messages)), list(map(vars, messages))
    except TypeError:
        return None


def same_messages(
    new: Sequence[object], old: Sequence[object], *, old_fields: MessageFields | None = None
) -> bool:
    """True when ``new[i]`` converts exactly as ``old[i]`` does, for every ``i``.

    Made for a checkpointer's thread: the same messages as new objects each turn. Compares
    the classes and then every field (the instances' ``__dict__``, which holds all of a
    LangChain message's declared fields, so nothing :func:`to_core` reads is left out)
    with C-level list comparisons: no Python call per message, no key built, no content
    hashed. ``old_fields`` is :func:`message_fields` of ``old`` when the caller kept it.
    Objects without a ``__dict__`` compare False.
    """
    if len(new) != len(old):
        return False
    mine = message_fields(new)
    theirs = old_fields if old_fields is not None else message_fields(old)
    return mine is not None and mine == theirs


class LangChainCodec:
    """The bridge codec for LangChain messages (see :class:`window_budget.bridge.Codec`)."""

    def __init__(self, *, trust_usage: bool = True, model_id: str | None = None) -> None:
        self.trust_usage = trust_usage
        """Whether ``usage_metadata`` becomes the core's usage (the anchor)."""
        self.model_id = model_id
        """Id of the guarded model."""
        self.name = f"langchain:{trust_usage}:{model_id}"
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
        if prev is not None and _same_message(prev[0], message):
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
        return to_core(message, trust_usage=self.trust_usage, model_id=self.model_id)

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
        self, *, model_id: str | None = None, counter: Any = None, use_usage: bool = True
    ) -> None:
        self.model_id = model_id
        """Id of the guarded model (compared with each reply's ``model_name``)."""
        self.use_usage = use_usage
        """False: never anchor on ``usage_metadata`` (the caller does not store the result)."""
        self._counter = counter
        self._trusted = LangChainCodec(trust_usage=use_usage, model_id=model_id)
        self._untrusted = LangChainCodec(trust_usage=False, model_id=model_id)
        self._last_input: list[object] = []
        self._last: Converted | None = None
        self._ids: set[int] = set()  # ids of ``_last.core``: a repeated object is re-made
        self._stale_until = -1  # index (in the LangChain list) up to which usage is stale

    def convert(self, messages: Sequence[object]) -> Converted:
        """Convert ``messages``; leading system messages are pinned, never converted."""
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
        if _KEYED.issuperset(map(type, messages[start:])):  # the rule: no reducer command
            origin = list(range(start, len(messages)))
        else:
            origin = [
                i
                for i in range(start, len(messages))
                if type(messages[i]) in _KEYED or not isinstance(messages[i], RemoveMessage)
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
            if hit is not None and _same_message(hit[0], messages[i]):
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
    def codec(self) -> LangChainCodec:
        """The codec for messages whose usage figures are trusted."""
        return self._trusted

    @staticmethod
    def _find_stale(messages: Sequence[object], start: int) -> int:
        """Last index whose usage figure predates the newest digest (-1 when none does).

        The tail a compaction kept still carries the usage its model reported *before*
        the digest existed; the record's ``kept`` count says how many messages that is.
        """
        for i in range(len(messages) - 1, start - 1, -1):
            m = messages[i]
            if type(m) is not HumanMessage or not m.additional_kwargs:
                continue  # the common case, without the record lookup
            record = digest_record(m)
            if record is not None:
                kept = record.get("kept")
                return i + (kept if isinstance(kept, int) and kept >= 0 else 0)
        return -1


# ------------------------------------------------------------------ reverse


def build_digest(
    text: str,
    *,
    covered: int,
    kept: int,
    compactions: int,
    fallback: bool,
    archive: Mapping[str, Any] | None = None,
    source: object = None,
    audit: DigestAudit | None = None,
) -> HumanMessage:
    """The digest as LangChain carries it: a ``HumanMessage`` with the bridge's record.

    ``source`` is the core's digest (``Summary.message``): every field it has beyond the
    counts given here (a fact ledger, say) travels in the record too. ``audit`` (the check of a
    model-written digest against the fact ledger) is recorded under ``"audit"``.
    """
    digest = bridge.digest_of(
        text, source, covered_count=covered, kept_count=kept, fallback=fallback
    )
    extra: dict[str, Any] = {"compactions": compactions}
    if archive is not None:
        extra["archive"] = dict(archive)
    if audit is not None:
        extra["audit"] = dataclasses.asdict(audit)
    return HumanMessage(
        content=text,
        additional_kwargs={DIGEST_KEY: bridge.digest_record(digest, **extra)},
        id=f"window-budget-digest-{uuid.uuid4().hex}",
    )


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
    if kind in ("image", "image_url") or kind in _MEDIA_KINDS or text is None:
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


def shortened_copy(original: BaseMessage, shortened: AgentMessage) -> BaseMessage:
    """A copy of ``original`` carrying the shortened text of ``shortened``.

    Block by block, in the original's own shape: ids, tool calls, block types and
    ``additional_kwargs`` are kept; a shortened ``reasoning_content`` stays in
    ``additional_kwargs``; images, files, audio and video become a short text placeholder;
    signed or redacted thinking is left intact. Returns ``original`` when nothing changed.
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
            and digest_record(original) is not None
            and content.startswith(SESSION_HEADER)
            and not original.content.startswith(SESSION_HEADER)
        ):
            content = content[len(SESSION_HEADER) :].lstrip("\n")
        return original.model_copy(update={"content": content})
    new_blocks = list(content)
    update: dict[str, Any] = {}
    if isinstance(original, AIMessage):
        sources = _block_sources(original.content, skip_tool_use=True)
        extra = original.additional_kwargs or {}
        reasoning = extra.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            first = new_blocks.pop(0)
            text = _block_text(first)
            if text is not None and text != reasoning:
                update["additional_kwargs"] = {**extra, "reasoning_content": text}
        new_blocks = [b for b in new_blocks if not isinstance(b, ToolCallBlock)]
    else:
        sources = _block_sources(original.content, skip_tool_use=False)
    if len(sources) != len(new_blocks):  # an unexpected shape: fall back to plain text
        texts = [t for b in new_blocks if (t := _block_text(b)) is not None]
        update["content"] = "\n".join(texts)
    else:
        update["content"] = _rebuilt_content(original.content, sources, new_blocks)
    return original.model_copy(update=update)
