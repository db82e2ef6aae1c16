"""A chat-message history that condenses on write and archives what it drops.

Wraps any ``BaseChatMessageHistory`` (in-memory, SQL, Redis, ...). Reads return a
snapshot that stays the same object until the next write, so the several reads a chain
makes in one turn agree. Writes append to the wrapped history, then gate; over budget,
the dropped head (and the original of any message kept only as a shortened copy) goes to
the archive history *first*, and only then is the live history replaced by
``[digest, *kept]``. The digest's record points at the archived range. Writes through one
wrapper are serialized (one thread lock for the sync methods, another for the async ones,
which awaits it without blocking the event loop, so writers on several event loops in
several threads are serialized too), so concurrent turns never archive the same head twice.
A read during a write sees the history before the write, never the half-written store.

LangChain marks ``BaseChatMessageHistory`` deprecated in favour of LangGraph persistence;
this wrapper stays thin for the chains that still use it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from langchain_window_budget.condense import (
    CounterSpec,
    LangChainCondenser,
    LangChainResult,
    OnSummarizerError,
    _shared_engine,
)
from window_budget.contract import BudgetPolicy
from window_budget.stores import check_written

__all__ = ["ArchiveChatMessageHistory", "CondensingChatMessageHistory"]


def _same(a: BaseMessage, b: BaseMessage) -> bool:
    # What a store's serialization keeps whatever it normalizes: the kind and the content.
    return a is b or (a.type == b.type and a.content == b.content)


class ArchiveChatMessageHistory(BaseChatMessageHistory):
    """A plain in-memory history used as the default archive (append-only in practice)."""

    def __init__(self) -> None:
        self._messages: list[BaseMessage] = []

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """Every archived message, oldest first (a copy)."""
        return list(self._messages)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append ``messages``."""
        self._messages.extend(messages)

    def clear(self) -> None:
        """Forget everything archived."""
        self._messages.clear()


