"""Races on a LlamaIndex chat store shared by several memories of one process.

A web server builds a memory per request over one store object; a streaming writer thread
puts while the event loop does. The store here does I/O (each call sleeps 2 ms), so a
compaction's re-read and write leave room for another writer: only a lock shared by every
memory over that store and key keeps every message exactly once.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.storage.chat_store import SimpleChatStore

from llama_index.memory.window_budget import ARCHIVE_SUFFIX, WindowBudgetMemory, is_digest
from window_budget.errors import StoreError

KEY = "user-1"


class SlowStore(SimpleChatStore):
    """A ``SimpleChatStore`` whose every call takes 2 ms, as a store doing I/O does."""

    def get_messages(self, key: str) -> list[ChatMessage]:
        time.sleep(0.002)
        return super().get_messages(key)

    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        time.sleep(0.002)
        super().set_messages(key, messages)

    def add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        time.sleep(0.002)
        super().add_message(key, message, idx)

    async def async_add_message(
        self, key: str, message: ChatMessage, idx: int | None = None
    ) -> None:
        await asyncio.sleep(0.002)
        SimpleChatStore.add_message(self, key, message, idx)


def message(tag: str, i: int) -> ChatMessage:
    role = "user" if i % 2 == 0 else "assistant"
    return ChatMessage(role=role, content=f"{tag}-{i} " + "word " * 40)


def audit(store: SimpleChatStore) -> tuple[set[str], int]:
    """The tags of every original the store holds (archive and live) and how many twice."""
    stored = [*store.get_messages(KEY + ARCHIVE_SUFFIX), *store.get_messages(KEY)]
    tags = collections.Counter((m.content or "").split()[0] for m in stored if not is_digest(m))
    return set(tags), sum(1 for n in tags.values() if n > 1)


def run_threads(target: Callable[[str], None], tags: str) -> None:
    start = threading.Barrier(len(tags))

    def go(tag: str) -> None:
        start.wait()
        target(tag)

    threads = [threading.Thread(target=go, args=(tag,)) for tag in tags]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a writer is blocked"


def test_a_memory_per_request_over_one_slow_store_loses_nothing() -> None:
    # Four threads, each request a new memory over the same store object and key: 160
    # messages put, compactions all along. Before the lock was shared per store and key
    # (it lived on each memory), 10-15 were lost, 134-136 archived twice, 5-6 StoreErrors.
    store = SlowStore()
    errors: list[BaseException] = []
    per_thread = 40

    def requests(tag: str) -> None:
        for i in range(per_thread):
            memory = WindowBudgetMemory.from_defaults(
                context_window=2_000, chat_store=store, chat_store_key=KEY
            )
            try:
                memory.put(message(tag, i))
            except StoreError as exc:
                errors.append(exc)

    run_threads(requests, "abcd")
    assert errors == []
    assert is_digest(store.get_messages(KEY)[0]), "no compaction: the race was not exercised"
    tags, twice = audit(store)
    assert tags == {f"{tag}-{i}" for tag in "abcd" for i in range(per_thread)}  # none lost
    assert twice == 0


@pytest.mark.parametrize("compactor", ["thread", "event loop"])
def test_aput_racing_a_compaction_in_another_thread_loses_nothing(compactor: str) -> None:
    # One memory: another thread puts and compacts (a manual /compact), with the sync methods
    # or on its own event loop, while an event loop awaits aput. Before aput took the lock
    # its sync twin takes, 14-18 of 80 messages were lost per trial.
    store = SlowStore()
    memory = WindowBudgetMemory.from_defaults(
        context_window=100_000, chat_store=store, chat_store_key=KEY
    )
    errors: list[BaseException] = []
    per_writer = 40

    async def compact_async() -> None:
        for i in range(per_writer):
            await memory.aput(message("s", i))
            await memory.acompact()

    async def append_async() -> None:
        for i in range(per_writer):
            await memory.aput(message("a", i))

    def writer(tag: str) -> None:
        try:
            if tag == "a":
                asyncio.run(append_async())
            elif compactor == "event loop":
                asyncio.run(compact_async())
            else:
                for i in range(per_writer):
                    memory.put(message(tag, i))
                    memory.compact()
        except BaseException as exc:
            errors.append(exc)

    run_threads(writer, "sa")
    assert errors == []
    assert memory.last_compaction is not None, "no compaction: the race was not exercised"
    tags, twice = audit(store)
    assert tags == {f"{tag}-{i}" for tag in "sa" for i in range(per_writer)}
    assert twice == 0


class ThreadedStore(SimpleChatStore):
    """A store with sync methods only (2 ms each): its async API runs them in threads."""

    def get_messages(self, key: str) -> list[ChatMessage]:
        time.sleep(0.002)
        return super().get_messages(key)

    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        time.sleep(0.002)
        super().set_messages(key, messages)

    def add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        time.sleep(0.002)
        super().add_message(key, message, idx)


def test_memories_on_one_event_loop_never_wait_for_the_lock_in_a_worker_thread() -> None:
    # Four requests' memories on one event loop whose executor has one thread (as a busy
    # server's is full): a compaction that waited for the store's lock in that thread
    # while an aput held the lock and needed the thread for its append blocked for ever.
    store = ThreadedStore()
    memories = [
        WindowBudgetMemory.from_defaults(context_window=2_000, chat_store=store, chat_store_key=KEY)
        for _ in range(4)
    ]
    errors: list[BaseException] = []

    async def main() -> None:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=1))

        async def writer(tag: str, memory: WindowBudgetMemory) -> None:
            for i in range(20):
                await memory.aput(message(tag, i))

        await asyncio.gather(*(writer(tag, m) for tag, m in zip("abcd", memories, strict=True)))

    def run() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:
            errors.append(exc)

    loop_thread = threading.Thread(target=run, daemon=True)  # a deadlock must not hang pytest
    loop_thread.start()
    loop_thread.join(120)
    assert not loop_thread.is_alive(), "the event loop is blocked: its one thread waits for a lock"
    assert errors == []
    assert is_digest(store.get_messages(KEY)[0]), "no compaction: the race was not exercised"
    tags, twice = audit(store)
    assert tags == {f"{tag}-{i}" for tag in "abcd" for i in range(20)}
    assert twice == 0
