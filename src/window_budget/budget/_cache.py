"""A process-wide estimate cache keyed by content, so equal messages are estimated once.

Agents and chat memories hand the library *equal messages as new objects* every turn: a
LangGraph checkpointer deserializes the thread on each ``invoke``, a web server builds a
memory per request over a stored history. Caches keyed by object identity never hit
there. :class:`ContentCache` maps a message's *content* (its :func:`fingerprint`) to its
estimate instead; it is bounded by bytes, least-recently-used entries go first, and one
lock makes it safe to share between threads. The estimates themselves always come from
:func:`~window_budget.budget._estimate.estimate_message_tokens`, so the cache never
disagrees with the heuristic (or counter) it stands in front of.

>>> from window_budget import UserMessage
>>> a, b = UserMessage("same words"), UserMessage("same words")
>>> cache = ContentCache(max_bytes=1 << 20)
>>> cached_estimates([a], cache=cache) == cached_estimates([b], cache=cache)
True
>>> cache.misses, cache.hits
(1, 1)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from itertools import accumulate
from typing import Any, Final, cast

from window_budget.budget._estimate import estimate_message_tokens
from window_budget.contract import TokenCounter
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Content,
    CustomMessage,
    DigestMessage,
    ImageBlock,
    ProviderCompactionBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ESTIMATES",
    "ContentCache",
    "cached_estimates",
    "estimate_tokens",
    "fingerprint",
    "key_size",
    "prefix_tokens",
]

DEFAULT_MAX_BYTES: Final = 64 << 20
"""Bytes the process-wide estimate cache may hold (keys, values and bookkeeping)."""

_ENTRY_OVERHEAD: Final = 200
"""Bytes one entry costs besides its key's strings: the dict slot, the tuples, the value."""


def key_size(key: object) -> int:
    """Approximate bytes a cache key keeps alive: its strings plus a fixed overhead.

    Strings are counted at their length (they are usually shared with the messages the
    caller holds anyway); nested tuples are walked.
    """
    size = _ENTRY_OVERHEAD
    stack = [key]
    while stack:
        item = stack.pop()
        if isinstance(item, str | bytes):
            size += len(item)
        elif isinstance(item, tuple):
            stack.extend(item)
    return size


class ContentCache:
    """A thread-safe, byte-bounded LRU map from hashable content keys to values.

    Args:
        max_bytes: the bound; an entry's size is :func:`key_size` of its key (plus
            ``value_size(value)`` when given). Least recently used entries are evicted.
        value_size: bytes a value keeps alive beyond the key (0 when None).

    ``hits``, ``misses`` and ``evictions`` count what happened, for tests and benchmarks.

    """

    def __init__(
        self, max_bytes: int = DEFAULT_MAX_BYTES, *, value_size: Callable[[Any], int] | None = None
    ) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(f"max_bytes must be a non-negative int, got {max_bytes!r}")
        self.max_bytes = max_bytes
        """The bound in bytes."""
        self._value_size = value_size
        self._data: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        """Lookups that found their key."""
        self.misses = 0
        """Lookups that did not (each one computed a value)."""
        self.evictions = 0
        """Entries dropped to stay within ``max_bytes``."""

    def __len__(self) -> int:
        return len(self._data)

    @property
    def size_bytes(self) -> int:
        """Bytes the entries account for now (never above ``max_bytes``)."""
        return self._bytes

    def clear(self) -> None:
        """Drop every entry (the counters are kept)."""
        with self._lock:
            self._data.clear()
            self._bytes = 0

    def get_many(self, keys: Sequence[Hashable | None]) -> list[Any]:
        """The cached value per key, or None (None keys are never cached); one lock."""
        out: list[Any] = [None] * len(keys)
        data = self._data
        with self._lock:
            hits = 0
            move = data.move_to_end
            for i, key in enumerate(keys):
                if key is None:
                    continue
                entry = data.get(key)
                if entry is not None:
                    out[i] = entry[0]
                    move(key)
                    hits += 1
            self.hits += hits
        return out

    def put_many(self, items: Iterable[tuple[Hashable, Any]]) -> None:
        """Store ``(key, value)`` pairs, evicting the least recently used beyond the bound."""
        size_of = self._value_size
        with self._lock:
            data = self._data
            for key, value in items:
                self.misses += 1
                size = key_size(key) + (size_of(value) if size_of is not None else 0)
                if size > self.max_bytes:
                    continue  # larger than the whole cache: not worth keeping
                old = data.pop(key, None)
                if old is not None:
                    self._bytes -= old[1]
                data[key] = (value, size)
                self._bytes += size
            while self._bytes > self.max_bytes and data:
                _, (_, size) = data.popitem(last=False)
                self._bytes -= size
                self.evictions += 1

    def get_or_compute(
        self, keys: Sequence[Hashable | None], values: Sequence[Any], compute: Callable[[Any], Any]
    ) -> list[Any]:
        """Per key its cached value, else ``compute(values[i])`` (stored under the key).

        A ``None`` key means "do not cache": its value is computed every time.
        """
        out = self.get_many(keys)
        new: list[tuple[Hashable, Any]] = []
        for i, got in enumerate(out):
            if got is None:
                got = out[i] = compute(values[i])
                key = keys[i]
                if key is not None:
                    new.append((key, got))
                else:
                    with self._lock:
                        self.misses += 1
        if new:
            self.put_many(new)
        return out


