"""What both framework adapters share: native messages in, core messages out, and back.

An adapter supplies a small :class:`Codec` — how to fingerprint, convert and recognise
its framework's messages — and this module does the rest the same way for every
framework: a process-wide conversion cache keyed by *content* (equal messages rebuilt
as new objects every turn, by a checkpointer or a per-request memory, convert once per
process), the count of pinned leading system messages, one digest record carried under
one key with every :class:`~window_budget.messages.DigestMessage` field, and one registry
of named token counters. Nothing here imports a framework.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from itertools import repeat
from typing import Any, Final, Protocol

from window_budget.budget._cache import ContentCache, fingerprint, key_size
from window_budget.budget._counters import resolve_counter
from window_budget.contract import TokenCounter
from window_budget.errors import ConfigError
from window_budget.messages import AgentMessage, Content, DigestMessage, UserMessage

__all__ = [
    "CONVERSIONS",
    "DIGESTS",
    "LEGACY_COVERED_KEY",
    "LEGACY_FLAG_KEY",
    "RECOGNISED",
    "RECORD_KEY",
    "Codec",
    "Recognised",
    "convert",
    "digest_from_record",
    "digest_record",
    "head_chain",
    "pinned_count",
    "read_digest_record",
    "recall_digest",
    "register_counter",
    "register_counter_kind",
    "remember_digest",
    "resolve_counter_spec",
]

RECORD_KEY: Final = "window_budget"
"""The one key (under a message's ``additional_kwargs``) that holds a digest's record."""
LEGACY_FLAG_KEY: Final = "window_budget_digest"
"""Older LlamaIndex digests: a flag under this key (still read)."""
LEGACY_COVERED_KEY: Final = "window_budget_covered"
"""Older LlamaIndex digests: the covered count under this key (still read)."""


class Codec(Protocol):
    """How one framework's messages meet the core: the part an adapter writes."""

    name: str
    """Names the codec *and* every option its conversion depends on (part of cache keys)."""

    def key(self, message: Any) -> Hashable | None:
        """What survives deserialization and decides the conversion, or None (no caching).

        Must be exact — equal keys mean equal core messages — so it holds the content
        itself (the message id, its text, its tool calls), never a hash of it.
        """
        ...

    def to_core(self, message: Any) -> AgentMessage:
        """The core's view of one native message (a new value; the message is not touched)."""
        ...

    def is_pinned(self, message: Any) -> bool:
        """True for a leading system message: never summarized, always counted."""
        ...


# ---------------------------------------------------------------- conversion


def _core_size(message: object) -> int:
    fp = fingerprint(message)  # type: ignore[arg-type]
    return key_size(fp) if fp is not None else 1024


CONVERSIONS: Final = ContentCache(64 << 20, value_size=_core_size)
"""Process-wide native → core conversions, bounded by bytes, shared by every adapter."""


def convert(
    codec: Codec, messages: Sequence[Any], *, cache: ContentCache | None = None
) -> list[AgentMessage]:
    """The core messages for ``messages``, through the content-keyed conversion cache.

    Equal messages convert once per process, whatever objects carry them, so the core's
    token ledger (which recognises messages by identity) sees the same core objects turn
    after turn and estimates only what is new. Within one result no core object appears
    twice (a repeated one is converted afresh), so an adapter may map results back by
    identity.
    """
    store = CONVERSIONS if cache is None else cache
    name = codec.name
    keys: list[Hashable | None] = []
    for m in messages:
        k = codec.key(m)
        keys.append(None if k is None else (name, k))
    out: list[AgentMessage] = store.get_or_compute(keys, messages, codec.to_core)
    if len({id(c) for c in out}) != len(out):
        seen: set[int] = set()
        for i, c in enumerate(out):
            if id(c) in seen:
                out[i] = codec.to_core(messages[i])
            seen.add(id(out[i]))
    return out


class Recognised:
    """Per (codec name, native message id): the message last converted under it, and its core.

    Process-wide and bounded. A thread that reaches a *new* engine (a new middleware or
    memory per request, another thread's turn on a shared one) arrives as new objects under
    ids seen before. An adapter looks every id up at once (:meth:`get_many` is one C-level
    map over a dict), checks the remembered messages against the new ones in the
    framework's own terms (it decides what "equal" means), and reuses their core messages:
    no content key is built.
    The bound is a count of entries; past it the memo starts over (a cheap reset, not an
    eviction order: the content caches behind it still hold every conversion).
    """

    def __init__(self, limit: int = 50_000) -> None:
        self.limit = limit
        """Entries kept before the memo starts over."""
        self._data: dict[tuple[str, Hashable], tuple[Any, AgentMessage]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._data)

    def get_many(self, name: str, ids: Sequence[Hashable]) -> list[tuple[Any, AgentMessage] | None]:
        """Per id, ``(native message, core message)`` remembered under it, or None."""
        return list(map(self._data.get, zip(repeat(name), ids)))

    def put_many(self, name: str, items: Sequence[tuple[Hashable, Any, AgentMessage]]) -> None:
        """Remember ``(id, native message, core message)`` triples (None ids are skipped)."""
        if len(items) > self.limit:
            items = items[len(items) - self.limit :]  # the newest a bound's worth
        with self._lock:
            if len(self._data) + len(items) > self.limit:
                self._data.clear()
            for mid, native, core in items:
                if mid is not None:
                    self._data[(name, mid)] = (native, core)

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._data.clear()


RECOGNISED: Final = Recognised()
"""The process-wide id memo the adapters share (see :class:`Recognised`)."""


def pinned_count(codec: Codec, messages: Sequence[Any]) -> int:
    """How many leading messages are pinned system messages."""
    n = 0
    for m in messages:
        if not codec.is_pinned(m):
            break
        n += 1
    return n


# -------------------------------------------------------------- the digest record

_USER_FIELDS: Final = frozenset(f.name for f in dataclasses.fields(UserMessage))
_RECORD_NAMES: Final = {"covered_count": "covered", "kept_count": "kept"}
"""Record names of fields whose short names stored threads already use."""
_ALWAYS: Final = frozenset({"covered_count", "kept_count", "fallback"})
"""Fields always written; any other is written only when it differs from its default."""


def _digest_fields(kind: type[DigestMessage] = DigestMessage) -> list[dataclasses.Field[Any]]:
    """The fields a digest adds to a user message, in declaration order."""
    return [f for f in dataclasses.fields(kind) if f.init and f.name not in _USER_FIELDS]


def _count(value: object) -> int | None:
    """A stored count, or None when it is not a sane non-negative integer."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and 0 <= value < 1 << 53:
        return value
    return None


def digest_record(digest: DigestMessage, **extra: Any) -> dict[str, Any]:
    """The JSON-ready record a framework digest message carries under :data:`RECORD_KEY`.

    Every field :class:`DigestMessage` adds to a user message is written (iterated, not
    listed, so fields added later travel too; beyond the counts and ``fallback``, only
    when it differs from its default), then ``extra`` (adapter bookkeeping such as
    ``compactions`` or ``archive``). ``covered_count`` and ``kept_count`` are stored as
    ``covered`` and ``kept``.
    """
    record: dict[str, Any] = {"digest": True}
    for f in _digest_fields(type(digest)):
        value = getattr(digest, f.name)
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if f.name in _ALWAYS or value != default:
            record[_RECORD_NAMES.get(f.name, f.name)] = value
    record.update(extra)
    return record


def read_digest_record(kwargs: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The digest record in a message's ``additional_kwargs``, or None for other messages.

    Reads :data:`RECORD_KEY` and the older LlamaIndex keys, so stored threads keep
    working. Returns a new dict (the message is not touched).
    """
    if not kwargs:
        return None
    record = kwargs.get(RECORD_KEY)
    if isinstance(record, Mapping) and record.get("digest") is True:
        return dict(record)
    if kwargs.get(LEGACY_FLAG_KEY) is True:
        return {"digest": True, "covered": _count(kwargs.get(LEGACY_COVERED_KEY)) or 0}
    return None


def digest_from_record(
    content: Content, record: Mapping[str, Any], *, kind: type[DigestMessage] = DigestMessage
) -> DigestMessage:
    """Rebuild the core's :class:`DigestMessage` from its text and a stored record.

    The inverse of :func:`digest_record`: each digest field is taken from the record when
    present. Counts that are not sane non-negative integers (a hand-edited or hostile
    record) fall back to their defaults rather than reaching the budget math.
    """
    values: dict[str, Any] = {}
    for f in _digest_fields(kind):
        name = _RECORD_NAMES.get(f.name, f.name)
        if name not in record:
            continue
        value = record[name]
        if f.name in _RECORD_NAMES:
            value = _count(value)
            if value is None:
                continue
        elif f.name == "fallback":
            value = value is True
        values[f.name] = value
    try:
        return kind(content, **values)
    except (TypeError, ValueError):
        counts = {k: v for k, v in values.items() if k in _RECORD_NAMES}
        return kind(content, **counts)


# ---------------------------------------------------------------- named counters

CounterFactory = Callable[[Any], TokenCounter | None]
"""Builds a named counter; receives the adapter's context (its chat model or LLM)."""

_COUNTERS: dict[str, CounterFactory] = {
    "heuristic": lambda context: None,
    "tiktoken": lambda context: resolve_counter("tiktoken"),
}
_COUNTERS_LOCK = threading.Lock()


def register_counter(name: str, factory: CounterFactory) -> None:
    """Make ``counter=name`` mean ``factory(context)`` in every adapter."""
    with _COUNTERS_LOCK:
        _COUNTERS[name] = factory


CounterRecogniser = Callable[[Callable[..., Any]], TokenCounter | None]
"""Turns a framework's own counting function into a counter, or None when it is not one."""

_RECOGNISERS: list[CounterRecogniser] = []


def register_counter_kind(recognise: CounterRecogniser) -> None:
    """Teach every adapter a kind of counting callable (e.g. LangChain's message counters).

    ``resolve_counter_spec`` asks each recogniser, in registration order, about a callable
    that is not a :class:`~window_budget.contract.TokenCounter`; one that returns a counter claims
    it,
    and a recogniser that knows the callable is of its kind but unusable raises
    ``ConfigError``. Unclaimed callables are ``str -> int`` functions.
    """
    with _COUNTERS_LOCK:
        if recognise not in _RECOGNISERS:
            _RECOGNISERS.append(recognise)


def resolve_counter_spec(spec: object, context: Any = None) -> tuple[TokenCounter | None, str]:
    """The counter a spec names and the name it serializes under.

    ``spec`` is None or a registered name (``"heuristic"``, ``"tiktoken"``, and what the
    adapters register, e.g. ``"model"``), ``"tiktoken:<encoding>"``, a
    :class:`~window_budget.contract.TokenCounter` or a ``str -> int`` callable.

    Raises:
        ConfigError: a name that is neither registered nor a tiktoken encoding.

    """
    if spec is None:
        return None, "heuristic"
    if isinstance(spec, str):
        factory = _COUNTERS.get(spec)
        if factory is not None:
            return factory(context), spec
        if not spec.startswith("tiktoken:"):
            raise ConfigError(
                f"unknown counter {spec!r}; use one of {sorted(_COUNTERS)}, "
                "'tiktoken:<encoding>', a TokenCounter or a str -> int function"
            )
    if callable(spec) and not hasattr(spec, "count"):
        with _COUNTERS_LOCK:
            recognisers = list(_RECOGNISERS)
        for recognise in recognisers:
            claimed = recognise(spec)
            if claimed is not None:
                return claimed, claimed.name
    counter = resolve_counter(spec)  # type: ignore[arg-type]
    if isinstance(spec, str):
        return counter, spec
    return counter, str(getattr(counter, "name", "custom"))


# ------------------------------------------------------------ remembered digests

DIGESTS: Final = ContentCache(16 << 20, value_size=lambda entry: 256 + len(str(entry[1])))
"""Process-wide: the digest written for a head of a transcript, keyed by that head."""


_LENGTHS: dict[Hashable, set[int]] = {}
"""Per seed, the head lengths remembered: a recall looks up only those, not every prefix."""
_LENGTHS_LOCK = threading.Lock()


def head_chain(
    codec: Codec, messages: Sequence[Any], seed: Hashable, prev: Sequence[int] = ()
) -> list[int]:
    """Running fingerprints of ``messages``' prefixes: entry ``i`` stands for ``messages[:i+1]``.

    ``prev`` is the chain of a prefix already fingerprinted (``messages`` then holds only
    what follows it). Stops at the first message the codec cannot key (nothing past it
    can be recalled).
    """
    chain: list[int] = list(prev)
    h = chain[-1] if chain else hash(seed)
    for m in messages:
        k = codec.key(m)
        if k is None:
            break
        h = hash((h, k))
        chain.append(h)
    return chain


def recall_digest(chain: Sequence[int], seed: Hashable) -> tuple[int, Any] | None:
    """The longest remembered head: ``(its length, the digest written for it)``, or None."""
    with _LENGTHS_LOCK:
        lengths = sorted((n for n in _LENGTHS.get(seed, ()) if n <= len(chain)), reverse=True)
    if not lengths:
        return None
    found = DIGESTS.get_many([("head", n, chain[n - 1]) for n in lengths])
    for hit in found:
        if hit is not None:
            length, digest = hit
            return length, digest
    return None


def remember_digest(chain: Sequence[int], length: int, digest: Any, seed: Hashable) -> None:
    """Remember that ``digest`` was written for the head ``chain`` fingerprints to ``length``."""
    if 0 < length <= len(chain):
        DIGESTS.put_many([(("head", length, chain[length - 1]), (length, digest))])
        with _LENGTHS_LOCK:
            known = _LENGTHS.setdefault(seed, set())
            if len(known) > 4096:  # stale lengths only cost lookups that miss
                known.clear()
            known.add(length)
