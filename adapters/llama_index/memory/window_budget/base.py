"""``WindowBudgetMemory``: a LlamaIndex memory that keeps chat engines and agents inside the window.

The store under ``chat_store_key`` always holds ``[*pinned system messages, digest?,
*verbatim tail]``. When the history grows past the gate, the head is folded into one
digest by the LLM you pass (``llm.chat`` on the sync path, ``await llm.achat`` on the
async one) and the folded originals are appended to an archive key of the same chat
store. The store is rewritten only once a digest exists, in one short critical
section; if the LLM fails, the store is left exactly as it was and the view handed to
the caller uses the network-free digest instead.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import logging
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import Field, PrivateAttr, SerializeAsAny
from llama_index.core.llms.llm import LLM
from llama_index.core.memory.types import DEFAULT_CHAT_STORE_KEY, BaseMemory
from llama_index.core.storage.chat_store import BaseChatStore, SimpleChatStore

from llama_index.memory.window_budget.completer import completers_from_llm
from llama_index.memory.window_budget.convert import (
    DIGEST_COVERED_KEY,
    is_digest_message,
    make_digest_chat_message,
    split_pinned,
    to_core,
)
from window_budget.budget.counters import CallableCounter, resolve_counter
from window_budget.budget.estimate import estimate_tokens
from window_budget.budget.gate import budget_limit
from window_budget.condenser import WindowCondenser, create_condenser
from window_budget.contract import BudgetPolicy, CondenseResult, Model, TokenCounter
from window_budget.errors import BudgetError
from window_budget.messages import AgentMessage

__all__ = ["ARCHIVE_SUFFIX", "CounterSpec", "WindowBudgetMemory", "default_policy"]

logger = logging.getLogger(__name__)

ARCHIVE_SUFFIX = "::window-budget-archive"
"""Appended to ``chat_store_key`` to name the key that holds folded messages."""

CounterSpec = TokenCounter | Callable[[str], int] | Literal["heuristic", "tiktoken", "llama_index"]
"""How to count: the heuristic (default), tiktoken, LlamaIndex's configured tokenizer,
a ``TokenCounter`` or any ``str -> int`` callable."""

_RESUMED_TEXT = "[conversation resumed — earlier turns are not shown]"
_SERIAL_VERSION = 1


def default_policy(context_window: int, *, output_reserved: bool = False) -> BudgetPolicy:
    """The policy used when none is given, scaled to ``context_window``.

    The tail kept verbatim is about a third of the limit, so after a compaction the
    history has room to grow before the next one (no summary on every turn). When the
    window already had the LLM's output allowance taken off, nothing more is reserved.
    """
    reserve = 0 if output_reserved else min(2048, context_window // 8)
    base = BudgetPolicy(trigger_ratio=0.75, reserve_tokens=reserve)
    limit = budget_limit(Model("window", context_window), base)
    return dataclasses.replace(base, keep_recent=max(1, min(6000, int(limit * 0.35))),
                               digest_max_tokens=max(64, min(2000, int(limit * 0.2))))


def _resolve(counter: CounterSpec | None) -> tuple[TokenCounter | None, str]:
    """The counter and the name it is serialized under."""
    if counter is None or counter == "heuristic":
        return None, "heuristic"
    if counter == "llama_index":
        from llama_index.core.utils import get_tokenizer

        return CallableCounter(lambda text: len(get_tokenizer()(text)),
                               name="llama_index"), "llama_index"
    if counter == "tiktoken":
        return resolve_counter("tiktoken"), "tiktoken"
    resolved = resolve_counter(counter)
    return resolved, getattr(resolved, "name", "custom")


def _copy(message: ChatMessage) -> ChatMessage:
    """An independent copy: callers may edit blocks and kwargs without touching the store."""
    return message.model_copy(update={
        "blocks": [b.model_copy() for b in message.blocks],
        "additional_kwargs": copy.deepcopy(message.additional_kwargs)
        if message.additional_kwargs else {},
    })


@dataclass(frozen=True, slots=True)
class _Pass:
    """One compaction attempt on a snapshot of the store (no I/O)."""

    snapshot: list[ChatMessage]
    """The store as read."""
    pinned: int
    """How many leading system messages are pinned."""
    result: CondenseResult | None
    """What the core decided; None when the pinned part alone cannot fit."""

    @property
    def body(self) -> list[ChatMessage]:
        return self.snapshot[self.pinned:]


class WindowBudgetMemory(BaseMemory):
    """Chat memory that folds old turns into a digest and keeps a verbatim tail in budget.

    Build it with :meth:`from_defaults`. It behaves like LlamaIndex's own memories
    (``get``/``put``/``set``/``reset`` and their async twins) and can be passed as
    ``memory=`` to chat engines and agents.

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
    context_window: int = Field(default=4096, gt=0)
    """Window the memory keeps the history (plus pinned messages) inside."""

    _llm: LLM | None = PrivateAttr(default=None)
    _policy: BudgetPolicy = PrivateAttr(default_factory=BudgetPolicy)
    _counter: TokenCounter | None = PrivateAttr(default=None)
    _counter_name: str = PrivateAttr(default="heuristic")
    _sync_condenser: WindowCondenser | None = PrivateAttr(default=None)
    _async_condenser: WindowCondenser | None = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default_factory=threading.RLock)
    _compact_lock: Any = PrivateAttr(default_factory=threading.Lock)
    _aloop: Any = PrivateAttr(default=None)
    _alock: Any = PrivateAttr(default=None)
    _cache: dict[int, tuple[ChatMessage, AgentMessage]] = PrivateAttr(default_factory=dict)
    _extra_pinned: int = PrivateAttr(default=0)
    _last_result: CondenseResult | None = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        """Name used in serialized forms."""
        return "WindowBudgetMemory"

    # ------------------------------------------------------------------ building

    @classmethod
    def from_defaults(  # type: ignore[override]
        cls,
        llm: LLM | None = None,
        context_window: int | None = None,
        policy: BudgetPolicy | None = None,
        chat_store: BaseChatStore | None = None,
        chat_store_key: str = DEFAULT_CHAT_STORE_KEY,
        *,
        chat_history: Sequence[ChatMessage] | None = None,
        counter: CounterSpec | None = None,
        archive_key: str | None = None,
    ) -> WindowBudgetMemory:
        """Build the memory.

        Args:
            llm: the LLM that writes the digests (any LlamaIndex LLM). Without one the
                network-free digest is used.
            context_window: the window to stay inside; defaults to
                ``llm.metadata.context_window`` minus its output allowance ``num_output``.
            policy: thresholds (``BudgetPolicy``); defaults to :func:`default_policy`.
            chat_store: any ``BaseChatStore``; a fresh ``SimpleChatStore`` by default.
            chat_store_key: key of this conversation in the store.
            chat_history: initial history, stored as with :meth:`set`.
            counter: ``"heuristic"`` (default), ``"tiktoken"``, ``"llama_index"`` (the
                tokenizer configured in ``Settings``), a ``TokenCounter`` or a callable.
            archive_key: key for folded messages; ``chat_store_key + ARCHIVE_SUFFIX``.

        Raises:
            ValueError: no window was given and the LLM does not report one.

        """
        output_reserved = False
        if context_window is None:
            if llm is None:
                raise ValueError(
                    "WindowBudgetMemory needs a context window: pass context_window=... or an "
                    "llm whose metadata reports one"
                )
            meta = llm.metadata
            allowance = max(0, meta.num_output or 0)
            context_window = meta.context_window - allowance
            output_reserved = True
            if context_window <= 0:
                raise ValueError(
                    f"the LLM reports a {meta.context_window:,}-token window and reserves "
                    f"{allowance:,} for output, leaving nothing for history; pass "
                    "context_window=... explicitly"
                )
        memory = cls(chat_store=chat_store or SimpleChatStore(), chat_store_key=chat_store_key,
                     archive_key=archive_key or chat_store_key + ARCHIVE_SUFFIX,
                     context_window=context_window)
        memory._configure(llm, policy or default_policy(context_window,
                                                        output_reserved=output_reserved),
                          counter)
        if chat_history is not None:
            memory.set(list(chat_history))
        return memory

    def _configure(self, llm: LLM | None, policy: BudgetPolicy,
                   counter: CounterSpec | None) -> None:
        if not self.archive_key:
            self.archive_key = self.chat_store_key + ARCHIVE_SUFFIX
        self._llm = llm
        self._policy = policy
        self._counter, self._counter_name = _resolve(counter)
        self._cache.clear()
        meta = getattr(llm, "metadata", None)
        model_id = getattr(meta, "model_name", None) or "llm"
        model = Model(model_id, self.context_window)
        # The summarizer is bounded by the LLM's own window, which may be far larger than
        # the share of it this memory guards: larger chunks mean fewer summary calls.
        llm_window = int(getattr(meta, "context_window", 0) or 0) - max(
            0, int(getattr(meta, "num_output", 0) or 0))
        summarizer = Model(model_id, max(self.context_window, llm_window))
        complete, complete_sync = completers_from_llm(llm) if llm is not None else (None, None)
        # Two condensers: each keeps an incremental token ledger that is not thread-safe,
        # and a streaming writer thread may compact while the event loop does too.
        for attr in ("_sync_condenser", "_async_condenser"):
            setattr(self, attr, create_condenser(model=model, policy=policy,
                                                 counter=self._counter, complete=complete,
                                                 complete_sync=complete_sync,
                                                 summarizer_model=summarizer))

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
    def tokenizer_fn(self) -> Callable[[str], Sequence[int]]:
        """Token "list" for a text, so chat engines can size their prefix messages.

        ``SimpleChatEngine`` passes ``len(memory.tokenizer_fn(prefix))`` as
        ``initial_token_count``; this keeps that figure in the memory's own count.
        """
        counter = self._counter

        def tokenize(text: str) -> Sequence[int]:
            n = counter.count(text) if counter is not None else math.ceil(len(text) / 3.6)
            return range(n)

        return tokenize

    def count_tokens(self, messages: Sequence[ChatMessage]) -> int:
        """Estimated tokens of ``messages`` with this memory's counter."""
        return estimate_tokens([to_core(m) for m in messages], self._counter)

    # ------------------------------------------------------------ store access

    def _read(self) -> list[ChatMessage]:
        return list(self.chat_store.get_messages(self.chat_store_key))

    def _is_local(self) -> bool:
        # An in-memory store does no I/O: no need to leave the event loop for it.
        return type(self.chat_store) is SimpleChatStore

    async def _in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self._is_local():
            return fn(*args)
        return await asyncio.to_thread(fn, *args)

    def _append(self, messages: Sequence[ChatMessage]) -> None:
        copies = [_copy(m) for m in messages]
        with self._lock:
            for m in copies:
                self.chat_store.add_message(self.chat_store_key, m)

    def _replace(self, messages: Sequence[ChatMessage]) -> None:
        copies = [_copy(m) for m in messages]
        with self._lock:
            self.chat_store.set_messages(self.chat_store_key, copies)
            self.chat_store.delete_messages(self.archive_key)
            self._cache.clear()

    def _clear(self) -> None:
        with self._lock:
            self.chat_store.delete_messages(self.chat_store_key)
            self.chat_store.delete_messages(self.archive_key)
            self._cache.clear()

    # ------------------------------------------------------------- conversion

    def _core(self, messages: Sequence[ChatMessage]) -> list[AgentMessage]:
        """Core messages for ``messages``, cached by identity.

        A growing history is converted (and, through the condenser's ledger, estimated)
        only once per message.
        """
        cache = self._cache
        out: list[AgentMessage] = []
        # The sync path (maybe a streaming writer thread) and the event loop share the cache.
        with self._lock:
            if len(cache) > 2 * len(messages) + 256:
                live = {id(m) for m in messages}
                for key in [k for k in cache if k not in live]:
                    del cache[key]
            for m in messages:
                hit = cache.get(id(m))
                if hit is None or hit[0] is not m:
                    core = to_core(m)
                    cache[id(m)] = (m, core)
                else:
                    core = hit[1]
                out.append(core)
        return out

    # -------------------------------------------------------------- compaction

    def _pinned_tokens(self, snapshot: list[ChatMessage], n: int, extra: int) -> int:
        return estimate_tokens(self._core(snapshot[:n]), self._counter) + extra

    def _begin(self, snapshot: list[ChatMessage]) -> tuple[int, list[AgentMessage]]:
        n = split_pinned(snapshot)
        return n, self._core(snapshot[n:])

    def _run_sync(self, snapshot: list[ChatMessage], extra: int, force: bool) -> _Pass:
        n, body = self._begin(snapshot)
        assert self._sync_condenser is not None
        for pinned_extra in (extra, 0):
            try:
                result = self._sync_condenser.run_sync(
                    body, force=force,
                    pinned_tokens=self._pinned_tokens(snapshot, n, pinned_extra))
            except BudgetError as exc:
                logger.warning("window-budget: %s", exc)
                continue
            return _Pass(snapshot, n, result)
        return _Pass(snapshot, n, None)

    async def _run_async(self, snapshot: list[ChatMessage], extra: int, force: bool) -> _Pass:
        n, body = self._begin(snapshot)
        assert self._async_condenser is not None
        for pinned_extra in (extra, 0):
            try:
                result = await self._async_condenser.run(
                    body, force=force,
                    pinned_tokens=self._pinned_tokens(snapshot, n, pinned_extra))
            except BudgetError as exc:
                logger.warning("window-budget: %s", exc)
                continue
            return _Pass(snapshot, n, result)
        return _Pass(snapshot, n, None)

    def _digest_for(self, p: _Pass) -> ChatMessage | None:
        result = p.result
        if result is None or result.summary is None or result.plan.cut == 0:
            return None
        body = p.body
        cut = result.plan.cut
        covered = 0
        for m in body[:cut]:
            covered += int(m.additional_kwargs.get(DIGEST_COVERED_KEY, 0) or 0) \
                if is_digest_message(m) else 1
        return make_digest_chat_message(result.summary.text, covered)

    def _should_commit(self, p: _Pass) -> bool:
        result = p.result
        if result is None or result.summary is None or result.plan.cut == 0:
            return False
        # A failing LLM: keep the store as it was and retry on a later call; the view
        # still uses the network-free digest so the caller stays inside the window.
        return not (result.summary.fallback and self._llm is not None)

    def _commit(self, p: _Pass, digest: ChatMessage) -> bool:
        """Rewrite the store as ``[pinned, digest, tail, anything appended meanwhile]``.

        Returns False (and writes nothing) when the store changed under the snapshot.
        """
        assert p.result is not None
        cut = p.result.plan.cut
        snapshot = p.snapshot
        with self._lock:
            current = self._read()
            if len(current) < len(snapshot) or any(
                    a is not b and a != b for a, b in zip(current, snapshot, strict=False)):
                return False
            appended = current[len(snapshot):]
            body = p.body
            dropped = [m for m in body[:cut] if not is_digest_message(m)]
            archived = list(self.chat_store.get_messages(self.archive_key))
            # Archive first: if the second write fails, a message is archived twice, never lost.
            self.chat_store.set_messages(self.archive_key, [*archived, *dropped])
            self.chat_store.set_messages(
                self.chat_store_key, [*snapshot[:p.pinned], digest, *body[cut:], *appended])
            for m in body[:cut]:
                self._cache.pop(id(m), None)
        return True

    def _view(self, p: _Pass, digest: ChatMessage | None) -> list[ChatMessage]:
        """Copies of what the LLM should see: pinned, digest, tail (shortened where needed)."""
        from llama_index.memory.window_budget.convert import from_core_shortened

        pinned = [_copy(m) for m in p.snapshot[:p.pinned]]
        body = p.body
        result = p.result
        if result is None:
            # Even the pinned part does not fit: hand over the newest message only, as
            # LlamaIndex's buffers do, so the LLM reports the overflow itself.
            tail = [_copy(m) for m in body[-1:]]
        else:
            kept = body[result.plan.cut:]
            # ``shortened`` indexes result.messages, whose first entry is the digest.
            short = {i - 1: result.messages[i] for i in result.shortened} \
                if result.summary is not None else {}
            tail = [from_core_shortened(m, short[i]) if i in short else _copy(m)
                    for i, m in enumerate(kept)]
            if digest is not None:
                tail.insert(0, _copy(digest))
        if tail and tail[0].role != MessageRole.USER:
            tail.insert(0, ChatMessage(role=MessageRole.USER, content=_RESUMED_TEXT))
        return pinned + tail

    def _compact_sync(self, extra: int, *, force: bool = False,
                      want_view: bool = True) -> list[ChatMessage]:
        with self._compact_lock:
            p = self._run_sync(self._read(), extra, force)
            for _ in range(3):
                digest = self._digest_for(p)
                if digest is None or not self._should_commit(p) or self._commit(p, digest):
                    break
                p = self._run_sync(self._read(), extra, force)
            self._last_result = p.result
            return self._view(p, self._digest_for(p)) if want_view else []

    def _async_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._aloop is not loop:
            self._aloop, self._alock = loop, asyncio.Lock()
        lock: asyncio.Lock = self._alock
        return lock

    async def _compact_async(self, extra: int, *, force: bool = False,
                             want_view: bool = True) -> list[ChatMessage]:
        async with self._async_lock():
            p = await self._run_async(await self._in_thread(self._read), extra, force)
            for _ in range(3):
                digest = self._digest_for(p)
                if digest is None or not self._should_commit(p) or await self._in_thread(
                        self._commit, p, digest):
                    break
                p = await self._run_async(await self._in_thread(self._read), extra, force)
            self._last_result = p.result
            return self._view(p, self._digest_for(p)) if want_view else []

    # ----------------------------------------------------------- the memory API

    def get(self, input: str | None = None, initial_token_count: int = 0,
            **kwargs: Any) -> list[ChatMessage]:
        """The condensed history: pinned system messages, the digest, the verbatim tail.

        ``initial_token_count`` (tokens the caller puts before the history, e.g. a
        chat engine's prefix messages) shrinks the tail; it never raises. Returned
        messages are copies.
        """
        extra = max(0, int(initial_token_count or 0))
        self._extra_pinned = extra
        return self._compact_sync(extra)

    async def aget(self, input: str | None = None, initial_token_count: int = 0,
                   **kwargs: Any) -> list[ChatMessage]:
        """Async :meth:`get`; summaries go through ``await llm.achat``."""
        extra = max(0, int(initial_token_count or 0))
        self._extra_pinned = extra
        return await self._compact_async(extra)

    def get_all(self, include_archived: bool = False) -> list[ChatMessage]:
        """Copies of the stored history (digest included).

        With ``include_archived`` the full original conversation: pinned messages, every
        archived message, then the live tail, without digests.
        """
        with self._lock:
            live = self._read()
            archived = list(self.chat_store.get_messages(self.archive_key)) \
                if include_archived else []
        if not include_archived:
            return [_copy(m) for m in live]
        n = split_pinned(live)
        rest = [m for m in live[n:] if not is_digest_message(m)]
        return [_copy(m) for m in (*live[:n], *archived, *rest)]

    async def aget_all(self, include_archived: bool = False) -> list[ChatMessage]:
        """Async :meth:`get_all`."""
        result: list[ChatMessage] = await self._in_thread(self.get_all, include_archived)
        return result

    def put(self, message: ChatMessage) -> None:
        """Append a message (a copy is stored); compacts when the gate fires.

        Safe to call from a streaming response's writer thread.
        """
        self._append([message])
        self._compact_sync(self._extra_pinned, want_view=False)

    async def aput(self, message: ChatMessage) -> None:
        """Async :meth:`put`."""
        await self._in_thread(self._append, [message])
        await self._compact_async(self._extra_pinned, want_view=False)

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Append several messages, then compact once if needed."""
        self._append(messages)
        self._compact_sync(self._extra_pinned, want_view=False)

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """Async :meth:`put_messages`."""
        await self._in_thread(self._append, messages)
        await self._compact_async(self._extra_pinned, want_view=False)

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the history (and clear the archive); compacts when it is over budget."""
        self._replace(messages)
        self._compact_sync(self._extra_pinned, want_view=False)

    async def aset(self, messages: list[ChatMessage]) -> None:
        """Async :meth:`set`."""
        await self._in_thread(self._replace, messages)
        await self._compact_async(self._extra_pinned, want_view=False)

    def reset(self) -> None:
        """Forget the history and its archive."""
        self._clear()

    async def areset(self) -> None:
        """Async :meth:`reset`."""
        await self._in_thread(self._clear)

    def compact(self) -> list[ChatMessage]:
        """Fold everything before the last user turn now (a manual ``/compact``)."""
        return self._compact_sync(self._extra_pinned, force=True)

    async def acompact(self) -> list[ChatMessage]:
        """Async :meth:`compact`."""
        return await self._compact_async(self._extra_pinned, force=True)

    # ---------------------------------------------------------- serialization

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """Messages, archive, digest state and configuration as plain JSON data.

        The LLM is not included: pass it again to :meth:`from_dict`. Messages are dumped
        one by one, so this works whatever the chat store's own serializer does.
        """
        with self._lock:
            live = self._read()
            archived = list(self.chat_store.get_messages(self.archive_key))
        return {
            "class_name": self.class_name(),
            "version": _SERIAL_VERSION,
            "chat_store_key": self.chat_store_key,
            "archive_key": self.archive_key,
            "context_window": self.context_window,
            "policy": dataclasses.asdict(self._policy),
            "counter": self._counter_name,
            "messages": [m.model_dump(mode="json") for m in live],
            "archive": [m.model_dump(mode="json") for m in archived],
        }

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as a JSON string."""
        return json.dumps(self.to_dict(**kwargs), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> WindowBudgetMemory:
        """Rebuild a memory from :meth:`to_dict` output.

        Keyword arguments: ``llm`` (the summarizer, not serialized), ``chat_store`` (where
        to load the messages; a new ``SimpleChatStore`` by default) and ``counter`` (for a
        custom counter object, which is serialized only by name).
        """
        llm = kwargs.get("llm")
        store = kwargs.get("chat_store") or SimpleChatStore()
        counter: Any = kwargs.get("counter") or data.get("counter") or "heuristic"
        if counter not in ("heuristic", "tiktoken", "llama_index") and isinstance(counter, str):
            logger.warning("window-budget: counter %r is not serializable; pass counter=... "
                           "to from_dict; using the heuristic", counter)
            counter = "heuristic"
        policy = BudgetPolicy(**data["policy"]) if data.get("policy") else None
        key = data.get("chat_store_key", DEFAULT_CHAT_STORE_KEY)
        memory = cls(chat_store=store, chat_store_key=key,
                     archive_key=data.get("archive_key") or key + ARCHIVE_SUFFIX,
                     context_window=int(data["context_window"]))
        memory._configure(llm, policy or default_policy(memory.context_window), counter)
        live = [ChatMessage.model_validate(m) for m in data.get("messages", [])]
        archived = [ChatMessage.model_validate(m) for m in data.get("archive", [])]
        with memory._lock:
            store.set_messages(key, live)
            store.set_messages(memory.archive_key, archived)
        return memory

    @classmethod
    def from_json(cls, data_str: str, **kwargs: Any) -> WindowBudgetMemory:
        """Rebuild a memory from :meth:`to_json` output (same keywords as :meth:`from_dict`)."""
        return cls.from_dict(json.loads(data_str), **kwargs)
