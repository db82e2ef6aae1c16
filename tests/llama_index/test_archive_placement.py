"""Where the archive lives: a memory built per request reads none of it.

A web server over a ``SimpleChatStore`` file loads the store, builds a memory, ``get()``s,
``put``s the turn and persists the store on every request. These tests count the reads of
the archive's key (no timings: those are ``bench/bench_fresh_memory.py``'s), check that a
``JsonlChatStore`` archive keeps the archive out of the file the request loads, that a
conversation written with the archive in the chat store (the default layout) is still read
whole once it is given its own archive store, and that recall reaches the originals after a
reopen.
"""

from __future__ import annotations

import asyncio
import json
import logging
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.storage.chat_store import BaseChatStore, SimpleChatStore

from llama_index.memory.window_budget import (
    ChatStoreMemoryStore,
    JsonlChatStore,
    WindowBudgetMemory,
    is_digest,
)

from .conftest import ScriptedLLM, bot, user

KEY = "user-1"
FACT = "ZEBRA-4417"


class CountingStore(SimpleChatStore):
    """A ``SimpleChatStore`` that records every key read, sync or async."""

    _reads: list[str] = PrivateAttr(default_factory=list)

    def get_messages(self, key: str) -> list[ChatMessage]:
        self._reads.append(key)
        return super().get_messages(key)

    async def aget_messages(self, key: str) -> list[ChatMessage]:
        self._reads.append(key)
        return super().get_messages(key)


class CountingJsonl(JsonlChatStore):
    """A ``JsonlChatStore`` that records every key read."""

    _reads: list[str] = PrivateAttr(default_factory=list)

    def get_messages(self, key: str) -> list[ChatMessage]:
        self._reads.append(key)
        return super().get_messages(key)


def save(store: SimpleChatStore, path: Path) -> None:
    """``SimpleChatStore.persist``'s file (``persist`` raises under this pydantic)."""
    data = {
        "store": {
            k: [m.model_dump(mode="json") for m in store.get_messages(k)] for k in store.store
        },
        "class_name": "SimpleChatStore",
    }
    path.write_text(json.dumps(data), encoding="utf-8")


def load(path: Path, cls: type[SimpleChatStore] = SimpleChatStore) -> SimpleChatStore:
    """The store as a request loads it: ``from_persist_path``."""
    return cls.from_persist_path(str(path))


def memory_over(
    live: SimpleChatStore, archive: BaseChatStore | None = None, **kw: object
) -> WindowBudgetMemory:
    return WindowBudgetMemory.from_defaults(
        llm=ScriptedLLM(),
        context_window=2_000,
        chat_store=live,
        chat_store_key=KEY,
        archive_store=archive,
        **kw,
    )


def turns(start: int, stop: int) -> list[ChatMessage]:
    return [m for i in range(start, stop) for m in (user(i), bot(i))]


def request(path: Path, i: int, archive: JsonlChatStore | None = None) -> WindowBudgetMemory:
    """One request: load the file, a fresh memory, ``get()``, the turn, persist."""
    live = load(path)
    memory = memory_over(live, archive)
    memory.get()
    memory.put(user(i))
    memory.put(bot(i))
    save(live, path)
    return memory


# ------------------------------------------------------------ no archive read per request


@pytest.mark.parametrize("use_async", [False, True])
def test_a_fresh_memory_reads_no_archive_in_the_default_layout(
    tmp_path: Path, use_async: bool
) -> None:
    path = tmp_path / "chat.json"
    built = SimpleChatStore()
    memory = memory_over(built)
    for m in turns(0, 60):
        memory.put(m)
    assert built.get_messages(memory.archive_key)  # compactions happened: there is an archive
    save(built, path)

    for i in range(60, 70):  # requests, some of them compacting
        live = load(path, CountingStore)
        assert isinstance(live, CountingStore)
        fresh = memory_over(live)
        if use_async:

            async def turn(fresh: WindowBudgetMemory = fresh, i: int = i) -> None:
                await fresh.aget()
                await fresh.aput(user(i))
                await fresh.aput(bot(i))
                await fresh.aget()

            asyncio.run(turn())
        else:
            fresh.get()
            fresh.put(user(i))
            fresh.put(bot(i))
            fresh.get()
        assert fresh.archive_key not in live._reads
        save(live, path)
    every = [m.content for m in fresh.get_all(include_archived=True)]
    assert every == [m.content for m in turns(0, 70)]


