from __future__ import annotations

import asyncio
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from window_budget.errors import StoreError
from window_budget.stores import Fold, LockedRewrite, StoreLock, check_written, lock_for

words = st.lists(st.text(min_size=1, max_size=5), max_size=12)


@given(words, words, st.integers(min_value=0, max_value=12))
def test_a_fold_keeps_everything_appended_after_what_it_read(
    read: list[str], appended: list[str], cut: int
) -> None:
    cut = min(cut, len(read))
    fold = Fold(
        expected=tuple(read), replacement=("digest", *read[cut:]), archived=tuple(read[:cut])
    )
    assert fold.apply([*read, *appended]) == ["digest", *read[cut:], *appended]


@given(words.filter(bool), words)
def test_a_fold_refuses_a_store_whose_prefix_changed(read: list[str], appended: list[str]) -> None:
    fold = Fold(expected=tuple(read), replacement=("digest",))
    changed = ["other" + read[0], *read[1:], *appended]
    assert fold.apply(changed) is None
    assert fold.apply(read[:-1]) is None  # shorter than what was read


class ListStore:
    """A store of strings; ``appends_on_set`` mimics a store whose set does not replace."""

    def __init__(self, messages: list[str], *, appends_on_set: bool = False) -> None:
        self.messages = list(messages)
        self.archive: list[str] = []
        self.appends_on_set = appends_on_set

    def read(self) -> list[str]:
        return list(self.messages)

    def write(self, messages: list[str]) -> None:
        if self.appends_on_set:
            self.messages.extend(messages)
        else:
            self.messages = list(messages)

    def add_archive(self, messages: object) -> None:
        self.archive.extend(messages)  # type: ignore[call-overload]


def test_the_locked_rewrite_archives_and_writes_when_the_prefix_holds() -> None:
    store = ListStore(["a", "b", "c"])
    rewrite = LockedRewrite(store.read, store.write, store.add_archive, store="ListStore")
    store.messages.append("d")  # appended by someone else after the compaction read
    assert rewrite.rewrite(
        Fold(expected=("a", "b", "c"), replacement=("D", "c"), archived=("a", "b"))
    )
    assert store.messages == ["D", "c", "d"]
    assert store.archive == ["a", "b"]


def test_the_locked_rewrite_writes_nothing_when_the_store_changed() -> None:
    store = ListStore(["D", "c"])
    rewrite = LockedRewrite(store.read, store.write, store.add_archive, store="ListStore")
    assert not rewrite.rewrite(
        Fold(expected=("a", "b", "c"), replacement=("D", "c"), archived=("a", "b"))
    )
    assert store.messages == ["D", "c"]
    assert store.archive == []


def test_a_store_that_appends_on_set_is_refused_naming_it() -> None:
    store = ListStore(["a", "b", "c"], appends_on_set=True)
    rewrite = LockedRewrite(store.read, store.write, store.add_archive, store="AppendingStore")
    with pytest.raises(
        StoreError,
        match=r"AppendingStore holds 5 messages after 2 were "
        r"written \(it appended instead of replacing",
    ):
        rewrite.rewrite(Fold(expected=("a", "b", "c"), replacement=("D", "c"), archived=("a", "b")))


def test_check_written_names_lost_and_changed_messages() -> None:
    check_written(["a"], ["a"], "S")
    check_written(["a", "later"], ["a"], "S")  # appended by another writer meanwhile
    with pytest.raises(StoreError, match="S holds 2 messages after 1 were written"):
        check_written(["a", "later"], ["a"], "S", exact=True)
    with pytest.raises(StoreError, match="S holds 1 messages after 2 were written;"):
        check_written(["a"], ["a", "b"], "S")
    with pytest.raises(StoreError, match="S returned other messages than were written"):
        check_written(["x"], ["a"], "S")
    check_written(["A"], ["a"], "S", same=lambda x, y: x.lower() == y.lower())


