"""One conversation in a LlamaIndex chat store: reads, appends and rewrites, under its lock.

The live messages sit under ``key`` in the chat store and the folded originals under
``archive_key`` in the archive store (the chat store by default). Nothing but recall,
``get_all(include_archived=True)`` and saving reads the archive: a request's ``get`` and a
compaction only append to it. A conversation given its own archive store after it was
written with the default keeps its earlier archive under ``archive_key`` in the chat
store; it is read first, then the archive store's (which alone counts when it starts with
the same messages: two store objects over one server). In a ``SimpleChatStore`` the archive
is packed, one entry per compaction (:mod:`~llama_index.memory.window_budget.archive_pack`),
and unpacked where it is read. Every write — an
append, ``set``, ``reset``, a compaction's conditional rewrite — holds the process-wide
lock of the chat store and key (:func:`window_budget.stores.lock_for`), so any number of
memories over one store object behave as one. A compaction's rewrite is the strongest the
stores offer (:func:`~llama_index.memory.window_budget.stores.rewrite_for`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.storage.chat_store import BaseChatStore, SimpleChatStore

from llama_index.memory.window_budget.archive_pack import pack, packs_into, unpack
from llama_index.memory.window_budget.jsonl_store import JsonlChatStore
from llama_index.memory.window_budget.stores import rewrite_for, store_name
from window_budget.stores import (
    ConditionalRewrite,
    Fold,
    LockedRewrite,
    StoreLock,
    check_written,
    lock_for,
)

__all__ = [
    "ARCHIVE_SUFFIX",
    "StoredConversation",
    "copy_message",
    "same_message",
    "set_verified",
]

ARCHIVE_SUFFIX = "::window-budget-archive"
"""Appended to ``chat_store_key`` to name the key that holds folded messages."""


def copy_message(message: ChatMessage) -> ChatMessage:
    """An independent copy: callers may edit blocks and kwargs without touching the store."""
    return message.model_copy(deep=True)


def same_message(a: ChatMessage, b: ChatMessage) -> bool:
    """Equal as stored: a store's JSON round trip may turn tuples into lists."""
    return a is b or a == b or a.model_dump(mode="json") == b.model_dump(mode="json")


def _same_list(
    read_back: Sequence[ChatMessage], written: Sequence[ChatMessage], *, exact: bool
) -> bool:
    if len(read_back) != len(written) and (exact or len(read_back) < len(written)):
        return False
    return all(same_message(a, b) for a, b in zip(read_back, written, strict=False))


def _joined(earlier: Sequence[ChatMessage], archived: Sequence[ChatMessage]) -> list[ChatMessage]:
    """An earlier archive from the chat store, then the archive store's.

    The earlier one is left out when the archive store already starts with it: two store
    objects over one server or database (``earlier`` is read first, so the archive store's
    read holds at least as much), or an archive moved over by ``from_dict``.
    """
    if earlier and not _same_list(archived[: len(earlier)], earlier, exact=True):
        return [*earlier, *archived]
    return list(archived)


def set_verified(
    store: BaseChatStore, key: str, messages: list[ChatMessage], *, exact: bool = True
) -> None:
    """Replace ``key``'s messages, and make sure the store did replace them.

    A store whose ``set_messages`` appends instead (LlamaIndex's SQLite integration,
    0.4.0) is handled by deleting the key and adding the messages one by one; a store
    that still does not hold what was written raises ``StoreError`` naming it, rather
    than multiplying messages silently. Without ``exact`` (a compaction, whose caller
    checks again), messages after the written ones are others' appends, not a fault.
    """
    if messages:
        store.set_messages(key, messages)
    else:
        store.delete_messages(key)  # the SQLite integration's set_messages fails on []
    if _same_list(store.get_messages(key), messages, exact=exact):
        return
    store.delete_messages(key)
    for m in messages:
        store.add_message(key, m)
    if exact:
        check_written(
            store.get_messages(key), messages, store_name(store), same=same_message, exact=True
        )


