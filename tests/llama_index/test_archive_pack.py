"""The archive packed in a ``SimpleChatStore``: one entry per compaction, read back whole.

A request loads the store's file whole; packed, the archive costs that load one message
per compaction. These tests check the round trip through the file, that a request does
not unpack, that recall and saving reach every original, that an archive written one
entry per message still reads (also followed by packed entries), that a damaged packed
entry gives one ``StoreError`` naming its key, that no look-alike is unpacked, and (with
hypothesis) that packing and unpacking give back any messages exactly.
"""

from __future__ import annotations

import asyncio
import base64
import json
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock
from llama_index.core.schema import ImageDocument
from llama_index.core.storage.chat_store import SimpleChatStore

from llama_index.memory.window_budget import JsonlChatStore, WindowBudgetMemory, archive_pack
from llama_index.memory.window_budget.archive_pack import (
    PACK_KEY,
    is_packed,
    pack,
    packs_into,
    unpack,
)
from llama_index.memory.window_budget.conversation import same_message
from window_budget.errors import StoreError

from .conftest import ScriptedLLM, bot, user

KEY = "user-1"
FACT = "ZEBRA-4417"


def save(store: SimpleChatStore, path: Path) -> None:
    """``SimpleChatStore.persist``'s file (``persist`` raises under some pydantic releases)."""
    try:
        store.persist(str(path))
    except Exception:  # llama-index-core 0.14's WrapSerializer under pydantic 2.12
        data = {
            "store": {k: [m.model_dump(mode="json") for m in v] for k, v in store.store.items()},
            "class_name": "SimpleChatStore",
        }
        path.write_text(json.dumps(data), encoding="utf-8")


def load(path: Path) -> SimpleChatStore:
    return SimpleChatStore.from_persist_path(str(path))


def memory_over(store: SimpleChatStore, **kw: Any) -> WindowBudgetMemory:
    return WindowBudgetMemory.from_defaults(
        llm=ScriptedLLM(), context_window=2_000, chat_store=store, chat_store_key=KEY, **kw
    )


def turns(start: int, stop: int) -> list[ChatMessage]:
    return [m for i in range(start, stop) for m in (user(i), bot(i))]


