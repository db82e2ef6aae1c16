"""Conditional rewrites for LlamaIndex chat stores that several processes share.

:func:`rewrite_for` picks, for the live store and the archive store of a memory, the
strongest :class:`~window_budget.stores.ConditionalRewrite` the pair offers:

- ``RedisChatStore``: a transaction under ``WATCH`` of the live key (``MULTI``/``EXEC``);
  appends are single ``RPUSH`` commands, so one that lands between the re-read and the
  write aborts the transaction and the compaction is run again.
- ``PostgresChatStore``: one database transaction that locks the conversation's row
  (``SELECT ... FOR UPDATE``); the store's appends are single upserts, which wait for it.
- ``SQLiteChatStore``: one ``BEGIN IMMEDIATE`` transaction (SQLite's write lock); its
  appends wait for it. Its ``set_messages`` appends instead of replacing (0.4.0), so
  this rewrite never calls it.

Each needs the archive in the same server or database (the default: the same store under
``archive_key``), so that the archive and the live messages change in one transaction, and
Redis a single server (a Cluster client gets the fallback).
Any other store or pair gets :class:`~window_budget.stores.LockedRewrite`: exact within
one process, with a read-back check that refuses a store that does not keep what it is
given.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.storage.chat_store import BaseChatStore

from window_budget.stores import ConditionalRewrite, Fold, LockedRewrite

__all__ = ["PostgresRewrite", "RedisRewrite", "SQLiteRewrite", "rewrite_for", "store_name"]


def store_name(store: BaseChatStore) -> str:
    """The store's class name, as error messages name it."""
    return type(store).__name__


def _module_of(store: BaseChatStore) -> str:
    return type(store).__module__


class RedisRewrite:
    """A compaction on ``RedisChatStore``: ``WATCH`` the live key, check, ``MULTI``/``EXEC``."""

    guarantee = (
        "several processes: exact (a transaction under WATCH; an append in "
        "between aborts it and the compaction is run again)"
    )

    def __init__(self, store: BaseChatStore, key: str, archive_key: str) -> None:
        self._client: Any = store._redis_client  # type: ignore[attr-defined]
        self._ttl: int | None = getattr(store, "ttl", None)
        self._key = key
        self._archive_key = archive_key

    def rewrite(self, fold: Fold[ChatMessage]) -> bool:
        """Apply ``fold`` in one Redis transaction, or return False if the key changed."""
        from redis.exceptions import WatchError

        with self._client.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(self._key)
                current = [
                    ChatMessage.model_validate_json(item) for item in pipe.lrange(self._key, 0, -1)
                ]
                new = fold.apply(current)
                if new is None:
                    return False
                pipe.multi()
                if fold.archived:
                    pipe.rpush(self._archive_key, *[m.model_dump_json() for m in fold.archived])
                pipe.delete(self._key)
                if new:
                    pipe.rpush(self._key, *[m.model_dump_json() for m in new])
                if self._ttl:
                    pipe.expire(self._key, self._ttl)
                pipe.execute()
            except WatchError:
                return False
        return True


class PostgresRewrite:
    """A compaction on ``PostgresChatStore``: one transaction holding the row's lock."""

    guarantee = (
        "several processes: exact (one transaction; the conversation's row is "
        "locked with SELECT ... FOR UPDATE, appends wait for it)"
    )

    def __init__(self, store: BaseChatStore, key: str, archive_key: str) -> None:
        self._session: Any = store._session  # type: ignore[attr-defined]
        table = store._table_class.__tablename__  # type: ignore[attr-defined]
        self._table = f"{store.schema_name}.{table}"  # type: ignore[attr-defined]
        self._short = table
        self._key = key
        self._archive_key = archive_key

    def rewrite(self, fold: Fold[ChatMessage]) -> bool:
        """Apply ``fold`` in one transaction, or return False if the row changed."""
        from sqlalchemy import text

        with self._session() as session, session.begin():
            row = session.execute(
                text(f"SELECT value FROM {self._table} WHERE key = :key FOR UPDATE"),
                {"key": self._key},
            ).first()
            current = [_message(v) for v in (row[0] or [])] if row is not None else []
            new = fold.apply(current)
            if new is None:
                return False
            if fold.archived:
                # The store's own append statement: the archive row may not exist yet.
                session.execute(
                    text(
                        f"INSERT INTO {self._table} (key, value) VALUES (:key, :value) "
                        f"ON CONFLICT (key) DO UPDATE SET "
                        f"value = array_cat({self._short}.value, :value)"
                    ),
                    {
                        "key": self._archive_key,
                        "value": [m.model_dump_json() for m in fold.archived],
                    },
                )
            session.execute(
                text(
                    f"INSERT INTO {self._table} (key, value) VALUES (:key, :value) "
                    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
                ),
                {"key": self._key, "value": [m.model_dump_json() for m in new]},
            )
        return True