def test_threads_sharing_a_locked_rewrite_never_fold_one_head_twice() -> None:
    store = ListStore([f"m{i}" for i in range(10)])
    rewrite = LockedRewrite(store.read, store.write, store.add_archive, store="ListStore")
    snapshot = tuple(store.read())
    fold = Fold(expected=snapshot, replacement=("digest", *snapshot[8:]), archived=snapshot[:8])
    results: list[bool] = []
    threads = [
        threading.Thread(target=lambda: results.append(rewrite.rewrite(fold))) for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 7 + [True]
    assert store.archive == list(snapshot[:8])
    assert store.messages == ["digest", "m8", "m9"]


# ------------------------------------------------- one lock per store and key, process-wide


class Store:
    """Any store object: unhashable, as pydantic chat stores are."""

    __hash__ = None  # type: ignore[assignment]


def test_lock_for_is_one_lock_per_store_object_and_key() -> None:
    store, other = Store(), Store()
    assert lock_for(store, "k") is lock_for(store, "k")
    assert lock_for(store, "k") is not lock_for(store, "j")
    assert lock_for(store, "k") is not lock_for(other, "k")


def test_lock_for_does_not_keep_the_store_alive() -> None:
    import gc
    import weakref

    store = Store()
    lock_for(store, "k")
    ref = weakref.ref(store)
    del store
    gc.collect()
    assert ref() is None


def test_the_store_lock_is_reentrant_and_excludes_other_threads() -> None:
    lock = StoreLock()
    inside: list[str] = []
    with lock, lock:  # nested writes in one thread
        t = threading.Thread(target=lambda: (lock.acquire(), inside.append("t"), lock.release()))
        t.start()
        t.join(0.05)
        assert inside == []  # waits while this thread holds it
    t.join(5)
    assert inside == ["t"]


def test_a_task_holds_the_store_lock_across_awaits_without_blocking_its_loop() -> None:
    lock = StoreLock()
    order: list[str] = []

    async def holder(tag: str, hold: asyncio.Event, go: asyncio.Event) -> None:
        async with lock:
            order.append(f"{tag} in")
            hold.set()
            await go.wait()  # the loop keeps running other tasks meanwhile
            order.append(f"{tag} out")

    async def main() -> None:
        held, go, ignored = asyncio.Event(), asyncio.Event(), asyncio.Event()
        first = asyncio.create_task(holder("a", held, go))
        await held.wait()
        second = asyncio.create_task(holder("b", ignored, go))
        await asyncio.sleep(0.01)
        assert order == ["a in"]  # b waits for the lock, and the loop still runs us
        go.set()
        await asyncio.gather(first, second)

    asyncio.run(main())
    assert order == ["a in", "a out", "b in", "b out"]


def test_a_sync_acquire_under_a_task_holding_the_lock_raises_instead_of_hanging() -> None:
    lock = StoreLock()

    async def main() -> None:
        held, go = asyncio.Event(), asyncio.Event()

        async def holder() -> None:
            async with lock:
                held.set()
                await go.wait()

        task = asyncio.create_task(holder())
        await held.wait()
        with pytest.raises(RuntimeError, match="call the async method"):
            lock.acquire()
        go.set()
        await task

    asyncio.run(main())


def test_a_cancelled_waiter_leaves_the_store_lock_usable() -> None:
    lock = StoreLock()

    async def main() -> None:
        lock_held = threading.Event()
        release = threading.Event()

        def thread_holder() -> None:
            with lock:
                lock_held.set()
                release.wait(5)

        t = threading.Thread(target=thread_holder)
        t.start()
        lock_held.wait(5)
        waiter = asyncio.create_task(lock.acquire_async())
        await asyncio.sleep(0.01)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        release.set()
        await asyncio.to_thread(t.join, 5)
        async with lock:
            pass

    asyncio.run(main())


def test_a_task_holding_the_store_lock_hands_it_to_its_worker_thread() -> None:
    # The worker of asyncio.to_thread runs in the task's context: it holds the lock too, so
    # an executor thread never waits for a lock a task of its own loop holds.
    lock = StoreLock()
    entered: list[str] = []

    def write() -> None:
        with lock:  # would wait for ever if the worker were a stranger to the lock
            entered.append("worker")

    async def main() -> None:
        async with lock:
            await asyncio.wait_for(asyncio.to_thread(write), timeout=30)

    asyncio.run(main())
    assert entered == ["worker"]
    with lock:  # released: another thread takes it
        pass
