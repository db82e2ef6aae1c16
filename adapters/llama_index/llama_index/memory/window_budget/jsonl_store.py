"""``JsonlChatStore``: a chat store of JSON-lines files, read only when a key is asked for.

Made for the archive of a memory whose live store is a ``SimpleChatStore`` persisted to a
file. ``SimpleChatStore.from_persist_path`` parses every key of its file, so an archive kept
in that store (the default) is read and validated on every request that loads it: at 10k
messages, most of the request. Given as ``archive_store=``, this store costs nothing to
build; a compaction appends the folded messages to one file per key (one ``write`` in
append mode, so the archive is never rewritten); only ``get_messages`` — recall,
``get_all(include_archived=True)``, ``to_dict`` — reads a file.

Each file starts with a header line naming its key, then one ``ChatMessage`` JSON per line.
File names are the key, percent-quoted (a long key: its SHA-256). A line that cannot be read
(a write torn by a crash, an edit by hand) is skipped with a warning; the rest still load.
Writers in one process are serialized by a lock; appends from several processes never
interleave within a line (one ``write`` call each, ``O_APPEND``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, PrivateAttr, ValidationError
from llama_index.core.storage.chat_store import BaseChatStore

from window_budget.messages import loads

__all__ = ["JsonlChatStore"]

logger = logging.getLogger(__name__)

_HEADER = "window_budget_jsonl"
"""Header field of a file's first line (its value: the format version)."""
_HEADER_START = '{"' + _HEADER + '"'
_MAX_NAME = 200
"""Longest quoted key used as a file name; a longer one is named by its SHA-256."""


def _file_name(key: str) -> str:
    name = quote(key, safe="")
    if len(name) > _MAX_NAME or name in {"", ".", ".."}:
        name = "sha256-" + hashlib.sha256(key.encode("utf-8")).hexdigest()
    return name + ".jsonl"


def _header(key: str) -> str:
    return json.dumps({_HEADER: 1, "key": key}, ensure_ascii=False) + "\n"


def _lines(messages: list[ChatMessage]) -> str:
    return "".join(m.model_dump_json() + "\n" for m in messages)


class JsonlChatStore(BaseChatStore):
    """A ``BaseChatStore`` over a directory of JSON-lines files, one per key.

    Args:
        directory: where the files go (created on the first write).

    >>> import tempfile
    >>> archive = JsonlChatStore(directory=tempfile.mkdtemp())
    >>> archive.add_message("chat-1", ChatMessage(role="user", content="Port the loader."))
    >>> [m.content for m in archive.get_messages("chat-1")], archive.get_keys()
    (['Port the loader.'], ['chat-1'])

    """

    directory: str = Field(description="Directory of the JSON-lines files, one per key.")
    _lock: Any = PrivateAttr(default_factory=threading.RLock)

    @classmethod
    def class_name(cls) -> str:
        """Name used in serialized forms."""
        return "JsonlChatStore"

    def path_of(self, key: str) -> Path:
        """The file that holds ``key``'s messages."""
        return Path(self.directory) / _file_name(key)

    def _read(self, path: Path) -> tuple[str | None, list[ChatMessage]]:
        """The key named by ``path``'s header and its messages; ``(None, [])`` when absent."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None, []
        # Only "\n" ends a line: JSON leaves U+2028, U+0085 and the like raw in strings.
        lines = text.split("\n")
        key: str | None = None
        messages = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            if line.startswith(_HEADER_START):
                # The first line; another one when two processes created the file at once.
                named = self._header_key(line, path)
                if named is not None:
                    key = key or named
                    continue
            try:
                messages.append(ChatMessage.model_validate_json(line))
            except (ValidationError, ValueError):
                logger.warning("%s, line %d: not a chat message; skipped", path, number)
        return key, messages

    @staticmethod
    def _header_key(line: str, path: Path) -> str | None:
        try:
            head = loads(line)  # bounded: nesting or digits past the limits are bad data
        except ValueError:
            return None
        if isinstance(head, dict) and _HEADER in head and isinstance(head.get("key"), str):
            return str(head["key"])
        return None

    def _write(self, key: str, messages: list[ChatMessage]) -> None:
        """Replace ``key``'s file in one step (a temporary file, then ``os.replace``)."""
        path = self.path_of(key)
        if not messages:
            path.unlink(missing_ok=True)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(_header(key) + _lines(messages), encoding="utf-8")
        os.replace(tmp, path)

    def get_messages(self, key: str) -> list[ChatMessage]:
        """``key``'s messages, oldest first (reads its file)."""
        return self._read(self.path_of(key))[1]

    def add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        """Append ``message`` (one write); with ``idx``, insert it there (rewrites the file)."""
        if idx is not None:
            with self._lock:
                messages = self.get_messages(key)
                messages.insert(idx, message)
                self._write(key, messages)
            return
        self.add_messages(key, [message])

    def add_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Append ``messages`` in one ``write`` call (the header first for a new file)."""
        if not messages:
            return
        path = self.path_of(key)
        with self._lock:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                new = os.fstat(fd).st_size == 0
                data = ((_header(key) if new else "") + _lines(messages)).encode("utf-8")
                while data:  # one write for a regular file; a short one is finished, not lost
                    data = data[os.write(fd, data) :]
            finally:
                os.close(fd)

    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Replace ``key``'s messages (an empty list deletes its file)."""
        with self._lock:
            self._write(key, list(messages))

    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        """Delete ``key``'s file; returns what it held, or None when there was none."""
        with self._lock:
            path = self.path_of(key)
            if not path.exists():
                return None
            messages = self.get_messages(key)
            path.unlink(missing_ok=True)
            return messages

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete the message at ``idx`` (rewrites the file)."""
        with self._lock:
            messages = self.get_messages(key)
            if not 0 <= idx < len(messages):
                return None
            removed = messages.pop(idx)
            self._write(key, messages)
            return removed

    def delete_last_message(self, key: str) -> ChatMessage | None:
        """Delete the last message (rewrites the file)."""
        with self._lock:
            messages = self.get_messages(key)
            if not messages:
                return None
            return self.delete_message(key, len(messages) - 1)

    def get_keys(self) -> list[str]:
        """Every key with a file (read from each file's header)."""
        directory = Path(self.directory)
        if not directory.is_dir():
            return []
        keys = []
        for path in sorted(directory.glob("*.jsonl")):
            with path.open(encoding="utf-8") as f:
                key = self._header_key(f.readline(), path)
            if key is not None:
                keys.append(key)
        return keys
