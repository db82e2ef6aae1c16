"""LlamaIndex chat stores by kind, and worker processes that share one conversation.

Used by the multi-process tests and by ``bench/bench_stores.py``: each worker builds a new
``WindowBudgetMemory`` per request (as a web server does) over its own connection to the
shared store, appends a user message and a reply, and compacts when the gate fires.
:func:`audit` then checks the contract: the archive plus the live messages are everything
appended, each worker's messages in its order, and no message covered by two digests.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.storage.chat_store import BaseChatStore, SimpleChatStore

from llama_index.memory.window_budget import WindowBudgetMemory
from llama_index.memory.window_budget.archive_pack import unpack
from llama_index.memory.window_budget.convert import digest_covered, is_digest

KINDS = ("redis", "postgres", "sqlite", "simple")
FILLER = "the build log says the cache key changed after the lockfile update; " * 3


def build_store(kind: str, where: str, *, table: str = "chatstore") -> BaseChatStore:
    """A chat store of ``kind`` at ``where`` (a URL, a DSN or a file path)."""
    if kind == "redis":
        from llama_index.storage.chat_store.redis import RedisChatStore

        return RedisChatStore(redis_url=where)
    if kind == "postgres":
        from llama_index.storage.chat_store.postgres import PostgresChatStore

        rest = where.split("://", 1)[1]
        return PostgresChatStore.from_params(
            connection_string=f"postgresql+psycopg://{rest}",
            async_connection_string=f"postgresql+asyncpg://{rest}",
            table_name=table,
        )
    if kind == "sqlite":
        from llama_index.storage.chat_store.sqlite import SQLiteChatStore

        return SQLiteChatStore.from_params(database=where, table_name=table)
    if kind == "simple":
        path = Path(where)
        return SimpleChatStore.from_persist_path(str(path)) if path.exists() else SimpleChatStore()
    raise ValueError(f"unknown store kind {kind!r}; expected one of {KINDS}")


def persist_simple(store: SimpleChatStore, path: Path) -> None:
    """Write ``store`` to ``path`` in ``SimpleChatStore.persist``'s format.

    ``persist`` itself raises under pydantic 2.14 (llama-index-core 0.14's
    ``WrapSerializer`` calls its handler with an argument pydantic now reads as an index),
    so the same JSON is written message by message; ``from_persist_path`` reads it back.
    """
    data = {
        "store": {
            key: [m.model_dump(mode="json") for m in store.get_messages(key)]
            for key in store.get_keys()
        },
        "class_name": "SimpleChatStore",
    }
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def close_store(store: BaseChatStore | None) -> None:
    """Release a store's connections (the integrations leave their pools to the GC)."""
    session = getattr(store, "_session", None)
    if session is not None:
        session.kw["bind"].dispose()
    client = getattr(store, "_redis_client", None)
    if client is not None:
        client.close()


async def aclose_store(store: BaseChatStore | None) -> None:
    """:func:`close_store`, and the async engine or client too."""
    close_store(store)
    session = getattr(store, "_async_session", None)
    if session is not None:
        await session.kw["bind"].dispose()
    client = getattr(store, "_aredis_client", None)
    if client is not None:
        await client.aclose()


def text(worker: int, turn: int, role: str) -> str:
    return f"[w{worker} t{turn} {role}] {FILLER}"


@dataclass(frozen=True)
class Job:
    kind: str
    where: str
    key: str
    worker: int
    turns: int
    window: int


def serve(job: Job, start: Any = None) -> tuple[int, float]:
    """Run one worker: ``turns`` requests, each a new memory, a user message and a reply.

    Returns how many compactions this worker committed and the seconds it took.
    """
    store = build_store(job.kind, job.where)
    if start is not None:
        start.wait(120)  # a barrier: every worker is ready before any starts
    began = time.perf_counter()
    committed = 0
    for turn in range(job.turns):
        memory = WindowBudgetMemory.from_defaults(
            context_window=job.window, chat_store=store, chat_store_key=job.key
        )
        memory.put(ChatMessage(role=MessageRole.USER, content=text(job.worker, turn, "user")))
        memory.put(ChatMessage(role=MessageRole.ASSISTANT, content=text(job.worker, turn, "agent")))
        if memory.last_compaction is not None and memory.last_compaction.committed:
            committed += 1
    elapsed = time.perf_counter() - began
    close_store(store)
    return committed, elapsed


def run_workers(
    kind: str,
    where: str,
    key: str,
    *,
    workers: int,
    turns: int,
    window: int,
    pool: Any = None,
    manager: Any = None,
) -> tuple[int, float]:
    """Run ``workers`` spawned processes on one conversation; (compactions, wall seconds).

    ``pool`` and ``manager`` (a spawn-context ``Pool`` of at least ``workers`` processes
    and a ``Manager``) may be passed to reuse them across runs; otherwise they are made here.
    """
    import multiprocessing

    if pool is None or manager is None:
        ctx = multiprocessing.get_context("spawn")
        with ctx.Manager() as manager, ctx.Pool(workers) as pool:
            return run_workers(
                kind,
                where,
                key,
                workers=workers,
                turns=turns,
                window=window,
                pool=pool,
                manager=manager,
            )
    start = manager.Barrier(workers + 1)
    pending = [
        pool.apply_async(serve, (Job(kind, where, key, w, turns, window), start))
        for w in range(workers)
    ]
    start.wait(120)  # the workers have imported everything and connected
    began = time.perf_counter()
    results = [p.get(timeout=600) for p in pending]
    wall = time.perf_counter() - began
    return sum(r[0] for r in results), wall


def audit(store: BaseChatStore, key: str, *, workers: int, turns: int) -> dict[str, int]:
    """Check the contract on what the workers left; returns counts for reports.

    Raises AssertionError naming what is wrong.
    """
    memory = WindowBudgetMemory.from_defaults(
        context_window=4096, chat_store=store, chat_store_key=key
    )
    live = memory.get_all()
    archived = unpack(store, memory.archive_key, store.get_messages(memory.archive_key))
    everything = memory.get_all(include_archived=True)
    digests = [m for m in live if is_digest(m)]
    assert len(digests) <= 1, f"{len(digests)} digests in the live store"
    assert not any(is_digest(m) for m in archived), "a digest was archived"
    seen = [str(m.content) for m in everything if not is_digest(m)]
    expected = [
        text(w, t, r) for w in range(workers) for t in range(turns) for r in ("user", "agent")
    ]
    missing = Counter(expected) - Counter(seen)
    extra = Counter(seen) - Counter(expected)
    assert not missing, f"{sum(missing.values())} appended messages lost"
    assert not extra, f"{sum(extra.values())} messages stored twice"
    for w in range(workers):
        mine = [s for s in seen if s.startswith(f"[w{w} ")]
        assert mine == [text(w, t, r) for t in range(turns) for r in ("user", "agent")], (
            f"worker {w}'s messages are out of order"
        )
    if digests:
        assert digest_covered(digests[0]) == len(archived), (
            f"the digest covers {digest_covered(digests[0])} messages, the archive holds "
            f"{len(archived)}"
        )
    return {"live": len(live), "archived": len(archived), "digests": len(digests)}
