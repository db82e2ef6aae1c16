"""Races on the adapters' shared state: reads during writes, writers on several event loops."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest

pytest.importorskip("langchain_core")

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_window_budget import CondensingChatMessageHistory
from window_budget import BudgetPolicy

pytestmark = pytest.mark.filterwarnings(
    "ignore::langchain_core._api.deprecation.LangChainDeprecationWarning"
)


class ListHistory(BaseChatMessageHistory):
    """A plain list-backed store."""

    def __init__(self) -> None:
        self.stored: list[BaseMessage] = []

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return list(self.stored)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        self.stored.extend(messages)

    def clear(self) -> None:
        self.stored.clear()


class ReadDuringClear(ListHistory):
    """A store that lets a reader in between ``clear()`` and ``add_messages()``."""

    def __init__(self) -> None:
        super().__init__()
        self.reader: CondensingChatMessageHistory | None = None
        self.seen: list[int] = []

    def clear(self) -> None:
        super().clear()
        if self.reader is not None:
            self.seen.append(len(self.reader.messages))


def turns(n: int, size: int = 400) -> list[BaseMessage]:
    return [
        HumanMessage(f"q{i} " + "x" * size) if i % 2 == 0 else AIMessage(f"a{i} " + "y" * size)
        for i in range(n)
    ]


def test_a_read_between_clear_and_add_never_caches_an_empty_snapshot() -> None:
    store = ReadDuringClear()
    history = CondensingChatMessageHistory(
        store, context_window=2_000, policy=BudgetPolicy(keep_recent=300, reserve_tokens=0)
    )
    store.reader = history
    for m in turns(20):
        history.add_messages([m])
    assert store.seen, "no compaction happened: the test did not exercise the race"
    # The racing read saw the complete history from before the write, not the cleared store.
    assert all(n > 0 for n in store.seen)
    assert len(history.messages) == len(store.messages) > 0
    assert history.messages == store.messages


class SlowAsyncStore(ListHistory):
    """An async store whose writes yield to the event loop, so two writers overlap."""

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await asyncio.sleep(0.01)
        self.add_messages(messages)

    async def aget_messages(self) -> list[BaseMessage]:
        await asyncio.sleep(0.01)
        return list(self.messages)


def test_async_writers_on_their_own_event_loops_are_serialized() -> None:
    store = SlowAsyncStore()
    history = CondensingChatMessageHistory(
        store, context_window=100_000, policy=BudgetPolicy(reserve_tokens=0)
    )
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def writer(tag: str) -> None:
        async def go() -> None:
            for i in range(5):
                await history.aadd_messages([HumanMessage(f"{tag}{i}")])

        start.wait()
        try:
            asyncio.run(asyncio.wait_for(go(), timeout=10))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(tag,)) for tag in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert not any(t.is_alive() for t in threads), "a writer is blocked forever"
    assert errors == []
    texts = sorted(m.text for m in store.messages)
    assert texts == sorted(f"{tag}{i}" for tag in "ab" for i in range(5))
    assert history.messages == store.messages
