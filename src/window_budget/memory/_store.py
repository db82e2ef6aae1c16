"""The memory store beside the conversation: archived originals and the ledger's versions.

A digest in the window is bounded; what it leaves out is not lost but kept here, keyed by
conversation: every original the condenser folded (at its archive position, the numbering
the fact ledger's pointers use) and each version of the ledger, with the seal of the digest
it belongs to. The digest message carries only a small record pointing into the store.

The store is an injected seam, like the completer: :class:`MemoryStore` is the protocol,
:class:`InProcessMemoryStore` the ephemeral default, :class:`SQLiteMemoryStore` (in
:mod:`window_budget.memory`) a file for persistence. Adapters implement the protocol over the
stores their users already run. Everything stored is JSON-safe data (``message_to_dict``
and ``ledger_to_json`` forms), never objects.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from window_budget.contract import LedgerVersion, MemoryStore
from window_budget.errors import ConfigError
from window_budget.memory._rank import rank
from window_budget.memory._text import archived_text

__all__ = ["InProcessMemoryStore", "LedgerVersion", "MemoryStore", "check_conversation"]

MAX_CONVERSATION_CHARS = 512
"""A conversation name longer than this is refused: it is a key, not a document."""


def check_conversation(conversation: object) -> str:
    """``conversation`` as a store key, or :class:`ConfigError` naming what is wrong with it."""
    if not isinstance(conversation, str) or not conversation:
        raise ConfigError(
            f"conversation must be a non-empty string, not {type(conversation).__name__} "
            f"{conversation!r:.40}"
        )
    if len(conversation) > MAX_CONVERSATION_CHARS or any(ord(c) < 32 for c in conversation):
        raise ConfigError(
            f"conversation {conversation[:40]!r}… is not a usable key: at most "
            f"{MAX_CONVERSATION_CHARS} characters and no control characters"
        )
    return conversation


class InProcessMemoryStore:
    """The ephemeral default: a dict per conversation, gone with the process.

    ``max_conversations`` and ``max_originals`` (all conversations together) bound it for a
    long-lived process: past either the least recently used conversations are forgotten
    (their digests then stand on their bounded record). ``key`` is the secret that seals the
    digests (random per store by default).

    >>> store = InProcessMemoryStore()
    >>> store.archive("c1", 0, [{"role": "user", "content": "hi"}])
    >>> store.archived("c1"), store.original("c1", 0)["content"]
    (1, 'hi')
    """

    def __init__(
        self,
        *,
        key: bytes | None = None,
        max_conversations: int | None = None,
        max_originals: int | None = None,
    ) -> None:
        for name, bound in (
            ("max_conversations", max_conversations),
            ("max_originals", max_originals),
        ):
            if bound is not None and (
                isinstance(bound, bool) or not isinstance(bound, int) or bound < 1
            ):
                raise ConfigError(f"{name} must be None or a positive int, not {bound!r:.40}")
        self._key = key if key is not None else secrets.token_bytes(32)
        self._originals: dict[str, dict[int, Mapping[str, Any]]] = {}
        self._texts: dict[str, dict[int, str]] = {}  # how each original reads, for search
        self._ledgers: dict[str, list[LedgerVersion]] = {}
        self._recent: OrderedDict[str, None] = OrderedDict()  # least recently used first
        self._bounds = (max_conversations, max_originals)
        self._held = 0  # originals held, all conversations together
        self._lock = threading.Lock()

    def _touch(self, conversation: str) -> None:
        """Mark ``conversation`` used (under the lock); past a bound the oldest are forgotten.

        A forgotten conversation's digests still carry their bounded record, which is what
        the next compaction reads when the store no longer holds the full ledger. The one
        just used is never forgotten.
        """
        conversations, originals = self._bounds
        if conversations is None and originals is None:
            return
        self._recent[conversation] = None
        self._recent.move_to_end(conversation)
        while len(self._recent) > 1 and (
            (conversations is not None and len(self._recent) > conversations)
            or (originals is not None and self._held > originals)
        ):
            gone, _ = self._recent.popitem(last=False)
            self._held -= len(self._originals.pop(gone, {}))
            self._texts.pop(gone, None)
            self._ledgers.pop(gone, None)

    @property
    def key(self) -> bytes:
        """The store's secret (random per instance unless given)."""
        return self._key

    def archive(
        self, conversation: str, start: int, originals: Sequence[Mapping[str, Any]]
    ) -> None:
        """Keep ``originals`` from position ``start`` on; kept positions are left alone."""
        check_conversation(conversation)
        with self._lock:
            kept = self._originals.setdefault(conversation, {})
            texts = self._texts.setdefault(conversation, {})
            for i, original in enumerate(originals):
                if start + i not in kept:
                    kept[start + i] = dict(original)
                    texts[start + i] = archived_text(original)[1]
                    self._held += 1
            self._touch(conversation)

    def archived(self, conversation: str) -> int:
        """One more than the highest position kept."""
        with self._lock:
            kept = self._originals.get(conversation)
            return max(kept) + 1 if kept else 0

    def original(self, conversation: str, position: int) -> Mapping[str, Any] | None:
        """The original at ``position``, or None."""
        with self._lock:
            return self._originals.get(conversation, {}).get(position)

    def originals(self, conversation: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
        """Every original, by position (a snapshot: writes meanwhile are not seen)."""
        with self._lock:
            items = sorted(self._originals.get(conversation, {}).items())
        return iter(items)

    def search(self, conversation: str, terms: Sequence[str], *, limit: int) -> list[int]:
        """Positions of the originals that best match ``terms``, best first (BM25)."""
        with self._lock:
            items = sorted(self._texts.get(conversation, {}).items())
        found = rank(" ".join(terms), [text for _, text in items], limit=limit)
        return [items[i][0] for i in found]

    def save_ledger(self, conversation: str, ledger: Mapping[str, Any], *, seal: str) -> int:
        """Append a ledger version; returns its number."""
        check_conversation(conversation)
        with self._lock:
            self._touch(conversation)
            versions = self._ledgers.setdefault(conversation, [])
            versions.append(LedgerVersion(version=len(versions) + 1, ledger=ledger, seal=seal))
            return len(versions)

    def ledger(self, conversation: str, version: int | None = None) -> LedgerVersion | None:
        """A stored version, the newest by default."""
        with self._lock:
            versions = self._ledgers.get(conversation, [])
            if versions:
                self._touch(conversation)
            if not versions:
                return None
            if version is None:
                return versions[-1]
            return versions[version - 1] if 1 <= version <= len(versions) else None
