"""A chat-message history that condenses on write and archives what it drops.

Wraps any ``BaseChatMessageHistory`` (in-memory, SQL, Redis, ...). Reads return a
snapshot that stays the same object until the next write, so the several reads a chain
makes in one turn agree. Writes append to the wrapped history, then gate; over budget,
the live history is replaced by ``[digest, *kept]`` and read back, and only then does the
dropped head (and the original of any message kept only as a shortened copy) go to the
archive history, at the range the digest's record points at. A failed step puts the live
history back and leaves the archive as it was. Writes through one wrapper are serialized
(one thread lock for the sync methods, another for the async ones, which awaits it without
blocking the event loop, so writers on several event loops in several threads are
serialized too), so concurrent turns never archive the same head twice.
A read during a write sees the history before the write, never the half-written store.

LangChain marks ``BaseChatMessageHistory`` deprecated in favour of LangGraph persistence;
this wrapper stays thin for the chains that still use it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Generator, Hashable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from langchain_window_budget._mapping import akeep_originals, keep_originals
from langchain_window_budget._sessions import ahead_name
from langchain_window_budget.completer import Summarizer
from langchain_window_budget.condense import (
    CounterSpec,
    LangChainCondenser,
    LangChainResult,
    OnSummarizerError,
    _shared_engine,
)
from window_budget.contract import BudgetPolicy
from window_budget.errors import StoreError
from window_budget.pipeline import AheadState
from window_budget.stores import check_written

__all__ = ["ArchiveChatMessageHistory", "CondensingChatMessageHistory"]


def _same(a: BaseMessage, b: BaseMessage) -> bool:
    # What a store's serialization keeps whatever it normalizes: the kind and the content.
    return a is b or (a.type == b.type and a.content == b.content)


def _holds(read: Sequence[BaseMessage], expected: Sequence[BaseMessage]) -> bool:
    return len(read) == len(expected) and all(map(_same, read, expected))


_Op = tuple[Literal["clear", "read", "add", "archive"], list[BaseMessage]]
"""One step of a rewrite, run by a sync or an async driver; a ``read`` is answered."""
_Flow = Generator[_Op, list[BaseMessage], None]


def _cannot_clear(store: str) -> str:
    return (
        f"the store {store} cannot delete messages (its clear() raised NotImplementedError), "
        "so CondensingChatMessageHistory cannot replace them by a digest and left the store "
        "and the archive as they were — wrap a history that implements clear(), or use this "
        "one unwrapped and put condense_messages() in the chain to condense each request"
    )


def _clear_kept(store: str, left: int) -> str:
    return (
        f"the store {store} still held {left:,} messages after clear(), so "
        "CondensingChatMessageHistory cannot replace them by a digest and left the store "
        "and the archive as they were — wrap a history whose clear() deletes its messages"
    )


class _Planned:
    """The archive callback of one compaction: says where the dropped head will go.

    Nothing is written here: the head is archived only after the live history was
    rewritten, so a failed rewrite leaves the archive as it was.
    """

    def __init__(self, archive: BaseChatMessageHistory) -> None:
        self._archive = archive
        self.messages: list[BaseMessage] = []

    def __call__(self, dropped: list[BaseMessage]) -> dict[str, Any]:
        start = len(self._archive.messages) + len(self.messages)
        self.messages.extend(dropped)
        return {
            "history": type(self._archive).__name__,
            "start": start,
            "end": start + len(dropped),
        }


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
            known — named by ``session_id`` (else the wrapped history's own) — and a
            turn costs what was appended. An engine with a memory store
            (``LangChainCondenser(model, memory=LangGraphMemoryStore(store))``) files each
            digest's ledger and folded messages under the ``session_id``, which
            ``recall_tool(store, session_id)`` then reads.
        precompact: ahead-of-time compaction on the async path (``aadd_messages``): once the
            history passes this fraction of the usable window (below the trigger), the
            summary of the head the gate would fold is written in the background, and the
            write that crosses the trigger folds that head with the ready digest instead of
            waiting for a summary call; a digest not ready, failed, cancelled or stale (the
            head changed) is not used and that write summarizes as without it. Kept per
            ``session_id`` in the shared engine, so wrappers built per request find it.
            Sets the policy's ``precompact_ratio`` (None keeps the policy's; ignored when
            ``engine`` is given: the engine's own applies). ``add_messages`` stays
            synchronous. :meth:`aclose` cancels this session's.
        session_id: names the conversation when the wrapped history has no ``session_id``
            of its own (``InMemoryChatMessageHistory`` has none): pass the factory's
            argument. Without either, the first message's id names it (and histories whose
            messages carry no ids share one background slot).

    ``clear()`` empties the live history only; the archive keeps what it holds. A
    compaction is all or nothing for the caller: the wrapped history's ``clear()`` is
    read back empty, ``[digest, *kept]`` is written and read back, and only then is the
    archive written (through its sync ``add_messages`` on both paths). A history whose
    ``clear()`` raises ``NotImplementedError`` or deletes nothing is refused with a
    ``StoreError`` naming it, and any failed step puts the previous live messages back
    and archives nothing; a store that will not take them back gets them appended to the
    archive instead, and the ``StoreError`` says where. Mixing sync and async
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
        summarizer: Summarizer | None = None,
        archive: BaseChatMessageHistory | None = None,
        system_prompt_tokens: int = 0,
        engine: LangChainCondenser | None = None,
        on_summarizer_error: OnSummarizerError | None = None,
        precompact: float | None = None,
        session_id: str | int | None = None,
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
            precompact=precompact,
        )
        """The condenser doing the work."""
        session = session_id if session_id is not None else getattr(history, "session_id", None)
        self._conversation: Hashable | None = None
        if isinstance(session, str | int) and not isinstance(session, bool):
            # An engine with a memory store files the session under its id (see recall_tool).
            stored = self.engine.memory is not None
            self._conversation = (
                str(session) if stored else ("history", type(history).__qualname__, session)
            )
        self._ahead_as: str | None = None
        if self._conversation is not None:
            stored_as = self.engine.store_name(self._conversation)
            self._ahead_as = ahead_name(stored_as, self._conversation, ())
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

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append ``messages``, then condense the live history if it is over budget.

        The compaction is all or nothing: the live history is rewritten and read back
        before anything is archived, and a failure puts the previous live content back and
        leaves the archive as it was (see the class docstring).

        Raises:
            StoreError: the wrapped history cannot be rewritten (its ``clear()`` raises
                ``NotImplementedError`` or deletes nothing) or did not keep what was
                written; ``messages`` stay appended, uncondensed.

        """
        with self._lock:
            self.history.add_messages(messages)
            current = list(self.history.messages)
            self._publish(current)
            planned = _Planned(self.archive)
            result = self.engine.run(
                current,
                extra_pinned_tokens=self.system_prompt_tokens,
                archive=planned,
                conversation=self._conversation,
            )
            self.last_result = result
            if result.changed:
                self._drive(self._rewrite(current, result, planned))
                keep_originals(self.engine.memory, self._store_name(), result.replaced)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """The async twin of :meth:`add_messages` (wrapped history's async methods)."""
        async with self._async_write():
            await self.history.aadd_messages(messages)
            current = list(await self.history.aget_messages())
            self._publish(current)
            planned = _Planned(self.archive)
            if self._conversation is None:  # no session_id: the first message's id names it
                self._ahead_as = ahead_name(None, None, current)
            result = await self.engine.arun(
                current,
                extra_pinned_tokens=self.system_prompt_tokens,
                archive=planned,
                conversation=self._conversation,
            )
            self.last_result = result
            if result.changed:
                await self._adrive(self._rewrite(current, result, planned))
                await akeep_originals(self.engine.memory, self._store_name(), result.replaced)

    def _store_name(self) -> str | None:
        """What this session is called in the engine's memory store (None without one)."""
        return self.engine.store_name(self._conversation)

    def _rewrite(
        self, current: list[BaseMessage], result: LangChainResult, planned: _Planned
    ) -> _Flow:
        """Replace the live history by the result, then archive what it dropped: all or nothing.

        Archiving last means a store that cannot be rewritten never gets a head archived
        (once per attempt); on any failure the live history is put back to ``current``.
        """
        new = list(result.messages)
        store = type(self.history).__name__
        self._version += 1  # readers keep seeing ``current`` while the store is rewritten
        try:
            try:
                yield ("clear", [])
            except NotImplementedError as exc:
                raise StoreError(_cannot_clear(store)) from exc
            left = yield ("read", [])
            if left:
                raise StoreError(_clear_kept(store, len(left)))
            yield ("add", new)
            check_written((yield ("read", [])), new, store, same=_same, exact=True)
            # The originals of messages kept only as shortened copies go after the head.
            archived = [*planned.messages, *result.replaced]
            if archived:
                yield ("archive", archived)
        except BaseException:
            try:  # readers keep seeing ``current`` while it is put back, too
                yield from self._put_back(current, store)
            finally:
                self._publish(None)
            raise
        self._publish(new)

    def _put_back(self, current: list[BaseMessage], store: str) -> _Flow:
        """Make the live history hold ``current`` again; archive it when the store will not.

        Raises:
            StoreError: the store would not take ``current`` back; it is in the archive.

        """
        try:
            if _holds((yield ("read", [])), current):
                return  # the failed step changed nothing
            yield ("clear", [])
            yield ("add", current)
            if _holds((yield ("read", [])), current):
                return
        except Exception:  # the store is failing: what it holds is unknown, rescue below
            pass
        start = len(self.archive.messages)
        yield ("archive", current)
        raise StoreError(
            f"the store {store} failed while CondensingChatMessageHistory rewrote it and would "
            f"not take its {len(current):,} messages back, so they were appended to the archive "
            f"{type(self.archive).__name__} at {start:,}-{start + len(current):,} (the store may "
            "hold part of them) — write them back from there once the store works"
        )

    def _drive(self, flow: _Flow) -> None:
        """Run a rewrite flow on the wrapped history's sync methods."""
        try:
            op = next(flow)
            while True:
                try:
                    reply = self._step(op)
                except BaseException as exc:
                    op = flow.throw(exc)
                else:
                    op = flow.send(reply)
        except StopIteration:
            return

    def _step(self, op: _Op) -> list[BaseMessage]:
        kind, messages = op
        if kind == "read":
            return list(self.history.messages)
        if kind == "clear":
            self.history.clear()
        elif kind == "add":
            self.history.add_messages(messages)
        else:
            self.archive.add_messages(messages)
        return []

    async def _adrive(self, flow: _Flow) -> None:
        """Run a rewrite flow on the wrapped history's async methods (the archive's sync ones)."""
        try:
            op = next(flow)
            while True:
                try:
                    reply = await self._astep(op)
                except BaseException as exc:
                    op = flow.throw(exc)
                else:
                    op = flow.send(reply)
        except StopIteration:
            return

    async def _astep(self, op: _Op) -> list[BaseMessage]:
        kind, messages = op
        if kind == "read":
            return list(await self.history.aget_messages())
        if kind == "clear":
            await self.history.aclear()
        elif kind == "add":
            await self.history.aadd_messages(messages)
        else:
            self.archive.add_messages(messages)
        return []

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

    # -- ahead-of-time compaction -----------------------------------------------

    def ahead_state(self) -> AheadState:
        """Where this session's background digest stands (``"none"`` without ``precompact``)."""
        ahead = self.engine.ahead
        if ahead is None or self._ahead_as is None:
            return "none"
        return ahead.state(self._ahead_as)

    def cancel_ahead(self) -> bool:
        """Cancel this session's background digest; True when one was being written."""
        ahead = self.engine.ahead
        return ahead is not None and self._ahead_as is not None and ahead.cancel(self._ahead_as)

    async def await_ahead(self) -> AheadState:
        """Wait until this session's background digest ends; its state (never raises)."""
        ahead = self.engine.ahead
        if ahead is None or self._ahead_as is None:
            return "none"
        return await ahead.wait(self._ahead_as)

    async def aclose(self) -> None:
        """Cancel this session's background digest and wait for it to stop.

        The engine is shared by every session built with the same settings:
        ``engine.ahead.aclose()`` stops them all (on shutdown, say).
        """
        if self.cancel_ahead():
            await self.await_ahead()

    def clear(self) -> None:
        """Empty the live history (the archive is left alone)."""
        self.history.clear()
        self._publish(None)

    async def aclear(self) -> None:
        """The async twin of :meth:`clear`."""
        await self.history.aclear()
        self._publish(None)