class CondensingChatMessageHistory(BaseChatMessageHistory):
    """Condense a wrapped chat history on write; keep every dropped message in an archive.

    Args:
        history: the live history to wrap (its storage is used as is).
        model: the chat model whose window is guarded and that writes the digests.
        context_window: tokens the model accepts (else the model's profile).
        policy, counter, summarizer, on_summarizer_error: as for
            :class:`~langchain_window_budget.LangChainCondenser`.
        archive: where dropped messages go; a sibling :class:`ArchiveChatMessageHistory`
            when None. Nothing is ever deleted from it by this wrapper.
        system_prompt_tokens: tokens of the system prompt the chain puts in front of the
            history, so the gate counts them.
        engine: the condenser to use; by default one shared by every wrapper built with the
            same model objects and settings, so a wrapper built per request (as
            ``RunnableWithMessageHistory``'s factory does) finds the conversation already
            known — named by the wrapped history's ``session_id`` when it has one — and a
            turn costs what was appended.

    ``clear()`` empties the live history only; the archive keeps what it holds. The
    archive is written through its sync ``add_messages`` on both paths, before the live
    history changes. After a rewrite the wrapped history is read back: one that does not
    hold exactly ``[digest, *kept]`` (its ``clear()`` did nothing, or it lost a message)
    raises ``StoreError`` naming it rather than grow silently. Mixing sync and async
    writes to one wrapper from different threads is not serialized; use one kind per
    wrapper. Writes are serialized per wrapper object, not across processes.

    """

    def __init__(
        self,
        history: BaseChatMessageHistory,
        *,
        model: BaseChatModel | None = None,
        context_window: int | None = None,
        policy: BudgetPolicy | None = None,
        counter: CounterSpec = None,
        summarizer: BaseChatModel | None = None,
        archive: BaseChatMessageHistory | None = None,
        system_prompt_tokens: int = 0,
        engine: LangChainCondenser | None = None,
        on_summarizer_error: OnSummarizerError | None = None,
    ) -> None:
        self.history = history
        """The wrapped live history."""
        self.archive = archive if archive is not None else ArchiveChatMessageHistory()
        """Holds every message a compaction removed from the live history."""
        self.engine = engine or _shared_engine(
            model,
            context_window,
            policy,
            counter,
            summarizer,
            on_summarizer_error,
            remember_digests=False,
        )
        """The condenser doing the work."""
        session = getattr(history, "session_id", None)
        self._conversation = (
            ("history", type(history).__qualname__, session)
            if isinstance(session, str | int) and not isinstance(session, bool)
            else None
        )
        self.system_prompt_tokens = system_prompt_tokens
        """Tokens counted on top of the history (the chain's system prompt)."""
        self._snapshot: list[BaseMessage] | None = None
        # Even while a write is in progress: a read racing it must not cache the store
        # between its clear() and add_messages().
        self._version = 0
        self._lock = threading.Lock()
        # Not an asyncio.Lock: that binds to one event loop, and writers on two loops (two
        # threads, each with asyncio.run) would fail or hang on it.
        self._alock = threading.Lock()
        self.last_result: LangChainResult | None = None
        """The account of the last write's gate (None before the first write)."""

    # -- reads -----------------------------------------------------------------

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The live messages; the same list object until the next write through this wrapper."""
        snapshot = self._snapshot
        if snapshot is not None:
            return snapshot
        version = self._version
        return self._keep(version, list(self.history.messages))

    async def aget_messages(self) -> list[BaseMessage]:
        """Async read, through the wrapped history's own ``aget_messages``."""
        snapshot = self._snapshot
        if snapshot is not None:
            return snapshot
        version = self._version
        return self._keep(version, list(await self.history.aget_messages()))

    def _keep(self, version: int, read: list[BaseMessage]) -> list[BaseMessage]:
        # Cache what was read only when no write started or ended meanwhile: the store
        # may have been caught between a write's clear() and its add_messages().
        if self._version == version and self._snapshot is None:
            self._snapshot = read
        return read

    def _publish(self, messages: list[BaseMessage] | None) -> None:
        self._snapshot = messages
        self._version += 1

    # -- writes ----------------------------------------------------------------

    def _archive(self, dropped: list[BaseMessage]) -> dict[str, Any]:
        # Runs before the digest is built, so the digest can say where the head went.
        start = len(self.archive.messages)
        self.archive.add_messages(dropped)
        return {"history": type(self.archive).__name__, "start": start, "end": start + len(dropped)}

    def _archive_replaced(self, result: LangChainResult) -> None:
        # The live history will hold shortened copies: the originals must survive somewhere.
        if result.replaced:
            self.archive.add_messages(list(result.replaced))

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append ``messages``, then condense the live history if it is over budget.

        The dropped head and the originals of shortened messages are archived before the
        live history is replaced. The replacement is ``clear()`` then ``add_messages()``
        on the wrapped history, which is not atomic: if the second step raises, the
        previous live content is written back (best effort: a store that keeps failing
        can still be left short, though everything dropped is in the archive) and the
        error is re-raised.
        """
        with self._lock:
            self.history.add_messages(messages)
            current = list(self.history.messages)
            self._publish(current)
            result = self.engine.run(
                current,
                extra_pinned_tokens=self.system_prompt_tokens,
                archive=self._archive,
                conversation=self._conversation,
            )
            self.last_result = result
            if not result.changed:
                return
            self._archive_replaced(result)
            # Readers keep seeing ``current`` (complete) while the store is rewritten.
            self._version += 1
            self.history.clear()
            try:
                self.history.add_messages(list(result.messages))
            except BaseException:
                self._restore(current)
                self._publish(None)
                raise
            self._check(list(self.history.messages), list(result.messages))
            self._publish(list(result.messages))

    def _check(self, read_back: list[BaseMessage], written: list[BaseMessage]) -> None:
        """Refuse a wrapped history that does not hold what the rewrite wrote.

        A history whose ``clear()`` does nothing would otherwise keep the whole old
        conversation in front of the digest, and grow by a digest every compaction.
        """
        try:
            check_written(read_back, written, type(self.history).__name__, same=_same, exact=True)
        except BaseException:
            self._publish(None)
            raise

    def _restore(self, previous: list[BaseMessage]) -> None:
        try:
            self.history.clear()
            self.history.add_messages(previous)
        except Exception:  # best effort; the caller sees the original error
            pass

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """The async twin of :meth:`add_messages` (wrapped history's async methods)."""
        async with self._async_write():
            await self.history.aadd_messages(messages)
            current = list(await self.history.aget_messages())
            self._publish(current)
            result = await self.engine.arun(
                current,
                extra_pinned_tokens=self.system_prompt_tokens,
                archive=self._archive,
                conversation=self._conversation,
            )
            self.last_result = result
            if not result.changed:
                return
            self._archive_replaced(result)
            self._version += 1
            await self.history.aclear()
            try:
                await self.history.aadd_messages(list(result.messages))
            except BaseException:
                await self._arestore(current)
                self._publish(None)
                raise
            self._check(list(await self.history.aget_messages()), list(result.messages))
            self._publish(list(result.messages))

    @asynccontextmanager
    async def _async_write(self) -> AsyncIterator[None]:
        """Hold the async writers' lock, waiting for it without blocking the event loop.

        Polled rather than awaited in a worker thread: a cancelled wait then never leaves
        the lock taken by nobody.
        """
        delay = 0.001
        while not self._alock.acquire(blocking=False):
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)
        try:
            yield
        finally:
            self._alock.release()

    async def _arestore(self, previous: list[BaseMessage]) -> None:
        try:
            await self.history.aclear()
            await self.history.aadd_messages(previous)
        except Exception:  # best effort; the caller sees the original error
            pass

    def clear(self) -> None:
        """Empty the live history (the archive is left alone)."""
        self.history.clear()
        self._publish(None)

    async def aclear(self) -> None:
        """The async twin of :meth:`clear`."""
        await self.history.aclear()
        self._publish(None)
