"""Real stores for the tests in this folder: one server per session, a fresh namespace per test.

PostgreSQL and Redis are started by the suite on loopback (see ``servers.py``), from the
development install's packages when it has them (``binaries.py``); a server that cannot be
started fails the tests that need it with one sentence saying why. Each test
gets its own database (PostgreSQL), its own key prefix (Redis) or its own file (SQLite).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .servers import Server, ServerError, postgres_server, redis_server


@pytest.fixture(scope="session")
def postgres() -> Iterator[Server]:
    try:
        with postgres_server() as server:
            yield server
    except ServerError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def redis_srv() -> Iterator[Server]:
    try:
        with redis_server() as server:
            yield server
    except ServerError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def pg_dsn(postgres: Server) -> Iterator[str]:
    """A fresh database on the session's server: ``postgresql://...`` (psycopg form)."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres.url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield f"postgresql://postgres@{postgres.host}:{postgres.port}/{name}"
    with psycopg.connect(postgres.url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def redis_url(redis_srv: Server) -> str:
    return redis_srv.url


@pytest.fixture
def prefix() -> str:
    """A key prefix no other test uses."""
    return f"t-{uuid.uuid4().hex[:12]}:"


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    return tmp_path / "chat.db"
