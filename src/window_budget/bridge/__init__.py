"""What both framework adapters share: native messages in, core messages out, and back.

An adapter supplies a small :class:`Codec` — how to fingerprint, convert and recognise
its framework's messages — and this module does the rest the same way for every
framework: a process-wide conversion cache keyed by *content* (equal messages rebuilt
as new objects every turn, by a checkpointer or a per-request memory, convert once per
process), the count of pinned leading system messages, one digest record carried under
one key with every :class:`~window_budget.messages.DigestMessage` field, one registry
of named token counters, the walk that maps the core's result back onto native messages
(:func:`map_result`) and the completer pair built from a framework's model calls
(:func:`make_completers`). Nothing here imports a framework.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence
from itertools import repeat
from typing import Any, Final, Protocol, TypeVar

from window_budget.bridge.counters import (
    CounterFactory as CounterFactory,
)
from window_budget.bridge.counters import (
    CounterRecogniser as CounterRecogniser,
)
from window_budget.bridge.counters import (
    register_counter as register_counter,
)
from window_budget.bridge.counters import (
    register_counter_kind as register_counter_kind,
)
from window_budget.bridge.counters import (
    resolve_counter_spec as resolve_counter_spec,
)
from window_budget.bridge.results import Mapped as Mapped
from window_budget.bridge.results import Slot as Slot
from window_budget.bridge.results import map_result as map_result
from window_budget.bridge.results import result_slots as result_slots
from window_budget.budget._cache import ContentCache, fingerprint, key_size
from window_budget.contract import (
    CompleteFn,
    CompleteOptions,
    Context,
    Model,
    SyncCompleteFn,
)
from window_budget.memory.records import (
    RECORD_KEY as RECORD_KEY,
)
from window_budget.memory.records import (
    SEAL_FIELD as SEAL_FIELD,
)
from window_budget.memory.records import (
    SECRET_ENV as SECRET_ENV,
)
from window_budget.memory.records import (
    TEXT_FIELD as TEXT_FIELD,
)
from window_budget.memory.records import (
    digest_from_record as digest_from_record,
)
from window_budget.memory.records import (
    digest_of as digest_of,
)
from window_budget.memory.records import (
    digest_record as digest_record,
)
from window_budget.memory.records import (
    head_counts as head_counts,
)
from window_budget.memory.records import (
    read_digest_record as read_digest_record,
)
from window_budget.memory.records import (
    record_key as record_key,
)
from window_budget.memory.records import (
    resealed as resealed,
)
from window_budget.memory.records import (
    verified_record as verified_record,
)
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
)

__all__ = [
    "CONVERSIONS",
    "DIGESTS",
    "RECOGNISED",
    "RECORD_KEY",
    "Codec",
    "Mapped",
    "ModelCalls",
    "Recognised",
    "Slot",
    "convert",
    "digest_from_record",
    "digest_of",
    "digest_record",
    "head_chain",
    "head_counts",
    "make_completers",
    "map_result",
    "pinned_count",
    "read_digest_record",
    "recall_digest",
    "record_key",
    "register_counter",
    "register_counter_kind",
    "remember_digest",
    "resealed",
    "resolve_counter_spec",
    "result_slots",
    "verified_record",
]


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


# ------------------------------------------------------------- the completer pair

P = TypeVar("P")
"""A framework's prompt (its list of messages)."""
R = TypeVar("R")
"""A framework's reply object."""


class ModelCalls(Protocol[P, R]):
    """How one framework's model is called for a summary: the part an adapter writes."""

    def prompt(self, context: Context) -> P:
        """The summary request in the framework's messages."""
        ...

    def call(self, prompt: P, options: CompleteOptions | None) -> R:
        """Call the model, blocking (tags, output cap: the framework's business)."""
        ...

    async def acall(self, prompt: P, options: CompleteOptions | None) -> R:
        """Call the model on the event loop."""
        ...

    def reply(self, reply: R, model: Model) -> AssistantMessage:
        """The core's view of the model's reply (its text, its usage when trusted)."""
        ...


def make_completers(calls: ModelCalls[P, R]) -> tuple[CompleteFn, SyncCompleteFn]:
    """The core's ``(complete, complete_sync)`` pair over a framework's model calls.

    Both check the run's cancel token before calling out (a cancelled run makes no model
    call); the core's summarizer applies its timeout and watches the token during the
    call, and falls back to the network-free digest on an empty or failed reply.
    """

    async def complete(
        model: Model, context: Context, options: CompleteOptions | None = None
    ) -> AssistantMessage:
        if options is not None and options.signal is not None:
            options.signal.raise_if_cancelled()
        return calls.reply(await calls.acall(calls.prompt(context), options), model)

    def complete_sync(
        model: Model, context: Context, options: CompleteOptions | None = None
    ) -> AssistantMessage:
        if options is not None and options.signal is not None:
            options.signal.raise_if_cancelled()
        return calls.reply(calls.call(calls.prompt(context), options), model)

    return complete, complete_sync
