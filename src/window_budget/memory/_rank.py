"""Word ranking for recall where the store has no index of its own: BM25 over short texts."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

__all__ = ["rank", "words"]

_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)
_K1, _B = 1.2, 0.75


def words(text: str) -> list[str]:
    """The lower-cased words of ``text`` (paths and identifiers split at punctuation)."""
    return [w.casefold() for w in _WORD_RE.findall(text)]


def _holds(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    """True when ``needle`` stands in ``haystack`` word for word (``svc_007`` in a path)."""
    n = len(needle)
    first = needle[0]
    return any(
        haystack[i] == first and list(haystack[i : i + n]) == list(needle)
        for i in range(len(haystack) - n + 1)
    )


def rank(query: str, documents: Sequence[str], *, limit: int) -> list[int]:
    """Indexes of the ``limit`` documents that best match ``query`` (BM25), best first.

    Documents with no query word are never returned; one that holds the whole query as
    written (``svc_007``, a path) ranks above those that share only some of its words; ties
    keep document order, so the ranking is deterministic.

    >>> rank("loader toml", ["fix the loader", "port to toml loader", "unrelated"], limit=5)
    [1, 0]
    """
    terms = list(dict.fromkeys(words(query)))
    if not terms or not documents or limit <= 0:
        return []
    bags = [Counter(words(d)) for d in documents]
    lengths = [sum(b.values()) for b in bags]
    mean = (sum(lengths) / len(lengths)) or 1.0
    n = len(documents)
    idf = {}
    for t in terms:
        df = sum(1 for b in bags if t in b)
        idf[t] = math.log(1 + (n - df + 0.5) / (df + 0.5))
    sequence = words(query)
    scored = []
    for i, bag in enumerate(bags):
        score = 0.0
        for t in terms:
            tf = bag.get(t, 0)
            if tf:
                score += idf[t] * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * lengths[i] / mean))
        if score > 0:
            exact = len(sequence) > 1 and _holds(words(documents[i]), sequence)
            scored.append((-score - (1000.0 if exact else 0.0), i))
    scored.sort()
    return [i for _, i in scored[:limit]]