ESTIMATES: Final = ContentCache()
"""The process-wide estimate cache shared by the core, the adapters and the functional API."""

_BY_ID: Final = ContentCache(16 << 20, value_size=lambda entry: 64)
"""Identity shortcut in front of :data:`ESTIMATES`: ``(counter, id(message))`` → the message
(held, so its id cannot be reused while the entry lives) and its estimate. The message's
own bytes are accounted for by the conversion cache or the caller that holds it."""


# ---------------------------------------------------------------- fingerprints


def _content_key(content: Content) -> Hashable | None:
    if type(content) is str:
        return content
    out: list[Hashable] = []
    for block in content:
        kind = type(block)
        if kind is TextBlock:
            out.append(block.text)  # type: ignore[union-attr]
        elif kind is ThinkingBlock:
            out.append(("t", block.thinking))  # type: ignore[union-attr]
        elif kind is ToolCallBlock:
            # repr() of the arguments is exact for the JSON-like values calls carry, and a
            # C-speed walk; the estimate serializes them anyway, which costs more.
            call = cast("ToolCallBlock", block)
            out.append(("c", call.id, call.name, repr(call.arguments)))
        elif kind is ImageBlock:
            out.append(("i",))  # billed at a flat rate whatever its data
        elif kind is ProviderCompactionBlock:
            out.append(("p", block.text))  # type: ignore[union-attr]
        else:
            return None  # a subclass or an unknown block: not worth guessing
    # A str content and one text block are billed differently (block framing): a tuple
    # body never equals a str body.
    return tuple(out)


# Keys name the type rather than hold it: a tuple of strings and numbers is not tracked by
# the cyclic garbage collector, and a large cache of tracked tuples slows every collection.


def _chat(m: Any) -> Hashable | None:
    body = _content_key(m.content)
    return None if body is None else (type(m).__name__, body)


def _digest(m: Any) -> Hashable | None:
    # The record (``facts``) is billed beside the text: two digests of one text but
    # different records (a larger window keeps more of the ledger) cost differently.
    body = _content_key(m.content)
    return None if body is None else ("digest", body, repr(m.facts) if m.facts else "")


def _tool_result(m: Any) -> Hashable | None:
    body = _content_key(m.content)
    return None if body is None else ("tool", m.tool_name, m.tool_call_id, body)


def _custom(m: Any) -> Hashable | None:
    body = _content_key(m.content)
    return (
        None
        if body is None
        else ("custom", m.custom_type, body, repr(m.details) if m.details else "")
    )


