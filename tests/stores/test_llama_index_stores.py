"""WindowBudgetMemory over real chat stores: Redis, PostgreSQL, SQLite and SimpleChatStore on disk.

Every request builds a new store object and a new memory, as a web server does; the digest
record, the fact ledger, the archive and the count of messages must survive each store's
serialization, with the archive in the same store and in a separate one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.storage.chat_store import BaseChatStore, SimpleChatStore

from llama_index.memory.window_budget import WindowBudgetMemory
from llama_index.memory.window_budget.archive_pack import unpack
from llama_index.memory.window_budget.convert import (
    RECORD_KEY,
    digest_covered,
    is_digest,
    to_core,
)
from window_budget.errors import StoreError
from window_budget.messages import DigestMessage
from window_budget.stores import Fold, LockedRewrite

from .servers import Server
from .workers import aclose_store, build_store, close_store, persist_simple


@pytest.fixture
def key(prefix: str) -> str:
    """The conversation's key, under a prefix no other test uses (one Redis per session)."""
    return prefix + "user-42"


def turn_text(i: int, role: str) -> str:
    if role == "user":
        return (
            f"step {i}: please fix src/app/module_{i}.py and run `pytest tests/test_{i}.py`; "
            "we must keep Python 3.11 support. " + "context " * 30
        )
    return f"done with step {i}: edited src/app/module_{i}.py, tests pass. " + "detail " * 30


Opener = Callable[[], tuple[BaseChatStore, BaseChatStore | None, Callable[[], None]]]


