"""A memory store in one SQLite file: persistent, no server, the standard library only.

Originals and ledger versions are rows keyed by conversation; the store's secret is kept in
the file, so digests sealed by one process are honoured by the next. Where the SQLite build
has FTS5, archived originals are indexed for :func:`~window_budget.memory.recall`'s word
search (ranked by bm25); elsewhere recall ranks them itself.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from window_budget.errors import ConfigError, StoreError
from window_budget.memory._store import LedgerVersion, check_conversation
from window_budget.messages import loads

__all__ = ["SQLiteMemoryStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS wb_meta (name TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS wb_originals (
    conversation TEXT NOT NULL, position INTEGER NOT NULL, body TEXT NOT NULL, words TEXT NOT NULL,
    PRIMARY KEY (conversation, position));
CREATE TABLE IF NOT EXISTS wb_ledgers (
    conversation TEXT NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL, seal TEXT NOT NULL,
    PRIMARY KEY (conversation, version));
"""


class SQLiteMemoryStore:
    """A :class:`~window_budget.memory.MemoryStore` in a SQLite file (``":memory:"`` works too).

    Safe across threads (one connection, one lock) and processes (SQLite's own locking).
    ``words_of`` is how recall's index sees an original: the caller passes the library's
    own text of a message (``message_text``), stored beside it.

    >>> store = SQLiteMemoryStore(":memory:")
    >>> store.archive("c1", 0, [{"role": "user", "content": "port the loader"}])
    >>> store.archived("c1")
    1
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        where = os.fspath(path)
        if where != ":memory:":
            if Path(where).is_dir():
                raise ConfigError(f"memory store {where!r} is a directory; name a file in it")
            if not Path(where).parent.is_dir():
                raise ConfigError(f"memory store {where!r}: its folder does not exist")
        self.path = where
        """The file, as given."""
        try:
            self._db = sqlite3.connect(where, check_same_thread=False, isolation_level=None)
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"memory store {where!r} is not a usable SQLite file: {exc}") from exc
        self._lock = threading.Lock()
        self.fts = self._try_fts()
        """True when the SQLite build has FTS5 and originals are indexed by it."""
        self._key = self._load_key()

    def _try_fts(self) -> bool:
        try:
            self._db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS wb_words USING fts5("
                "words, conversation UNINDEXED, position UNINDEXED)"
            )
        except sqlite3.OperationalError:
            return False
        return True

    def _load_key(self) -> bytes:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute("SELECT value FROM wb_meta WHERE name = 'key'").fetchone()
                if row is None:
                    key = secrets.token_bytes(32)
                    self._db.execute("INSERT INTO wb_meta VALUES ('key', ?)", (key,))
                else:
                    key = bytes(row[0])
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return key

    @property
    def key(self) -> bytes:
        """The secret kept in the file: digests sealed with it survive a restart."""
        return self._key

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._db.close()

    def archive(
        self,
        conversation: str,
        start: int,
        originals: Sequence[Mapping[str, Any]],
        *,
        words: Sequence[str] | None = None,
    ) -> None:
        """Keep ``originals`` from position ``start`` on; kept positions are left alone.

        ``words`` (one text per original) feeds the word index; by default each original's
        ``content`` (or its JSON) is indexed.
        """
        check_conversation(conversation)
        rows = []
        for i, original in enumerate(originals):
            text = words[i] if words is not None else _words(original)
            rows.append((conversation, start + i, json.dumps(original), text))
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for row in rows:
                    cur = self._db.execute(
                        "INSERT OR IGNORE INTO wb_originals VALUES (?, ?, ?, ?)", row
                    )
                    if cur.rowcount and self.fts:
                        self._db.execute(
                            "INSERT INTO wb_words (words, conversation, position) VALUES (?, ?, ?)",
                            (row[3], row[0], row[1]),
                        )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def archived(self, conversation: str) -> int:
        """One more than the highest position kept."""
        with self._lock:
            row = self._db.execute(
                "SELECT MAX(position) FROM wb_originals WHERE conversation = ?", (conversation,)
            ).fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    def original(self, conversation: str, position: int) -> Mapping[str, Any] | None:
        """The original at ``position``, or None."""
        with self._lock:
            row = self._db.execute(
                "SELECT body FROM wb_originals WHERE conversation = ? AND position = ?",
                (conversation, position),
            ).fetchone()
        return None if row is None else _load(row[0])

    def originals(self, conversation: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
        """Every original, by position."""
        with self._lock:
            rows = self._db.execute(
                "SELECT position, body FROM wb_originals WHERE conversation = ? ORDER BY position",
                (conversation,),
            ).fetchall()
        return ((int(p), _load(body)) for p, body in rows)

    def search(self, conversation: str, words: Sequence[str], *, limit: int) -> list[int] | None:
        """Positions of the originals that best match any of ``words``, best first.

        Ranked by FTS5's bm25; None when this build has no FTS5 (the caller ranks).
        """
        if not self.fts:
            return None
        terms = [w for w in words if w]
        if not terms:
            return []
        query = " OR ".join('"' + w.replace('"', '""') + '"' for w in terms)
        with self._lock:
            try:
                rows = self._db.execute(
                    "SELECT position FROM wb_words WHERE wb_words MATCH ? AND conversation = ? "
                    "ORDER BY bm25(wb_words) LIMIT ?",
                    (query, conversation, limit),
                ).fetchall()
            except sqlite3.OperationalError:
                return None
        return [int(r[0]) for r in rows]

    def save_ledger(self, conversation: str, ledger: Mapping[str, Any], *, seal: str) -> int:
        """Append a ledger version; returns its number."""
        check_conversation(conversation)
        body = json.dumps(ledger)
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute(
                    "SELECT COALESCE(MAX(version), 0) FROM wb_ledgers WHERE conversation = ?",
                    (conversation,),
                ).fetchone()
                version = int(row[0]) + 1
                self._db.execute(
                    "INSERT INTO wb_ledgers VALUES (?, ?, ?, ?)",
                    (conversation, version, body, seal),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return version

    def ledger(self, conversation: str, version: int | None = None) -> LedgerVersion | None:
        """A stored version, the newest by default."""
        with self._lock:
            if version is None:
                row = self._db.execute(
                    "SELECT version, body, seal FROM wb_ledgers WHERE conversation = ? "
                    "ORDER BY version DESC LIMIT 1",
                    (conversation,),
                ).fetchone()
            else:
                row = self._db.execute(
                    "SELECT version, body, seal FROM wb_ledgers WHERE conversation = ? "
                    "AND version = ?",
                    (conversation, version),
                ).fetchone()
        if row is None:
            return None
        ledger = _load(row[1])
        return LedgerVersion(version=int(row[0]), ledger=ledger, seal=str(row[2]))


def _load(body: str) -> dict[str, Any]:
    try:  # a damaged row (the file is the user's) reads as empty, never a crash
        value = loads(body)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _words(original: Mapping[str, Any]) -> str:
    content = original.get("content")
    return content if isinstance(content, str) else json.dumps(original, ensure_ascii=False)
