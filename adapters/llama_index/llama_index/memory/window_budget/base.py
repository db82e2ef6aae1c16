"""``WindowBudgetMemory``: a LlamaIndex memory that keeps chat engines and agents inside the window.

The store under ``chat_store_key`` always holds ``[*pinned system messages, digest?,
*verbatim tail]``. When the history grows past the gate, the head is folded into one
digest by the LLM you pass (``llm.chat`` on the sync path, ``await llm.achat`` on the
async one) and the folded originals are appended to the archive: ``archive_store`` under
``archive_key`` (by default the same chat store; in a ``SimpleChatStore`` packed, one
entry per compaction, so a request that loads the store's file validates one message per
compaction, not per folded message). The store is rewritten only once a digest exists,
in one short critical section; if the LLM fails, the store is left exactly as it was and
the view handed to the caller uses the network-free digest instead.

This module is the memory's public API; its parts live beside it: the stored conversation
(``conversation``), one compaction attempt (``compaction``), the views (``views``),
``from_defaults`` (``building``), saving and rebuilding (``persistence``, ``restore``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import Field, PrivateAttr, SerializeAsAny
from llama_index.core.llms.llm import LLM
from llama_index.core.memory.types import DEFAULT_CHAT_STORE_KEY, BaseMemory
from llama_index.core.storage.chat_store import BaseChatStore, SimpleChatStore
from llama_index.core.tools import FunctionTool

from llama_index.memory.window_budget.building import (
    DigestRole,
    MemoryBuilding,
    condensers_for,
    default_policy,
)
from llama_index.memory.window_budget.compaction import Compactor, Outcome
from llama_index.memory.window_budget.conversation import (
    ARCHIVE_SUFFIX,
    StoredConversation,
    copy_message,
)
from llama_index.memory.window_budget.convert import LlamaIndexCodec, sealed_with
from llama_index.memory.window_budget.counters import CounterSpec, resolve_counter
from llama_index.memory.window_budget.instrumentation import Compaction, dispatcher
from llama_index.memory.window_budget.memory_store import seal_key_of
from llama_index.memory.window_budget.persistence import MemoryPersistence
from llama_index.memory.window_budget.restore import Runtime
from llama_index.memory.window_budget.tools import memory_recall_tool
from llama_index.memory.window_budget.views import (
    InitialTokenCountError,
    ViewPlanner,
    ack,
    full_history,
    initial_tokens,
    resumed,
    stored_form,
)
from window_budget import bridge
from window_budget.budget import estimate_tokens
from window_budget.contract import (
    BudgetPolicy,
    CondenseResult,
    MemoryStore,
    Model,
    TokenCounter,
)
from window_budget.errors import SummarizerError
from window_budget.messages import AgentMessage
from window_budget.pipeline import AheadCompactor, WindowCondenser, budget_limit
from window_budget.stores import ConditionalRewrite

__all__ = [
    "ARCHIVE_SUFFIX",
    "CounterSpec",
    "DigestRole",
    "InitialTokenCountError",
    "WindowBudgetMemory",
    "default_policy",
]

_CODEC = LlamaIndexCodec()


class WindowBudgetMemory(MemoryPersistence, MemoryBuilding, BaseMemory):  # type: ignore[misc]
    """Chat memory that folds old turns into a digest and keeps a verbatim tail in budget.

    Build it with :meth:`from_defaults` (``ChatMemoryBuffer``'s parameters, in their order).
    It behaves like LlamaIndex's own memories (``get``/``put``/``set``/``reset``, their async
    twins, ``to_string``/``from_string``); pass it as ``memory=`` to chat engines and agents.

    ``get_all()`` returns the live store, the short form ``[system messages, digest,
    *recent turns]`` — and so does a chat engine's ``chat_history``; the whole original
    conversation is ``get_all(include_archived=True)``. Views (``get``) hand the digest
    over as :attr:`digest_role` says (a user/assistant pair by default). Spans, a
    ``CompactionEvent`` and the summary call's tag go to LlamaIndex's dispatcher;
    :attr:`last_compaction` holds the last compaction's account and digest audit.

    >>> from llama_index.core.llms import MockLLM
    >>> memory = WindowBudgetMemory.from_defaults(llm=MockLLM(), context_window=4096)
    >>> memory.put(ChatMessage(role="user", content="hello"))
    >>> [m.content for m in memory.get()]
    ['hello']
    """

    chat_store: SerializeAsAny[BaseChatStore] = Field(default_factory=SimpleChatStore)
    """Where the history lives; any LlamaIndex chat store."""
    chat_store_key: str = Field(default=DEFAULT_CHAT_STORE_KEY)
    """Key of this conversation in the chat store."""
    archive_key: str = Field(default="")
    """Key of the archive of folded messages (``chat_store_key`` + ``ARCHIVE_SUFFIX``)."""
    archive_store: SerializeAsAny[BaseChatStore] | None = Field(default=None)
    """Where folded messages go; ``None`` means ``chat_store``. A separate store keeps the
    live one down to ``[system, digest, *tail]``, so loading it per request stays cheap."""
    context_window: int = Field(default=4096, gt=0)
    """Window the memory keeps the history (plus pinned messages) inside."""
    digest_role: DigestRole = Field(default="pair")
    """How views hand the digest over (see :meth:`from_defaults`); the store keeps one form."""

    _llm: LLM | None = PrivateAttr(default=None)
    _policy: BudgetPolicy = PrivateAttr(default_factory=BudgetPolicy)
    _counter: TokenCounter | None = PrivateAttr(default=None)
    _seal_key: bytes | None = PrivateAttr(default=None)
    _counter_name: str = PrivateAttr(default="heuristic")
    _sync_condenser: WindowCondenser | None = PrivateAttr(default=None)
    _async_condenser: WindowCondenser | None = PrivateAttr(default=None)
    _ahead: AheadCompactor | None = PrivateAttr(default=None)
    _compact_lock: Any = PrivateAttr(default_factory=threading.Lock)
    _aloop: Any = PrivateAttr(default=None)
    _alock: Any = PrivateAttr(default=None)
    _extra_pinned: int = PrivateAttr(default=0)
    _resumed_tokens: int = PrivateAttr(default=0)
    _ack_tokens: int = PrivateAttr(default=0)
    _last_result: CondenseResult | None = PrivateAttr(default=None)
    _last_compaction: Compaction | None = PrivateAttr(default=None)
    _stored: StoredConversation | None = PrivateAttr(default=None)
    _store_rewrite: ConditionalRewrite | None = PrivateAttr(default=None)
    _runtime: Runtime | None = PrivateAttr(default=None)
    _memory_store: MemoryStore | None = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        """Name used in serialized forms."""
        return "WindowBudgetMemory"

    def _configure(
        self, llm: LLM | None, policy: BudgetPolicy, counter: CounterSpec | None
    ) -> None:
        if not self.archive_key:
            self.archive_key = self.chat_store_key + ARCHIVE_SUFFIX
        self._llm = llm
        self._policy = policy
        self._counter, self._counter_name = resolve_counter(counter)
        self._resumed_tokens = self.count_tokens([resumed()])
        self._ack_tokens = self.count_tokens([ack()])
        self._sync_condenser, self._async_condenser, self._ahead = condensers_for(
            llm,
            self.context_window,
            policy,
            self._counter,
            memory=self._memory_store,
            conversation=self.chat_store_key,
        )

    def model_post_init(self, context: Any, /) -> None:
        """Give a directly constructed memory a working configuration."""
        super().model_post_init(context)
        if self._sync_condenser is None:
            self._configure(None, default_policy(self.context_window), None)

    @property
    def llm(self) -> LLM | None:
        """The LLM writing the digests."""
        return self._llm

    @property
    def ahead(self) -> AheadCompactor | None:
        """The async path's background digests (``from_defaults(precompact=...)``), or None."""
        return self._ahead

    @property
    def memory_store(self) -> MemoryStore | None:
        """Where the full ledger and the folded originals go (``from_defaults(memory_store=)``)."""
        return self._memory_store

    def recall_tool(
        self, *, name: str = "recall", max_tokens: int = 1500, counter: TokenCounter | None = None
    ) -> FunctionTool:
        """A ``recall`` tool for an agent: what this conversation's digests left out.

        The model searches the archive by words, lists the facts of one kind or fetches an
        archived message by its ``#pointer``; ``max_tokens`` clamps each answer.

        Raises:
            ValueError: no memory store is configured (``from_defaults(memory_store=True)``).

        """
        store, counter = self._memory_store, counter or self._counter
        return memory_recall_tool(
            store, self.chat_store_key, name=name, max_tokens=max_tokens, counter=counter
        )

    def _sealing(self) -> contextlib.AbstractContextManager[None]:
        """Digest records read and written under the memory store's key, else the chat store's."""
        if self._seal_key is None:
            self._seal_key = seal_key_of(self._memory_store, self.chat_store)
        return sealed_with(self._seal_key)

    @property
    def policy(self) -> BudgetPolicy:
        """The policy in force."""
        return self._policy

    @property
    def token_limit(self) -> int:
        """Tokens the history plus pinned messages may hold before it is condensed."""
        return int(budget_limit(Model("window", self.context_window), self._policy))

    @property
    def last_result(self) -> CondenseResult | None:
        """The core's account of the last compaction (for reports and tests)."""
        return self._last_result

    @property
    def last_compaction(self) -> Compaction | None:
        """What the last compaction that wrote a digest did, with the digest's audit.

        ``audit`` (a ``DigestAudit``: facts in the ledger, key facts the model's text
        holds, how many were pinned back) is set for a model-written digest;
        ``ledger_facts`` is the size of the fact ledger the digest carries. The same
        data goes out in the :class:`CompactionEvent` instrumentation event.
        """
        return self._last_compaction

    @property
    def tokenizer_fn(self) -> Callable[[str], Sequence[int]]:
        """Token "list" for a text, so chat engines can size their prefix messages.

        ``SimpleChatEngine`` passes ``len(memory.tokenizer_fn(prefix))`` as
        ``initial_token_count``. The length is what :meth:`count_tokens` charges for
        ``text`` sent as one system message, framing included, so the prefix and the
        history are counted alike and together stay within :attr:`token_limit`. An empty
        text costs nothing (no prefix message is sent).
        """

        def tokenize(text: str) -> Sequence[int]:
            if not text:
                return range(0)
            return range(self.count_tokens([ChatMessage(role=MessageRole.SYSTEM, content=text)]))

        return tokenize

    def count_tokens(self, messages: Sequence[ChatMessage]) -> int:
        """Estimated tokens of ``messages`` with this memory's counter."""
        with self._sealing():
            return estimate_tokens(self._core(messages), self._counter)

    @property
    def store_guarantee(self) -> str:
        """What this memory's stores guarantee when several processes compact one conversation.

        One sentence from the conditional rewrite in use: exact across processes for
        ``RedisChatStore``, ``PostgresChatStore`` and ``SQLiteChatStore`` with the archive
        in the same server or database; within one process only for any other store.
        """
        return self._conversation().rewrite().guarantee

    def _core(self, messages: Sequence[ChatMessage]) -> list[AgentMessage]:
        """Core messages for ``messages``, through the bridge's content-keyed cache.

        Equal messages convert once per process, even when each request builds a new
        memory over a store read from disk; the same core objects then let the condenser's
        ledger estimate only what was appended.
        """
        store = self._memory_store
        codec = _CODEC if store is None else LlamaIndexCodec(store.key)
        return bridge.convert(codec, messages)

    def _conversation(self) -> StoredConversation:
        """The stored conversation as the fields stand (reused while they do not change)."""
        where = (
            self.chat_store,
            self.chat_store_key,
            self.archive_store,
            self.archive_key,
            self._store_rewrite,
        )
        stored = self._stored
        if stored is None or not stored.same_as(*where):
            stored = self._stored = StoredConversation(*where)
        return stored

    # -------------------------------------------------------------- compaction

    def _compactor(self) -> Compactor:
        assert self._sync_condenser is not None
        assert self._async_condenser is not None
        planner = ViewPlanner(
            token_limit=self.token_limit,
            counter=self._counter,
            count=self.count_tokens,
            digest_role=self.digest_role,
            resumed_tokens=self._resumed_tokens,
            ack_tokens=self._ack_tokens,
        )
        return Compactor(
            sync_condenser=self._sync_condenser,
            async_condenser=self._async_condenser,
            ahead=self._ahead,
            counter=self._counter,
            has_llm=self._llm is not None,
            core=self._core,
            planner=planner,
            conversation=self._conversation(),
        )

    def _keep(self, outcome: Outcome) -> list[ChatMessage]:
        """Keep the core's account and, for a digest or masking, :attr:`last_compaction`."""
        self._last_result = outcome.result
        if outcome.compaction is not None:
            self._last_compaction = outcome.compaction
        return outcome.view

    @dispatcher.span
    def _compact_sync(
        self, extra: int, *, force: bool = False, want_view: bool = True
    ) -> list[ChatMessage]:
        with self._compact_lock, self._sealing():
            compactor = self._compactor()
            return self._keep(compactor.compact_sync(extra, force=force, want_view=want_view))

    def _async_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._aloop is not loop:
            self._aloop, self._alock = loop, asyncio.Lock()
        lock: asyncio.Lock = self._alock
        return lock

    @dispatcher.span
    async def _compact_async(
        self, extra: int, *, force: bool = False, want_view: bool = True
    ) -> list[ChatMessage]:
        async with self._async_lock():
            with self._sealing():
                compactor = self._compactor()
                outcome = await compactor.compact_async(extra, force=force, want_view=want_view)
                return self._keep(outcome)

    # ----------------------------------------------------------- the memory API

    @dispatcher.span
    def get(
        self, input: str | None = None, initial_token_count: int = 0, **kwargs: Any
    ) -> list[ChatMessage]:
        """The condensed history: pinned system messages, the digest, the verbatim tail.

        ``initial_token_count`` (tokens the caller puts before the history, e.g. a
        chat engine's prefix messages) shrinks the tail, shortening messages if needed,
        so the view plus that prefix stay within :attr:`token_limit`. When the prefix
        leaves no space for a digest, the largest verbatim suffix that fits is returned
        (as ``ChatMemoryBuffer`` would; the store is not rewritten into it), or, when not
        even the newest message fits verbatim, the newest turn cut down. When not even
        that fits beside the prefix (``initial_token_count`` at the limit), no history is
        returned, as ``ChatMemoryBuffer`` does — the system messages alone when they fit —
        and a warning is logged. The digest is handed over as :attr:`digest_role` says.
        Returned messages are deep copies.

        Raises:
            InitialTokenCountError: (a ``ValueError``, as the peers raise, and a
                ``BudgetError``) ``initial_token_count`` is above :attr:`token_limit`.
            BudgetError: with no prefix, not even the newest turn cut down fits — the
                system messages alone are larger than the limit. The store is left as
                it was.

        """
        extra = self._initial_tokens(initial_token_count)
        return self._compact_sync(extra)

    @dispatcher.span
    async def aget(
        self, input: str | None = None, initial_token_count: int = 0, **kwargs: Any
    ) -> list[ChatMessage]:
        """Async :meth:`get`; summaries go through ``await llm.achat``."""
        extra = self._initial_tokens(initial_token_count)
        return await self._compact_async(extra)

    def _initial_tokens(self, initial_token_count: int) -> int:
        """Check and remember the caller's prefix size (used by later puts, too)."""
        self._extra_pinned = initial_tokens(initial_token_count, self.token_limit)
        return self._extra_pinned

    def get_all(self, include_archived: bool = False) -> list[ChatMessage]:
        """Deep copies of the stored history (digest included).

        With ``include_archived`` the full original conversation: pinned messages, every
        archived message, then the live messages. A digest is left out only when the
        archive holds the originals it stands for, so this never returns fewer messages
        than ``get_all()``.
        """
        stored = self._conversation()
        with stored.lock:
            live = stored.read()
            archived = stored.read_archive() if include_archived else []
        return self._history(live, archived, include_archived)

    async def aget_all(self, include_archived: bool = False) -> list[ChatMessage]:
        """Async :meth:`get_all`."""
        stored = self._conversation()
        live = await stored.aread()
        archived = await stored.aread_archive() if include_archived else []
        return self._history(live, archived, include_archived)

    def _history(
        self, live: list[ChatMessage], archived: list[ChatMessage], whole: bool
    ) -> list[ChatMessage]:
        with self._sealing():
            return full_history(live, archived) if whole else [copy_message(m) for m in live]

    def put(self, message: ChatMessage) -> None:
        """Append a message (a deep copy is stored); compacts when the gate fires.

        Safe to call from a streaming response's writer thread. With
        ``on_summarizer_error="raise"`` a failing summary raises the provider's own
        exception, also a ``SummarizerError``, and the message is taken back out (a
        retry does not store it twice).
        """
        self.put_messages([message])

    async def aput(self, message: ChatMessage) -> None:
        """Async :meth:`put`."""
        await self.aput_messages([message])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Append several messages, then compact once if needed (see :meth:`put`)."""
        added = self._conversation().append(messages)
        try:
            self._compact_sync(self._extra_pinned, want_view=False)
        except SummarizerError:
            self._conversation().unappend(added)
            raise

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """Async :meth:`put_messages`."""
        stored = self._conversation()
        added = await stored.aappend(messages)
        try:
            await self._compact_async(self._extra_pinned, want_view=False)
        except SummarizerError:
            await stored.write_in_thread(stored.unappend, added)
            raise

    def set(self, messages: list[ChatMessage], *, clear_archive: bool = False) -> None:
        """Replace the live history; compacts when it is over budget.

        Chat engines call this with the history they were given (for example
        ``engine.chat(msg, chat_history=engine.chat_history)``), so the archive of
        folded messages is kept: nothing moves out of it. Pass ``clear_archive=True``
        to start over, or call :meth:`reset`.
        """
        with self._sealing():
            stored = stored_form(messages)
        self._conversation().replace(stored, clear_archive=clear_archive)
        self._compact_sync(self._extra_pinned, want_view=False)

    async def aset(self, messages: list[ChatMessage], *, clear_archive: bool = False) -> None:
        """Async :meth:`set`."""
        stored = self._conversation()
        with self._sealing():
            kept = stored_form(messages)
        await stored.write_in_thread(stored.replace, kept, clear_archive)
        await self._compact_async(self._extra_pinned, want_view=False)

    def reset(self) -> None:
        """Forget the history and its archive (the conversation starts over)."""
        self._conversation().clear()

    async def areset(self) -> None:
        """Async :meth:`reset`."""
        stored = self._conversation()
        await stored.write_in_thread(stored.clear)

    def compact(self) -> list[ChatMessage]:
        """Fold everything before the last user turn now (a manual ``/compact``)."""
        return self._compact_sync(self._extra_pinned, force=True)

    async def acompact(self) -> list[ChatMessage]:
        """Async :meth:`compact`."""
        return await self._compact_async(self._extra_pinned, force=True)

    async def aclose(self) -> None:
        """Cancel the background digest still running (``precompact``) and wait for it."""
        if self._ahead is not None:
            await self._ahead.aclose()