@pytest.fixture(params=["redis", "postgres", "sqlite", "simple"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=[False, True], ids=["archive-same-store", "archive-separate"])
def separate(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def _opener(kind: str, separate: bool, request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """A function giving (live store, archive store or None, persist) for one request."""
    opened: list[BaseChatStore] = []
    request.addfinalizer(lambda: [close_store(s) for s in opened])
    where, other, table = "", "", "chatstore"
    if kind == "redis":
        where = other = request.getfixturevalue("redis_url")
    elif kind == "postgres":
        where = other = request.getfixturevalue("pg_dsn")
        table = "archive"
    elif kind == "sqlite":
        where, other = str(tmp_path / "live.db"), str(tmp_path / "archive.db")
    if kind != "simple":

        def open_server() -> tuple[BaseChatStore, BaseChatStore | None, Callable[[], None]]:
            live = build_store(kind, where)
            archive = build_store(kind, other, table=table) if separate else None
            opened.extend(s for s in (live, archive) if s is not None)
            return live, archive, lambda: None

        return open_server
    live_path, archive_path = tmp_path / "live.json", tmp_path / "archive.json"

    def open_simple() -> tuple[BaseChatStore, BaseChatStore | None, Callable[[], None]]:
        live = build_store("simple", str(live_path))
        archive = build_store("simple", str(archive_path)) if separate else None

        def persist() -> None:
            assert isinstance(live, SimpleChatStore)
            persist_simple(live, live_path)
            if isinstance(archive, SimpleChatStore):
                persist_simple(archive, archive_path)

        return live, archive, persist

    return open_simple


def _memory(
    live: BaseChatStore, archive: BaseChatStore | None, key: str = "user-42"
) -> WindowBudgetMemory:
    return WindowBudgetMemory.from_defaults(
        context_window=2_000, chat_store=live, chat_store_key=key, archive_store=archive
    )


def test_compaction_archive_digest_record_and_ledger_survive_the_store(
    kind: str, separate: bool, key: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    open_stores = _opener(kind, separate, request, tmp_path)
    sent: list[str] = []
    compactions = 0
    for i in range(24):  # one request per turn: new store objects, a new memory
        live, archive, persist = open_stores()
        memory = _memory(live, archive, key)
        for role in (MessageRole.USER, MessageRole.ASSISTANT):
            sent.append(turn_text(i, role.value))
            memory.put(ChatMessage(role=role, content=sent[-1]))
            compactions += bool(memory.last_compaction and memory.last_compaction.committed)
            memory._last_compaction = None
        view = memory.get()
        assert memory.count_tokens(view) <= memory.token_limit
        persist()
    assert compactions >= 3

    live, archive, _ = open_stores()
    memory = _memory(live, archive, key)
    stored = memory.get_all()
    archive_store = archive or live  # a SimpleChatStore holds it packed
    archived = unpack(
        archive_store, memory.archive_key, archive_store.get_messages(memory.archive_key)
    )
    digests = [m for m in stored if is_digest(m)]
    assert len(digests) == 1
    assert stored.index(digests[0]) == 0
    record = digests[0].additional_kwargs[RECORD_KEY]
    assert record["covered"] == len(archived) == digest_covered(digests[0])
    core = to_core(digests[0])
    assert isinstance(core, DigestMessage)
    assert core.covered_count == len(archived)
    assert core.facts is not None, "the fact ledger was lost"
    assert core.facts["facts"], "the fact ledger is empty"
    assert "module_0.py" in str(core.facts), "the oldest file left the ledger"
    everything = memory.get_all(include_archived=True)
    assert [str(m.content) for m in everything] == sent  # nothing lost, nothing doubled
    assert [str(m.content) for m in archived] == sent[: len(archived)]


def test_the_guarantee_follows_what_the_stores_offer(
    kind: str, separate: bool, key: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    live, archive, _ = _opener(kind, separate, request, tmp_path)()
    guarantee = _memory(live, archive, key).store_guarantee
    shared = kind == "redis" or (kind in ("postgres", "sqlite") and not separate)
    assert guarantee.startswith("several processes: exact" if shared else "one process: exact")


async def test_the_async_path_over_each_store(
    kind: str, key: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    open_stores = _opener(kind, False, request, tmp_path)
    sent: list[str] = []
    for i in range(16):
        live, archive, persist = open_stores()
        memory = _memory(live, archive, key)
        for role in (MessageRole.USER, MessageRole.ASSISTANT):
            sent.append(turn_text(i, role.value))
            await memory.aput(ChatMessage(role=role, content=sent[-1]))
        await memory.aget()
        persist()
        await aclose_store(live)  # the async engines belong to this test's event loop
    live, archive, _ = open_stores()
    memory = _memory(live, archive, key)
    everything = await memory.aget_all(include_archived=True)
    stored = await memory.aget_all()
    await aclose_store(live)
    assert [str(m.content) for m in everything] == sent
    assert sum(is_digest(m) for m in stored) == 1


def test_sqlite_set_messages_appends_and_the_memory_does_not_multiply(sqlite_path: Path) -> None:
    store = build_store("sqlite", str(sqlite_path))
    hello = [ChatMessage(role=MessageRole.USER, content="hello")]
    store.set_messages("probe", hello)
    store.set_messages("probe", hello)
    assert len(store.get_messages("probe")) == 2  # the integration's behaviour (0.4.0)

    memory = _memory(store, None)
    history = [
        ChatMessage(role=MessageRole.USER, content="question"),
        ChatMessage(role=MessageRole.ASSISTANT, content="answer"),
    ]
    memory.set(history)
    memory.set(history)  # what a chat engine does with chat_history= every turn
    assert [m.content for m in store.get_messages("user-42")] == ["question", "answer"]
    memory.put(ChatMessage(role=MessageRole.USER, content="next"))
    assert len(memory.get_all()) == 3

    revived = WindowBudgetMemory.from_dict(memory.to_dict(), chat_store=store)
    assert [m.content for m in revived.get_all()] == ["question", "answer", "next"]


class LosingChatStore(SimpleChatStore):
    """A store that keeps all but the last message of every list it is given."""

    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        super().set_messages(key, messages[:-1])

    def add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        if message.content != "second":
            super().add_message(key, message, idx)


def test_a_store_that_loses_messages_is_refused_naming_it() -> None:
    memory = _memory(LosingChatStore(), None)
    with pytest.raises(
        StoreError,
        match=r"^the store LosingChatStore holds 1 messages after "
        r"2 were written;",
    ):
        memory.set(
            [
                ChatMessage(role=MessageRole.USER, content="first"),
                ChatMessage(role=MessageRole.USER, content="second"),
            ]
        )


def test_a_server_fixture_reports_where_it_listens(postgres: Server, redis_srv: Server) -> None:
    assert postgres.host == redis_srv.host == "127.0.0.1"


@pytest.mark.parametrize("server_kind", ["redis", "postgres", "sqlite"])
def test_each_rewrite_keeps_appends_and_refuses_a_stale_fold(
    server_kind: str, key: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from llama_index.memory.window_budget.stores import rewrite_for

    where = {
        "redis": lambda: request.getfixturevalue("redis_url"),
        "postgres": lambda: request.getfixturevalue("pg_dsn"),
        "sqlite": lambda: str(tmp_path / "fold.db"),
    }[server_kind]()
    store = build_store(server_kind, where)
    request.addfinalizer(lambda: close_store(store))
    archive_key = key + "::archive"

    def fallback() -> Any:
        raise AssertionError(f"{server_kind} should have a transactional rewrite")

    rewrite = rewrite_for(store, store, key, archive_key, fallback=fallback)
    messages = [ChatMessage(role=MessageRole.USER, content=f"m{i}") for i in range(4)]
    for m in messages:
        store.add_message(key, m)
    read = store.get_messages(key)
    digest = ChatMessage(role=MessageRole.USER, content="digest")
    fold = Fold(expected=tuple(read), replacement=(digest, *read[2:]), archived=tuple(read[:2]))
    store.add_message(key, ChatMessage(role=MessageRole.USER, content="appended meanwhile"))

    assert rewrite.rewrite(fold)
    assert [m.content for m in store.get_messages(key)] == [
        "digest",
        "m2",
        "m3",
        "appended meanwhile",
    ]
    assert [m.content for m in store.get_messages(archive_key)] == ["m0", "m1"]

    assert not rewrite.rewrite(fold)  # the same head again: the store no longer starts with it
    assert [m.content for m in store.get_messages(key)] == [
        "digest",
        "m2",
        "m3",
        "appended meanwhile",
    ]
    assert [m.content for m in store.get_messages(archive_key)] == ["m0", "m1"]


class RecordingRewrite:
    """A store's own conditional rewrite, as a caller passes one: records each fold."""

    guarantee = "several processes: exact (a test double over one SimpleChatStore)"

    def __init__(self, store: SimpleChatStore, key: str, *, refuse: bool = False) -> None:
        self.folds: list[Fold[ChatMessage]] = []
        self.refuse = refuse
        self._locked = LockedRewrite(
            lambda: store.get_messages(key),
            lambda ms: store.set_messages(key, ms),
            lambda ms: [store.add_message(key + "::archive", m) for m in ms],
            store="SimpleChatStore",
        )

    def rewrite(self, fold: Fold[ChatMessage]) -> bool:
        self.folds.append(fold)
        return not self.refuse and self._locked.rewrite(fold)


@pytest.mark.parametrize("refuse", [False, True], ids=["commits", "refuses"])
def test_a_callers_rewrite_is_used_for_every_compaction(refuse: bool) -> None:
    store = SimpleChatStore()
    rewrite = RecordingRewrite(store, "k", refuse=refuse)
    memory = WindowBudgetMemory.from_defaults(
        context_window=2_000,
        chat_store=store,
        chat_store_key="k",
        archive_key="k::archive",
        store_rewrite=rewrite,
    )
    assert memory.store_guarantee == RecordingRewrite.guarantee
    sent = [turn_text(i, role) for i in range(12) for role in ("user", "assistant")]
    for i, text in enumerate(sent):
        memory.put(ChatMessage(role="user" if i % 2 == 0 else "assistant", content=text))
    assert rewrite.folds, "no compaction went through the caller's rewrite"
    digests = sum(is_digest(m) for m in store.get_messages("k"))
    assert digests == (0 if refuse else 1)
    assert [str(m.content) for m in memory.get_all(include_archived=True)] == sent


def test_a_masking_pass_survives_each_store(
    kind: str, separate: bool, key: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Masking (on by default) writes placeholder copies through the store's rewrite; the
    originals come back from the archive in their places, a request at a time."""
    from llama_index.core.base.llms.types import ToolCallBlock

    from window_budget.pipeline import MASK_MARKER

    open_stores = _opener(kind, separate, request, tmp_path)
    sent: list[ChatMessage] = []
    masked_passes = 0
    for i in range(12):
        live, archive, persist = open_stores()
        memory = WindowBudgetMemory.from_defaults(
            context_window=12_000, chat_store=live, chat_store_key=key, archive_store=archive
        )
        cid = f"call-{i}"
        for message in (
            ChatMessage(role=MessageRole.USER, content=f"step {i}: run the build"),
            ChatMessage(
                role=MessageRole.ASSISTANT,
                blocks=[
                    ToolCallBlock(
                        tool_call_id=cid, tool_name="bash", tool_kwargs={"command": f"make p{i}"}
                    )
                ],
            ),
            ChatMessage(
                role=MessageRole.TOOL,
                content=f"build {i}\n" + "log line\n" * 400,
                additional_kwargs={"tool_call_id": cid, "name": "bash"},
            ),
            ChatMessage(role=MessageRole.ASSISTANT, content=f"part {i} built"),
        ):
            sent.append(message)
            memory.put(message)
            done = memory.last_compaction
            masked_passes += bool(done and done.committed and done.masked)
            memory._last_compaction = None
        persist()
    assert masked_passes >= 2

    live, archive, _ = open_stores()
    memory = WindowBudgetMemory.from_defaults(
        context_window=12_000, chat_store=live, chat_store_key=key, archive_store=archive
    )
    stored = memory.get_all()
    placeholders = [m for m in stored if str(m.content or "").startswith(MASK_MARKER)]
    assert placeholders, "no placeholder came back from the store"
    assert all(m.additional_kwargs.get("tool_call_id") for m in placeholders)
    everything = memory.get_all(include_archived=True)
    # nothing lost or doubled: the originals stand in their places again
    assert [(m.role, str(m.content)) for m in everything] == [
        (m.role, str(m.content)) for m in sent
    ]
    assert not any(str(m.content or "").startswith(MASK_MARKER) for m in everything)
