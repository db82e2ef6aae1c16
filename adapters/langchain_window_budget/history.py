"""A chat-message history that condenses on write and archives what it drops.

Wraps any ``BaseChatMessageHistory`` (in-memory, SQL, Redis, ...). Reads return a
snapshot that stays the same object until the next write, so the several reads a chain
makes in one turn agree. Writes append to the wrapped history, then gate; over budget,
the dropped head (and the original of any message kept only as a shortened copy) goes to
the archive history *first*, and only then is the live history replaced by
``[digest, *kept]``. The digest's record points at the archived range. Writes through one
wrapper are serialized (a thread lock for the sync methods, an asyncio lock for the async
ones), so concurrent turns never archive the same head twice.

LangChain marks ``BaseChatMessageHistory`` deprecated in favour of LangGraph persistence;
this wrapper stays thin for the chains that still use it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from langchain_window_budget.condense import CounterSpec, LangChainCondenser, LangChainResult
from window_budget.contract import BudgetPolicy

__all__ = ["ArchiveChatMessageHistory", "CondensingChatMessageHistory"]


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
        policy, counter, summarizer: as for :class:`~langchain_window_budget.LangChainCondenser`.
        archive: where dropped messages go; a sibling :class:`ArchiveChatMessageHistory`
            when None. Nothing is ever deleted from it by this wrapper.
        system_prompt_tokens: tokens of the system prompt the chain puts in front of the
            history, so the gate counts them.

    ``clear()`` empties the live history only; the archive keeps what it holds. The
    archive is written through its sync ``add_messages`` on both paths, before the live
    history changes. Mixing sync and async writes to one wrapper from different threads
    is not serialized; use one kind per wrapper.

    """

    def __init__(self, history: BaseChatMessageHistory, *,
                 model: BaseChatModel | None = None, context_window: int | None = None,
                 policy: BudgetPolicy | None = None, counter: CounterSpec = None,
                 summarizer: BaseChatModel | None = None,
                 archive: BaseChatMessageHistory | None = None,
                 system_prompt_tokens: int = 0,
                 engine: LangChainCondenser | None = None) -> None:
        self.history = history
        """The wrapped live history."""
        self.archive = archive if archive is not None else ArchiveChatMessageHistory()
        """Holds every message a compaction removed from the live history."""
        self.engine = engine or LangChainCondenser(
            model, context_window=context_window, policy=policy, counter=counter,
            summarizer=summarizer)
        """The condenser doing the work."""
        self.system_prompt_tokens = system_prompt_tokens
        """Tokens counted on top of the history (the chain's system prompt)."""
        self._snapshot: list[BaseMessage] | None = None
        self._lock = threading.Lock()
        self._alock = asyncio.Lock()
        self.last_result: LangChainResult | None = None
        """The account of the last write's gate (None before the first write)."""

    # -- reads -----------------------------------------------------------------

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The live messages; the same list object until the next write through this wrapper."""
        if self._snapshot is None:
            self._snapshot = list(self.history.messages)
        return self._snapshot

    async def aget_messages(self) -> list[BaseMessage]:
        """Async read, through the wrapped history's own ``aget_messages``."""
        if self._snapshot is None:
            self._snapshot = list(await self.history.aget_messages())
        return self._snapshot

    # -- writes ----------------------------------------------------------------

    def _archive(self, dropped: list[BaseMessage]) -> dict[str, Any]:
        # Runs before the digest is built, so the digest can say where the head went.
        start = len(self.archive.messages)
        self.archive.add_messages(dropped)
        return {"history": type(self.archive).__name__, "start": start,
                "end": start + len(dropped)}

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
            self._snapshot = None
            current = self.messages
            result = self.engine.run(current, extra_pinned_tokens=self.system_prompt_tokens,
                                     archive=self._archive)
            self.last_result = result
            if not result.changed:
                return
            self._archive_replaced(result)
            self._snapshot = None
            self.history.clear()
            try:
                self.history.add_messages(list(result.messages))
            except BaseException:
                self._restore(current)
                raise

    def _restore(self, previous: list[BaseMessage]) -> None:
        try:
            self.history.clear()
            self.history.add_messages(previous)
        except Exception:  # best effort; the caller sees the original error
            pass

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """The async twin of :meth:`add_messages` (wrapped history's async methods)."""
        async with self._alock:
            await self.history.aadd_messages(messages)
            self._snapshot = None
            current = await self.aget_messages()
            result = await self.engine.arun(
                current, extra_pinned_tokens=self.system_prompt_tokens, archive=self._archive)
            self.last_result = result
            if not result.changed:
                return
            self._archive_replaced(result)
            self._snapshot = None
            await self.history.aclear()
            try:
                await self.history.aadd_messages(list(result.messages))
            except BaseException:
                await self._arestore(current)
                raise

    async def _arestore(self, previous: list[BaseMessage]) -> None:
        try:
            await self.history.aclear()
            await self.history.aadd_messages(previous)
        except Exception:  # best effort; the caller sees the original error
            pass

    def clear(self) -> None:
        """Empty the live history (the archive is left alone)."""
        self.history.clear()
        self._snapshot = None

    async def aclear(self) -> None:
        """The async twin of :meth:`clear`."""
        await self.history.aclear()
        self._snapshot = None
