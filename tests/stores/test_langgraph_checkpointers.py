"""WindowBudgetMiddleware in a create_agent graph persisted by LangGraph's real checkpointers.

SqliteSaver and AsyncSqliteSaver on a file, PostgresSaver and AsyncPostgresSaver on the
session's server: several threads, compactions, then a restart (a new checkpointer object
and a new agent over the same database) that goes on where the threads left off. The digest
record, its fact ledger and the compaction count must survive the checkpointer's
serialization, and no request may exceed the window.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage

from langchain_window_budget import WindowBudgetMiddleware, digest_record
from window_budget import BudgetPolicy

from ..langchain.conftest import RecordingChatModel, provider_valid

WINDOW = 8_000
POLICY = BudgetPolicy(keep_recent=2_500, reserve_tokens=512)
SYSTEM = "You are a careful release engineer. " * 20
THREADS = ("alice", "bob", "carol")


def _agent(checkpointer: Any) -> tuple[Any, WindowBudgetMiddleware, RecordingChatModel]:
    model = RecordingChatModel(
        sizes=[], summary_calls=[], tool_rounds=0, reply_chars=900, window=WINDOW
    )
    middleware = WindowBudgetMiddleware(model=model, context_window=WINDOW, policy=POLICY)
    agent = create_agent(
        model, tools=[], system_prompt=SYSTEM, middleware=[middleware], checkpointer=checkpointer
    )
    return agent, middleware, model


def _ask(thread: str, turn: int) -> dict[str, Any]:
    return {
        "messages": [
            HumanMessage(
                f"{thread} turn {turn}: deploy services/{thread}/api_{turn}.py with `make release "
                f"TAG=v{turn}`; never skip the canary. " + "context " * 150
            )
        ]
    }


def _config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def _check_thread(messages: list[BaseMessage], thread: str) -> dict[str, Any]:
    records = [digest_record(m) for m in messages]
    assert sum(r is not None for r in records) == 1, "one digest per thread"
    record = records[0]
    assert record is not None, "the digest leads the thread"
    assert record["facts"]["facts"], "the fact ledger did not survive the checkpointer"
    # The record is bounded (its most important facts); the digest's text names the files.
    assert f"services/{thread}/api_" in messages[0].text
    assert provider_valid(messages)
    return record


def _check_restart(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> None:
    for thread in THREADS:
        assert after[thread]["compactions"] >= before[thread]["compactions"]
        assert after[thread]["facts"], "the ledger was lost across the restart"
        assert after[thread]["covered"] >= before[thread]["covered"]


TURNS = 12


@contextmanager
def sqlite_saver(path: Path) -> Iterator[Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


@contextmanager
def postgres_saver(dsn: str) -> Iterator[Any]:
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        yield saver


@asynccontextmanager
async def async_sqlite_saver(path: Path) -> AsyncIterator[Any]:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        yield saver


@asynccontextmanager
async def async_postgres_saver(dsn: str) -> AsyncIterator[Any]:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
        await saver.setup()
        yield saver


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_threads_compact_and_resume_after_a_restart(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    def saver() -> Any:
        if kind == "sqlite":
            return sqlite_saver(tmp_path / "checkpoints.db")
        return postgres_saver(request.getfixturevalue("pg_dsn"))

    with saver() as checkpointer:
        agent, middleware, model = _agent(checkpointer)
        for turn in range(TURNS):
            for thread in THREADS:
                agent.invoke(_ask(thread, turn), _config(thread))
        assert middleware.compactions >= len(THREADS)
        assert max(model.sizes) <= WINDOW
        before = {
            t: _check_thread(agent.get_state(_config(t)).values["messages"], t) for t in THREADS
        }

    with saver() as checkpointer:  # a restart: new objects over the same database
        agent, middleware, model = _agent(checkpointer)
        reloaded = {
            t: _check_thread(agent.get_state(_config(t)).values["messages"], t) for t in THREADS
        }
        assert reloaded == before  # the record came back from the database unchanged
        for turn in range(TURNS, 2 * TURNS):
            for thread in THREADS:
                state = agent.invoke(_ask(thread, turn), _config(thread))
                assert provider_valid(state["messages"])
        assert middleware.compactions >= len(THREADS)  # the restarted agent compacts again
        assert max(model.sizes) <= WINDOW
        after = {
            t: _check_thread(agent.get_state(_config(t)).values["messages"], t) for t in THREADS
        }
    _check_restart(before, after)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_async_checkpointers_compact_and_resume(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    def saver() -> Any:
        if kind == "sqlite":
            return async_sqlite_saver(tmp_path / "checkpoints.db")
        return async_postgres_saver(request.getfixturevalue("pg_dsn"))

    async with saver() as checkpointer:
        agent, middleware, _ = _agent(checkpointer)
        for turn in range(TURNS):
            for thread in THREADS:
                await agent.ainvoke(_ask(thread, turn), _config(thread))
        assert middleware.compactions >= len(THREADS)
        before = {
            t: _check_thread((await agent.aget_state(_config(t))).values["messages"], t)
            for t in THREADS
        }

    async with saver() as checkpointer:
        agent, _, model = _agent(checkpointer)
        for thread in THREADS:
            await agent.ainvoke(_ask(thread, TURNS), _config(thread))
        assert max(model.sizes) <= WINDOW
        after = {
            t: _check_thread((await agent.aget_state(_config(t))).values["messages"], t)
            for t in THREADS
        }
    _check_restart(before, after)
