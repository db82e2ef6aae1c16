"""``WindowBudgetMemory``: a LlamaIndex memory that keeps chat engines and agents inside the window.

The store under ``chat_store_key`` always holds ``[*pinned system messages, digest?,
*verbatim tail]``. When the history grows past the gate, the head is folded into one
digest by the LLM you pass (``llm.chat`` on the sync path, ``await llm.achat`` on the
async one) and the folded originals are appended to the archive: ``archive_store`` under
``archive_key`` (by default the same chat store, so give a web server that loads the
live store per request a separate one). The store is rewritten only once a digest exists,
in one short critical section; if the LLM fails, the store is left exactly as it was and
the view handed to the caller uses the network-free digest instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import dataclasses
import json
import logging
import pickle
import secrets
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import Field, PrivateAttr, SerializeAsAny
from llama_index.core.llms.llm import LLM
from llama_index.core.memory.types import DEFAULT_CHAT_STORE_KEY, BaseMemory
from llama_index.core.storage.chat_store import BaseChatStore, SimpleChatStore

from llama_index.memory.window_budget.completer import completers_from_llm
from llama_index.memory.window_budget.convert import (
    _TOOL_ROLES,
    RECORD_KEY,
    SYSTEM_ROLES,
    LlamaIndexCodec,
    digest_covered,
    from_core_shortened,
    is_digest_message,
    make_digest_chat_message,
    split_pinned,
    to_core,
)
from llama_index.memory.window_budget.instrumentation import (
    Compaction,
    CompactionEvent,
    dispatcher,
)
from llama_index.memory.window_budget.stores import rewrite_for, store_name
from window_budget import bridge
from window_budget.budget import (
    CallableCounter,
    estimate_message_tokens,
    estimate_tokens,
    model_for,
)
from window_budget.contract import BudgetPolicy, CondenseResult, Model, TokenCounter
from window_budget.errors import BudgetError, ConfigError, SummarizerError
from window_budget.messages import AgentMessage
from window_budget.pipeline import (
    MASK_MARKER,
    WindowCondenser,
    budget_limit,
    check_window,
    create_condenser,
    fit_messages,
)
from window_budget.pipeline.summarize import ledger_of
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
    "CounterSpec",
    "DigestRole",
    "InitialTokenCountError",
    "WindowBudgetMemory",
    "default_policy",
]

logger = logging.getLogger(__name__)

ARCHIVE_SUFFIX = "::window-budget-archive"
"""Appended to ``chat_store_key`` to name the key that holds folded messages."""

CounterSpec = TokenCounter | Callable[[str], int] | Literal["heuristic", "tiktoken", "llama_index"]
"""How to count: the heuristic (default), tiktoken, LlamaIndex's configured tokenizer,
a ``TokenCounter`` or any ``str -> int`` callable."""

DigestRole = Literal["system", "pair", "user"]
"""How a view hands the digest over: a system message, a user message answered by an
assistant acknowledgement, or a user message."""
_DIGEST_ROLES: tuple[DigestRole, ...] = ("system", "pair", "user")
_ACK_TEXT = "Understood."
_ACK_PART = "acknowledgement"
_RESUMED_PART = "resumed"

_RESUMED_TEXT = "[conversation resumed — earlier turns are not shown]"
_SERIAL_VERSION = 2
# Per-process state rebuilt after pickling or copying; never part of the state itself.
_RUNTIME_ATTRS = (
    "_compact_lock",
    "_aloop",
    "_alock",
    "_sync_condenser",
    "_async_condenser",
    "_rewriter",
    "_store_rewrite",
    "_runtime",
)


class _Codec(LlamaIndexCodec):
    """The adapter's codec; converts through this module's ``to_core`` (tests count it)."""

    def to_core(self, message: ChatMessage) -> AgentMessage:
        return to_core(message)


_CODEC = _Codec()


def default_policy(context_window: int, *, output_reserved: bool = False) -> BudgetPolicy:
    """The policy used when none is given: :meth:`BudgetPolicy.for_window`."""
    return BudgetPolicy.for_window(context_window, output_reserved=output_reserved)


def _llama_index_counter(context: object) -> TokenCounter:
    from llama_index.core.utils import get_tokenizer

    return CallableCounter(lambda text: len(get_tokenizer()(text)), name="llama_index")


bridge.register_counter("llama_index", _llama_index_counter)


def _resolve(counter: CounterSpec | str | None) -> tuple[TokenCounter | None, str]:
    """The counter and the name it is serialized under (the bridge's one registry)."""
    return bridge.resolve_counter_spec(counter)


def _serializable_counter(name: str) -> bool:
    return name in ("heuristic", "tiktoken", "llama_index") or name.startswith("tiktoken:")


@dataclass(frozen=True, slots=True)
class _TokenizerLength:
    """``len(tokenizer_fn(text))``: a LlamaIndex tokenizer function as a ``str -> int`` counter."""

    tokenizer_fn: Callable[[str], Sequence[Any]]

    def __call__(self, text: str) -> int:
        return len(self.tokenizer_fn(text))


def _policy_for_token_limit(token_limit: int, context_window: int) -> BudgetPolicy:
    """The policy whose limit in ``context_window`` is exactly ``token_limit``."""
    if token_limit > context_window:
        raise ValueError(
            f"token_limit {token_limit:,} is larger than the {context_window:,}-token window; "
            "lower token_limit or pass a larger context_window"
        )
    scaled = BudgetPolicy.for_window(token_limit, output_reserved=True)
    return dataclasses.replace(
        scaled, trigger_ratio=1.0, reserve_tokens=context_window - token_limit
    )


def _ack() -> ChatMessage:
    """The assistant's acknowledgement that follows a ``digest_role="pair"`` digest.

    Marked as the digest's (``additional_kwargs["window_budget"]["part"]``), so a view
    handed back to ``set`` does not store it as a turn of the conversation.
    """
    return ChatMessage(
        role=MessageRole.ASSISTANT,
        content=_ACK_TEXT,
        additional_kwargs={RECORD_KEY: {"part": _ACK_PART}},
    )


def _resumed() -> ChatMessage:
    """The user message put first when the view would not open with one (counted, marked)."""
    return ChatMessage(
        role=MessageRole.USER,
        content=_RESUMED_TEXT,
        additional_kwargs={RECORD_KEY: {"part": _RESUMED_PART}},
    )


def _view_part(message: ChatMessage) -> str | None:
    """Which message a view added this is (``_ACK_PART``, ``_RESUMED_PART``), or None."""
    record = message.additional_kwargs.get(RECORD_KEY)
    part = record.get("part") if isinstance(record, dict) else None
    return part if isinstance(part, str) else None


def _stored_form(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """Copies of ``messages`` (a view handed back to ``set``) as the store holds them.

    A digest is stored as the user message it always is there, whatever role the view gave
    it; the acknowledgement right after a digest and the resumed marker where a view puts
    it (first after the system messages, or right after a digest) are the view's own and
    are left out. Anywhere else such a message is kept, as any message the caller gives.
    """
    out: list[ChatMessage] = []
    after_digest = False
    opening = True  # nothing but system messages so far
    for m in messages:
        part = _view_part(m)
        if part == _ACK_PART and after_digest and m.role == MessageRole.ASSISTANT:
            after_digest = False
            continue
        if part == _RESUMED_PART and (after_digest or opening) and m.role == MessageRole.USER:
            after_digest = opening = False
            continue
        copy = _copy(m)
        after_digest = is_digest_message(copy)
        if after_digest:
            copy.role = MessageRole.USER
        opening = opening and copy.role in SYSTEM_ROLES and not after_digest
        out.append(copy)
    return out


def _unmasked(messages: list[ChatMessage]) -> list[ChatMessage]:
    """``messages`` with each masked output's original put back in its placeholder's place.

    The original was archived when its output was masked; it is not listed there again.
    """

    def call_id(m: ChatMessage) -> object:
        return m.additional_kwargs.get("tool_call_id") if m.role in _TOOL_ROLES else None

    masked = {
        call_id(m)
        for m in messages
        if call_id(m) and m.content and m.content.startswith(MASK_MARKER)
    }
    originals: dict[object, ChatMessage] = {}
    for m in messages:
        cid = call_id(m)
        if cid in masked and cid not in originals and not (m.content or "").startswith(MASK_MARKER):
            originals[cid] = m
    out: list[ChatMessage] = []
    for m in messages:
        cid = call_id(m)
        if cid in originals:
            if m is not originals[cid] and (m.content or "").startswith(MASK_MARKER):
                out.append(originals.pop(cid))
        else:
            out.append(m)
    return out


def _copy(message: ChatMessage) -> ChatMessage:
    """An independent copy: callers may edit blocks and kwargs without touching the store."""
    return message.model_copy(deep=True)


def _check_policy(policy: BudgetPolicy, context_window: int) -> None:
    """Refuse a policy whose limit in ``context_window`` has no room for digest and tail."""
    if policy.strategy != "summarize":
        # The memory maps the core's [digest, *tail] back onto stored messages; a category
        # trim keeps an arbitrary subset, which this memory does not map (yet).
        raise ConfigError(
            f"WindowBudgetMemory supports strategy='summarize' only, got {policy.strategy!r}; "
            "for trimming without a model use window_budget.tools.categories.trim_by_category on "
            "the messages"
        )
    check_window(context_window, policy)  # the same refusal as the LangChain adapter's


def _same_message(a: ChatMessage, b: ChatMessage) -> bool:
    """Equal as stored: a store's JSON round trip may turn tuples into lists."""
    return a is b or a == b or a.model_dump(mode="json") == b.model_dump(mode="json")


def _set_verified(
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
            store.get_messages(key), messages, store_name(store), same=_same_message, exact=True
        )


def _same_list(
    read_back: Sequence[ChatMessage], written: Sequence[ChatMessage], *, exact: bool
) -> bool:
    if len(read_back) != len(written) and (exact or len(read_back) < len(written)):
        return False
    return all(_same_message(a, b) for a, b in zip(read_back, written, strict=False))


@dataclass(frozen=True, slots=True)
class _Pass:
    """One compaction attempt on a snapshot of the store (no I/O)."""

    snapshot: list[ChatMessage]
    """The store as read."""
    cores: list[AgentMessage]
    """``snapshot`` converted (cached by identity), index for index."""
    pinned: int
    """How many leading system messages are pinned."""
    result: CondenseResult | None
    """What the core decided; None when the pinned part alone cannot fit."""
    extra: int = 0
    """Tokens the caller puts before the history (``initial_token_count``)."""
    prefix_fits: bool = True
    """False when ``result`` was computed without ``extra``, which did not fit."""

    @property
    def body(self) -> list[ChatMessage]:
        return self.snapshot[self.pinned :]


class _Runtime:
    """What :meth:`WindowBudgetMemory.to_dict` cannot carry: the LLM, counter and stores.

    Registered (weakly) under a random token that the saved data names, and held by every
    memory using these objects, so :meth:`WindowBudgetMemory.from_dict` in the same
    process gives a restored memory (an agent's ``Context`` restored with
    ``Context.from_dict``) the same LLM and the same store while any of them is alive.
    """

    __slots__ = (
        "__weakref__",
        "archive_store",
        "chat_store",
        "counter",
        "llm",
        "store_rewrite",
        "token",
    )

    def __init__(self, memory: WindowBudgetMemory) -> None:
        self.token = secrets.token_hex(16)  # unguessable: saved data may come from anyone
        self.llm = memory._llm
        self.counter = memory._counter
        self.chat_store = memory.chat_store
        self.archive_store = memory.archive_store
        self.store_rewrite = memory._store_rewrite

    def holds(self, memory: WindowBudgetMemory) -> bool:
        """True when ``memory`` still uses exactly these objects."""
        return (
            self.llm is memory._llm
            and self.chat_store is memory.chat_store
            and self.archive_store is memory.archive_store
            and self.store_rewrite is memory._store_rewrite
        )


_LIVE: weakref.WeakValueDictionary[str, _Runtime] = weakref.WeakValueDictionary()
_RESTORING: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "window_budget_restoring", default=None
)
_RESOURCE_KEYWORDS = ("llm", "chat_store", "archive_store", "counter", "store_rewrite")
_SNAPSHOT_STORE = "SimpleChatStore"  # a store whose whole content the saved data holds


def _llm_name(llm: LLM | None) -> str | None:
    if llm is None:
        return None
    meta = getattr(llm, "metadata", None)
    return str(getattr(meta, "model_name", None) or type(llm).__name__)


@dataclass(slots=True)
class _Restored:
    """Where a memory rebuilt by ``from_dict`` gets what the saved data does not carry."""

    llm: LLM | None
    counter: Any
    chat_store: BaseChatStore
    archive_store: BaseChatStore | None
    store_rewrite: ConditionalRewrite | None
    runtime: _Runtime | None
    """The live objects reused whole (then nothing is loaded into the live stores)."""
    load_live: bool
    load_archive: bool


def _restored_counter(data: dict[str, Any], given: dict[str, Any], live: _Runtime | None) -> Any:
    counter: Any = given.get("counter") or data.get("counter") or "heuristic"
    if isinstance(counter, str) and not _serializable_counter(counter):
        if live is not None and live.counter is not None:
            return live.counter
        logger.warning(
            "window-budget: counter %r is not serializable; pass counter=... "
            "to from_dict; using the heuristic",
            counter,
        )
        return "heuristic"
    return counter


def _restored_stores(
    data: dict[str, Any], given: dict[str, Any], live: _Runtime | None, missing: list[str]
) -> tuple[BaseChatStore, bool, BaseChatStore | None, bool]:
    """``(chat store, load it, archive store, load it)``; what cannot be had goes to ``missing``."""
    saved_store = data.get("chat_store")  # absent from data written before version 2
    store: BaseChatStore
    if given.get("chat_store") is not None:
        store, load_live = given["chat_store"], True
    elif live is not None:
        store, load_live = live.chat_store, False  # the conversation itself: nothing to load
    else:
        store, load_live = SimpleChatStore(), True
        if saved_store not in (None, _SNAPSHOT_STORE):
            missing.append(f"the chat store {saved_store} (chat_store=...)")
    saved_archive = data.get("archive_store")
    if given.get("archive_store") is not None:
        return store, load_live, given["archive_store"], True
    if live is not None and store is live.chat_store:
        return store, load_live, live.archive_store, False
    if saved_archive == _SNAPSHOT_STORE:
        return store, load_live, SimpleChatStore(), True
    if saved_archive is not None:
        if live is not None:
            return store, load_live, live.archive_store, False
        missing.append(f"the archive store {saved_archive} (archive_store=...)")
    return store, load_live, None, True


def _restored(data: dict[str, Any], given: dict[str, Any]) -> _Restored:
    """Resolve the LLM, counter and stores for ``data``: given, live in-process, or refused.

    Raises:
        ValueError: the saved memory used an LLM or a store that is neither given nor
            alive in this process (one sentence naming them and how to pass them).

    """
    token = data.get("instance")
    live = _LIVE.get(token) if isinstance(token, str) else None
    missing: list[str] = []
    if "llm" in given:
        llm = given["llm"]
    elif live is not None:
        llm = live.llm
    else:
        llm = None
        if data.get("llm"):
            missing.append(f"the LLM {data['llm']!r} (llm=...)")
    counter = _restored_counter(data, given, live)
    store, load_live, archive, load_archive = _restored_stores(data, given, live, missing)
    if missing:
        raise ValueError(
            f"WindowBudgetMemory.from_dict: the saved memory used {' and '.join(missing)}, "
            "not serialized and held by no memory alive in this process; pass them to "
            "from_dict, or restore a workflow Context inside "
            "`with WindowBudgetMemory.restoring(llm=..., chat_store=...)` (llm=None for "
            "network-free digests)"
        )
    rewrite = given.get("store_rewrite")
    if rewrite is None and live is not None and store is live.chat_store:
        rewrite = live.store_rewrite
    whole = (
        live is not None
        and llm is live.llm
        and store is live.chat_store
        and archive is live.archive_store
        and rewrite is live.store_rewrite
    )
    return _Restored(
        llm, counter, store, archive, rewrite, live if whole else None, load_live, load_archive
    )


class InitialTokenCountError(BudgetError, ValueError):
    """``initial_token_count`` is above the token limit.

    A ``ValueError``, as LlamaIndex's memories raise, and a ``BudgetError``, as everything
    that cannot fit in window-budget.
    """


class WindowBudgetMemory(BaseMemory):
    """Chat memory that folds old turns into a digest and keeps a verbatim tail in budget.

    Build it with :meth:`from_defaults` (it takes the peers' ``token_limit`` and
    ``tokenizer_fn`` too). It behaves like LlamaIndex's own memories
    (``get``/``put``/``set``/``reset`` and their async twins, ``to_string``/``from_string``)
    and can be passed as ``memory=`` to chat engines and agents.

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
    _counter_name: str = PrivateAttr(default="heuristic")
    _sync_condenser: WindowCondenser | None = PrivateAttr(default=None)
    _async_condenser: WindowCondenser | None = PrivateAttr(default=None)
    _compact_lock: Any = PrivateAttr(default_factory=threading.Lock)
    _aloop: Any = PrivateAttr(default=None)
    _alock: Any = PrivateAttr(default=None)
    _extra_pinned: int = PrivateAttr(default=0)
    _resumed_tokens: int = PrivateAttr(default=0)
    _ack_tokens: int = PrivateAttr(default=0)
    _last_result: CondenseResult | None = PrivateAttr(default=None)
    _last_compaction: Compaction | None = PrivateAttr(default=None)
    _rewriter: tuple[tuple[int, int, str, str], ConditionalRewrite] | None = PrivateAttr(
        default=None
    )
    _store_rewrite: ConditionalRewrite | None = PrivateAttr(default=None)
    _runtime: _Runtime | None = PrivateAttr(default=None)

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
        archive_store: BaseChatStore | None = None,
        token_limit: int | None = None,
        tokenizer_fn: Callable[[str], Sequence[Any]] | None = None,
        model: str | None = None,
        digest_role: DigestRole = "pair",
        store_rewrite: ConditionalRewrite | None = None,
    ) -> WindowBudgetMemory:
        """Build the memory, the way LlamaIndex's own memories are built.

        Args:
            llm: the LLM that writes the digests (any LlamaIndex LLM). Without one the
                network-free digest is used: ``Settings.llm`` is never picked up, as
                ``ChatSummaryMemoryBuffer`` does not (a digest call is spend the caller
                must ask for).
            context_window: the window to stay inside. Without it: the LLM's
                ``metadata.context_window`` minus its output allowance ``num_output``;
                without an LLM, the window of ``model`` in window-budget's table of
                models; failing both, ``token_limit``.
            policy: thresholds (``BudgetPolicy``); defaults to :func:`default_policy`.
            chat_store: any ``BaseChatStore``; a fresh ``SimpleChatStore`` by default.
            chat_store_key: key of this conversation in the store.
            chat_history: initial history, stored as with :meth:`set`.
            counter: ``"heuristic"`` (default), ``"tiktoken"``, ``"llama_index"`` (the
                tokenizer configured in ``Settings``), a ``TokenCounter`` or a callable.
            archive_key: key for folded messages; ``chat_store_key + ARCHIVE_SUFFIX``.
            archive_store: any ``BaseChatStore`` for folded messages; ``chat_store`` by
                default. Folded messages are only ever appended to it.
            token_limit: as in ``ChatMemoryBuffer``: the most tokens the view (plus a
                chat engine's ``initial_token_count``) may hold. It becomes
                :attr:`token_limit` exactly: the window minus ``token_limit`` is reserved
                and the gate fires at 100 % of the rest; the verbatim tail and the digest
                are sized as the default for a ``token_limit``-token window
                (``BudgetPolicy.for_window(token_limit, output_reserved=True)``).
            tokenizer_fn: as in ``ChatMemoryBuffer``: a ``str -> list of tokens``
                function (e.g. ``tiktoken.get_encoding("cl100k_base").encode``); it
                becomes the counter, ``len(tokenizer_fn(text))``.
            model: a model id to take the window from (window-budget's table), when
                neither ``context_window`` nor ``llm`` gives it.
            digest_role: how views hand the digest over (the store is not affected):
                ``"pair"`` (default: the digest as a user message answered by a short
                assistant acknowledgement, so user and assistant messages keep
                alternating everywhere), ``"system"`` (as ``ChatSummaryMemoryBuffer``
                does; but ``ReActAgent`` drops a leading system message, digest
                included) or ``"user"`` (followed by the next user message).
            store_rewrite: how a compaction rewrites a store several processes share (a
                ``window_budget.stores.ConditionalRewrite``); by default the memory picks
                the store's own transaction (Redis, PostgreSQL, SQLite) or the in-process
                fallback. Pass one for a store it does not know; it is not pickled or
                copied with the memory.

        A ``policy`` is used as given; its token fields are absolute, so scale the
        default to your window and change only what you need:
        ``dataclasses.replace(default_policy(context_window), trigger_ratio=0.8)``.

        Raises:
            ValueError: unknown keyword, both ``policy`` and ``token_limit``, both
                ``counter`` and ``tokenizer_fn``, a ``token_limit`` larger than the
                window, or no window could be found.
            ConfigError: (a ``ValueError``) the policy leaves too small a limit for a
                digest and a tail in this window, or ``model`` is not in the table.

        """
        if digest_role not in _DIGEST_ROLES:
            raise ValueError(
                f"digest_role must be one of {list(_DIGEST_ROLES)}, got {digest_role!r}"
            )
        if policy is not None and token_limit is not None:
            raise ValueError(
                "pass either policy= or token_limit=, not both (token_limit builds the policy)"
            )
        if counter is not None and tokenizer_fn is not None:
            raise ValueError("pass either counter= or tokenizer_fn=, not both")
        if token_limit is not None and (
            isinstance(token_limit, bool) or not isinstance(token_limit, int) or token_limit < 1
        ):
            raise ValueError(f"token_limit must be a positive int, got {token_limit!r}")
        output_reserved = False
        if context_window is None:
            reported = getattr(llm.metadata, "context_window", None) if llm is not None else None
            if llm is not None and isinstance(reported, int) and reported > 0:
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
            elif model is not None or llm is not None:
                # No window reported: the table, by the given id or the LLM's model name.
                name = (
                    model
                    if model is not None or llm is None
                    else getattr(llm.metadata, "model_name", None)
                )
                context_window = model_for(name).context_window
            elif token_limit is not None:
                context_window, output_reserved = token_limit, True
            else:
                raise ValueError(
                    "WindowBudgetMemory needs a context window: pass context_window=..., "
                    "token_limit=..., model=... or an llm whose metadata reports one"
                )
        if token_limit is not None:
            policy = _policy_for_token_limit(token_limit, context_window)
        if policy is not None:
            _check_policy(policy, context_window)
        spec: CounterSpec | None = counter
        if tokenizer_fn is not None:
            spec = CallableCounter(_TokenizerLength(tokenizer_fn), name="tokenizer_fn")
        memory = cls(
            chat_store=chat_store or SimpleChatStore(),
            chat_store_key=chat_store_key,
            archive_key=archive_key or chat_store_key + ARCHIVE_SUFFIX,
            archive_store=archive_store,
            context_window=context_window,
            digest_role=digest_role,
        )
        memory._store_rewrite = store_rewrite
        memory._configure(
            llm, policy or default_policy(context_window, output_reserved=output_reserved), spec
        )
        if chat_history is not None:
            memory.set(list(chat_history))
        return memory

    def _configure(
        self, llm: LLM | None, policy: BudgetPolicy, counter: CounterSpec | None
    ) -> None:
        if not self.archive_key:
            self.archive_key = self.chat_store_key + ARCHIVE_SUFFIX
        self._llm = llm
        self._policy = policy
        self._counter, self._counter_name = _resolve(counter)
        self._resumed_tokens = self.count_tokens([_resumed()])
        self._ack_tokens = self.count_tokens([_ack()])
        meta = getattr(llm, "metadata", None)
        model_id = getattr(meta, "model_name", None) or "llm"
        model = Model(model_id, self.context_window)
        # The summarizer is bounded by the LLM's own window, which may be far larger than
        # the share of it this memory guards: larger chunks mean fewer summary calls.
        llm_window = int(getattr(meta, "context_window", 0) or 0) - max(
            0, int(getattr(meta, "num_output", 0) or 0)
        )
        summarizer = Model(model_id, max(self.context_window, llm_window))
        complete, complete_sync = completers_from_llm(llm) if llm is not None else (None, None)
        # Two condensers: each keeps an incremental token ledger that is not thread-safe,
        # and a streaming writer thread may compact while the event loop does too.
        for attr in ("_sync_condenser", "_async_condenser"):
            setattr(
                self,
                attr,
                create_condenser(
                    model=model,
                    policy=policy,
                    counter=self._counter,
                    complete=complete,
                    complete_sync=complete_sync,
                    summarizer_model=summarizer,
                ),
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
        return estimate_tokens(self._core(messages), self._counter)

    # ------------------------------------------------------------ store access

    def _read(self) -> list[ChatMessage]:
        return list(self.chat_store.get_messages(self.chat_store_key))

    async def _aread(self) -> list[ChatMessage]:
        return list(await self.chat_store.aget_messages(self.chat_store_key))

    @property
    def _archive(self) -> BaseChatStore:
        return self.archive_store if self.archive_store is not None else self.chat_store

    def _is_local(self) -> bool:
        # An in-memory store does no I/O: no need to leave the event loop for it.
        return type(self.chat_store) is SimpleChatStore

    async def _in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self._is_local():
            return fn(*args)
        return await asyncio.to_thread(fn, *args)

    @property
    def _lock(self) -> StoreLock:
        """The lock every writer of this store and key in the process holds (``lock_for``).

        Shared by every memory over the same store object and key, so memories built per
        request serialize their appends, rewrites and resets as one memory's do.
        """
        return lock_for(self.chat_store, self.chat_store_key)

    def _append(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]:
        copies = [_copy(m) for m in messages]
        with self._lock:
            for m in copies:
                self.chat_store.add_message(self.chat_store_key, m)
        return copies

    async def _aappend(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]:
        if self._is_local():
            # No I/O: appended without an await, so no task holds the lock across one.
            return self._append(messages)
        copies = [_copy(m) for m in messages]
        # The lock a compaction's rewrite holds, taken without blocking the event loop.
        async with self._lock:
            for m in copies:
                await self.chat_store.async_add_message(self.chat_store_key, m)
        return copies

    def _replace(self, messages: Sequence[ChatMessage], clear_archive: bool = False) -> None:
        copies = _stored_form(messages)
        with self._lock:
            _set_verified(self.chat_store, self.chat_store_key, copies)
            if clear_archive:
                self._archive.delete_messages(self.archive_key)

    def _unappend(self, messages: Sequence[ChatMessage]) -> None:
        """Take back messages just appended (when compaction raised), if still last."""
        if not messages:
            return
        with self._lock:
            current = self._read()
            if len(current) >= len(messages) and current[-len(messages) :] == list(messages):
                # Conditional, as a compaction: another worker's append meanwhile is kept.
                self._rewrite().rewrite(
                    Fold(
                        expected=tuple(current),
                        replacement=tuple(current[: len(current) - len(messages)]),
                    )
                )

    def _rewrite(self) -> ConditionalRewrite:
        """The conditional rewrite for this memory's stores (see ``window_budget.stores``)."""
        if self._store_rewrite is not None:
            return self._store_rewrite
        archive = self._archive
        where = (id(self.chat_store), id(archive), self.chat_store_key, self.archive_key)
        cached = self._rewriter
        if cached is not None and cached[0] == where:
            return cached[1]
        rewrite = rewrite_for(
            self.chat_store,
            archive,
            self.chat_store_key,
            self.archive_key,
            fallback=self._locked_rewrite,
        )
        self._rewriter = (where, rewrite)
        return rewrite

    def _locked_rewrite(self) -> LockedRewrite[ChatMessage]:
        store, key = self.chat_store, self.chat_store_key

        def write(messages: list[ChatMessage]) -> None:
            _set_verified(store, key, messages, exact=False)

        def archive(messages: Sequence[ChatMessage]) -> None:
            for m in messages:
                self._archive.add_message(self.archive_key, m)

        return LockedRewrite(
            self._read, write, archive, store=store_name(store), lock=self._lock, same=_same_message
        )

    @property
    def store_guarantee(self) -> str:
        """What this memory's stores guarantee when several processes compact one conversation.

        One sentence from the conditional rewrite in use: exact across processes for
        ``RedisChatStore``, ``PostgresChatStore`` and ``SQLiteChatStore`` with the archive
        in the same server or database; within one process only for any other store.
        """
        return self._rewrite().guarantee

    def _clear(self) -> None:
        with self._lock:
            self.chat_store.delete_messages(self.chat_store_key)
            self._archive.delete_messages(self.archive_key)

    # ------------------------------------------------------------- conversion

    def _core(self, messages: Sequence[ChatMessage]) -> list[AgentMessage]:
        """Core messages for ``messages``, through the bridge's content-keyed cache.

        Equal messages convert once per process, even when each request builds a new
        memory over a store read from disk; the same core objects then let the condenser's
        ledger estimate only what was appended.
        """
        return bridge.convert(_CODEC, messages)

    # -------------------------------------------------------------- compaction

    def _pinned_tokens(
        self, snapshot: list[ChatMessage], cores: list[AgentMessage], n: int, extra: int
    ) -> int:
        # A history that does not open with a user message gets the resumed marker in
        # front of it (see _view); in the pair form a digest followed by a user message gets
        # the acknowledgement. A view shows at most one of them: the larger is reserved.
        lead = 0
        if len(snapshot) > n:
            if snapshot[n].role != MessageRole.USER:
                lead = self._resumed_tokens
            if self.digest_role == "pair":
                lead = max(lead, self._ack_tokens)
        return estimate_tokens(cores[:n], self._counter) + lead + extra

    def _begin(self, snapshot: list[ChatMessage]) -> tuple[int, list[AgentMessage]]:
        """The pinned count and the whole snapshot converted, in one pass over the cache.

        Converting the snapshot as a whole (not its pinned part and body separately) lets
        the cache purge only what left the store, so the body's cores stay the same objects
        from call to call and the condenser's ledger estimates only what was appended.
        """
        return split_pinned(snapshot), self._core(snapshot)

    def _run_sync(self, snapshot: list[ChatMessage], extra: int, force: bool) -> _Pass:
        n, cores = self._begin(snapshot)
        body = cores[n:]
        assert self._sync_condenser is not None
        for pinned_extra in dict.fromkeys((extra, 0)):
            pinned = self._pinned_tokens(snapshot, cores, n, pinned_extra)
            if self._plan_squeezed(
                self._sync_condenser, snapshot, cores, n, pinned_extra, force, pinned
            ):
                continue  # no summary call for a view that will not show it
            try:
                result = self._sync_condenser.run_sync(body, force=force, pinned_tokens=pinned)
            except BudgetError as exc:
                logger.debug("window-budget: %s", exc)
                continue
            return _Pass(snapshot, cores, n, result, extra, pinned_extra == extra)
        return _Pass(snapshot, cores, n, None, extra, False)

    async def _run_async(self, snapshot: list[ChatMessage], extra: int, force: bool) -> _Pass:
        n, cores = self._begin(snapshot)
        body = cores[n:]
        assert self._async_condenser is not None
        for pinned_extra in dict.fromkeys((extra, 0)):
            pinned = self._pinned_tokens(snapshot, cores, n, pinned_extra)
            if self._plan_squeezed(
                self._async_condenser, snapshot, cores, n, pinned_extra, force, pinned
            ):
                continue  # no summary call for a view that will not show it
            try:
                result = await self._async_condenser.run(body, force=force, pinned_tokens=pinned)
            except BudgetError as exc:
                logger.debug("window-budget: %s", exc)
                continue
            return _Pass(snapshot, cores, n, result, extra, pinned_extra == extra)
        return _Pass(snapshot, cores, n, None, extra, False)

    def _plan_squeezed(
        self,
        condenser: WindowCondenser,
        snapshot: list[ChatMessage],
        cores: list[AgentMessage],
        n: int,
        extra: int,
        force: bool,
        pinned_tokens: int,
    ) -> bool:
        """True when the plan beside a prefix of ``extra`` tokens has no space for a digest.

        Decided before any summary call (the condenser's sans-I/O ``decide``): the cut
        falls after the newest user message and the kept tail is shorter than the largest
        verbatim suffix that fits. The view is then that suffix, and the store is
        compacted as for the window alone (the pass without the prefix).
        """
        if not extra:
            return False
        try:
            decision = condenser.decide(cores[n:], force=force, pinned_tokens=pinned_tokens)
        except BudgetError:
            return False  # the run raises the same and the caller moves on
        if decision.result is not None or decision.plan.cut == 0:
            return False
        body = snapshot[n:]
        last_user = max((i for i, m in enumerate(body) if m.role == MessageRole.USER), default=None)
        if last_user is None or decision.plan.cut <= last_user:
            return False
        start = self._suffix_start(_Pass(snapshot, cores, n, None, extra))
        return start is not None and len(body) - start > len(body) - decision.plan.cut

    def _digest_for(self, p: _Pass) -> ChatMessage | None:
        result = p.result
        if result is None or result.summary is None or result.plan.cut == 0:
            return None
        body = p.body
        cut = result.plan.cut
        covered, compactions = bridge.head_counts(
            bridge.read_digest_record(m.additional_kwargs) for m in body[:cut]
        )
        return make_digest_chat_message(
            result.summary.text, covered, source=result.summary.message, compactions=compactions
        )

    def _should_commit(self, p: _Pass) -> bool:
        result = p.result
        if result is None or result.summary is None or result.plan.cut == 0:
            return False
        # A failing LLM: keep the store as it was and retry on a later call; the view
        # still uses the network-free digest so the caller stays inside the window.
        return not (result.summary.fallback and self._llm is not None)

    def _commit(self, p: _Pass, digest: ChatMessage) -> bool:
        """Rewrite the store as ``[pinned, digest, tail, anything appended meanwhile]``.

        A conditional rewrite (``window_budget.stores``): re-read, check the store still
        starts with the snapshot, archive the folded messages and write, as one step
        against other writers. Returns False (and writes nothing) when the store changed
        under the snapshot.
        """
        assert p.result is not None
        cut = p.result.plan.cut
        body = p.body
        fold = Fold(
            expected=tuple(p.snapshot),
            replacement=(*p.snapshot[: p.pinned], digest, *body[cut:]),
            archived=tuple(m for m in body[:cut] if not is_digest_message(m)),
        )
        with self._lock:
            return self._rewrite().rewrite(fold)

    def _commit_masked(self, p: _Pass) -> bool:
        """Archive the masked outputs' originals and store copies carrying the placeholders.

        The same conditional rewrite as :meth:`_commit`: returns False (and writes nothing)
        when the store changed under the snapshot.
        """
        result, snapshot, body = p.result, p.snapshot, p.body
        assert result is not None
        slots, dropped = bridge.result_slots(p.cores[p.pinned :], result)
        new_body = list(body)
        for s in slots:
            if s.kind == "masked":  # shortened entries are the view's; the store keeps all
                new_body[s.source] = from_core_shortened(body[s.source], s.core)
        fold = Fold(
            expected=tuple(snapshot),
            replacement=(*snapshot[: p.pinned], *new_body),
            archived=tuple(body[i] for i in dropped),
        )
        with self._lock:
            return self._rewrite().rewrite(fold)

    def _view(self, p: _Pass, digest: ChatMessage | None) -> list[ChatMessage]:
        """Copies of what the LLM should see: pinned, digest, tail (shortened where needed).

        When that does not fit with the caller's prefix, or the digest leaves room for
        fewer verbatim messages than the prefix would (see :meth:`_squeezed`), the largest
        verbatim suffix that fits is handed over instead (see :meth:`_suffix_view`).
        """
        view = self._digest_view(p, digest)
        if view is None or self._squeezed(p, view):
            return self._suffix_view(p)
        return view[0]

    def _digest_view(
        self,
        p: _Pass,
        digest: ChatMessage | None,
    ) -> tuple[list[ChatMessage], int, bool] | None:
        """``(view, verbatim kept, newest turn whole)``, or None when it does not fit."""
        result = p.result
        if result is None or not p.prefix_fits:
            return None
        pinned = [_copy(m) for m in p.snapshot[: p.pinned]]
        # The bridge's walk over the result: which stored message each tail entry stands
        # for, and which are shortened or masked (copies carrying the core's text).
        slots, _ = bridge.result_slots(p.cores[p.pinned :], result)
        body, cores = p.body, p.cores[p.pinned :]
        kept = [body[s.source] for s in slots]
        short = {i: s.core for i, s in enumerate(slots) if s.kind != "kept"}
        tail = [
            from_core_shortened(m, short[i]) if i in short else _copy(m) for i, m in enumerate(kept)
        ]
        # Counted from the originals' cached cores (a copy converts to an equal core), the
        # shortened entries from their own copies: the view's count, without converting it.
        counter = self._counter
        kept_cores = [cores[s.source] for s in slots]
        tokens = estimate_tokens(p.cores[: p.pinned], counter) + sum(
            estimate_message_tokens(to_core(tail[i]) if i in short else core, counter)
            for i, core in enumerate(kept_cores)
        )
        if digest is None and tail and 0 not in short and is_digest_message(tail[0]):
            # The stored digest (no new one this time) is handed over in the same form.
            digest = tail.pop(0)
            tokens -= estimate_message_tokens(kept_cores[0], counter)
            kept, short = kept[1:], {i - 1: m for i, m in short.items()}
        head = self._show_digest(digest, bool(tail) and tail[0].role == MessageRole.USER)
        tokens += sum(estimate_message_tokens(to_core(m), counter) for m in head)
        if digest is None and tail and tail[0].role != MessageRole.USER:
            head = [_resumed()]  # providers want a user message first
            tokens += self._resumed_tokens
        # The pair's acknowledgement is reserved in the gate (see _pinned_tokens): a view
        # never leaves it out, which would put the digest and a user turn side by side.
        if tokens + p.extra > self.token_limit:
            return None
        last_user = max((i for i, m in enumerate(kept) if m.role == MessageRole.USER), default=None)
        whole = last_user is not None and all(i < last_user for i in short)
        return pinned + head + tail, len(kept) - len(short), whole

    def _squeezed(self, p: _Pass, view: tuple[list[ChatMessage], int, bool]) -> bool:
        """True when the digest crowds out verbatim messages that would fit without it.

        The digest view is kept whenever it holds the newest user turn whole; otherwise
        (the room beside the prefix has no space for a digest) it must keep at least as
        many verbatim messages as the largest verbatim suffix that fits, as
        ``ChatMemoryBuffer`` would show.
        """
        _, verbatim, whole = view
        if whole:
            return False
        start = self._suffix_start(p)
        return start is not None and len(p.body) - start > verbatim

    def _squeezed_by_prefix(self, p: _Pass, digest: ChatMessage | None) -> bool:
        """True when a compaction planned beside the caller's prefix must not be stored.

        The prefix left no space for a digest (see :meth:`_squeezed`): the view will be
        the verbatim suffix, and the store is compacted as for the window alone rather
        than rewritten into that smallest shape.
        """
        if not p.extra or not p.prefix_fits or digest is None:
            return False
        view = self._digest_view(p, digest)
        return view is None or self._squeezed(p, view)

    def _suffix_start(self, p: _Pass) -> int | None:
        """Index in the body of the largest verbatim suffix that fits, or None.

        The suffix never opens on a tool result (its call comes with it) nor reaches
        back past a digest; one that does not open with a user message is counted with
        the ``[conversation resumed …]`` marker that goes first.
        """
        body, cores = p.body, p.cores[p.pinned :]
        room = self.token_limit - p.extra - estimate_tokens(p.cores[: p.pinned], self._counter)
        best: int | None = None
        total = 0
        for i in range(len(body) - 1, -1, -1):
            if is_digest_message(body[i]):
                break
            total += estimate_message_tokens(cores[i], self._counter)
            if total > room:
                break
            if body[i].role in _TOOL_ROLES:
                continue
            lead = 0 if body[i].role == MessageRole.USER else self._resumed_tokens
            if total + lead <= room:
                best = i
        return best

    def _suffix_view(self, p: _Pass) -> list[ChatMessage]:
        """Pinned messages and the largest verbatim suffix that fits (tool groups whole).

        What ``ChatMemoryBuffer`` shows, without ever opening on an assistant message or
        a tool result. When not even the newest message fits verbatim, the newest turn
        is shortened to fit (the core's :func:`~window_budget.pipeline._fit.fit_messages`).
        Only the view is cut: the store keeps every message.

        Raises:
            BudgetError: not even the newest turn, cut down, fits beside the system
                messages and the prefix.

        """
        pinned = [_copy(m) for m in p.snapshot[: p.pinned]]
        body = p.body
        start = self._suffix_start(p)
        if start is not None:
            tail = [_copy(m) for m in body[start:]]
            lead = [_resumed()] if tail and tail[0].role != MessageRole.USER else []
            return [*pinned, *lead, *tail]
        return self._smallest_view(p)

    def _show_digest(
        self,
        digest: ChatMessage | None,
        tail_opens_with_user: bool,
    ) -> list[ChatMessage]:
        """The messages that stand for ``digest`` in a view, in :attr:`digest_role`'s form.

        Each form keeps the first non-system message a user message and, when the tail
        opens with a user message, user and assistant messages alternating (``"user"``
        excepted, chosen knowingly). The digest record travels in every form.
        """
        if digest is None:
            return []
        shown = _copy(digest)
        if self.digest_role == "system":
            shown.role = MessageRole.SYSTEM
            return [shown] if tail_opens_with_user else [shown, _resumed()]
        if self.digest_role == "pair" and tail_opens_with_user:
            return [shown, _ack()]
        return [shown]

    def _smallest_view(self, p: _Pass) -> list[ChatMessage]:
        """Pinned messages and the newest turn (its tool group whole), shortened to fit.

        When the turn does not open with a user message, the counted ``[conversation
        resumed …]`` marker goes first. Raises ``BudgetError`` when even this view exceeds
        the limit: a view is never handed over larger than the limit.
        """
        pinned = [_copy(m) for m in p.snapshot[: p.pinned]]
        body = p.body
        pinned_tokens = estimate_tokens(p.cores[: p.pinned], self._counter)
        view = pinned
        if body:
            start = len(body) - 1
            while start > 0 and body[start].role in _TOOL_ROLES:
                start -= 1  # a tool result needs the call that asked for it
            turn = body[start:]
            lead = [_resumed()] if turn[0].role != MessageRole.USER else []
            room = (
                self.token_limit - p.extra - pinned_tokens - (self._resumed_tokens if lead else 0)
            )
            cores = p.cores[p.pinned + start :]
            try:
                fitted, shortened = fit_messages(list(cores), max(room, 0), self._counter)
            except BudgetError:
                fitted, shortened = [], ()
            if fitted:
                cut = set(shortened)
                view = [
                    *pinned,
                    *lead,
                    *(
                        from_core_shortened(m, fitted[i]) if i in cut else _copy(m)
                        for i, m in enumerate(turn)
                    ),
                ]
            else:
                view = [*pinned, *lead, *turn]
        total = self.count_tokens(view) + p.extra
        if total > self.token_limit:
            # The same promise as the core and the LangChain adapter: fits or BudgetError.
            # Nothing was lost: the store still holds every message.
            raise BudgetError(
                f"the smallest view (the system messages, {pinned_tokens:,} tokens, and the "
                f"newest turn cut down) needs {total:,} tokens with a prefix of {p.extra:,}, "
                f"over the limit of {self.token_limit:,} — shorten the system prompt or "
                "prefix messages, or raise the window",
                needed=total,
                available=self.token_limit,
            )
        return view

    def _record(self, p: _Pass, digest: ChatMessage | None, committed: bool) -> None:
        """Keep the core's account; for a new digest, :attr:`last_compaction` and the event."""
        self._last_result = p.result
        result = p.result
        if digest is None and result is not None and result.masked:
            self._last_compaction = Compaction(
                covered=0,
                folded=0,
                kept=len(p.body),
                digest_tokens=0,
                fallback=False,
                fallback_reason=None,
                audit=None,
                ledger_facts=None,
                committed=committed,
                masked=len(result.masked),
                tokens_freed=result.tokens_freed,
            )
            return
        if digest is None or result is None or result.summary is None:
            return
        core = to_core(digest)
        ledger = ledger_of(core)
        compaction = Compaction(
            covered=digest_covered(digest),
            folded=result.plan.cut,
            kept=len(p.body) - result.plan.cut,
            digest_tokens=estimate_message_tokens(core, self._counter),
            fallback=result.summary.fallback,
            fallback_reason=result.summary.fallback_reason,
            audit=result.audit,
            ledger_facts=None if ledger is None else len(ledger.facts),
            committed=committed,
        )
        self._last_compaction = compaction
        dispatcher.event(
            CompactionEvent(chat_store_key=self.chat_store_key, compaction=compaction.as_dict())
        )

    @dispatcher.span
    def _compact_sync(
        self, extra: int, *, force: bool = False, want_view: bool = True
    ) -> list[ChatMessage]:
        with self._compact_lock:
            p = self._run_sync(self._read(), extra, force)
            digest = self._digest_for(p)
            if self._squeezed_by_prefix(p, digest):
                p = dataclasses.replace(
                    self._run_sync(p.snapshot, 0, force), extra=extra, prefix_fits=False
                )
                digest = self._digest_for(p)
            committed = False
            for _ in range(3):
                if digest is None or not self._should_commit(p):
                    break
                if self._commit(p, digest):
                    committed = True
                    break
                p = self._run_sync(self._read(), extra, force)
                digest = self._digest_for(p)
            if digest is None and p.result is not None and p.result.masked:
                committed = self._commit_masked(p)
            self._record(p, digest, committed)
            return self._view(p, digest) if want_view else []

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
            p = await self._run_async(await self._aread(), extra, force)
            digest = self._digest_for(p)
            if self._squeezed_by_prefix(p, digest):
                p = dataclasses.replace(
                    await self._run_async(p.snapshot, 0, force), extra=extra, prefix_fits=False
                )
                digest = self._digest_for(p)
            committed = False
            for _ in range(3):
                if digest is None or not self._should_commit(p):
                    break
                if await self._in_thread(self._commit, p, digest):
                    committed = True
                    break
                p = await self._run_async(await self._aread(), extra, force)
                digest = self._digest_for(p)
            if digest is None and p.result is not None and p.result.masked:
                committed = await self._in_thread(self._commit_masked, p)
            self._record(p, digest, committed)
            return self._view(p, digest) if want_view else []

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
        even the newest message fits verbatim, the newest turn cut down. The digest is
        handed over as :attr:`digest_role` says. Returned messages are deep copies.

        Raises:
            InitialTokenCountError: (a ``ValueError``, as the peers raise, and a
                ``BudgetError``) ``initial_token_count`` is above :attr:`token_limit`.
            BudgetError: not even the newest turn cut down fits — the system messages (or
                they and the prefix) alone are larger than the limit. The store is left
                as it was.

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
        extra = max(0, int(initial_token_count or 0))
        if extra > self.token_limit:
            raise InitialTokenCountError(
                f"initial_token_count {extra:,} exceeds the token limit {self.token_limit:,} "
                "(as in ChatMemoryBuffer); shorten the prefix messages or raise the window",
                needed=extra,
                available=self.token_limit,
            )
        self._extra_pinned = extra
        return extra

    def get_all(self, include_archived: bool = False) -> list[ChatMessage]:
        """Deep copies of the stored history (digest included).

        With ``include_archived`` the full original conversation: pinned messages, every
        archived message, then the live messages. A digest is left out only when the
        archive holds the originals it stands for, so this never returns fewer messages
        than ``get_all()``.
        """
        with self._lock:
            live = self._read()
            archived = (
                list(self._archive.get_messages(self.archive_key)) if include_archived else []
            )
        return self._all(live, archived, include_archived)

    def _all(
        self, live: list[ChatMessage], archived: list[ChatMessage], include_archived: bool
    ) -> list[ChatMessage]:
        if not include_archived:
            return [_copy(m) for m in live]
        n = split_pinned(live)
        unclaimed = len(archived)
        rest: list[ChatMessage] = []
        for m in live[n:]:
            covered = digest_covered(m)
            if 0 < covered <= unclaimed:
                unclaimed -= covered  # its originals are in the archive
            else:
                rest.append(m)
        return [_copy(m) for m in (*live[:n], *_unmasked([*archived, *rest]))]

    async def aget_all(self, include_archived: bool = False) -> list[ChatMessage]:
        """Async :meth:`get_all`."""
        live = await self._aread()
        archived = (
            list(await self._archive.aget_messages(self.archive_key)) if include_archived else []
        )
        return self._all(live, archived, include_archived)

    def put(self, message: ChatMessage) -> None:
        """Append a message (a deep copy is stored); compacts when the gate fires.

        Safe to call from a streaming response's writer thread. With
        ``on_summarizer_error="raise"`` a failing summary raises ``SummarizerError``
        and the message is taken back out, so a retry does not store it twice.
        """
        self.put_messages([message])

    async def aput(self, message: ChatMessage) -> None:
        """Async :meth:`put`."""
        await self.aput_messages([message])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Append several messages, then compact once if needed (see :meth:`put`)."""
        added = self._append(messages)
        try:
            self._compact_sync(self._extra_pinned, want_view=False)
        except SummarizerError:
            self._unappend(added)
            raise

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """Async :meth:`put_messages`."""
        added = await self._aappend(messages)
        try:
            await self._compact_async(self._extra_pinned, want_view=False)
        except SummarizerError:
            await self._in_thread(self._unappend, added)
            raise

    def set(self, messages: list[ChatMessage], *, clear_archive: bool = False) -> None:
        """Replace the live history; compacts when it is over budget.

        Chat engines call this with the history they were given (for example
        ``engine.chat(msg, chat_history=engine.chat_history)``), so the archive of
        folded messages is kept: nothing moves out of it. Pass ``clear_archive=True``
        to start over, or call :meth:`reset`.
        """
        self._replace(messages, clear_archive)
        self._compact_sync(self._extra_pinned, want_view=False)

    async def aset(self, messages: list[ChatMessage], *, clear_archive: bool = False) -> None:
        """Async :meth:`set`."""
        await self._in_thread(self._replace, messages, clear_archive)
        await self._compact_async(self._extra_pinned, want_view=False)

    def reset(self) -> None:
        """Forget the history and its archive (the conversation starts over)."""
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

    def _state(self) -> dict[str, Any]:
        private = {
            k: v for k, v in (self.__pydantic_private__ or {}).items() if k not in _RUNTIME_ATTRS
        }
        if _serializable_counter(self._counter_name):
            private["_counter"] = None  # rebuilt from the name (a lambda does not pickle)
        return {
            "__dict__": dict(self.__dict__),
            "__pydantic_fields_set__": set(self.__pydantic_fields_set__),
            "__pydantic_extra__": self.__pydantic_extra__,
            "__pydantic_private__": private,
        }

    def __getstate__(self) -> dict[str, Any]:
        """Picklable state: store, keys, window, policy, counter and LLM, without locks.

        As LlamaIndex's components do, what does not pickle is left out with a warning
        instead of raising: an LLM (the unpickled memory uses the network-free digest
        until given one) or a counter such as a lambda or a ``tokenizer_fn`` (the
        unpickled memory counts with the heuristic). The rest always round-trips.
        """
        state = self._state()
        private = state["__pydantic_private__"]
        if private.get("_counter") is not None:
            try:
                pickle.dumps(private["_counter"])
            except Exception:
                logger.warning(
                    "window-budget: removing the unpicklable counter %r; the "
                    "unpickled memory counts with the heuristic until given one "
                    "(counter=... in from_dict)",
                    self._counter_name,
                )
                private["_counter"] = None
                private["_counter_name"] = "heuristic"
        llm = state["__pydantic_private__"].get("_llm")
        if llm is not None:
            try:
                pickle.dumps(llm)
            except Exception:
                logger.warning(
                    "window-budget: the LLM does not pickle; the unpickled memory "
                    "uses the network-free digest until given one"
                )
                state["__pydantic_private__"]["_llm"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore :meth:`__getstate__` output and rebuild locks, caches and condensers."""
        private = dict(state.get("__pydantic_private__") or {})
        object.__setattr__(self, "__dict__", dict(state["__dict__"]))
        object.__setattr__(
            self, "__pydantic_fields_set__", set(state.get("__pydantic_fields_set__") or ())
        )
        object.__setattr__(self, "__pydantic_extra__", state.get("__pydantic_extra__"))
        object.__setattr__(
            self,
            "__pydantic_private__",
            {
                **private,
                "_compact_lock": threading.Lock(),
                "_aloop": None,
                "_alock": None,
                "_sync_condenser": None,
                "_async_condenser": None,
                "_rewriter": None,
                "_store_rewrite": None,
                "_runtime": None,
            },
        )
        name = private.get("_counter_name", "heuristic")
        counter = name if _serializable_counter(name) else private.get("_counter")
        last = private.get("_last_result")
        self._configure(
            private.get("_llm"),
            private.get("_policy") or default_policy(self.context_window),
            counter,
        )
        self._last_result = last

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> WindowBudgetMemory:
        """An independent memory (store copied) sharing the LLM and counter objects."""
        state = self._state()
        shared = {k: state["__pydantic_private__"].pop(k, None) for k in ("_llm", "_counter")}
        state = copy.deepcopy(state, memo)
        state["__pydantic_private__"].update(shared)
        new = type(self).__new__(type(self))
        new.__setstate__(state)
        return new

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """Messages, archive, digest state and configuration as plain JSON data.

        The LLM and the stores are not serialized: the data names them, and holds a random
        token by which :meth:`from_dict` finds the same objects while a memory using them
        is alive in this process (so an agent's ``Context`` restored with
        ``Context.from_dict`` goes on with this LLM and this store). Messages are dumped
        one by one, so this works whatever the chat store's own serializer does.
        """
        with self._lock:
            live = self._read()
            archived = list(self._archive.get_messages(self.archive_key))
        runtime = self._runtime
        if runtime is None or not runtime.holds(self):
            runtime = self._runtime = _Runtime(self)
            _LIVE[runtime.token] = runtime
        return {
            "class_name": self.class_name(),
            "version": _SERIAL_VERSION,
            "instance": runtime.token,
            "llm": _llm_name(self._llm),
            "chat_store": store_name(self.chat_store),
            "archive_store": None if self.archive_store is None else store_name(self.archive_store),
            "chat_store_key": self.chat_store_key,
            "archive_key": self.archive_key,
            "context_window": self.context_window,
            "digest_role": self.digest_role,
            "policy": dataclasses.asdict(self._policy),
            "counter": self._counter_name,
            "messages": [m.model_dump(mode="json") for m in live],
            "archive": [m.model_dump(mode="json") for m in archived],
        }

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as a JSON string."""
        return json.dumps(self.to_dict(**kwargs), ensure_ascii=False)

    def to_string(self) -> str:
        """The memory as a string, like ``ChatMemoryBuffer.to_string`` (:meth:`to_json`)."""
        return self.to_json()

    @classmethod
    def from_string(cls, json_str: str, **kwargs: Any) -> WindowBudgetMemory:
        """Rebuild a memory from :meth:`to_string` output (keywords as :meth:`from_dict`)."""
        return cls.from_json(json_str, **kwargs)

    @classmethod
    @contextlib.contextmanager
    def restoring(cls, **resources: Any) -> Iterator[None]:
        """Give every :meth:`from_dict` in the block what saved data does not carry.

        For a workflow ``Context`` restored in another process (or after the memory that
        saved it is gone): ``Context.from_dict`` calls ``from_dict`` without keywords, and
        a memory saved with an LLM or a store other than ``SimpleChatStore`` is refused
        rather than rebuilt without them. Keywords as :meth:`from_dict`'s (``llm``,
        ``chat_store``, ``archive_store``, ``counter``, ``store_rewrite``); keywords
        passed to ``from_dict`` itself win.

        >>> with WindowBudgetMemory.restoring(llm=None):
        ...     memory = WindowBudgetMemory.from_dict({"context_window": 4096, "llm": "gpt"})
        >>> memory.llm is None
        True
        """
        unknown = sorted(set(resources) - set(_RESOURCE_KEYWORDS))
        if unknown:
            raise TypeError(
                f"restoring() takes {', '.join(_RESOURCE_KEYWORDS)}; got {', '.join(unknown)}"
            )
        token = _RESTORING.set({**(_RESTORING.get() or {}), **resources})
        try:
            yield
        finally:
            _RESTORING.reset(token)

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> WindowBudgetMemory:
        """Rebuild a memory from :meth:`to_dict` output.

        What the data does not carry comes from, in order: the keywords — ``llm``,
        ``chat_store`` (the saved messages are written there), ``archive_store`` (the
        saved archive is written there; ``chat_store`` by default), ``counter`` (a custom
        counter is serialized by name only), ``store_rewrite`` — then an enclosing
        :meth:`restoring` block, then the very objects the saving memory used, while one
        memory using them is alive in this process (that store is the conversation:
        nothing is written to it). A memory saved without an LLM over a
        ``SimpleChatStore`` is rebuilt anywhere, in a new ``SimpleChatStore``.

        Raises:
            ValueError: data that is not a memory's, or a memory saved with an LLM or a
                store that is neither given nor alive here (pass ``llm=None`` for
                network-free digests).

        """
        if not isinstance(data, dict) or data.get("class_name") not in (None, cls.class_name()):
            raise ValueError("not a WindowBudgetMemory: expected the dict to_dict() returns")
        window = data.get("context_window")
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
            raise ValueError(
                f"WindowBudgetMemory data: context_window must be a positive int, got {window!r}"
            )
        role = data.get("digest_role", "user")  # earlier versions handed the digest as user
        if role not in _DIGEST_ROLES:
            raise ValueError(
                f"WindowBudgetMemory data: digest_role must be one of "
                f"{list(_DIGEST_ROLES)}, got {role!r}"
            )
        got = _restored(data, {**(_RESTORING.get() or {}), **kwargs})
        policy = BudgetPolicy(**data["policy"]) if data.get("policy") else None
        key = data.get("chat_store_key", DEFAULT_CHAT_STORE_KEY)
        memory = cls(
            chat_store=got.chat_store,
            chat_store_key=key,
            archive_key=data.get("archive_key") or key + ARCHIVE_SUFFIX,
            archive_store=got.archive_store,
            context_window=window,
            digest_role=role,
        )
        memory._store_rewrite = got.store_rewrite
        memory._runtime = got.runtime
        memory._configure(got.llm, policy or default_policy(memory.context_window), got.counter)
        live = [ChatMessage.model_validate(m) for m in data.get("messages", [])]
        archived = [ChatMessage.model_validate(m) for m in data.get("archive", [])]
        with memory._lock:
            if got.load_live:
                _set_verified(got.chat_store, key, live)
            if got.load_archive:
                _set_verified(memory._archive, memory.archive_key, archived)
        return memory

    @classmethod
    def from_json(cls, data_str: str, **kwargs: Any) -> WindowBudgetMemory:
        """Rebuild a memory from :meth:`to_json` output (same keywords as :meth:`from_dict`)."""
        try:
            data = json.loads(data_str)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"not a WindowBudgetMemory string: invalid JSON ({exc})") from None
        return cls.from_dict(data, **kwargs)
