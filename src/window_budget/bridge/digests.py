"""The digest an adapter made for a head, remembered by the head's content chain."""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence
from typing import Any, Final

from window_budget.bridge.codec import Codec
from window_budget.budget import ContentCache

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
