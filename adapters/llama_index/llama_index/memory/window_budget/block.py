"""``WindowBudgetMemoryBlock``: the digest, the fact ledger and recall inside LlamaIndex ``Memory``.

``Memory(memory_blocks=[...])`` keeps a short-term queue of messages; what it flushes out
of the queue it hands to each block (``aput``). This block folds those messages into
window-budget's digest — the network-free digest by default, one written by the LLM you
pass otherwise — carrying the previous digest and its fact ledger in (the core's
``summarize``), and every flushed original goes to a memory store, where ``recall`` finds
it. ``Memory.get`` puts the digest into its ``<memory>`` template as quoted data
(``block_text``), within the block's ``max_tokens``.

The state lives in stores, keyed by the ``session_id`` ``Memory`` hands every block:

- the digest: one message under ``window_budget:{session_id}:digest`` in ``chat_store``,
  its record sealed with the memory store's key (a client-written one is not honoured);
- the originals and each version of the full ledger: the memory store, by default a
  ``ChatStoreMemoryStore`` over the same chat store (a ``SQLiteMemoryStore`` for a file).

A new block over the same stores resumes a session: with the chat store, the digest itself;
with only the memory store, a digest rendered from its newest ledger version.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Final

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms.llm import LLM
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.core.storage.chat_store import BaseChatStore, SimpleChatStore
from llama_index.core.tools import FunctionTool

from llama_index.memory.window_budget.block_text import PREAMBLE, fit_quoted, quote_digest
from llama_index.memory.window_budget.completer import completers_from_llm
from llama_index.memory.window_budget.convert import (
    make_digest_chat_message,
    sealed_with,
    to_core,
)
from llama_index.memory.window_budget.counters import resolve_counter
from llama_index.memory.window_budget.memory_store import resolve_memory_store, seal_key_of
from llama_index.memory.window_budget.tools import recall_tool
from window_budget.budget import count_text
from window_budget.contract import MemoryStore, Model, SummarizeDeps, TokenCounter
from window_budget.digest import SESSION_HEADER
from window_budget.errors import ConfigError
from window_budget.memory import check_conversation
from window_budget.messages import DigestMessage, content_text
from window_budget.pipeline.summarize import (
    ledger_from_json,
    make_digest_message,
    render_ledger,
    resolve_ledger,
    summarize,
)

__all__ = ["DEFAULT_SESSION", "MIN_BLOCK_TOKENS", "WindowBudgetMemoryBlock"]

MIN_BLOCK_TOKENS: Final = 64
"""The smallest ``max_tokens``; a truncation below it leaves the block out of that view."""
DEFAULT_SESSION: Final = "default"
"""The session a block serves when it is called without ``Memory`` (no ``session_id``)."""
_SESSION_FIELD: Final = "session_id"  # what BaseMemoryBlock.aput writes on every message
_SERVED: Final = 16  # texts remembered for atruncate (one per session and view, newest kept)
_SESSIONS: Final = 64  # sessions remembered (newest kept): a shared block must not grow forever


def _without_session(message: ChatMessage) -> ChatMessage:
    """``message`` without the ``session_id`` ``Memory`` stamps on it (it is not the user's)."""
    kwargs = message.additional_kwargs
    if _SESSION_FIELD not in kwargs:
        return message
    rest = {k: v for k, v in kwargs.items() if k != _SESSION_FIELD}
    return message.model_copy(update={"additional_kwargs": rest})


def _summarizer(llm: LLM) -> Model:
    """The LLM as the core's summarizer model: its window, less what it reserves for output."""
    meta = llm.metadata
    window = int(meta.context_window or 0) - max(0, int(meta.num_output or 0))
    return Model(meta.model_name or "llm", max(window, 2048))


class WindowBudgetMemoryBlock(BaseMemoryBlock[str]):
    """A ``Memory`` block holding window-budget's digest of what ``Memory`` flushed.

    ``Memory`` hands the block the messages it flushes from its short-term queue; the block
    folds them into one digest (carrying the last one in, merging its fact ledger) and
    archives them in :attr:`memory_store`; ``Memory.get`` then shows the digest, quoted,
    within :attr:`max_tokens`. :meth:`recall_tool` gives an agent the archived originals.

    Not serialized with the ``Memory`` (``to_dict``): the LLM, the stores and the counter;
    build the block again over the same stores to resume.

    >>> from llama_index.core.memory import Memory
    >>> block = WindowBudgetMemoryBlock(max_tokens=600)
    >>> memory = Memory.from_defaults(session_id="chat-1", memory_blocks=[block])
    >>> memory.memory_blocks[0].name
    'ConversationDigest'
    """

    name: str = Field(
        default="ConversationDigest", description="The block's name (its tag in the template)."
    )
    description: str | None = Field(
        default="Earlier turns of this conversation, condensed by window-budget.",
        description="What the block holds.",
    )
    priority: int = Field(
        default=1,
        description="Memory's truncation priority: 0 is never truncated; any other value "
        "(1 by default) lets Memory shrink the digest when its token_limit is exceeded (it is "
        "rendered again from its ledger, the most important facts kept).",
    )
    llm: LLM | None = Field(
        default=None,
        exclude=True,
        description="The LLM that writes digests; None: the network-free digest.",
    )
    chat_store: BaseChatStore = Field(
        default_factory=SimpleChatStore,
        exclude=True,
        description="Where the digest of each session is kept (any LlamaIndex chat store).",
    )
    memory_store: Any = Field(
        default=True,
        exclude=True,
        description="Where the flushed originals and the full ledger go, for recall: True "
        "(a ChatStoreMemoryStore over chat_store), a window_budget MemoryStore "
        "(SQLiteMemoryStore, ...), or None (the digest's record alone carries the ledger).",
    )
    max_tokens: int = Field(
        default=1500,
        ge=MIN_BLOCK_TOKENS,
        description="The most tokens the block's text takes in Memory's template; keep it "
        "within (1 - chat_history_token_ratio) * token_limit.",
    )
    counter: Any = Field(
        default="llama_index",
        exclude=True,
        description="How tokens are counted: 'llama_index' (Memory's default tokenizer), "
        "'heuristic', 'tiktoken', a TokenCounter or a str -> int callable.",
    )

    _store: MemoryStore | None = PrivateAttr(default=None)
    _counter: TokenCounter | None = PrivateAttr(default=None)
    _seal_key: bytes | None = PrivateAttr(default=None)
    _sessions: dict[str, None] = PrivateAttr(default_factory=dict)
    _served: dict[str, tuple[str, DigestMessage]] = PrivateAttr(default_factory=dict)
    _aloop: Any = PrivateAttr(default=None)
    _alock: Any = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        """Resolve the memory store and the counter the fields name."""
        super().model_post_init(context)
        self._store = resolve_memory_store(self.memory_store, self.chat_store)
        self._counter, _ = resolve_counter(self.counter)

    @property
    def store(self) -> MemoryStore | None:
        """The memory store in use (resolved from :attr:`memory_store`)."""
        return self._store

    @property
    def sessions(self) -> tuple[str, ...]:
        """The ``Memory`` sessions this block has served (the latest 64), least recent first."""
        return tuple(self._sessions)

    # --------------------------------------------------------------- Memory's calls

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """The session's digest, quoted, within :attr:`max_tokens`; ``""`` before any flush."""
        session = self._session(block_kwargs.get(_SESSION_FIELD))
        with self._sealing():
            digest = await self._read(session)
        if digest is None:
            return ""
        text = fit_quoted(
            quote_digest(content_text(digest.content)), self.max_tokens, self._counter
        )
        if text:
            self._served.pop(text, None)
            self._served[text] = (session, digest)
            while len(self._served) > _SERVED:
                del self._served[next(iter(self._served))]
        return text

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Fold the flushed ``messages`` into the session's digest; archive the originals."""
        if not messages:
            return
        session = self._session(messages[-1].additional_kwargs.get(_SESSION_FIELD))
        flushed = [_without_session(m) for m in messages]
        async with self._async_lock():
            with self._sealing():
                prior = await self._read(session)
                folded = [to_core(m) for m in flushed]
                summary = await summarize(
                    [*([prior] if prior is not None else []), *folded], self._deps(session)
                )
                stored = make_digest_chat_message(
                    summary.text, summary.covered_count, source=summary.message
                )
                await self.chat_store.aset_messages(self._digest_key(session), [stored])

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """The digest ``tokens_to_truncate`` tokens shorter, or None when too little is left.

        A digest this block served is rendered again from its full ledger within the
        smaller budget (the objective, the user's constraints and the open errors stay;
        what is left out is counted, and archived); any other text is cut at its end.
        """
        if not content:
            return None
        target = count_text(content, self._counter) - max(0, int(tokens_to_truncate))
        if target < MIN_BLOCK_TOKENS:
            return None
        served = self._served.get(content)
        if served is not None:
            session, digest = served
            ledger = resolve_ledger(digest, self._store, session)
            if ledger is not None:
                body = render_ledger(
                    ledger,
                    max_tokens=self._body_tokens(target),
                    counter=self._counter,
                    recall=self._store is not None,
                )
                shorter = fit_quoted(
                    quote_digest(f"{SESSION_HEADER}\n\n{body}"), target, self._counter
                )
                if shorter:
                    return shorter
        return fit_quoted(content, target, self._counter) or None

    # ---------------------------------------------------------------------- recall

    def recall_tool(
        self,
        session_id: str | None = None,
        *,
        name: str = "recall",
        max_tokens: int = 1500,
    ) -> FunctionTool:
        """A ``recall`` tool over one session's archive: what the digest left out.

        ``session_id`` is the ``Memory``'s (``memory.session_id``); without it the tool
        answers for the one session this block has served when it is called, and says to
        pass ``session_id`` when the block serves several. The answers are quoted data.

        Raises:
            ValueError: the block has no memory store (``memory_store=None``).

        """
        store = self._store
        if store is None:
            raise ValueError(
                "recall_tool needs a memory store: build the block with memory_store=True "
                "(the default) or a window_budget MemoryStore"
            )
        where = check_conversation(session_id) if session_id is not None else self._only_session
        return recall_tool(store, where, name=name, max_tokens=max_tokens, counter=self._counter)

    def _only_session(self) -> str:
        sessions = self.sessions
        if len(sessions) == 1:
            return sessions[0]
        if not sessions:
            raise ConfigError("this memory block has not served a Memory session yet")
        raise ConfigError(
            f"this memory block serves {len(sessions)} Memory sessions; build the tool with "
            "block.recall_tool(memory.session_id)"
        )

    # --------------------------------------------------------------------- helpers

    def _session(self, given: object) -> str:
        session = given if isinstance(given, str) and given else DEFAULT_SESSION
        check_conversation(session)
        self._sessions.pop(session, None)
        self._sessions[session] = None
        while len(self._sessions) > _SESSIONS:
            del self._sessions[next(iter(self._sessions))]
        return session

    @staticmethod
    def _digest_key(session: str) -> str:
        return f"window_budget:{session}:digest"

    def _sealing(self) -> Any:
        """Digest records read and written under the memory store's key (else the chat store's)."""
        if self._seal_key is None:
            self._seal_key = seal_key_of(self._store, self.chat_store)
        return sealed_with(self._seal_key)

    def _async_lock(self) -> asyncio.Lock:
        """One fold at a time per event loop (``Memory``'s sync calls each run their own)."""
        loop = asyncio.get_running_loop()
        if self._aloop is not loop:
            self._aloop, self._alock = loop, asyncio.Lock()
        lock: asyncio.Lock = self._alock
        return lock

    def _body_tokens(self, total: int) -> int:
        """Room for the digest itself in ``total``: less the preamble and the quote marks."""
        overhead = count_text(PREAMBLE, self._counter) + total // 8
        return max(MIN_BLOCK_TOKENS // 2, total - overhead)

    def _deps(self, session: str) -> SummarizeDeps:
        llm = self.llm
        complete, complete_sync = completers_from_llm(llm) if llm is not None else (None, None)
        return SummarizeDeps(
            complete=complete,
            complete_sync=complete_sync,
            model=_summarizer(llm) if llm is not None else None,
            max_tokens=self._body_tokens(self.max_tokens),
            counter=self._counter,
            memory=self._store,
            conversation=session,
            recall_offered=self._store is not None,
        )

    async def _read(self, session: str) -> DigestMessage | None:
        """The session's digest: the one kept in the chat store, else the newest ledger's."""
        kept: Sequence[ChatMessage] = await self.chat_store.aget_messages(self._digest_key(session))
        for message in reversed(kept):
            core = to_core(message)  # a record that does not verify is an ordinary message
            if isinstance(core, DigestMessage):
                return core
        return self._from_ledger(session)

    def _from_ledger(self, session: str) -> DigestMessage | None:
        """A digest rendered from the memory store's newest ledger (no digest kept beside it)."""
        store = self._store
        version = store.ledger(session) if store is not None else None
        if version is None:
            return None
        try:
            ledger = ledger_from_json(version.ledger)
        except ValueError:
            return None
        body = render_ledger(
            ledger,
            max_tokens=self._body_tokens(self.max_tokens),
            counter=self._counter,
            recall=True,
        )
        return make_digest_message(body, covered_count=ledger.archived, fallback=True, facts=ledger)
