"""An adapter's codec, and conversion to core messages through one content-keyed cache."""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence
from itertools import repeat
from typing import Any, Final, Protocol

from window_budget.budget import ContentCache, fingerprint, key_size
from window_budget.messages import AgentMessage


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