class StoredConversation:
    """The conversation ``key`` of ``chat_store``, with its archive: every read and write.

    Args:
        chat_store: the live store.
        key: the conversation's key in it.
        archive_store: where folded originals go (``chat_store`` when None).
        archive_key: the archive's key.
        store_rewrite: a conditional rewrite to use instead of the one the stores offer.

    """

    def __init__(
        self,
        chat_store: BaseChatStore,
        key: str,
        archive_store: BaseChatStore | None,
        archive_key: str,
        store_rewrite: ConditionalRewrite | None = None,
    ) -> None:
        self.chat_store = chat_store
        self.key = key
        self.archive_store = archive_store
        self.archive = archive_store if archive_store is not None else chat_store
        """The store that holds the archive."""
        self.archive_key = archive_key
        self.store_rewrite = store_rewrite
        self._rewrite: ConditionalRewrite | None = None

    def same_as(
        self,
        chat_store: BaseChatStore,
        key: str,
        archive_store: BaseChatStore | None,
        archive_key: str,
        store_rewrite: ConditionalRewrite | None,
    ) -> bool:
        """True when built over exactly these objects and keys (so it may be reused)."""
        return (
            self.chat_store is chat_store
            and self.key == key
            and self.archive_store is archive_store
            and self.archive_key == archive_key
            and self.store_rewrite is store_rewrite
        )

    @property
    def lock(self) -> StoreLock:
        """The lock every writer of this store and key in the process holds (``lock_for``).

        Shared by every memory over the same store object and key, so memories built per
        request serialize their appends, rewrites and resets as one memory's do.
        """
        return lock_for(self.chat_store, self.key)

    def read(self) -> list[ChatMessage]:
        """The live messages, as stored."""
        return list(self.chat_store.get_messages(self.key))

    async def aread(self) -> list[ChatMessage]:
        """The live messages, through the store's async API."""
        return list(await self.chat_store.aget_messages(self.key))

    def _separate(self) -> bool:
        return self.archive is not self.chat_store

    def _archived_in(self, store: BaseChatStore) -> list[ChatMessage]:
        return unpack(store, self.archive_key, store.get_messages(self.archive_key))

    async def _aarchived_in(self, store: BaseChatStore) -> list[ChatMessage]:
        return unpack(store, self.archive_key, await store.aget_messages(self.archive_key))

    def read_archive(self) -> list[ChatMessage]:
        """The archived originals, oldest first (an earlier archive in the chat store first).

        Raises:
            StoreError: a packed archive entry does not decode (it names the key).

        """
        earlier = self._archived_in(self.chat_store) if self._separate() else []
        return _joined(earlier, self._archived_in(self.archive))

    async def aread_archive(self) -> list[ChatMessage]:
        """The archived originals, through the stores' async API."""
        earlier = await self._aarchived_in(self.chat_store) if self._separate() else []
        return _joined(earlier, await self._aarchived_in(self.archive))

    def _clear_archive(self) -> None:
        self.archive.delete_messages(self.archive_key)
        if self._separate():
            self.chat_store.delete_messages(self.archive_key)

    def is_local(self) -> bool:
        """True for an in-memory store: no I/O, so no need to leave the event loop for it."""
        return type(self.chat_store) is SimpleChatStore

    async def write_in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run the sync write ``fn`` off the event loop, holding the lock from here.

        The task takes the lock without blocking the loop and the worker thread takes it
        again as its holder: no executor thread ever waits for a lock, so a full executor
        cannot starve the task holding it. A store that does no I/O is written inline.
        """
        if self.is_local():
            return fn(*args)
        async with self.lock:
            return await asyncio.to_thread(fn, *args)

    def append(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]:
        """Append copies of ``messages`` under the lock; returns the copies stored."""
        copies = [copy_message(m) for m in messages]
        with self.lock:
            for m in copies:
                self.chat_store.add_message(self.key, m)
        return copies

    async def aappend(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]:
        """Async :meth:`append`, through the store's async API."""
        if self.is_local():
            # No I/O: appended without an await, so no task holds the lock across one.
            return self.append(messages)
        copies = [copy_message(m) for m in messages]
        # The lock a compaction's rewrite holds, taken without blocking the event loop.
        async with self.lock:
            for m in copies:
                await self.chat_store.async_add_message(self.key, m)
        return copies

    def replace(self, messages: list[ChatMessage], clear_archive: bool = False) -> None:
        """Replace the live messages (as given: copies, in stored form), verified."""
        with self.lock:
            set_verified(self.chat_store, self.key, messages)
            if clear_archive:
                self._clear_archive()

    def load(self, live: list[ChatMessage] | None, archived: list[ChatMessage] | None) -> None:
        """Write saved live messages and archive (``None``: leave that part as stored)."""
        with self.lock:
            if live is not None:
                set_verified(self.chat_store, self.key, live)
            if archived is not None:
                entries = pack(archived) if packs_into(self.archive) else archived
                set_verified(self.archive, self.archive_key, entries)
                # The saved archive holds any earlier one in the chat store; that one goes,
                # unless it is what was just written (two objects over one server).
                if self._separate() and not _same_list(
                    self._archived_in(self.chat_store), archived, exact=True
                ):
                    self.chat_store.delete_messages(self.archive_key)

    def unappend(self, messages: Sequence[ChatMessage]) -> None:
        """Take back messages just appended (when compaction raised), if still last."""
        if not messages:
            return
        with self.lock:
            current = self.read()
            if len(current) >= len(messages) and current[-len(messages) :] == list(messages):
                # Conditional, as a compaction: another worker's append meanwhile is kept.
                self.rewrite().rewrite(
                    Fold(
                        expected=tuple(current),
                        replacement=tuple(current[: len(current) - len(messages)]),
                    )
                )

    def commit(self, fold: Fold[ChatMessage]) -> bool:
        """Apply a compaction's ``fold`` as one step against other writers (False: retry)."""
        with self.lock:
            return self.rewrite().rewrite(fold)

    def clear(self) -> None:
        """Forget the live messages and the archive."""
        with self.lock:
            self.chat_store.delete_messages(self.key)
            self._clear_archive()

    def rewrite(self) -> ConditionalRewrite:
        """The conditional rewrite for these stores (see ``window_budget.stores``)."""
        if self.store_rewrite is not None:
            return self.store_rewrite
        if self._rewrite is None:
            self._rewrite = rewrite_for(
                self.chat_store, self.archive, self.key, self.archive_key, fallback=self._locked
            )
        return self._rewrite

    def _locked(self) -> LockedRewrite[ChatMessage]:
        store, key = self.chat_store, self.key

        def write(messages: list[ChatMessage]) -> None:
            set_verified(store, key, messages, exact=False)

        def archive(messages: Sequence[ChatMessage]) -> None:
            if isinstance(self.archive, JsonlChatStore):
                self.archive.add_messages(self.archive_key, list(messages))  # one write
                return
            if packs_into(self.archive):
                messages = pack(messages)  # one entry per compaction, not per message
            for m in messages:
                self.archive.add_message(self.archive_key, m)

        return LockedRewrite(
            self.read, write, archive, store=store_name(store), lock=self.lock, same=same_message
        )
