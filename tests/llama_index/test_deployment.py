"""Where users really run: a memory built per request over a persisted store."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.storage.chat_store import SimpleChatStore

from llama_index.memory.window_budget import RECORD_KEY, WindowBudgetMemory, is_digest
from llama_index.memory.window_budget import convert as convert_module
from llama_index.memory.window_budget.archive_pack import is_packed, unpack
from llama_index.memory.window_budget.convert import make_digest_chat_message, to_core
from window_budget import DigestMessage, bridge

from .conftest import ScriptedLLM, bot, user


def save(store: SimpleChatStore, path: Path) -> None:
    """Persist a store as JSON on disk.

    ``SimpleChatStore.persist`` itself fails with the pydantic release installed here (its
    field serializer's signature); the messages' own JSON is what it would write anyway.
    """
    data = {k: [m.model_dump(mode="json") for m in store.get_messages(k)] for k in store.get_keys()}
    path.write_text(json.dumps(data), encoding="utf-8")


def load(path: Path) -> SimpleChatStore:
    """A new store, read back from disk (every message a new object)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    store = SimpleChatStore()
    for key, messages in data.items():
        store.set_messages(key, [ChatMessage.model_validate(m) for m in messages])
    return store


@pytest.fixture
def conversions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    real = convert_module.to_core

    def counting(message: ChatMessage) -> object:
        calls[0] += 1
        return real(message)

    monkeypatch.setattr(convert_module, "to_core", counting)
    return calls


def test_a_fresh_memory_per_request_converts_only_new_messages(
    tmp_path: Path, conversions: list[int]
) -> None:
    path = tmp_path / "chat.json"
    store = SimpleChatStore()
    history = [m for i in range(500) for m in (user(i), bot(i))]
    WindowBudgetMemory.from_defaults(
        context_window=1_000_000, chat_store=store, chat_history=history
    )
    save(store, path)
    WindowBudgetMemory.from_defaults(context_window=1_000_000, chat_store=load(path)).get()
    before = conversions[0]
    for i in range(3):  # three requests, each loading the store from disk
        loaded = load(path)
        memory = WindowBudgetMemory.from_defaults(context_window=1_000_000, chat_store=loaded)
        memory.put(ChatMessage(role="user", content=f"request {i}"))
        view = memory.get()
        assert len(view) == 1001 + i
        save(loaded, path)
    assert conversions[0] - before == 3  # one new message per request, nothing else


def test_archive_store_keeps_the_live_store_small(tmp_path: Path) -> None:
    live, archive = SimpleChatStore(), SimpleChatStore()
    memory = WindowBudgetMemory.from_defaults(
        llm=ScriptedLLM(), context_window=2_000, chat_store=live, archive_store=archive
    )
    for i in range(60):
        memory.put(user(i))
        memory.put(bot(i))
    stored = live.get_messages(memory.chat_store_key)
    assert is_digest(stored[0])
    # No archive in the live store: the conversation, and the key its digests are sealed with.
    assert sorted(live.get_keys()) == sorted([memory.chat_store_key, "window_budget:_key"])
    # A SimpleChatStore holds the archive packed, one entry per compaction.
    entries = archive.get_messages(memory.archive_key)
    assert entries
    assert all(is_packed(e) for e in entries)
    archived = unpack(archive, memory.archive_key, entries)
    assert len(archived) + len(stored) - 1 == 120
    full = memory.get_all(include_archived=True)
    assert [m.content for m in full] == [m.content for i in range(60) for m in (user(i), bot(i))]
    # The serialized forms carry it too.
    again = WindowBudgetMemory.from_dict(memory.to_dict(), archive_store=SimpleChatStore())
    assert [m.content for m in again.get_all(include_archived=True)] == [m.content for m in full]
    assert again.archive_store is not None
    assert again.archive_store.get_keys() == [memory.archive_key]


class AsyncOnlyStore(SimpleChatStore):
    """A store whose sync reads and appends fail: the async path must not use them."""

    def get_messages(self, key: str) -> list[ChatMessage]:
        if getattr(self, "_forbid", False):
            raise AssertionError("sync get_messages called from the async path")
        return super().get_messages(key)

    def add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        if getattr(self, "_forbid", False):
            raise AssertionError("sync add_message called from the async path")
        super().add_message(key, message, idx)

    async def aget_messages(self, key: str) -> list[ChatMessage]:
        await asyncio.sleep(0)
        return SimpleChatStore.get_messages(self, key)

    async def async_add_message(
        self, key: str, message: ChatMessage, idx: int | None = None
    ) -> None:
        await asyncio.sleep(0)
        SimpleChatStore.add_message(self, key, message, idx)


def test_async_methods_use_the_stores_async_api() -> None:
    store = AsyncOnlyStore()
    memory = WindowBudgetMemory.from_defaults(context_window=100_000, chat_store=store)
    object.__setattr__(store, "_forbid", True)

    async def go() -> list[ChatMessage]:
        for i in range(5):
            await memory.aput(user(i))
        return await memory.aget()

    view = asyncio.run(go())
    assert [m.content for m in view] == [user(i).content for i in range(5)]
    assert len(asyncio.run(memory.aget_all())) == 5


@dataclass(frozen=True, slots=True)
class LedgerDigest(DigestMessage):
    facts: dict[str, Any] | None = None


def test_every_digest_field_survives_a_persisted_store(tmp_path: Path) -> None:
    facts = {"objective": "migrate the db", "files": ["a.sql"]}
    source = LedgerDigest(
        "[session digest — older turns condensed]\n\nbody", kept_count=4, facts=facts
    )
    message = make_digest_chat_message(source.content, 12, source=source)  # type: ignore[arg-type]
    store = SimpleChatStore()
    store.set_messages("k", [message])
    save(store, tmp_path / "s.json")
    back = load(tmp_path / "s.json").get_messages("k")[0]
    record = back.additional_kwargs[RECORD_KEY]
    rebuilt = bridge.digest_from_record(source.content, record, kind=LedgerDigest)
    assert rebuilt.facts == facts
    assert (rebuilt.covered_count, rebuilt.kept_count) == (12, 4)
    core = to_core(back)
    assert isinstance(core, DigestMessage)
    assert (core.covered_count, core.kept_count) == (12, 4)


# ------------------------------------------- a long history: one message of work


def _long_memory(n: int = 2000) -> WindowBudgetMemory:
    # Far under budget: the whole history stays in the store, as in a long chat that has
    # not reached its window yet.
    history = [ChatMessage(role="system", content="be brief")] + [
        user(i, words=2) if i % 2 == 0 else bot(i, words=2) for i in range(n)
    ]
    return WindowBudgetMemory.from_defaults(context_window=1_000_000, chat_history=history)


def _count_conversions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    import llama_index.memory.window_budget.convert as convert

    calls = [0]
    real = convert.to_core

    def counting(message: ChatMessage) -> object:
        calls[0] += 1
        return real(message)

    monkeypatch.setattr(convert, "to_core", counting)
    return calls


def test_put_on_long_history_converts_and_estimates_one_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memory = _long_memory()
    memory.get()
    calls = _count_conversions(monkeypatch)
    ledger = memory._sync_condenser  # type: ignore[union-attr]
    for i in range(3):
        estimated, converted = ledger.estimated, calls[0]
        memory.put(user(10_000 + i))
        assert ledger.estimated - estimated == 1
        assert calls[0] - converted == 1
    estimated, converted = ledger.estimated, calls[0]
    view = memory.get()
    assert len(view) == 2004
    assert ledger.estimated == estimated
    assert calls[0] == converted  # the view is counted from the cached cores


async def test_aput_on_long_history_converts_and_estimates_one_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memory = _long_memory()
    await memory.aget()
    calls = _count_conversions(monkeypatch)
    ledger = memory._async_condenser  # type: ignore[union-attr]
    for i in range(3):
        estimated, converted = ledger.estimated, calls[0]
        await memory.aput(user(10_000 + i))
        assert ledger.estimated - estimated == 1
        assert calls[0] - converted == 1
