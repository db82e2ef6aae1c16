"""What ``WindowBudgetMemory.from_defaults`` resolves: the window, the policy, the counter.

Pure functions of the arguments: the window from ``context_window``, the LLM's metadata,
window-budget's table of models or ``token_limit``; the policy for a ``token_limit``; the
counter a spec names; and the two condensers a memory compacts with (and the background
digests of the async one, with ``BudgetPolicy.precompact_ratio``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, Self

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms.llm import LLM
from llama_index.core.memory.chat_memory_buffer import (
    DEFAULT_TOKEN_LIMIT as CHAT_MEMORY_BUFFER_TOKEN_LIMIT,
)
from llama_index.core.memory.types import DEFAULT_CHAT_STORE_KEY
from llama_index.core.storage.chat_store import BaseChatStore, SimpleChatStore

from llama_index.memory.window_budget.completer import completers_from_llm
from llama_index.memory.window_budget.conversation import ARCHIVE_SUFFIX
from llama_index.memory.window_budget.counters import CounterSpec, tokenizer_spec
from llama_index.memory.window_budget.memory_store import resolve_memory_store
from window_budget.budget import cache_read_share, model_for
from window_budget.contract import BudgetPolicy, MemoryStore, Model, TokenCounter
from window_budget.errors import ConfigError
from window_budget.pipeline import (
    AheadCompactor,
    WindowCondenser,
    check_window,
    create_condenser,
)
from window_budget.stores import ConditionalRewrite

__all__ = [
    "DIGEST_ROLES",
    "NOT_A_BLOCK",
    "DigestRole",
    "MemoryBuilding",
    "MemoryStoreSpec",
    "check_arguments",
    "check_history",
    "check_policy",
    "condensers_for",
    "default_policy",
    "policy_for_token_limit",
    "resolve_window",
    "window_from_settings",
]

MemoryStoreSpec = MemoryStore | bool | Literal["chat_store"] | None
"""A memory store, ``True``/``"chat_store"`` (one over the memory's chat store), or None."""

DigestRole = Literal["system", "pair", "user"]
"""How a view hands the digest over: a system message, a user message answered by an
assistant acknowledgement, or a user message."""
DIGEST_ROLES: tuple[DigestRole, ...] = ("system", "pair", "user")
"""Every :data:`DigestRole`, in the order error messages list them."""


def default_policy(
    window: int, *, output_reserved: bool = False, store: bool = False, model: str | None = None
) -> BudgetPolicy:
    """The policy used when none is given: :meth:`BudgetPolicy.for_window`.

    Its prompt ceiling only with a memory ``store`` (the compactions it brings would push early
    facts out of a digest with no store behind it); a lower one when the prices of ``model``
    (an id) say its cache is weak (:func:`~window_budget.budget.cache_read_share`).
    """
    share = cache_read_share(model)
    return BudgetPolicy.for_window(
        window, output_reserved=output_reserved, cache_aware=store, cache_read=share
    )


def policy_for_token_limit(token_limit: int, context_window: int) -> BudgetPolicy:
    """The policy whose limit in ``context_window`` is exactly ``token_limit``."""
    if token_limit > context_window:
        raise ValueError(
            f"token_limit {token_limit:,} is larger than the {context_window:,}-token window; "
            "lower token_limit or pass a larger context_window"
        )
    scaled = BudgetPolicy.for_window(token_limit, output_reserved=True)
    # The caller's limit is the limit: the default's prompt ceiling would fire before it.
    return dataclasses.replace(
        scaled,
        trigger_ratio=1.0,
        reserve_tokens=context_window - token_limit,
        prompt_ceiling=None,
    )


def check_policy(policy: BudgetPolicy, context_window: int) -> None:
    """Refuse a policy whose limit in ``context_window`` has no room for digest and tail."""
    if policy.strategy != "summarize":
        # The memory maps the core's [digest, *tail] back onto stored messages; a category
        # trim keeps an arbitrary subset, which this memory does not map (yet).
        raise ConfigError(
            f"WindowBudgetMemory supports strategy='summarize' only, got {policy.strategy!r}; "
            "for trimming without a model use window_budget.pipeline.trim_by_category on "
            "the messages"
        )
    check_window(context_window, policy)  # the same refusal as the LangChain adapter's


def check_arguments(
    *,
    digest_role: str,
    policy: BudgetPolicy | None,
    token_limit: int | None,
    counter: object,
    tokenizer_fn: object,
) -> None:
    """Refuse ``from_defaults`` arguments that contradict each other, one sentence each."""
    if digest_role not in DIGEST_ROLES:
        raise ValueError(f"digest_role must be one of {list(DIGEST_ROLES)}, got {digest_role!r}")
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


def check_history(chat_history: object) -> None:
    """Refuse a ``chat_history`` that is not a sequence of ``ChatMessage``, in one sentence."""
    if chat_history is None:
        return
    if isinstance(chat_history, LLM):
        name = type(chat_history).__name__
        raise ValueError(
            f"chat_history must be a list of ChatMessage, got the LLM {name} (from_defaults "
            "takes chat_history first, as ChatMemoryBuffer does); pass it as llm=..."
        )
    if isinstance(chat_history, str | bytes) or not isinstance(chat_history, Sequence):
        raise ValueError(
            f"chat_history must be a list of ChatMessage, got {type(chat_history).__name__}"
        )
    for i, message in enumerate(chat_history):
        if not isinstance(message, ChatMessage):
            raise ValueError(
                f"chat_history[{i}] must be a ChatMessage, got {type(message).__name__}"
            )


def window_from_settings() -> int | None:
    """The window LlamaIndex's ``Settings`` give, or None when they are LlamaIndex's defaults.

    ``Settings.context_window`` minus ``Settings.num_output`` — what LlamaIndex's own
    prompt helper uses: the window and output allowance of ``Settings.llm`` when one is set
    (its metadata), or the values set on ``Settings``. ``Settings.llm`` is read only when
    one was set (an unset one would be resolved to OpenAI), and never writes digests. When
    neither an LLM nor a window was set, None: ``from_defaults()`` then takes
    ``ChatMemoryBuffer``'s default limit, 3,000 tokens.
    """
    from llama_index.core import Settings
    from llama_index.core.constants import DEFAULT_CONTEXT_WINDOW, DEFAULT_NUM_OUTPUTS

    window, output = Settings.context_window, Settings.num_output
    if Settings._llm is None and (window, output) == (DEFAULT_CONTEXT_WINDOW, DEFAULT_NUM_OUTPUTS):
        return None
    usable = int(window) - max(0, int(output or 0))
    if usable <= 0:
        raise ValueError(
            f"Settings.context_window {window:,} minus Settings.num_output {output:,} leaves "
            "nothing for history; pass context_window=... or token_limit=... explicitly"
        )
    return usable


def resolve_window(
    llm: LLM | None, context_window: int | None, model: str | None, token_limit: int | None
) -> tuple[int, bool]:
    """``(window, output reserved)``: the window the memory keeps the history inside.

    In order: ``context_window``; the LLM's ``metadata.context_window`` minus its
    ``num_output`` (output then reserved); the window of ``model`` (or the LLM's model
    name) in window-budget's table; ``token_limit``.

    Raises:
        ValueError: no window could be found, or the LLM's leaves nothing for history.
        ConfigError: the model is not in the table.

    """
    if context_window is not None:
        return context_window, False
    reported = getattr(llm.metadata, "context_window", None) if llm is not None else None
    if llm is not None and isinstance(reported, int) and reported > 0:
        meta = llm.metadata
        allowance = max(0, meta.num_output or 0)
        window = meta.context_window - allowance
        if window <= 0:
            raise ValueError(
                f"the LLM reports a {meta.context_window:,}-token window and reserves "
                f"{allowance:,} for output, leaving nothing for history; pass "
                "context_window=... explicitly"
            )
        return window, True
    if model is not None or llm is not None:
        # No window reported: the table, by the given id or the LLM's model name.
        name = (
            model if model is not None or llm is None else getattr(llm.metadata, "model_name", None)
        )
        return model_for(name).context_window, False
    if token_limit is not None:
        return token_limit, True
    raise ValueError(  # pragma: no cover - from_defaults always gives one of them
        "WindowBudgetMemory needs a context window: pass context_window=..., "
        "token_limit=..., model=... or an llm whose metadata reports one"
    )


def condensers_for(
    llm: LLM | None,
    context_window: int,
    policy: BudgetPolicy,
    counter: TokenCounter | None,
    *,
    memory: MemoryStore | None = None,
    conversation: str = "default",
) -> tuple[WindowCondenser, WindowCondenser, AheadCompactor | None]:
    """The memory's two condensers, sync path and async path, and the async one's driver.

    The driver (an ``AheadCompactor``, writing the next digest in the background) exists
    when ``policy.precompact_ratio`` asks for one; else None.

    With ``memory`` (a memory store) they archive the folded originals and the full
    ledger there under ``conversation`` and the digest offers ``recall``; without, the
    digest's bounded record carries the ledger. Each keeps an incremental token ledger
    that is not thread-safe, and a streaming writer thread may compact while the event
    loop does too.
    """
    meta = getattr(llm, "metadata", None)
    model_id = getattr(meta, "model_name", None) or "llm"
    model = Model(model_id, context_window)
    # The summarizer is bounded by the LLM's own window, which may be far larger than
    # the share of it this memory guards: larger chunks mean fewer summary calls.
    llm_window = int(getattr(meta, "context_window", 0) or 0) - max(
        0, int(getattr(meta, "num_output", 0) or 0)
    )
    summarizer = Model(model_id, max(context_window, llm_window))
    complete, complete_sync = (
        completers_from_llm(llm, summary_timeout=policy.summary_timeout)
        if llm is not None
        else (None, None)
    )

    def condenser() -> WindowCondenser:
        return create_condenser(
            model=model,
            policy=policy,
            counter=counter,
            complete=complete,
            complete_sync=complete_sync,
            summarizer_model=summarizer,
            memory=memory,  # None: the digest's bounded record carries the ledger
            conversation=conversation,
            recall_offered=memory is not None,
        )

    sync, async_ = condenser(), condenser()
    if policy.precompact_ratio is None:
        return sync, async_, None
    return sync, async_, AheadCompactor(async_, timeout=policy.summary_timeout or 300.0)


NOT_A_BLOCK: Final = (
    "WindowBudgetMemory is a memory, not a memory block: give LlamaIndex's "
    "Memory(memory_blocks=[...]) a WindowBudgetMemoryBlock (from "
    "llama_index.memory.window_budget import WindowBudgetMemoryBlock), or pass this memory "
    "itself as memory= to the chat engine or agent"
)
"""What a memory says when it is put where a ``Memory`` block goes (it has no ``name``)."""


class MemoryBuilding:
    """``from_defaults``: how a :class:`WindowBudgetMemory` is built (one of its bases)."""

    if not TYPE_CHECKING:

        def __getattr__(self, item: str) -> Any:
            # Memory(memory_blocks=[memory]) reads block.name first: one clear sentence
            # instead of "AttributeError: name". Every other name is pydantic's to answer.
            if item == "name":
                raise AttributeError(NOT_A_BLOCK)
            return super().__getattr__(item)

    if TYPE_CHECKING:
        _store_rewrite: ConditionalRewrite | None
        _memory_store: MemoryStore | None
        _seal_key: bytes | None

        def __init__(self, **data: Any) -> None: ...

        def _configure(
            self, llm: LLM | None, policy: BudgetPolicy, counter: CounterSpec | None
        ) -> None: ...

        def set(self, messages: list[ChatMessage], *, clear_archive: bool = False) -> None:
            """Replace the live history (the memory's own ``set``)."""

    @classmethod
    def from_defaults(
        cls,
        chat_history: Sequence[ChatMessage] | None = None,
        llm: LLM | None = None,
        chat_store: BaseChatStore | None = None,
        chat_store_key: str = DEFAULT_CHAT_STORE_KEY,
        token_limit: int | None = None,
        tokenizer_fn: Callable[[str], Sequence[Any]] | None = None,
        *,
        context_window: int | None = None,
        policy: BudgetPolicy | None = None,
        counter: CounterSpec | None = None,
        archive_key: str | None = None,
        archive_store: BaseChatStore | None = None,
        model: str | None = None,
        digest_role: DigestRole = "pair",
        store_rewrite: ConditionalRewrite | None = None,
        memory_store: MemoryStoreSpec = None,
        precompact: float | None = None,
    ) -> Self:
        """Build the memory, the way LlamaIndex's own memories are built.

        The first six parameters are ``ChatMemoryBuffer.from_defaults``'s, in its order
        (``from_defaults(chat_history)`` works positionally); the rest are keywords.
        With no argument at all the limit is derived as the peers derive it (see
        :func:`window_from_settings`).

        Args:
            chat_history: initial history, stored as with :meth:`set`.
            llm: the LLM that writes the digests (any LlamaIndex LLM). Without one the
                network-free digest is used: ``Settings.llm`` never writes digests, as
                ``ChatSummaryMemoryBuffer`` never summarizes with it (a digest call is
                spend the caller must ask for); it only gives the window.
            context_window: the window to stay inside. Without it: the LLM's
                ``metadata.context_window`` minus its output allowance ``num_output``;
                without an LLM, the window of ``model`` in window-budget's table of
                models; failing both, ``token_limit``; failing all, LlamaIndex's
                ``Settings`` (:func:`window_from_settings`).
            policy: thresholds (``BudgetPolicy``); defaults to :func:`default_policy`.
            chat_store: any ``BaseChatStore``; a fresh ``SimpleChatStore`` by default.
            chat_store_key: key of this conversation in the store.
            counter: ``"heuristic"`` (default), ``"tiktoken"``, ``"llama_index"`` (the
                tokenizer configured in ``Settings``), a ``TokenCounter`` or a callable.
            archive_key: key for folded messages; ``chat_store_key + ARCHIVE_SUFFIX``.
            archive_store: any ``BaseChatStore`` for folded messages; ``chat_store`` by
                default. Folded messages are only ever appended to it; a
                ``SimpleChatStore`` holds them packed, one entry per compaction
                (``archive_pack``). For a ``SimpleChatStore`` persisted to a file, a
                ``JsonlChatStore`` keeps even that out of the file a request loads.
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
            memory_store: where the full fact ledger and every folded original go, for
                :meth:`recall_tool`: a ``window_budget.memory.MemoryStore``, or ``True``
                (or ``"chat_store"``) for a ``ChatStoreMemoryStore`` over ``chat_store``.
                Digest records are then sealed with the store's key, so a client-written
                record is never taken for a digest. None (default): the digest's bounded
                record alone carries the ledger.
            precompact: ahead-of-time compaction on the async path (``aget``, ``aput``):
                once the history passes this fraction of the usable window, below the
                trigger, the next digest is written in the background and the call that
                crosses the trigger folds that head with it instead of waiting for the LLM;
                a digest not ready, failed or stale is not used (that call summarizes as
                without it). Sets the policy's ``precompact_ratio``; ``get``/``put`` stay
                synchronous; ``aclose()`` cancels what still runs.

        A ``policy`` is used as given; its token fields are absolute, so scale the
        default to your window and change only what you need:
        ``dataclasses.replace(default_policy(context_window), trigger_ratio=0.8)``.

        Raises:
            ValueError: a ``chat_history`` that is not a list of ``ChatMessage``, both
                ``policy`` and ``token_limit``, both ``counter`` and ``tokenizer_fn``, a
                ``token_limit`` larger than the window, or ``Settings`` leaving no window.
            ConfigError: (a ``ValueError``) the policy leaves too small a limit for a
                digest and a tail in this window, or ``model`` is not in the table.

        """
        check_history(chat_history)
        check_arguments(
            digest_role=digest_role,
            policy=policy,
            token_limit=token_limit,
            counter=counter,
            tokenizer_fn=tokenizer_fn,
        )
        if (context_window, llm, model, token_limit) == (None, None, None, None):
            context_window = window_from_settings()
            if context_window is None and policy is None:
                token_limit = CHAT_MEMORY_BUFFER_TOKEN_LIMIT
            elif context_window is None:
                context_window = CHAT_MEMORY_BUFFER_TOKEN_LIMIT  # the policy is taken as given
            else:
                # Reserved output already taken off: the gate fires at 75 % of the rest,
                # as ChatMemoryBuffer's token_limit is 75 % of an LLM's window.
                store = memory_store not in (None, False)
                policy = policy or default_policy(context_window, output_reserved=True, store=store)
        context_window, output_reserved = resolve_window(llm, context_window, model, token_limit)
        if token_limit is not None:
            policy = policy_for_token_limit(token_limit, context_window)
        if policy is not None:
            check_policy(policy, context_window)
        spec: CounterSpec | None = counter
        if tokenizer_fn is not None:
            spec = tokenizer_spec(tokenizer_fn)
        chat_store = chat_store or SimpleChatStore()
        memory = cls(
            chat_store=chat_store,
            chat_store_key=chat_store_key,
            archive_key=archive_key or chat_store_key + ARCHIVE_SUFFIX,
            archive_store=archive_store,
            context_window=context_window,
            digest_role=digest_role,
        )
        memory._store_rewrite = store_rewrite
        memory._memory_store = resolve_memory_store(memory_store, chat_store)
        memory._seal_key = None  # from now on the memory store's (none was read before it)
        store = memory._memory_store is not None
        named = getattr(getattr(llm, "metadata", None), "model_name", None) or model
        policy = policy or default_policy(
            context_window, output_reserved=output_reserved, store=store, model=named
        )
        if precompact is not None:
            policy = dataclasses.replace(policy, precompact_ratio=precompact)
        memory._configure(llm, policy, spec)
        if chat_history is not None:
            memory.set(list(chat_history))
        return memory