_FINGERPRINTS: Final[dict[type, Callable[[Any], Hashable | None]]] = {
    UserMessage: _chat,
    DigestMessage: _digest,
    AssistantMessage: _chat,
    ToolResultMessage: _tool_result,
    BashExecutionMessage: lambda m: ("bash", m.command, m.output),
    CustomMessage: _custom,
    BranchSummaryMessage: lambda m: ("branch", m.summary),
    CompactionSummaryMessage: lambda m: ("compaction", m.summary),
}


def fingerprint(message: AgentMessage) -> Hashable | None:
    """A hashable key equal for messages the estimator bills alike, or None.

    Exact (it holds the billed texts themselves, not a hash of them), so two messages
    with one key always have one estimate. The type leads the key: the estimator may
    bill two kinds of one content differently. None for a message of a kind this module
    does not know (a subclass, an unknown role), which is then estimated every time.
    """
    fp = _FINGERPRINTS.get(type(message))
    return None if fp is None else fp(message)


def _counter_key(counter: TokenCounter | None) -> Hashable | None:
    if counter is None:
        return 0
    try:
        hash(counter)
    except TypeError:
        return None  # an unhashable counter: estimates are not cached
    return cast(Hashable, counter)


def cached_estimates(
    messages: Sequence[AgentMessage],
    counter: TokenCounter | None = None,
    *,
    cache: ContentCache | None = None,
) -> list[int]:
    """Per message its estimate (:func:`estimate_message_tokens`), through ``cache``.

    ``cache`` defaults to the process-wide :data:`ESTIMATES`. Equal content is estimated
    once per process, whatever object carries it.
    """
    if isinstance(counter, str):
        # str has a .count method and would silently count substrings.
        raise TypeError(f"counter {counter!r} is a string; pass resolve_counter({counter!r})")
    store = ESTIMATES if cache is None else cache
    ckey = _counter_key(counter)
    if ckey is None:
        return [estimate_message_tokens(m, counter) for m in messages]
    # First by identity: the adapters hand over the same core objects turn after turn
    # (their conversion cache), and an identity lookup is far cheaper than a fingerprint.
    by_id = _BY_ID if cache is None else None
    known = (
        by_id.get_many([(ckey, id(m)) for m in messages])
        if by_id is not None
        else [None] * len(messages)
    )
    out: list[int] = [0] * len(messages)
    missing: list[int] = []
    for i, entry in enumerate(known):
        if entry is not None and entry[0] is messages[i]:
            out[i] = entry[1]
        else:
            missing.append(i)
    if not missing:
        return out
    rest = [messages[i] for i in missing]
    keys: list[Hashable | None] = []
    for m in rest:
        fp = fingerprint(m)
        keys.append(None if fp is None else (ckey, fp))

    def compute(m: AgentMessage) -> int:
        return estimate_message_tokens(m, counter)

    got = store.get_or_compute(keys, rest, compute)
    for i, tokens in zip(missing, got, strict=True):
        out[i] = tokens
    if by_id is not None:
        by_id.put_many(
            ((ckey, id(m)), (m, t))
            for m, t, k in zip(rest, got, keys, strict=True)
            if k is not None
        )
    return out


def estimate_tokens(messages: Sequence[AgentMessage], counter: TokenCounter | None = None) -> int:
    """Total estimated tokens of a transcript; 0 for an empty one.

    Estimates go through the process-wide content cache (:func:`cached_estimates`): checking
    the same transcript again, even rebuilt from new objects, costs lookups.
    """
    return sum(cached_estimates(messages, counter))


def prefix_tokens(
    messages: Sequence[AgentMessage], counter: TokenCounter | None = None
) -> list[int]:
    """Forward cumulative tokens, length ``n + 1``: ``result[i]`` costs ``messages[:i]``."""
    return list(accumulate(cached_estimates(messages, counter), initial=0))
