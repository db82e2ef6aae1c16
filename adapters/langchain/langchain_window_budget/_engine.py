"""The LangChain-side engine: :class:`LangChainCondenser`.

It converts a LangChain transcript, runs the core's gate → slice → summarize on the
converted copy, and maps the result back: the caller's own message objects for the kept
tail, one digest ``HumanMessage`` for the dropped head. The middleware, the chat-history
wrapper, the LCEL transformer and ``condense_messages`` are thin layers over it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from langchain_window_budget import _remembered
from langchain_window_budget._convert import (
    Converter,
    chat_model_id,
    chat_model_provider,
    to_core,
)
from langchain_window_budget._keep import UserSizes
from langchain_window_budget._mapping import ArchiveFn, map_back
from langchain_window_budget._result import HeadView, LangChainResult, Prepared
from langchain_window_budget._sessions import Session, Sessions, ahead_name, as_message_list
from langchain_window_budget._warm import WarmGate
from langchain_window_budget._window import (
    UNKNOWN_WINDOW,
    CounterSpec,
    OnSummarizerError,
    engine_policy,
    resolve_counter,
    size_blind,
    summarizer_window,
)
from langchain_window_budget.completer import Summarizer, make_completers
from langchain_window_budget.sizes import ContextSize, TriggerSpec
from window_budget.budget import estimate_tokens
from window_budget.contract import BudgetPolicy, CondenseResult, MemoryStore, Model
from window_budget.errors import ConfigError, SummarizerError, provider_error
from window_budget.pipeline import (
    AheadCompactor,
    WindowCondenser,
    create_condenser,
)

__all__ = ["ArchiveFn", "LangChainCondenser"]


class LangChainCondenser:
    """Gate → slice → summarize over LangChain messages, with a chat model as summarizer.

    Args:
        model: the chat model whose window is guarded; it writes the summaries unless
            ``summarizer`` is given. ``None`` means the network-free digest only.
        context_window: tokens the model accepts; defaults to ``model.profile
            ["max_input_tokens"]``.
        policy: thresholds and tail size (the core's defaults when None).
        counter: see :data:`CounterSpec`.
        summarizer: a different chat model for the summaries; its own window (its profile's
            ``max_input_tokens``) sizes the summary requests, so a long head is summarized
            in chunks that fit it. A ``Runnable`` or a (sync or async) function works too:
            it gets the request (brief and scrollback as two messages) and returns the
            digest's text. Anything else is refused with a ``ConfigError``.
        use_usage: anchor the count on ``AIMessage.usage_metadata`` (default). Pass False
            when the result is not stored, so replies measured a list other than the input.
        on_summarizer_error: ``"raise"`` makes a failing summary call raise
            ``SummarizerError`` (the transcript is left unchanged), as LangChain's own
            ``SummarizationMiddleware`` does; ``"fallback"`` writes the network-free digest
            and logs a warning (logger ``window_budget.pipeline.summarize``). None keeps the
            policy's.
        trigger: when to condense, in ``SummarizationMiddleware``'s forms and meaning (see
            :mod:`langchain_window_budget.sizes`): given, it replaces the policy's ratio
            (the window itself is left); the policy's ``trigger_ratio`` when None.
        keep: what stays verbatim, cut as the peer cuts: ``("messages", N)``,
            ``("tokens", N)`` or ``("fraction", f)``; the policy's ``keep_recent`` when None.
        remember_digests: for callers that do not store the result (the LCEL transformer,
            :func:`condense_messages`): remember, process-wide and bounded, the digest
            written for each head, and when a later transcript starts with that same head
            put the digest in its place instead of summarizing it again. Only what newly
            left the tail is then summarized, carrying the remembered digest.
        memory: a memory store (:class:`~window_budget.memory.MemoryStore`, e.g.
            :class:`~langchain_window_budget.LangGraphMemoryStore`): each digest's full fact
            ledger and the messages it folded go there, keyed by the ``conversation`` each
            run names, and digest records are sealed with the store's key and verified
            strictly (a forged or edited record is an ordinary message). None: the digest's
            bounded record carries the ledger, as before.
        recall: the model is offered a ``recall`` tool over ``memory`` (the middleware's
            ``recall=True``, or ``recall_tool``): the digest's last line then points at it.
        precompact: ahead-of-time compaction on :meth:`arun`: once the prompt passes this
            fraction of the usable window (below the trigger), the next digest is written in
            the background, and the run that crosses the trigger folds that head with it
            instead of waiting for a summary call (:attr:`ahead`). Sets the policy's
            ``precompact_ratio``; None keeps the policy's. :meth:`run` stays synchronous.

    Without ``policy``, ``BudgetPolicy.for_window(context_window)``: the tail and the digest
    scale with the window, so a small window is not summarized on every other turn; its prompt
    ceiling only with ``memory`` (``cache_aware=False`` without one).

    Raises:
        ConfigError: no window can be found, or the window leaves too little beside
            ``reserve_tokens``; the message says what to pass.

    """

    def __init__(
        self,
        model: BaseChatModel | None = None,
        *,
        context_window: int | None = None,
        policy: BudgetPolicy | None = None,
        counter: CounterSpec = None,
        summarizer: Summarizer | None = None,
        use_usage: bool = True,
        remember_digests: bool = False,
        on_summarizer_error: OnSummarizerError | None = None,
        trigger: TriggerSpec | None = None,
        keep: ContextSize | None = None,
        memory: MemoryStore | None = None,
        recall: bool = False,
        precompact: float | None = None,
    ) -> None:
        known, policy, size_trigger, keep_rule = engine_policy(
            model,
            context_window,
            policy,
            trigger=trigger,
            keep=keep,
            cache_aware=memory is not None,
            on_summarizer_error=on_summarizer_error,
            precompact=precompact,
        )
        window = known if known is not None else UNKNOWN_WINDOW
        model_id = chat_model_id(model) if model is not None else None
        self.window_known = known is not None
        """False when no window was found and the sizes given need none (the guard is off)."""
        self.remember_digests = remember_digests
        """Whether digests of heads already summarized are reused (see the class docstring)."""
        self.chat_model = model
        """The guarded chat model."""
        writer = summarizer if summarizer is not None else model
        timeout = policy.summary_timeout
        complete, complete_sync = (
            (None, None) if writer is None else make_completers(writer, summary_timeout=timeout)
        )
        resolved = resolve_counter(counter, model)
        blind = resolved if size_blind(resolved) else None
        self.sizes = UserSizes(size_trigger, keep_rule, blind=blind, messages_counter=counter)
        """The user's ``trigger`` and ``keep``, as ``SummarizationMiddleware`` reads them."""
        self.counter = None if blind is not None else resolved
        """The resolved token counter (None is the heuristic; a constant counter is kept
        for the trigger only, see ``size_blind``)."""
        self.condenser: WindowCondenser = create_condenser(
            model=Model(model_id or "langchain", window),
            complete=complete,
            complete_sync=complete_sync,
            policy=policy,
            counter=self.counter,
            summarizer_model=summarizer_window(model, summarizer, known, window),
            memory=memory,  # None: the digest's bounded record carries the ledger
            recall_offered=recall,  # the digest points at `recall` only when the model has it
        )
        """The core condenser doing the work."""
        ahead = policy.precompact_ratio is not None
        self.ahead = AheadCompactor(self.condenser, timeout=timeout or 300.0) if ahead else None
        """The background digests of :meth:`arun`, one per conversation (None without
        ``precompact``); ``ahead.state(name)`` / ``cancel(name)`` / ``aclose()``, ``name``
        being the ``conversation`` given, as a str."""
        self.memory = memory
        """The memory store, or None (see the class docstring)."""
        self._model_id = model_id
        self._provider = chat_model_provider(model) if model is not None else None
        self._use_usage = use_usage
        # Per conversation (a middleware's thread, say) what the engine saw last turn, so
        # one engine serving many conversations that take turns keeps each one warm.
        self._sessions = Sessions(self._new_converter)
        self.warm = WarmGate(self.condenser, self.sizes, self.counter)  # turns that do not fire
        self._digest_seed = _remembered.digest_seed(
            model_id, writer, self.condenser.policy, window, memory
        )

    def _new_converter(self) -> Converter:
        return Converter(
            model_id=self._model_id,
            provider=self._provider,
            counter=self.counter,
            use_usage=self._use_usage,
            key=self.record_key,
        )

    @property
    def record_key(self) -> bytes | None:
        """The key digest records are sealed and verified with: the memory store's, or None.

        None leaves it to ``window_budget.digest`` (``$WINDOW_BUDGET_SECRET``, else
        this process's key).
        """
        return None if self.memory is None else self.memory.key

    def store_name(self, conversation: Hashable | None) -> str | None:
        """What ``conversation`` is called in the memory store (None without a store).

        Raises:
            ConfigError: there is a memory store and ``conversation`` is not a name.

        """
        if self.memory is None:
            return None
        if not isinstance(conversation, str) or not conversation:
            raise ConfigError(
                "with a memory store, each run names its conversation: pass "
                f"conversation=<thread or session id> (a str), not {conversation!r:.40}"
            )
        return conversation

    @property
    def reused_prefix(self) -> int:
        """Messages of the last run recognised as the previous run's, though new objects.

        Recognised field for field (for tests and benchmarks).
        """
        return self._sessions.reused_prefix

    @property
    def context_window(self) -> int:
        """The window being guarded."""
        model = self.condenser.deps.model
        assert model is not None
        return model.context_window

    @property
    def policy(self) -> BudgetPolicy:
        """The policy in force."""
        return self.condenser.policy

    @property
    def use_usage(self) -> bool:
        """Whether the gate anchors on ``AIMessage.usage_metadata``."""
        return self._use_usage

    def ignore_usage(self) -> None:
        """Stop anchoring on ``usage_metadata`` (for callers that do not store the result)."""
        with self._sessions.lock:
            self._use_usage = False
            self._sessions.by_key.clear()

    # -- drivers ---------------------------------------------------------------

    def run(
        self,
        messages: Sequence[Any],
        *,
        force: bool = False,
        extra_pinned_tokens: int = 0,
        archive: ArchiveFn | None = None,
        own_objects: bool = True,
        conversation: Hashable | None = None,
    ) -> LangChainResult:
        """Condense ``messages`` when over budget (or always, with ``force``); sync.

        ``extra_pinned_tokens`` counts a system prompt kept outside ``messages``. Dicts,
        ``(role, text)`` tuples and strings are converted with LangChain's
        ``convert_to_messages`` first (the output then holds the converted objects).
        ``own_objects=False``: when nothing is done, the result's ``messages`` may hold
        objects equal, field for field, to the input's instead of the input itself (for a
        caller that keeps the result but not the input, so that a thread's previous list
        is not kept alive; the middleware does so). ``conversation`` names the
        conversation (the middleware passes the thread id) so that an engine serving many
        keeps what it knows of each apart; without it the first non-system message's id
        decides. With a memory store it is required: it names the conversation there.

        Raises:
            BudgetError: the result cannot fit (e.g. the system prompt alone is too large).
            SummarizerError: the summarizer failed and the policy says to raise; when the
                provider raised, the error is of the provider's type too (catch either).
            ConfigError: a memory store and no ``conversation`` name.

        """
        stored_as = self.store_name(conversation)
        warm = self._warm_run(messages, force, extra_pinned_tokens, conversation, own_objects)
        if warm is not None:
            return warm
        prep = self._prepare(messages, force, extra_pinned_tokens, conversation)
        try:
            result = self.condenser.run_sync(
                prep.conv.core,
                force=prep.force,
                pinned_tokens=prep.pinned_tokens,
                conversation=stored_as,
                cut=prep.cut,
            )
        except SummarizerError as error:
            raise provider_error(error) from error.__cause__
        return self._complete(prep, result, archive, own_objects)

    async def arun(
        self,
        messages: Sequence[Any],
        *,
        force: bool = False,
        extra_pinned_tokens: int = 0,
        archive: ArchiveFn | None = None,
        own_objects: bool = True,
        conversation: Hashable | None = None,
        system_prompt: str = "",
    ) -> LangChainResult:
        """The async twin of :meth:`run` (the summary call uses the model's ``ainvoke``).

        With ``precompact``, the next digest is prepared in the background (see
        :attr:`ahead`); ``system_prompt`` is the agent's, for ``summary_request="prefix"``.
        A ``keep=`` rule chooses its own cut, so its runs take the synchronous path.
        Over an async-only memory store (``AsyncPostgresStore``: it refuses sync calls on its
        event loop) the whole run, :meth:`run`, goes to a worker thread instead, the summary
        call then using the model's sync ``invoke``.
        """
        if getattr(self.memory, "async_only", False):
            return await asyncio.to_thread(
                self.run,
                messages,
                force=force,
                extra_pinned_tokens=extra_pinned_tokens,
                archive=archive,
                own_objects=own_objects,
                conversation=conversation,
            )
        stored_as = self.store_name(conversation)
        if self.ahead is None:  # the background digest watches every turn's figure
            warm = self._warm_run(messages, force, extra_pinned_tokens, conversation, own_objects)
            if warm is not None:
                return warm
        prep = self._prepare(messages, force, extra_pinned_tokens, conversation)
        try:
            if self.ahead is not None and prep.cut is None:  # the core's own slice
                result = await self.ahead.run(
                    prep.conv.core,
                    force=prep.force,
                    pinned_tokens=prep.pinned_tokens,
                    conversation=ahead_name(stored_as, conversation, prep.converted),
                    system_prompt=system_prompt,
                )
            else:
                result = await self.condenser.run(
                    prep.conv.core,
                    force=prep.force,
                    pinned_tokens=prep.pinned_tokens,
                    conversation=stored_as,
                    cut=prep.cut,
                )
        except SummarizerError as error:
            raise provider_error(error) from error.__cause__
        return self._complete(prep, result, archive, own_objects)

    def _warm_run(
        self,
        messages: Sequence[Any],
        force: bool,
        extra_pinned_tokens: int,
        conversation: Hashable | None,
        own_objects: bool,
    ) -> LangChainResult | None:  # the result when the warm gate says nothing is to be done
        if force or self.remember_digests:
            self._sessions.reused_prefix = 0
            return None
        session = self._sessions.get(messages, conversation)
        return self.warm.run(messages, session, self._sessions, extra_pinned_tokens, own_objects)

    def _prepare(
        self,
        messages: Sequence[Any],
        force: bool,
        extra_pinned_tokens: int,
        conversation: Hashable | None,
    ) -> Prepared:
        """Everything before the core runs, shared by :meth:`run` and :meth:`arun`."""
        sessions = self._sessions
        session = sessions.get(messages, conversation)
        messages = sessions.message_list(messages, session)
        canon = sessions.canonical(messages, session)
        fired = self.sizes.fired(
            canon,
            lambda: self._converted_estimate(canon, extra_pinned_tokens, session),
        )
        try:
            recall = self._head_view(messages, force or fired, session, canon)
            view = recall.view if recall is not None else messages
            converted = recall.canon if recall is not None else canon
            conv = sessions.convert(converted, session)
        finally:
            # The key memo holds this run's messages: never let it keep a thread alive.
            session.converter.forget()
        pinned = conv.pinned_tokens + extra_pinned_tokens
        cut = self.sizes.cut(  # where the user's keep cuts (None: the core's own slice)
            self.condenser,
            conv.core,
            [converted[i] for i in conv.origin] if self.sizes.keep is not None else (),
            self.counter,
            fired=fired,
            forced=force,
            pinned_tokens=pinned,
        )
        # A fired trigger with nothing for keep to fold leaves the window to the core's gate.
        fired = fired and (cut is not None or self.sizes.keep is None)
        return Prepared(view, converted, conv, recall, force or fired, pinned, cut)

    def _complete(
        self, prep: Prepared, result: CondenseResult, archive: ArchiveFn | None, own_objects: bool
    ) -> LangChainResult:
        """Everything after the core ran, shared by :meth:`run` and :meth:`arun`."""
        unchanged = None if own_objects else prep.converted
        key = self.record_key
        out = map_back(prep.view, prep.conv, result, archive, key=key, unchanged=unchanged)
        return _remembered.remember(prep.recall, out, self._digest_seed)

    def _head_view(
        self,
        messages: Sequence[BaseMessage],
        force: bool,
        session: Session,
        canon: Sequence[BaseMessage],
    ) -> HeadView | None:
        """The remembered digest's view of ``messages``, when digests are remembered."""
        if not self.remember_digests:
            return None
        lock = self._sessions.lock
        return _remembered.head_view(messages, force, session, self._digest_seed, lock, canon)

    def estimate(
        self,
        messages: Sequence[Any],
        *,
        extra_pinned_tokens: int = 0,
        conversation: Hashable | None = None,
    ) -> int:
        """The gate's token figure for ``messages`` (pinned system messages included).

        From the warm gate's counts when the conversation has them (only new messages are
        converted), else from a conversion that is then dropped: nothing of the thread is
        kept alive between calls (the process-wide conversion cache makes the next one cheap).
        """
        sessions = self._sessions
        session = sessions.get(messages, conversation)
        if session.counts and not self.remember_digests:
            with sessions.lock:
                got = self.warm.figure(messages, session, sessions, extra_pinned_tokens)
            if got is not None:
                return got[0]
        canon = sessions.canonical(sessions.message_list(messages, session), session)
        try:
            return self._converted_estimate(canon, extra_pinned_tokens, session)
        finally:
            with sessions.lock:
                if session.converted:  # the condenser's ledger of it goes too
                    self.condenser.forget(session.converter.first_core)
                sessions.cool(session)

    def _converted_estimate(
        self, canon: Sequence[BaseMessage], extra_pinned_tokens: int, session: Session
    ) -> int:
        """The gate's figure from the session's conversion of ``canon`` (the full path's)."""
        try:
            conv = self._sessions.convert(canon, session)
        finally:
            session.converter.forget()
        pinned = conv.pinned_tokens + extra_pinned_tokens
        return int(self.condenser.decide(conv.core, pinned_tokens=pinned).tokens_before)

    def count_messages(self, messages: Sequence[Any]) -> int:
        """Heuristic (or counter) tokens of ``messages``, every message counted, no anchor."""
        return estimate_tokens([to_core(m) for m in as_message_list(messages)], self.counter)