def contents(messages: list[ChatMessage]) -> list[str | None]:
    return [m.content for m in messages]


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the packed entries decoded."""
    calls: list[int] = []
    real = archive_pack._decoded

    def counting(fields: dict[str, Any]) -> list[ChatMessage]:
        calls.append(fields["n"])
        return real(fields)

    monkeypatch.setattr(archive_pack, "_decoded", counting)
    return calls


def _filled() -> tuple[SimpleChatStore, WindowBudgetMemory]:
    """A default memory over a new ``SimpleChatStore``, 60 turns put: several compactions."""
    store = SimpleChatStore()
    memory = memory_over(store)
    for m in turns(0, 60):
        memory.put(m)
    return store, memory


# ------------------------------------------------------------------ through the file


def test_the_default_archive_round_trips_through_the_file(
    tmp_path: Path, decodes: list[int]
) -> None:
    path = tmp_path / "chat.json"
    store, memory = _filled()
    entries = store.get_messages(memory.archive_key)
    assert entries
    assert all(is_packed(e) for e in entries)
    save(store, path)
    assert decodes == []

    again = load(path)
    assert [is_packed(e) for e in again.get_messages(memory.archive_key)] == [True] * len(entries)
    whole = memory_over(again).get_all(include_archived=True)
    assert contents(whole) == contents(turns(0, 60))
    assert len(decodes) == len(entries)
    awhole = asyncio.run(memory_over(again).aget_all(include_archived=True))
    assert contents(awhole) == contents(turns(0, 60))


def test_a_fresh_memory_per_request_decodes_nothing(tmp_path: Path, decodes: list[int]) -> None:
    path = tmp_path / "chat.json"
    store, memory = _filled()
    save(store, path)
    compactions = len(store.get_messages(memory.archive_key))
    for i in range(60, 80):  # requests, some of them compacting
        live = load(path)
        fresh = memory_over(live)
        fresh.get()
        fresh.put(user(i))
        fresh.put(bot(i))
        fresh.get()
        save(live, path)
    assert decodes == []
    entries = load(path).get_messages(KEY + "::window-budget-archive")
    assert len(entries) > compactions  # the requests compacted, and appended packed entries
    assert all(is_packed(e) for e in entries)
    assert contents(memory_over(load(path)).get_all(include_archived=True)) == contents(
        turns(0, 80)
    )


def test_recall_reaches_every_original_in_the_packed_archive(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    store = SimpleChatStore()
    memory = memory_over(store, memory_store=True)  # recall's originals in the same store
    first = f"The build id is {FACT}; keep it."
    memory.put(ChatMessage(role="user", content=first))
    for m in turns(0, 60):
        memory.put(m)
    assert first not in contents(store.get_messages(KEY))  # folded
    assert all(is_packed(e) for e in store.get_messages(memory.archive_key))
    save(store, path)

    again = memory_over(load(path), memory_store=True)
    assert FACT in str(again.recall_tool().call(query=FACT).content)
    assert FACT in str(again.recall_tool().call(pointer="#0").content)
    whole = again.get_all(include_archived=True)
    assert contents(whole) == [first, *contents(turns(0, 60))]


def test_saving_unpacks_and_restoring_packs(tmp_path: Path) -> None:
    _, memory = _filled()
    data = memory.to_dict()
    restored_store = SimpleChatStore()
    again = WindowBudgetMemory.from_dict(data, llm=ScriptedLLM(), chat_store=restored_store)
    entries = restored_store.get_messages(again.archive_key)
    assert entries
    assert all(is_packed(e) for e in entries)
    assert contents(again.get_all(include_archived=True)) == contents(turns(0, 60))

    # Into another store the archive goes one entry per message, as always.
    jsonl = JsonlChatStore(directory=str(tmp_path / "archive"))
    other = WindowBudgetMemory.from_dict(
        data, llm=ScriptedLLM(), chat_store=SimpleChatStore(), archive_store=jsonl
    )
    assert not any(is_packed(e) for e in jsonl.get_messages(other.archive_key))
    assert contents(other.get_all(include_archived=True)) == contents(turns(0, 60))


# ---------------------------------------------------------------- the earlier layout


def test_an_archive_of_one_entry_per_message_reads_with_packed_entries_after_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "chat.json"
    store, memory = _filled()
    # The layout before packing: the same archive, one entry per message.
    old = unpack(store, memory.archive_key, store.get_messages(memory.archive_key))
    store.set_messages(memory.archive_key, old)
    assert not any(is_packed(e) for e in old)
    save(store, path)

    for i in range(60, 80):  # requests after the upgrade compact into packed entries
        live = load(path)
        fresh = memory_over(live)
        fresh.get()
        fresh.put(user(i))
        fresh.put(bot(i))
        save(live, path)
    entries = load(path).get_messages(memory.archive_key)
    assert not any(is_packed(e) for e in entries[: len(old)])
    assert entries[len(old) :]
    assert all(is_packed(e) for e in entries[len(old) :])
    whole = memory_over(load(path)).get_all(include_archived=True)
    assert contents(whole) == contents(turns(0, 80))


def test_only_exactly_simple_chat_store_is_packed_into() -> None:
    class Sub(SimpleChatStore):
        pass

    assert packs_into(SimpleChatStore())
    assert not packs_into(Sub())
    sub = Sub()
    memory = memory_over(sub)
    for m in turns(0, 60):
        memory.put(m)
    assert not any(is_packed(e) for e in sub.get_messages(memory.archive_key))
    # ... but a subclass reads a file the default wrote.
    packed = pack(turns(0, 3))
    sub.set_messages("k", packed)
    assert contents(unpack(sub, "k", sub.get_messages("k"))) == contents(turns(0, 3))
    # No other store's entries are ever unpacked.
    assert unpack(JsonlChatStore(directory="unused"), "k", packed) == packed


# ---------------------------------------------------------------- hostile entries


def _entry(**changes: Any) -> ChatMessage:
    entry = pack(turns(0, 2))[0]
    fields = dict(entry.additional_kwargs[PACK_KEY], **changes)
    return ChatMessage(role=MessageRole.SYSTEM, additional_kwargs={PACK_KEY: fields})


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


_RAW = b"[" + b"1," * 1000 + b"1]"
BAD = {
    "not base64": {"data": "%%%not base64%%%"},
    "not zlib": {"data": _b64(b"plain bytes, no zlib stream")},
    "cut short": {"data": _b64(zlib.compress(_RAW)[:20]), "size": len(_RAW)},
    "a decompression bomb": {"data": _b64(zlib.compress(b" " * 10_000_000)), "size": 4096},
    "over the cap": {"size": archive_pack.MAX_PACK_BYTES + 1},
    "a wrong count": {"n": 7},
    "a size too small": {"size": 5},
    "a size too large": {"size": 100_000},
    "not JSON": {"data": _b64(zlib.compress(b"{not json")), "size": 9},
    "not messages": {"data": _b64(zlib.compress(b'[{"role": 5}]')), "size": 13, "n": 1},
    "a newer version": {"v": 2},
}


@pytest.mark.parametrize("changes", BAD.values(), ids=BAD.keys())
def test_a_damaged_packed_entry_raises_one_store_error_and_changes_nothing(
    tmp_path: Path, changes: dict[str, Any]
) -> None:
    path = tmp_path / "chat.json"
    store, memory = _filled()
    entries = store.get_messages(memory.archive_key)
    store.set_messages(memory.archive_key, [*entries, _entry(**changes)])
    save(store, path)
    before = path.read_bytes()

    again = memory_over(load(path))
    again.get()  # a request reads no archive: it does not fail
    with pytest.raises(StoreError) as raised:
        again.get_all(include_archived=True)
    message = str(raised.value)
    assert repr(memory.archive_key) in message
    assert f"entry {len(entries)} " in message
    assert "Nothing was changed" in message
    with pytest.raises(StoreError):
        again.to_dict()  # saving reads the archive too
    assert path.read_bytes() == before  # the caller's data is as it was


LOOKALIKES = {
    "the marker as text": ChatMessage(
        role=MessageRole.SYSTEM,
        content=json.dumps({PACK_KEY: pack(turns(0, 1))[0].additional_kwargs[PACK_KEY]}),
    ),
    "a text block beside it": ChatMessage(
        role=MessageRole.SYSTEM,
        blocks=[TextBlock(text="hi")],
        additional_kwargs=pack(turns(0, 1))[0].additional_kwargs,
    ),
    "another role": ChatMessage(
        role=MessageRole.USER, additional_kwargs=pack(turns(0, 1))[0].additional_kwargs
    ),
    "another kwarg beside it": ChatMessage(
        role=MessageRole.SYSTEM,
        additional_kwargs={**pack(turns(0, 1))[0].additional_kwargs, "tool_calls": []},
    ),
    "a field missing": ChatMessage(
        role=MessageRole.SYSTEM, additional_kwargs={PACK_KEY: {"v": 1, "data": "eJw="}}
    ),
    "a field of another type": _entry(n="1"),
}


@pytest.mark.parametrize("message", LOOKALIKES.values(), ids=LOOKALIKES.keys())
def test_a_look_alike_is_an_ordinary_message(message: ChatMessage) -> None:
    assert not is_packed(message)
    store = SimpleChatStore()
    assert unpack(store, "k", [message]) == [message]
    # Put through the memory and folded, it comes back as it was, not unpacked.
    memory = memory_over(store)
    memory.put(message)
    for m in turns(0, 60):
        memory.put(m)
    whole = memory.get_all(include_archived=True)
    assert same_message(whole[0], message)
    assert contents(whole[1:]) == contents(turns(0, 60))


def test_a_genuine_entry_put_through_the_memory_is_not_unpacked() -> None:
    forged = pack(turns(0, 3))[0]  # exactly an entry's shape, put as a message
    store = SimpleChatStore()
    memory = memory_over(store)
    memory.put(forged)
    for m in turns(0, 60):
        memory.put(m)
    whole = memory.get_all(include_archived=True)
    assert same_message(whole[0], forged)  # one level deep: it stays the message put
    assert contents(whole[1:]) == contents(turns(0, 60))


# ---------------------------------------------------------------- what packs


def test_a_message_that_is_not_json_is_kept_as_its_own_entry() -> None:
    odd = ChatMessage(role="user", content="odd", additional_kwargs={"handle": object()})
    messages = [*turns(0, 2), odd, *turns(2, 3)]
    entries = pack(messages)
    assert [is_packed(e) for e in entries] == [True, False, True]
    assert entries[1] is odd
    assert unpack(SimpleChatStore(), "k", entries) == messages


def test_a_message_that_would_not_come_back_the_same_is_kept_as_its_own_entry() -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"0" * 20).decode()
    legacy = ChatMessage(  # the legacy kwarg becomes one more image block on every load
        role="user", content="look", additional_kwargs={"images": [ImageDocument(image=png)]}
    )
    messages = [*turns(0, 1), legacy, *turns(1, 2)]
    entries = pack(messages)
    assert [is_packed(e) for e in entries] == [True, False, True]
    assert entries[1] is legacy
    assert unpack(SimpleChatStore(), "k", entries) == messages


def test_entries_hold_at_most_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive_pack, "MAX_PACK_BYTES", 2_000)
    big = ChatMessage(role="user", content="x" * 3_000)
    messages = [*turns(0, 10), big, *turns(10, 12)]
    entries = pack(messages)
    assert len(entries) > 3
    assert big in entries  # over the cap: its own ordinary entry
    for e in entries:
        if is_packed(e):
            assert e.additional_kwargs[PACK_KEY]["size"] <= 2_000
    assert unpack(SimpleChatStore(), "k", entries) == messages


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
tool_call = st.fixed_dictionaries(
    {
        "id": st.text(max_size=12),
        "type": st.just("function"),
        "function": st.fixed_dictionaries(
            {"name": st.text(max_size=12), "arguments": st.text(max_size=40)}
        ),
    }
)
kwargs = st.one_of(
    st.just({}),
    st.fixed_dictionaries({"tool_calls": st.lists(tool_call, max_size=2)}),
    st.fixed_dictionaries({"tool_call_id": st.text(max_size=12), "name": st.text(max_size=12)}),
    st.dictionaries(st.text(max_size=8).filter(lambda k: k != "images"), json_values, max_size=3),
)
chat_messages = st.builds(
    lambda role, texts, kw: ChatMessage(
        role=role, blocks=[TextBlock(text=t) for t in texts], additional_kwargs=kw
    ),
    st.sampled_from(list(MessageRole)),
    st.lists(st.text(), max_size=3),
    kwargs,
)


@given(st.lists(chat_messages, max_size=8))
def test_pack_then_unpack_is_the_identity(messages: list[ChatMessage]) -> None:
    entries = pack(messages)
    back = unpack(SimpleChatStore(), "k", entries)
    assert len(back) == len(messages)
    assert all(same_message(a, b) for a, b in zip(back, messages, strict=True))
    # ... and through the store's file format.
    written = json.dumps({"store": {"k": [e.model_dump(mode="json") for e in entries]}})
    stored = SimpleChatStore.model_validate(json.loads(written))  # what from_persist_path does
    again = unpack(stored, "k", stored.get_messages("k"))
    assert all(same_message(a, b) for a, b in zip(again, messages, strict=True))
