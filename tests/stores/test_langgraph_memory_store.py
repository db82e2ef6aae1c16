"""LangGraphMemoryStore over LangGraph's InMemoryStore and real PostgresStore / AsyncPostgresStore.

The store keeps what the core's MemoryStore protocol promises (positions left alone once
kept, the next position and version, every original in order, ledger versions), its key
survives a restart (a new wrapper over the same store), conversations with any name stay
apart, and an agent over an AsyncPostgresStore compacts and recalls through ``ainvoke``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langchain_window_budget import LangGraphMemoryStore, recall_tool
from langchain_window_budget import store as store_module
from window_budget.errors import ConfigError, StoreError
from window_budget.memory import MemoryStore, recall, recall_text


@contextmanager
def postgres_store(dsn: str, **kwargs: Any) -> Iterator[BaseStore]:
    from langgraph.store.postgres import PostgresStore

    with PostgresStore.from_conn_string(dsn, **kwargs) as store:
        store.setup()
        yield store


@pytest.fixture(params=["memory", "postgres"])
def lg_store(request: pytest.FixtureRequest) -> Iterator[BaseStore]:
    if request.param == "memory":
        yield InMemoryStore()
        return
    with postgres_store(request.getfixturevalue("pg_dsn")) as store:
        yield store


def _msg(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def test_it_keeps_what_the_protocol_promises(
    lg_store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "PAGE", 3)  # listings of several pages
    memory = LangGraphMemoryStore(lg_store)
    assert isinstance(memory, MemoryStore)
    assert memory.archived("c") == 0
    assert memory.ledger("c") is None
    assert list(memory.originals("c")) == []
    memory.archive("c", 0, [_msg(f"m{i}") for i in range(7)])
    memory.archive("c", 5, [_msg("not kept"), _msg("m6 again"), _msg("m7")])
    assert memory.archived("c") == 8
    assert [(p, o["content"]) for p, o in memory.originals("c")] == [
        *[(i, f"m{i}") for i in range(7)],
        (7, "m7"),
    ]
    assert memory.original("c", 5) == _msg("m5")  # kept positions are left alone
    memory.archive("c", 20, [_msg("after a gap")])
    assert memory.archived("c") == 21
    assert memory.original("c", 12) is None
    assert memory.original("c", -1) is None
    assert memory.original("c", 10**17) is None
    versions = [memory.save_ledger("c", {"facts": [], "n": n}, seal=f"s{n}") for n in range(5)]
    assert versions == [1, 2, 3, 4, 5]
    newest = memory.ledger("c")
    assert newest is not None
    assert (newest.version, newest.seal, newest.ledger["n"]) == (5, "s4", 4)
    second = memory.ledger("c", 2)
    assert second is not None
    assert second.seal == "s1"
    assert memory.ledger("c", 6) is None
    assert memory.ledger("c", 0) is None


def test_conversations_stay_apart_whatever_their_names(lg_store: BaseStore) -> None:
    memory = LangGraphMemoryStore(lg_store)
    names = ["a.b", "a%2Eb", "a", "_key", "ünï cödé", "thread/42"]
    for i, name in enumerate(names):
        memory.archive(name, 0, [_msg(f"for {name}")])
        memory.save_ledger(name, {"facts": []}, seal=f"seal {i}")
    for i, name in enumerate(names):
        assert [o["content"] for _, o in memory.originals(name)] == [f"for {name}"]
        stored = memory.ledger(name)
        assert stored is not None
        assert stored.seal == f"seal {i}"
    other = LangGraphMemoryStore(lg_store, namespace=("other", "tenant"))
    assert other.archived("a") == 0
    with pytest.raises(ConfigError):
        memory.archive("", 0, [_msg("x")])
    with pytest.raises(ConfigError):
        memory.archive("bad\nname", 0, [_msg("x")])


def test_the_key_is_made_once_and_survives_a_restart(lg_store: BaseStore) -> None:
    first = LangGraphMemoryStore(lg_store).key
    assert len(first) == 32
    assert LangGraphMemoryStore(lg_store).key == first  # a new process over the same store
    assert LangGraphMemoryStore(lg_store, namespace=("elsewhere",)).key != first
    assert LangGraphMemoryStore(lg_store, key=b"k" * 32).key == b"k" * 32


def test_a_damaged_key_is_refused_with_a_fix() -> None:
    store = InMemoryStore()
    store.put(("window_budget", "_key"), "key", {"key": "not hex"})
    with pytest.raises(StoreError, match="delete the item"):
        _ = LangGraphMemoryStore(store).key


@pytest.mark.parametrize(
    ("namespace", "why"),
    [((), "non-empty"), (("a.b",), "without '.'"), (("langgraph",), "reserves"), ("ns", "tuple")],
)
def test_a_bad_namespace_or_store_is_refused(namespace: Any, why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        LangGraphMemoryStore(InMemoryStore(), namespace=namespace)
    with pytest.raises(ConfigError, match="BaseStore"):
        LangGraphMemoryStore({})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="at least 16"):
        LangGraphMemoryStore(InMemoryStore(), key=b"short")


def test_recall_reads_it_and_quotes_what_it_returns(lg_store: BaseStore) -> None:
    memory = LangGraphMemoryStore(lg_store)
    memory.archive(
        "t1",
        0,
        [
            _msg("Deploy with `make release TAG=v7`; never skip the canary."),
            {"role": "assistant", "content": "Noted: the canary first."},
            _msg("The staging bucket is s3://night-owl-42."),
        ],
    )
    found = recall_text(memory, "t1", "night-owl bucket")
    assert found.positions[:1] == (2,)
    assert "| The staging bucket is s3://night-owl-42." in found.text
    assert "#0 user:" in recall(memory, "t1", pointer="#0")
    tool = recall_tool(lg_store, "t1")  # a BaseStore is wrapped
    assert "night-owl-42" in tool.invoke({"query": "bucket"})


def _embed(texts: list[str]) -> list[list[float]]:
    """A toy embedding: word hashes in 64 buckets, normalised (no model, no network)."""
    out = []
    for text in texts:
        vec = [0.0] * 64
        for word in text.lower().split():
            vec[int(hashlib.md5(word.strip(".,;`").encode()).hexdigest(), 16) % 64] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        out.append([v / norm for v in vec])
    return out


def test_a_store_with_a_search_index_answers_the_word_search() -> None:
    store = InMemoryStore(index={"dims": 64, "embed": _embed})
    memory = LangGraphMemoryStore(store)
    memory.archive("t", 0, [_msg(f"routine turn {i} about nothing") for i in range(6)])
    memory.archive("t", 6, [_msg("the rotation crew is night owl")])
    assert memory.search("t", ["night", "owl"], limit=3) is not None
    assert memory.search("t", ["night", "owl"], limit=3)[0] == 6  # type: ignore[index]
    assert recall_text(memory, "t", "night owl").positions[0] == 6
    # The originals are indexed by their text; the key and the ledgers are not indexed.
    assert LangGraphMemoryStore(InMemoryStore()).search("t", ["x"], limit=3) is None


async def test_an_agent_over_an_async_postgres_store_compacts_and_recalls(pg_dsn: str) -> None:
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.postgres.aio import AsyncPostgresStore

    from langchain_window_budget import WindowBudgetMiddleware, digest_record
    from window_budget import BudgetPolicy

    from ..langchain.test_recall import FACT, Scripted, _ask, lookup, recall_call, turns

    async with AsyncPostgresStore.from_conn_string(pg_dsn) as store:
        await store.setup()
        model = Scripted(messages=iter([*turns(6), recall_call(), AIMessage("done")]))
        middleware = WindowBudgetMiddleware(
            model=model,
            context_window=6_000,
            policy=BudgetPolicy(keep_recent=1_200, reserve_tokens=256),
            recall=True,
        )
        memory = middleware.memory.store_for(store, "pg-thread")
        assert isinstance(memory, LangGraphMemoryStore)
        assert memory.async_only
        agent = create_agent(
            model,
            tools=[lookup],
            middleware=[middleware],
            checkpointer=InMemorySaver(),
            store=store,
        )
        config = {"configurable": {"thread_id": "pg-thread"}}
        for i in range(6):
            await agent.ainvoke(_ask(i), config)
        assert middleware.compactions >= 1
        state = (await agent.aget_state(config)).values["messages"]
        assert digest_record(state[0], key=memory.key) is not None
        assert FACT not in state[0].text
        out = await agent.ainvoke({"messages": [HumanMessage("what about the crew?")]}, config)
        assert FACT in out["messages"][-2].text
        assert await store.aget(("window_budget", "pg-thread", "ledger"), f"{1:012d}")