class SQLiteRewrite:
    """A compaction on ``SQLiteChatStore``: one ``BEGIN IMMEDIATE`` transaction."""

    guarantee = (
        "several processes: exact on one database file (BEGIN IMMEDIATE takes "
        "SQLite's write lock; appends wait for it)"
    )

    def __init__(self, store: BaseChatStore, key: str, archive_key: str) -> None:
        self._engine: Any = store._session.kw["bind"]  # type: ignore[attr-defined]
        self._table = store._table_class.__tablename__  # type: ignore[attr-defined]
        self._key = key
        self._archive_key = archive_key

    def rewrite(self, fold: Fold[ChatMessage]) -> bool:
        """Apply ``fold`` under SQLite's write lock, or return False if the rows changed."""
        raw = self._engine.raw_connection()
        try:
            db = raw.driver_connection
            level = db.isolation_level
            db.isolation_level = None  # transactions by hand: BEGIN IMMEDIATE
            try:
                return self._rewrite(db, fold)
            finally:
                db.isolation_level = level
        finally:
            raw.close()

    def _rewrite(self, db: Any, fold: Fold[ChatMessage]) -> bool:
        table = f'"{self._table}"'
        db.execute("BEGIN IMMEDIATE")
        try:
            rows = db.execute(
                f"SELECT value FROM {table} WHERE key = ? ORDER BY id", (self._key,)
            ).fetchall()
            new = fold.apply([_message(json.loads(r[0])) for r in rows])
            if new is None:
                db.execute("ROLLBACK")
                return False
            db.executemany(
                f"INSERT INTO {table} (key, value) VALUES (?, ?)",
                [(self._archive_key, _dump(m)) for m in fold.archived],
            )
            db.execute(f"DELETE FROM {table} WHERE key = ?", (self._key,))
            db.executemany(
                f"INSERT INTO {table} (key, value) VALUES (?, ?)",
                [(self._key, _dump(m)) for m in new],
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return True


def _dump(message: ChatMessage) -> str:
    return json.dumps(message.model_dump(mode="json"))  # as the store's JSON column writes it


def _message(value: object) -> ChatMessage:
    if isinstance(value, str | bytes):
        return ChatMessage.model_validate_json(value)
    return ChatMessage.model_validate(value)


def _same_redis(a: BaseChatStore, b: BaseChatStore) -> bool:
    def where(store: BaseChatStore) -> tuple[Any, ...]:
        kwargs = store._redis_client.connection_pool.connection_kwargs  # type: ignore[attr-defined]
        return (kwargs.get("host"), kwargs.get("port"), kwargs.get("path"), kwargs.get("db"))

    return where(a) == where(b)


def _same_database(a: BaseChatStore, b: BaseChatStore) -> bool:
    def where(store: BaseChatStore) -> tuple[Any, ...]:
        engine = store._session.kw["bind"]  # type: ignore[attr-defined]
        return (
            str(engine.url),
            store._table_class.__tablename__,  # type: ignore[attr-defined]
            getattr(store, "schema_name", None),
        )

    return where(a) == where(b)


def rewrite_for(
    store: BaseChatStore,
    archive: BaseChatStore,
    key: str,
    archive_key: str,
    *,
    fallback: Callable[[], LockedRewrite[ChatMessage]],
) -> ConditionalRewrite:
    """The strongest conditional rewrite ``store`` and ``archive`` offer together.

    Args:
        store: the live store.
        archive: the archive store (may be ``store``).
        key: the conversation's key in ``store``.
        archive_key: the archive's key in ``archive``.
        fallback: builds the :class:`LockedRewrite` used when the pair offers nothing.

    """
    module = _module_of(store)
    if type(archive) is type(store):
        # A Redis Cluster client has no WATCH across nodes: it gets the fallback.
        if (
            module.startswith("llama_index.storage.chat_store.redis")
            and type(getattr(store, "_redis_client", None)).__name__ != "RedisCluster"
            and _same_redis(store, archive)
        ):
            return RedisRewrite(store, key, archive_key)
        if module.startswith("llama_index.storage.chat_store.postgres") and _same_database(
            store, archive
        ):
            return PostgresRewrite(store, key, archive_key)
        if module.startswith("llama_index.storage.chat_store.sqlite") and _same_database(
            store, archive
        ):
            return SQLiteRewrite(store, key, archive_key)
    return fallback()
