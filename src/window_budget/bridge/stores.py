"""What both adapters' memory stores and recall tools share, written once.

An adapter's :class:`~window_budget.memory.MemoryStore` keeps the archive in a store its
framework already runs (a LangGraph ``BaseStore``, a LlamaIndex chat store); the parts that
know nothing of that store live here: the text an archived original is indexed and shown
by, the checks on the sealing key and its hex form, the key created once and read on first
use, and the recall tool's reply (a sentence, never an exception, for a malformed call).
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable, Mapping
from typing import Any

from window_budget.contract import MemoryStore, TokenCounter
from window_budget.errors import ConfigError
from window_budget.memory import recall
from window_budget.messages import message_from_dict, message_text

__all__ = ["LazyKey", "check_key", "key_from_hex", "new_key_hex", "original_text", "recall_reply"]


def original_text(original: Mapping[str, Any]) -> str:
    """The text of an archived original (its JSON when it is no message the core reads)."""
    try:
        return message_text(message_from_dict(original))
    except (ValueError, TypeError, KeyError):
        return json.dumps(original, ensure_ascii=False, default=str)


def check_key(key: object) -> bytes | None:
    """``key`` when it can seal digest records (None: the store's own, kept in it).

    Raises:
        ConfigError: it is not bytes, or shorter than 16 of them.

    """
    if key is not None and (not isinstance(key, bytes) or len(key) < 16):
        raise ConfigError("key must be bytes, at least 16 of them (secrets.token_bytes(32))")
    return key


def new_key_hex() -> str:
    """A fresh store secret as it is kept in a store: 32 random bytes, as hex."""
    return secrets.token_bytes(32).hex()


def key_from_hex(value: object) -> bytes | None:
    """The key a store holds as hex, or None when it is missing, damaged or too short."""
    try:
        key = bytes.fromhex(str(value))
    except ValueError:
        return None
    return key if len(key) >= 16 else None


class LazyKey:
    """A store's sealing key: the caller's, else loaded (or created) once, on first use.

    ``load`` reads the key the store keeps, writing a new one first when there is none; it
    runs at most once per object, under a lock, however many threads ask at once.
    """

    __slots__ = ("_key", "_load", "_lock")

    def __init__(self, key: object, load: Callable[[], bytes]) -> None:
        self._key = check_key(key)
        self._load = load
        self._lock = threading.Lock()

    @property
    def given(self) -> bytes | None:
        """The key as given or loaded so far (None: not loaded yet)."""
        return self._key

    def get(self) -> bytes:
        """The key, loading it on first use."""
        if self._key is None:
            with self._lock:
                if self._key is None:
                    self._key = self._load()
        return self._key


def recall_reply(
    store: MemoryStore | None,
    conversation: str | Callable[[], str] | None,
    args: Mapping[str, Any],
    *,
    max_tokens: int = 1500,
    counter: TokenCounter | None = None,
) -> str:
    """The recall tool's reply to ``args`` (``query``, ``kind``, ``page``, ``pointer``).

    The answer is :func:`window_budget.memory.recall`'s; a call it refuses (two of the
    arguments, an unknown kind, a bad pointer) gets a sentence saying what to fix instead
    of an exception, so the model can call again. ``conversation`` may be a callable naming
    the conversation when asked (a ``ConfigError`` from it is answered the same way).
    """
    if store is None or conversation is None:
        return (
            "recall: nothing is archived for this conversation (no memory store is "
            "configured, or the run has no thread_id)."
        )
    try:
        return recall(
            store,
            conversation() if callable(conversation) else conversation,
            args.get("query"),
            kind=args.get("kind"),
            page=args.get("page") or 1,
            pointer=args.get("pointer"),
            max_tokens=max_tokens,
            counter=counter,
        )
    except ConfigError as exc:
        return f"recall could not run: {exc}"
