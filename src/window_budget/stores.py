"""Compaction on a store that several processes share: the conditional rewrite.

A compaction reads the stored conversation, folds its head into a digest and writes back
``[pinned, digest, *tail]``. Between the read and the write another worker may append a
message or compact the same head. The contract that keeps both safe is one conditional
step, a :class:`Fold` handed to a :class:`ConditionalRewrite`:

1. re-read the store, atomically with the write that follows;
2. check the store still starts with exactly what the compaction read (``Fold.expected``);
3. if so, append the folded originals to the archive and write the replacement followed by
   whatever was appended since; otherwise write nothing and report it, and the caller
   compacts again from a fresh read (or leaves it to its next turn).

So no appended message is lost (it is after the checked prefix, and carried over), and at
most one digest covers any message (a second compaction of the same head fails the check
and, re-run, carries the first digest instead of folding the head again).

Adapters implement the protocol with what each store offers (a Redis transaction under
``WATCH``, a Postgres row lock, SQLite's write lock); :class:`LockedRewrite` is the fallback
for a store that offers nothing: an in-process lock and a read-back check, exact for one
process, with the check refusing a store that does not keep what was written.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from window_budget.errors import StoreError

__all__ = ["ConditionalRewrite", "Fold", "LockedRewrite", "check_written"]

M = TypeVar("M")


@dataclass(frozen=True, kw_only=True, slots=True)
class Fold(Generic[M]):
    """One compaction's write: replace the conversation it read by its folded form."""

    expected: tuple[M, ...]
    """The stored messages as the compaction read them; the store must still start with them."""
    replacement: tuple[M, ...]
    """What stands for ``expected`` afterwards: pinned messages, the digest, the kept tail."""
    archived: tuple[M, ...] = ()
    """The folded originals, appended to the archive in the same step, oldest first."""

    def apply(self, current: Sequence[M]) -> list[M] | None:
        """The store after this fold, or None when ``current`` no longer starts with ``expected``.

        Messages appended after ``expected`` follow the replacement, in order.
        """
        n = len(self.expected)
        if len(current) < n:
            return None
        for a, b in zip(current, self.expected, strict=False):
            if a is not b and a != b:
                return None
        return [*self.replacement, *current[n:]]


class ConditionalRewrite(Protocol):
    """What a shared store offers compaction: apply a :class:`Fold` only if it still holds.

    ``rewrite`` must re-read the store and write the archive and the live messages as one
    step with respect to every other writer of the conversation (appends included), or
    write nothing.
    """

    guarantee: str
    """One sentence saying what this rewrite guarantees, and against whom."""

    def rewrite(self, fold: Fold[Any]) -> bool:
        """Apply ``fold``; False (and nothing written) when the store changed under it.

        Raises:
            StoreError: the store read back something other than what was written.

        """
        ...


def _equal(a: Any, b: Any) -> bool:
    return a is b or bool(a == b)


def check_written(
    read_back: Sequence[M],
    written: Sequence[M],
    store: str,
    *,
    same: Callable[[M, M], bool] = _equal,
    exact: bool = False,
) -> None:
    """Refuse a store that does not start with exactly what was written to it.

    Messages after the written ones are accepted (another writer appended them) unless
    ``exact``: then the store must hold exactly ``written``. ``same`` compares a message
    read back with the one written (``==`` by default; pass a looser test for stores whose
    serialization normalizes values).

    Raises:
        StoreError: one sentence naming ``store`` and what it did (appended instead of
            replacing, lost messages, or changed them).

    """
    # Messages after what was written are appends by other writers, not a fault.
    longer_ok = not exact and len(read_back) > len(written)
    if (len(read_back) == len(written) or longer_ok) and all(
        same(a, b) for a, b in zip(read_back, written, strict=False)
    ):
        return
    if len(read_back) > len(written):
        what = (
            f"holds {len(read_back):,} messages after {len(written):,} were written "
            "(it appended instead of replacing, or another process wrote meanwhile)"
        )
    elif len(read_back) < len(written):
        what = f"holds {len(read_back):,} messages after {len(written):,} were written"
    else:
        what = "returned other messages than were written"
    raise StoreError(
        f"the store {store} {what}; window-budget stops writing to it rather "
        "than multiply or lose messages — use a store whose set_messages "
        "replaces the list, and one with a transactional rewrite when several "
        "processes share a conversation"
    )


class LockedRewrite(Generic[M]):
    """The fallback rewrite for stores that offer no transaction: a lock and a read-back check.

    Exact between the threads of one process that share this object (the lock); between
    processes it narrows the race to the time between the read and the write, and the
    read-back check refuses a store that multiplies or drops messages. Use a store with a
    transactional rewrite when several processes serve one conversation.

    Args:
        read: the live messages, as stored.
        write: replace the live messages.
        archive: append messages to the archive.
        store: the store's name, for error messages.
        lock: the lock to hold; a new one by default (share one per store).
        same: compares a message read back with the one written (``==`` by default).

    """

    guarantee = (
        "one process: exact (a lock); several processes: not guaranteed (a "
        "message appended between the re-read and the write can be lost)"
    )

    def __init__(
        self,
        read: Callable[[], Sequence[M]],
        write: Callable[[list[M]], None],
        archive: Callable[[Sequence[M]], None],
        *,
        store: str,
        lock: Any = None,
        same: Callable[[M, M], bool] = _equal,
    ) -> None:
        self._read = read
        self._write = write
        self._archive = archive
        self._store = store
        self._lock = lock if lock is not None else threading.RLock()
        self._same = same

    def rewrite(self, fold: Fold[M]) -> bool:
        """Re-read, check, archive, write, read back (see :class:`ConditionalRewrite`)."""
        with self._lock:
            new = fold.apply(list(self._read()))
            if new is None:
                return False
            # Archive first: if the write then fails, a message is archived twice, never lost.
            if fold.archived:
                self._archive(fold.archived)
            self._write(new)
            check_written(list(self._read()), new, self._store, same=self._same)
        return True
