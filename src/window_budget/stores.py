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

The in-process lock must be the same for every writer of a conversation, however many
memory objects a process builds over it (a web server builds one per request):
:func:`lock_for` hands out one :class:`StoreLock` per store object and key, process-wide.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType, TracebackType
from typing import Any, Generic, Protocol, TypeVar

from window_budget.errors import StoreError

__all__ = [
    "ConditionalRewrite",
    "Fold",
    "LockedRewrite",
    "StoreLock",
    "check_written",
    "lock_for",
]

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
        lock: the lock to hold (a context manager); a new one by default. Every writer of
            the conversation must hold the same one: pass ``lock_for(store, key)``.
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
        self._lock = lock if lock is not None else StoreLock()
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


# The store locks the current context holds, by id, with the token of that hold. A context
# is copied into the worker thread of ``asyncio.to_thread`` and into a task's callees, so
# work a holder hands to a thread holds the lock too (and never waits for it there).
_HELD: contextvars.ContextVar[Mapping[int, object]] = contextvars.ContextVar(
    "window_budget_store_locks", default=MappingProxyType({})
)


def _in_task() -> bool:
    try:
        return asyncio.current_task() is not None
    except RuntimeError:  # no event loop running in this thread
        return False


class StoreLock:
    """A reentrant lock held by a thread or a task and the work it hands to threads.

    ``with`` it, or ``async with`` it: the async form waits without blocking the event
    loop, so a task may hold the lock across the store's own awaits while threads wait.
    The holder is the context that took it (:mod:`contextvars`): a thread, or a task —
    and the worker threads it runs sync work in (``asyncio.to_thread``), which take it
    again without waiting, so an event loop never has an executor thread waiting for a
    lock a task of its own holds. A sync acquire on the thread whose event loop has
    another task holding the lock would block that task for ever: it raises
    ``RuntimeError`` instead (call the async method from async code).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._token: object | None = None
        self._thread: int | None = None
        self._by_task = False
        self._depth = 0
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def _mine(self) -> bool:
        return self._token is not None and _HELD.get().get(id(self)) is self._token

    def _try(self, *, sync: bool) -> bool:
        """Take the lock if it is free or already this context's (under ``_cond``)."""
        if self._token is None:
            self._token, self._depth = object(), 1
            self._thread, self._by_task = threading.get_ident(), _in_task()
            _HELD.set(MappingProxyType({**_HELD.get(), id(self): self._token}))
            return True
        if self._mine():
            self._depth += 1
            return True
        if sync and self._by_task and self._thread == threading.get_ident():
            raise RuntimeError(
                "a sync call would wait for a lock another task on this thread's event "
                "loop holds, and block that task for ever; call the async method instead"
            )
        return False

    def acquire(self) -> None:
        """Take the lock, waiting for other threads (or tasks) to release it."""
        with self._cond:
            while not self._try(sync=True):
                self._cond.wait()

    async def acquire_async(self) -> None:
        """Take the lock for the current task, without blocking the event loop."""
        loop = asyncio.get_running_loop()
        while True:
            with self._cond:
                if self._try(sync=False):
                    return
                waiter: asyncio.Future[None] = loop.create_future()
                self._waiters.append((loop, waiter))
            try:
                await waiter
            finally:
                with self._cond:
                    if (loop, waiter) in self._waiters:
                        self._waiters.remove((loop, waiter))

    def release(self) -> None:
        """Give the lock back; every waiter then tries again.

        Raises:
            RuntimeError: the current context does not hold the lock.

        """
        with self._cond:
            if not self._mine():
                raise RuntimeError("release of a StoreLock this thread or task does not hold")
            self._depth -= 1
            if self._depth:
                return
            self._token, self._thread, self._by_task = None, None, False
            _HELD.set(MappingProxyType({k: v for k, v in _HELD.get().items() if k != id(self)}))
            self._cond.notify_all()
            waiters, self._waiters = self._waiters, []
        for loop, waiter in waiters:
            # A closed loop raises RuntimeError: nobody waits there any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_wake, waiter)

    def __enter__(self) -> StoreLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    async def __aenter__(self) -> StoreLock:
        await self.acquire_async()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


@dataclass(slots=True)
class _StoreLocks:
    """The locks of one store object, by key; dropped with the store."""

    ref: weakref.ref[Any]
    by_key: dict[str, StoreLock]


_REGISTRY: dict[int, _StoreLocks] = {}
_REGISTRY_GUARD = threading.Lock()


def _forget(store_id: int, ref: weakref.ref[Any]) -> None:
    # A weakref callback: it may run in any thread at any time, so it takes no lock and
    # leaves an entry that a new store with the same id already replaced.
    entry = _REGISTRY.get(store_id)
    if entry is not None and entry.ref is ref:
        _REGISTRY.pop(store_id, None)


def lock_for(store: object, key: str) -> StoreLock:
    """The process-wide lock of conversation ``key`` in ``store`` (the same object each call).

    Every writer of one conversation in a process — memories built per request, a
    streaming writer thread, tasks on several event loops — takes this one lock, so a
    compaction's re-read and write (:class:`LockedRewrite`) leave no room for another
    writer's append. Keyed by the store object's identity (stores need not be hashable)
    and the key; the store is not kept alive by it.

    Raises:
        TypeError: ``store`` cannot be weakly referenced (give it ``__weakref__``).

    >>> class Store: ...
    >>> store = Store()
    >>> lock_for(store, "user-1") is lock_for(store, "user-1")
    True
    >>> lock_for(store, "user-1") is lock_for(store, "user-2")
    False

    """
    store_id = id(store)
    with _REGISTRY_GUARD:
        entry = _REGISTRY.get(store_id)
        if entry is None or entry.ref() is not store:
            ref = weakref.ref(store, functools.partial(_forget, store_id))
            entry = _REGISTRY[store_id] = _StoreLocks(ref, {})
        lock = entry.by_key.get(key)
        if lock is None:
            lock = entry.by_key[key] = StoreLock()
        return lock
