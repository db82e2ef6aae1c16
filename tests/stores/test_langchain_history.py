"""The LangChain history wrapper over a SQL-backed history: langchain-postgres on a real server.

Each request opens a new connection and new history objects (live and archive), as a web
server does; the digest record and its fact ledger must survive the table's JSONB round
trip, and the archive plus the live messages must be the whole conversation.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import psycopg
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_postgres import PostgresChatMessageHistory

from langchain_window_budget import CondensingChatMessageHistory, digest_record
from langchain_window_budget.history import ArchiveChatMessageHistory
from window_budget.errors import StoreError

from ..langchain.conftest import digest_model

TABLE = "chat_history"
WINDOW = 4_000


def turn(i: int) -> list[BaseMessage]:
    return [
        HumanMessage(
            f"step {i}: rename config/settings_{i}.yaml and rerun `make check`. " + "context " * 80
        ),
        AIMessage(f"renamed config/settings_{i}.yaml; make check passes. " + "detail " * 80),
    ]


def _texts(messages: Sequence[BaseMessage]) -> list[str]:
    return [m.text for m in messages if digest_record(m) is None]


def _audit(live: list[BaseMessage], archived: list[BaseMessage], sent: list[BaseMessage]) -> None:
    digests = [m for m in live if digest_record(m) is not None]
    assert len(digests) == 1
    assert live[0] is digests[0]
    record = digest_record(digests[0])
    assert record is not None
    # The wrapper archives what each compaction dropped, earlier digests included.
    assert record["covered"] == len(_texts(archived))
    assert record["facts"]["facts"], "the fact ledger did not survive the table"
    # The record is bounded (its most important facts); the digest's text names the files.
    assert "config/settings_" in digests[0].text
    assert _texts(archived) + _texts(live) == [m.text for m in sent]


def test_the_wrapper_over_postgres_keeps_everything_across_requests(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn) as conn:
        PostgresChatMessageHistory.create_tables(conn, TABLE)
    live_id, archive_id = str(uuid.uuid4()), str(uuid.uuid4())
    sent: list[BaseMessage] = []
    compactions = 0
    for i in range(30):  # one request per turn: a new connection, new objects
        with psycopg.connect(pg_dsn) as conn:
            history = CondensingChatMessageHistory(
                PostgresChatMessageHistory(TABLE, live_id, sync_connection=conn),
                archive=PostgresChatMessageHistory(TABLE, archive_id, sync_connection=conn),
                model=digest_model(),
                context_window=WINDOW,
            )
            history.add_messages(turn(i))
            sent.extend(turn(i))
            compactions += bool(history.last_result and history.last_result.changed)
    assert compactions >= 3
    with psycopg.connect(pg_dsn) as conn:
        live = PostgresChatMessageHistory(TABLE, live_id, sync_connection=conn).messages
        archived = PostgresChatMessageHistory(TABLE, archive_id, sync_connection=conn).messages
    _audit(live, archived, sent)


async def test_the_async_wrapper_over_postgres(pg_dsn: str) -> None:
    async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
        await PostgresChatMessageHistory.acreate_tables(conn, TABLE)
    live_id = str(uuid.uuid4())
    archive = ArchiveChatMessageHistory()  # the archive is written through its sync API
    sent: list[BaseMessage] = []
    for i in range(16):
        async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
            history = CondensingChatMessageHistory(
                PostgresChatMessageHistory(TABLE, live_id, async_connection=conn),
                archive=archive,
                model=digest_model(),
                context_window=WINDOW,
            )
            await history.aadd_messages(turn(i))
            sent.extend(turn(i))
    async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
        live = await PostgresChatMessageHistory(
            TABLE, live_id, async_connection=conn
        ).aget_messages()
    _audit(live, archive.messages, sent)


class NeverClearedHistory(ArchiveChatMessageHistory):
    """A history whose clear() does nothing (a store that cannot delete)."""

    def clear(self) -> None:
        pass


def test_a_history_that_does_not_clear_is_refused_naming_it() -> None:
    history = CondensingChatMessageHistory(
        NeverClearedHistory(), model=digest_model(), context_window=WINDOW
    )

    def write_turns() -> None:
        for i in range(20):
            history.add_messages(turn(i))

    with pytest.raises(
        StoreError,
        match=r"^the store NeverClearedHistory still held \d+ messages after clear\(\)",
    ):
        write_turns()
