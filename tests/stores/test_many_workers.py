"""Several worker processes serve one conversation on a shared store, compacting as they go.

Spawned processes (a web server's workers), each building a new memory per request over
its own connection, append to the same conversation at the same time for many rounds
while compactions happen. Afterwards the archive plus the live messages must be exactly
everything appended, each worker's messages in its order, with one digest covering
exactly the archive (no message covered twice, none lost).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .workers import audit, build_store, close_store, run_workers

WORKERS = 3
TURNS = 25  # per worker: 150 messages in all, a compaction every few turns


@pytest.fixture(scope="module")
def spawned() -> Iterator[tuple[Any, Any]]:
    """One pool of spawned workers for every store: spawning and importing is the slow part."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(WORKERS) as pool:
        yield pool, manager


@pytest.mark.parametrize("kind", ["redis", "postgres", "sqlite"])
def test_workers_sharing_one_conversation_lose_and_duplicate_nothing(
    kind: str, spawned: tuple[Any, Any], request: pytest.FixtureRequest, prefix: str, tmp_path: Path
) -> None:
    where = {
        "redis": lambda: request.getfixturevalue("redis_url"),
        "postgres": lambda: request.getfixturevalue("pg_dsn"),
        "sqlite": lambda: str(tmp_path / "shared.db"),
    }[kind]()
    key = prefix + "shared"
    close_store(build_store(kind, where))  # create the table before the workers race to
    pool, manager = spawned
    compactions, _ = run_workers(
        kind, where, key, workers=WORKERS, turns=TURNS, window=2_000, pool=pool, manager=manager
    )
    assert compactions >= 5
    store = build_store(kind, where)
    try:
        counts = audit(store, key, workers=WORKERS, turns=TURNS)
    finally:
        close_store(store)
    assert counts["digests"] == 1
    assert counts["archived"] + counts["live"] - 1 == WORKERS * TURNS * 2