def test_a_jsonl_archive_keeps_the_file_a_request_loads_small(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    archive = CountingJsonl(directory=str(tmp_path / "archive"))
    for i in range(80):
        memory = request(path, i, archive)
    # Every request compacted when it had to, appending; none read the archive.
    assert archive._reads == []
    archived = archive.get_messages(memory.archive_key)
    assert len(archived) > 100
    live = load(path)
    assert memory.archive_key not in live.store
    stored = live.get_messages(KEY)
    assert is_digest(stored[0])
    assert len(archived) + len(stored) - 1 == 160
    assert path.stat().st_size * 5 < archive.path_of(memory.archive_key).stat().st_size
    whole = memory_over(load(path), archive).get_all(include_archived=True)
    assert [m.content for m in whole] == [m.content for m in turns(0, 80)]


def test_recall_reaches_every_original_after_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    archive = JsonlChatStore(directory=str(tmp_path / "archive"))
    memory_dir = str(tmp_path / "memory")
    live = SimpleChatStore()
    memory = memory_over(
        live, archive, memory_store=ChatStoreMemoryStore(JsonlChatStore(directory=memory_dir))
    )
    memory.put(ChatMessage(role="user", content=f"The build id is {FACT}; keep it."))
    for m in turns(0, 60):
        memory.put(m)
    first = f"The build id is {FACT}; keep it."
    assert first not in [m.content for m in live.get_messages(KEY)]  # folded
    save(live, path)

    again = memory_over(
        load(path),
        JsonlChatStore(directory=str(tmp_path / "archive")),
        memory_store=ChatStoreMemoryStore(JsonlChatStore(directory=memory_dir)),
    )
    assert FACT in again.recall_tool().call(query=FACT).content
    assert FACT in again.recall_tool().call(pointer="#0").content
    whole = [m.content for m in again.get_all(include_archived=True)]
    assert whole[0] == f"The build id is {FACT}; keep it."
    assert whole[1:] == [m.content for m in turns(0, 60)]


# ---------------------------------------------------------------- the earlier layout


def test_an_archive_written_in_the_chat_store_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    for i in range(40):  # the default layout: the archive in the chat store's file
        request(path, i)
    old = load(path)
    memory = memory_over(old)
    assert old.get_messages(memory.archive_key)

    archive = JsonlChatStore(directory=str(tmp_path / "archive"))
    for i in range(40, 80):  # the same conversation, now with its own archive store
        memory = request(path, i, archive)
    assert archive.get_messages(memory.archive_key)  # new compactions went there
    reopened = memory_over(load(path), archive)
    whole = [m.content for m in reopened.get_all(include_archived=True)]
    assert whole == [m.content for m in turns(0, 80)]

    # Saved and restored: the archive store gets the whole archive, the chat store none.
    again = WindowBudgetMemory.from_dict(
        reopened.to_dict(),
        chat_store=SimpleChatStore(),
        archive_store=JsonlChatStore(directory=str(tmp_path / "restored")),
    )
    assert again.memory_store is None
    assert again.chat_store.get_messages(again.archive_key) == []
    assert [m.content for m in again.get_all(include_archived=True)] == whole

    reopened.reset()  # forgets both archives
    assert reopened.get_all(include_archived=True) == []
    assert reopened.chat_store.get_messages(reopened.archive_key) == []


def test_two_store_objects_over_one_store_are_not_read_twice() -> None:
    live, archive = SimpleChatStore(), SimpleChatStore()
    archive.store = live.store  # one dict: as two RedisChatStore objects over one server
    memory = memory_over(live, archive)
    for m in turns(0, 60):
        memory.put(m)
    assert live.get_messages(memory.archive_key)
    whole = [m.content for m in memory.get_all(include_archived=True)]
    assert whole == [m.content for m in turns(0, 60)]
    again = WindowBudgetMemory.from_dict(memory.to_dict(), chat_store=live, archive_store=archive)
    assert [m.content for m in again.get_all(include_archived=True)] == whole


# ---------------------------------------------------------------- JsonlChatStore itself


def test_jsonl_store_keeps_hostile_keys_inside_its_directory(tmp_path: Path) -> None:
    store = JsonlChatStore(directory=str(tmp_path / "d"))
    keys = ["../../etc/passwd", "a/b", "..", "", "x" * 1000, "ключ 🔑", "k::window-budget-archive"]
    for n, key in enumerate(keys):
        store.add_message(key, ChatMessage(role="user", content=f"m{n}"))
    assert sorted(store.get_keys()) == sorted(keys)
    for n, key in enumerate(keys):
        assert store.path_of(key).parent == tmp_path / "d"
        assert [m.content for m in store.get_messages(key)] == [f"m{n}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_jsonl_store_skips_a_torn_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = JsonlChatStore(directory=str(tmp_path))
    store.add_message("k", ChatMessage(role="user", content="first"))
    store.add_message("k", ChatMessage(role="assistant", content="second"))
    with store.path_of("k").open("a", encoding="utf-8") as f:
        # Two processes that created the file at once each wrote a header.
        f.write(json.dumps({"window_budget_jsonl": 1, "key": "k"}) + "\n")
        f.write('{"role": "user", "blocks": [{"block_type": "te')  # a crash mid-write
    with caplog.at_level(logging.WARNING):
        assert [m.content for m in store.get_messages("k")] == ["first", "second"]
    assert "not a chat message" in caplog.text


def test_jsonl_store_edits(tmp_path: Path) -> None:
    store = JsonlChatStore(directory=str(tmp_path))
    msgs = [ChatMessage(role="user", content=f"m{i}") for i in range(4)]
    store.set_messages("k", msgs)
    assert store.delete_message("k", 1) is not None
    assert store.delete_last_message("k") is not None
    store.add_message("k", ChatMessage(role="user", content="first"), idx=0)
    assert [m.content for m in store.get_messages("k")] == ["first", "m0", "m2"]
    assert store.delete_message("k", 9) is None
    assert [m.content for m in store.delete_messages("k") or []] == ["first", "m0", "m2"]
    assert store.delete_messages("k") is None
    assert store.get_keys() == []
    assert asyncio.run(store.aget_messages("k")) == []


_text = st.text(string.printable + "ßé🔑\u2028\u2029\x85\x1c\x00", max_size=40)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=st.lists(st.lists(_text, min_size=1, max_size=4), max_size=5), key=_text)
def test_jsonl_store_round_trips_what_it_is_given(
    tmp_path: Path, batches: list[list[str]], key: str
) -> None:
    store = JsonlChatStore(directory=str(tmp_path / "h"))
    store.delete_messages(key)
    for batch in batches:
        store.add_messages(key, [ChatMessage(role="user", content=t) for t in batch])
    again = JsonlChatStore(directory=str(tmp_path / "h"))
    assert [m.content for m in again.get_messages(key)] == [t for b in batches for t in b]
