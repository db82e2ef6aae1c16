"""The LangChain-side engine, ``condense_messages`` and the LCEL transformer.

:class:`LangChainCondenser` converts a LangChain transcript, runs the core's gate →
slice → summarize on the converted copy, and maps the result back: the caller's own
message objects for the kept tail, one digest ``HumanMessage`` for the dropped head.
The middleware and the chat-history wrapper are thin layers over it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Final, Literal, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.prompt_values import ChatPromptValue, PromptValue
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from pydantic import ConfigDict, PrivateAttr

from langchain_window_budget._convert import (
    Converted,
    Converter,
    MessageFields,
    build_digest,
    chat_model_id,
    digest_record,
    mark_usage_stale,
    message_fields,
    shortened_copy,
    to_core,
)
from langchain_window_budget.completer import make_completers, model_token_counter
from langchain_window_budget.counting import recognise
from langchain_window_budget.sizes import ContextSize, TriggerSpec, apply_sizes
from window_budget import bridge
from window_budget.bridge import register_counter, register_counter_kind, resolve_counter_spec
from window_budget.budget import estimate_tokens, lookup_model, model_for
from window_budget.contract import BudgetPolicy, CondenseResult, Model, TokenCounter
from window_budget.errors import ConfigError
from window_budget.pipeline import WindowCondenser, check_window, create_condenser
from window_budget.pipeline.summarize import DigestAudit

__all__ = [
    "CounterSpec",
    "LangChainCondenser",
    "LangChainResult",
    "OnSummarizerError",
    "WindowBudgetRunnable",
    "acondense_messages",
    "as_message_list",
    "condense_messages",
    "resolve_window",
]

CounterSpec = (
    TokenCounter
    | Callable[[str], int]
    | Callable[[list[BaseMessage]], int]
    | Literal["heuristic", "tiktoken", "model"]
    | None
)
"""How to count tokens: the heuristic (None), ``"tiktoken"``, ``"model"`` (the chat model's
``get_num_tokens_from_messages``), a :class:`~window_budget.contract.TokenCounter`, a ``str ->
int``,
or LangChain's message counters (``count_tokens_approximately``, a model's
``get_num_tokens_from_messages``, any ``list[BaseMessage] -> int``; told apart by their
signature, see :mod:`langchain_window_budget.counting`)."""

OnSummarizerError = Literal["fallback", "raise"]

ArchiveFn = Callable[[list[BaseMessage]], Mapping[str, Any] | None]
"""Called with the dropped messages before the digest is built; returns where they went."""


def resolve_window(chat_model: object, context_window: int | None) -> int:
    """The window to guard: the argument, else the model's profile, else the core's table.

    Without ``context_window``, the chat model profile's ``max_input_tokens`` is used, then
    the window of the model it names (``model_name`` / ``model``, then ``_llm_type``) in
    window-budget's table of models (:func:`window_budget.budget._models.model_for`).

    Raises:
        ConfigError: none of them is available; the message says what to pass.

    """
    if context_window is not None:
        if (
            isinstance(context_window, bool)
            or not isinstance(context_window, int)
            or context_window <= 0
        ):
            raise ConfigError(f"context_window must be a positive int, got {context_window!r}")
        return context_window
    profile = getattr(chat_model, "profile", None)
    if isinstance(profile, Mapping):
        limit = profile.get("max_input_tokens")
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
            return limit
    name = type(chat_model).__name__ if chat_model is not None else "no chat model"
    model_id = chat_model_id(chat_model) if chat_model is not None else None
    if model_id is None and chat_model is not None:
        llm_type = getattr(chat_model, "_llm_type", None)
        model_id = llm_type if isinstance(llm_type, str) and llm_type else None
    if model_id is not None and lookup_model(model_id) is not None:
        return model_for(model_id, context_window=None).context_window
    what = (
        f"model {model_id!r} is not in window-budget's table of models and "
        if model_id is not None
        else ""
    )
    raise ConfigError(
        f"cannot tell the context window of {name} ({what}it has no profile with "
        "max_input_tokens); pass context_window=<tokens>, e.g. context_window=128_000"
    )


def _model_counter(chat_model: BaseChatModel | None) -> TokenCounter:
    if chat_model is None:
        raise ConfigError('counter="model" needs a chat model; pass model=<chat model>')
    return model_token_counter(chat_model)


register_counter("model", _model_counter)
register_counter_kind(recognise)  # count_tokens_approximately & co. count messages, not text


def _resolve_counter(
    counter: CounterSpec,
    chat_model: BaseChatModel | None,
) -> TokenCounter | None:
    return resolve_counter_spec(counter, chat_model)[0]


@dataclass(frozen=True, slots=True)
class LangChainResult:
    """One run of :class:`LangChainCondenser`, in LangChain terms."""

    messages: Sequence[BaseMessage]
    """The output: the input object itself when nothing was done, else a new list of
    ``[*pinned system messages, digest, *kept tail]``."""
    dropped: list[BaseMessage]
    """The caller's messages that left the transcript (folded into the digest, or the
    originals of masked tool outputs)."""
    digest: HumanMessage | None
    """The digest message, when one was written."""
    core: CondenseResult
    """The core's full account (estimates, limit, reason, plan)."""
    replaced: list[BaseMessage] = field(default_factory=list)
    """The caller's originals of the messages the output carries *shortened* copies of;
    with ``dropped``, every word of the input that the output lacks."""
    reused: bool = False
    """True when a digest written earlier for the same head was put in its place (no
    summary call for that head; see ``remember_digests``)."""

    @property
    def masked(self) -> int:
        """How many old tool outputs this run replaced by a placeholder (no digest then).

        The output holds copies of those tool messages (same id, ``tool_call_id`` and
        name, the placeholder as content); their originals are in :attr:`dropped`.
        """
        return len(self.core.masked)

    @property
    def tokens_freed(self) -> int:
        """Estimated tokens this run took out of the transcript."""
        return self.core.tokens_freed

    @property
    def changed(self) -> bool:
        """True when the output differs from the input."""
        return self.reused or self.core.changed

    @property
    def audit(self) -> DigestAudit | None:
        """The audit of this run's model-written digest (also in the digest's record)."""
        return self.core.audit


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
            in chunks that fit it.
        use_usage: anchor the count on ``AIMessage.usage_metadata`` (default). Pass False
            when the result is not stored, so replies measured a list other than the input.
        on_summarizer_error: ``"raise"`` makes a failing summary call raise
            ``SummarizerError`` (the transcript is left unchanged), as LangChain's own
            ``SummarizationMiddleware`` does; ``"fallback"`` writes the network-free digest
            and logs a warning (logger ``window_budget.pipeline.summarize``). None keeps the
            policy's.
        trigger: when to condense, in ``SummarizationMiddleware``'s forms (see
            :mod:`langchain_window_budget.sizes`); the policy's ``trigger_ratio`` when None.
        keep: how much to keep verbatim: ``("messages", N)``, ``("tokens", N)`` or
            ``("fraction", f)``; the policy's ``keep_recent`` when None.
        remember_digests: for callers that do not store the result (the LCEL transformer,
            :func:`condense_messages`): remember, process-wide and bounded, the digest
            written for each head, and when a later transcript starts with that same head
            put the digest in its place instead of summarizing it again. Only what newly
            left the tail is then summarized, carrying the remembered digest.

    Without ``policy``, ``BudgetPolicy.for_window(context_window)``: the tail and the digest
    scale with the window, so a small window is not summarized on every other turn.

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
        summarizer: BaseChatModel | None = None,
        use_usage: bool = True,
        remember_digests: bool = False,
        on_summarizer_error: OnSummarizerError | None = None,
        trigger: TriggerSpec | None = None,
        keep: ContextSize | None = None,
    ) -> None:
        window = resolve_window(model, context_window)
        policy = policy if policy is not None else BudgetPolicy.for_window(window)
        if on_summarizer_error is not None:
            policy = replace(policy, on_summarizer_error=on_summarizer_error)
        policy, self._size_trigger = apply_sizes(policy, window, trigger=trigger, keep=keep)
        check_window(window, policy)
        self.remember_digests = remember_digests
        """Whether digests of heads already summarized are reused (see the class docstring)."""
        self.chat_model = model
        """The guarded chat model."""
        writer = summarizer or model
        complete = complete_sync = None
        if writer is not None:
            complete, complete_sync = make_completers(writer)
        model_id = chat_model_id(model) if model is not None else None
        self.counter = _resolve_counter(counter, model)
        """The resolved token counter (None is the heuristic)."""
        summarizer_model = None
        if summarizer is not None and summarizer is not model:
            try:
                summarizer_window = resolve_window(summarizer, None)
            except ConfigError:  # no profile: the guarded window is the best guess
                summarizer_window = window
            summarizer_model = Model(
                chat_model_id(summarizer) or "langchain-summarizer", summarizer_window
            )
        self.condenser: WindowCondenser = create_condenser(
            model=Model(model_id or "langchain", window),
            complete=complete,
            complete_sync=complete_sync,
            policy=policy,
            counter=self.counter,
            summarizer_model=summarizer_model,
            memory=None,  # the digest's bounded record carries the ledger
        )
        """The core condenser doing the work."""
        self._model_id = model_id
        self._use_usage = use_usage
        # Per conversation (a middleware's thread, say) what the engine saw last turn, so
        # one engine serving many conversations that take turns keeps each one warm.
        self._sessions: OrderedDict[Hashable, _Session] = OrderedDict()
        self._lock = threading.Lock()
        # What makes two digests of one head interchangeable: the writer and the policy.
        self._digest_seed = (
            "langchain",
            model_id,
            chat_model_id(writer) if writer else None,
            repr(self.condenser.policy),
            window,
        )
        self.reused_prefix = 0
        """How many messages of the last run were recognised as the previous run's, field
        for field, though they were new objects (for tests and benchmarks)."""

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
        with self._lock:
            self._use_usage = False
            self._sessions.clear()

    def _session(self, messages: Sequence[Any], key: Hashable | None) -> _Session:
        """What the engine remembers of the conversation ``messages`` belongs to.

        ``key`` names the conversation (the middleware passes the thread id); without it,
        the id of its first non-system message does (LangGraph and the chat stores give
        every message one), else all id-less conversations share one. A wrong guess costs
        time only: everything remembered is checked against the messages before use.
        Bounded: :data:`SESSIONS` conversations and :data:`SESSION_MESSAGES` messages,
        the least recently used forgotten first.
        """
        if key is None:
            key = _conversation_key(messages)
        else:
            try:
                hash(key)
            except TypeError:
                raise TypeError(
                    "conversation must be hashable (a thread or session id), "
                    f"not {type(key).__name__}"
                ) from None
        with self._lock:
            sessions = self._sessions
            session = sessions.get(key)
            if session is None:
                converter = Converter(
                    model_id=self._model_id, counter=self.counter, use_usage=self._use_usage
                )
                session = sessions[key] = _Session(converter)
            else:
                sessions.move_to_end(key)
            self._bound_sessions()
            return session

    def _bound_sessions(self) -> None:
        """Forget the least recently used conversations past the bounds (lock held)."""
        sessions = self._sessions
        while len(sessions) > 1 and (
            len(sessions) > SESSIONS
            or sum(len(s.seen) for s in sessions.values()) > SESSION_MESSAGES
        ):
            sessions.popitem(last=False)

    # -- shared halves ---------------------------------------------------------

    def _message_list(self, messages: Sequence[Any], session: _Session) -> Sequence[BaseMessage]:
        """:func:`as_message_list`, without reading a list the previous run already read."""
        seen = session.seen
        k = len(seen)
        if (
            type(messages) is list
            and _holds_objects(messages, seen)
            and all(type(m) in _MESSAGE_TYPES or _is_message(m) for m in messages[k:])
        ):
            return messages
        return as_message_list(messages)

    def _canonical(
        self, messages: Sequence[BaseMessage], session: _Session
    ) -> Sequence[BaseMessage]:
        """``messages``, with the previous run's objects in place of an equal prefix.

        A checkpointer or a store hands back the thread as new objects every turn. When
        they equal, field for field, the messages the previous run saw (C-level
        comparisons of their classes and field dicts, as in :func:`same_messages`; the
        stand-ins' dicts are kept from the turn before), the previous objects stand in for them, so
        every identity cache downstream (the conversion, the head fingerprints, the
        core's token ledger) hits and a turn costs what was appended. Equal fields
        convert alike, so the core cannot tell; the caller still gets its own objects
        back (results are mapped by position, see :meth:`run`).
        """
        with self._lock:
            last = session.seen
            k = len(last)
            canon: Sequence[BaseMessage] = messages
            fields = None
            self.reused_prefix = 0
            if _holds_objects(messages, last):
                # The previous run's very objects (the caller's list again, perhaps grown):
                # one comparison of pointers, nothing read from the messages themselves.
                if len(messages) == k:
                    return messages
                if session.seen_fields is not None:
                    grown = message_fields(messages[k:])
                    if grown is not None:
                        fields = (
                            session.seen_fields[0] + grown[0],
                            session.seen_fields[1] + grown[1],
                        )
            elif k and len(messages) >= k:
                mine = message_fields(messages)
                theirs = session.seen_fields or message_fields(last)
                if (
                    mine is not None
                    and theirs is not None
                    and mine[0][:k] == theirs[0]
                    and mine[1][:k] == theirs[1]
                ):
                    canon = [*last, *messages[k:]]
                    fields = (theirs[0] + mine[0][k:], theirs[1] + mine[1][k:])
                    self.reused_prefix = k
            # Only the stand-ins are kept, never a list the caller was given for one turn:
            # it is freed by whoever dropped it, not by this engine on the next turn.
            session.seen = list(canon)
            session.seen_fields = fields
            self._bound_sessions()
            return canon

    def _convert(self, messages: Sequence[BaseMessage], session: _Session) -> Converted:
        with self._lock:  # the converter is a per-conversation cache
            return session.converter.convert(messages)

    def _finish(
        self,
        messages: Sequence[BaseMessage],
        conv: Converted,
        result: CondenseResult,
        archive: ArchiveFn | None,
        unchanged: Sequence[BaseMessage] | None = None,
    ) -> LangChainResult:
        if result.messages is conv.core:
            return LangChainResult(messages if unchanged is None else unchanged, [], None, result)
        # The core ran on ``conv.core``; ``conv.origin`` says where each came from.
        natives = [messages[i] for i in conv.origin]

        def make_digest(mapped: bridge.Mapped[BaseMessage]) -> BaseMessage:
            summary = result.summary
            assert summary is not None
            dropped = mapped.dropped
            covered, compactions = bridge.head_counts(map(digest_record, dropped))
            where = archive(dropped) if archive is not None else None
            return build_digest(
                summary.text,
                covered=covered,
                kept=len(mapped.tail),
                compactions=compactions,
                fallback=summary.fallback,
                archive=where,
                source=summary.message,
                audit=summary.audit,
            )

        mapped = bridge.map_result(
            natives, conv.core, result, copy=shortened_copy, make_digest=make_digest
        )
        out = mapped.messages
        if mapped.digest is None:
            # No digest records how many kept replies predate this run: mark their usage
            # figures (they measured the longer list) so no later gate anchors on them.
            out = [mark_usage_stale(m) for m in out]
            if archive is not None and mapped.dropped:
                archive(mapped.dropped)
        digest = cast(HumanMessage | None, mapped.digest)
        out_list: list[BaseMessage] = [*messages[: conv.pinned], *out]
        return LangChainResult(out_list, mapped.dropped, digest, result, mapped.replaced)

    # -- remembered digests ----------------------------------------------------

    def _recall(
        self,
        messages: Sequence[BaseMessage],
        force: bool,
        session: _Session,
        canon: Sequence[BaseMessage] | None = None,
    ) -> _Recall | None:
        """The transcript with a remembered digest in place of its head, when one is known.

        ``canon`` is :meth:`_canonical`'s stand-in for ``messages`` (equal position by
        position); the fingerprints are taken on it, the views built of both.
        """
        if not self.remember_digests:
            return None
        canon = messages if canon is None else canon
        codec = session.converter.codec
        pinned = bridge.pinned_count(codec, canon)
        chain = self._chain(codec, canon, pinned, session)
        hit = None if force else bridge.recall_digest(chain, self._digest_seed)
        if hit is None:
            return _Recall(messages, pinned, chain, 0, None, canon=canon)
        length, digest = hit
        body = canon[pinned:]
        if not _legal_cut(body, length):
            # The same head, but what follows answers a call in it: cutting there would
            # orphan a tool result. Summarize afresh.
            return _Recall(messages, pinned, chain, 0, None, canon=canon)
        view = [*messages[:pinned], digest, *messages[pinned + length :]]
        canon_view = view if canon is messages else [*canon[:pinned], digest, *body[length:]]
        return _Recall(
            view,
            pinned,
            chain,
            length,
            digest,
            list(messages[pinned : pinned + length]),
            canon=canon_view,
        )

    def _chain(
        self, codec: Any, canon: Sequence[BaseMessage], pinned: int, session: _Session
    ) -> list[int]:
        """The head fingerprints of ``canon[pinned:]``, extending last call's when it only grew."""
        with self._lock:
            src, chain = session.chain_src, session.chain_last
            k = len(src)
            if (
                pinned == session.chain_pinned
                and len(chain) == k - pinned
                and _holds_objects(canon, src)
            ):
                if len(canon) == k:
                    return chain  # the same list again: nothing to fingerprint
                chain = bridge.head_chain(codec, canon[k:], self._digest_seed, prev=chain)
            else:
                chain = bridge.head_chain(codec, canon[pinned:], self._digest_seed)
            session.chain_src, session.chain_last, session.chain_pinned = list(canon), chain, pinned
            return chain

    def _remember(self, recall: _Recall | None, out: LangChainResult) -> LangChainResult:
        if recall is None:
            return out
        reused = recall.digest is not None
        dropped = out.dropped
        if reused and dropped and dropped[0] is recall.digest:
            dropped = dropped[1:]  # the remembered digest stood for ``recall.head``
        originals = len(recall.head) + len(dropped)
        if out.digest is not None:
            bridge.remember_digest(recall.chain, originals, out.digest, self._digest_seed)
        if not reused:
            return out
        return replace(out, dropped=[*recall.head, *dropped], reused=True)

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
        decides.

        Raises:
            BudgetError: the result cannot fit (e.g. the system prompt alone is too large).
            SummarizerError: the summarizer failed and the policy says to raise.

        """
        prep = self._prepare(messages, force, extra_pinned_tokens, conversation)
        result = self.condenser.run_sync(
            prep.conv.core, force=prep.force, pinned_tokens=prep.pinned_tokens
        )
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
    ) -> LangChainResult:
        """The async twin of :meth:`run` (the summary call uses the model's ``ainvoke``)."""
        prep = self._prepare(messages, force, extra_pinned_tokens, conversation)
        result = await self.condenser.run(
            prep.conv.core, force=prep.force, pinned_tokens=prep.pinned_tokens
        )
        return self._complete(prep, result, archive, own_objects)

    def _prepare(
        self,
        messages: Sequence[Any],
        force: bool,
        extra_pinned_tokens: int,
        conversation: Hashable | None,
    ) -> _Prepared:
        """Everything before the core runs, shared by :meth:`run` and :meth:`arun`."""
        session = self._session(messages, conversation)
        messages = self._message_list(messages, session)
        canon = self._canonical(messages, session)
        force = force or self._counted_trigger(canon, extra_pinned_tokens, conversation)
        try:
            recall = self._recall(messages, force, session, canon)
            view = recall.view if recall is not None else messages
            converted = recall.canon if recall is not None else canon
            conv = self._convert(converted, session)
        finally:
            # The key memo holds this run's messages: never let it keep a thread alive.
            session.converter.forget()
        return _Prepared(
            view, converted, conv, recall, force, conv.pinned_tokens + extra_pinned_tokens
        )

    def _complete(
        self, prep: _Prepared, result: CondenseResult, archive: ArchiveFn | None, own_objects: bool
    ) -> LangChainResult:
        """Everything after the core ran, shared by :meth:`run` and :meth:`arun`."""
        return self._remember(
            prep.recall,
            self._finish(
                prep.view, prep.conv, result, archive, None if own_objects else prep.converted
            ),
        )

    def _counted_trigger(
        self,
        messages: Sequence[BaseMessage],
        extra_pinned_tokens: int,
        conversation: Hashable | None,
    ) -> bool:
        """True when a ``("messages", N)`` trigger clause holds for ``messages``."""
        trigger = self._size_trigger
        if trigger is None:
            return False
        tokens = (
            self.estimate(
                messages, extra_pinned_tokens=extra_pinned_tokens, conversation=conversation
            )
            if trigger.needs_tokens()
            else None
        )
        return trigger.met(len(messages), tokens)

    def estimate(
        self,
        messages: Sequence[Any],
        *,
        extra_pinned_tokens: int = 0,
        conversation: Hashable | None = None,
    ) -> int:
        """The gate's token figure for ``messages`` (pinned system messages included)."""
        session = self._session(messages, conversation)
        try:
            listed = self._message_list(messages, session)
            conv = self._convert(self._canonical(listed, session), session)
        finally:
            session.converter.forget()
        decision = self.condenser.decide(
            conv.core, pinned_tokens=conv.pinned_tokens + extra_pinned_tokens
        )
        return int(decision.tokens_before)

    def count_messages(self, messages: Sequence[Any]) -> int:
        """Heuristic (or counter) tokens of ``messages``, every message counted, no anchor."""
        return estimate_tokens([to_core(m) for m in as_message_list(messages)], self.counter)


SESSIONS: Final = 256
"""Conversations one engine remembers between their turns (the least recently used goes)."""

SESSION_MESSAGES: Final = 100_000
"""Messages all remembered conversations may hold together (the engine keeps the objects of
each one's last turn alive; past this the least recently used are forgotten first)."""


@dataclass(eq=False, slots=True)
class _Session:
    """What the engine saw of one conversation on its last turn."""

    converter: Converter
    """Its conversion (the core objects its ledger knows by identity)."""
    seen: list[BaseMessage] = field(default_factory=list)
    """The messages it last converted (stand-ins for equal new objects next turn)."""
    seen_fields: MessageFields | None = None
    """:func:`message_fields` of ``seen``, when known."""
    chain_src: list[BaseMessage] = field(default_factory=list)
    """The messages its head fingerprints were taken of (remembered digests)."""
    chain_last: list[int] = field(default_factory=list)
    """Those fingerprints."""
    chain_pinned: int = 0
    """Leading system messages when they were taken."""


def _conversation_key(messages: Sequence[Any]) -> Hashable:
    """The id of the first non-system message among the first few, else None."""
    for m in messages[:8]:
        if isinstance(m, SystemMessage):
            continue
        mid = getattr(m, "id", None)
        return ("id", mid) if isinstance(mid, str) else None
    return None


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A run's input made ready for the core (shared by the sync and async drivers)."""

    view: Sequence[BaseMessage]
    """What the caller's objects are mapped back onto (with a remembered digest, if any)."""
    converted: Sequence[BaseMessage]
    """The equal stand-ins the engine converted."""
    conv: Converted
    """Their core messages and pinned tokens."""
    recall: _Recall | None
    """The remembered digest used, if any."""
    force: bool
    """Whether the run compacts whatever the gate says."""
    pinned_tokens: int
    """Pinned system messages plus the caller's extra pinned tokens."""


@dataclass(frozen=True, slots=True)
class _Recall:
    """A transcript as the engine runs it when digests are remembered."""

    view: Sequence[BaseMessage]
    """The transcript, or it with a remembered digest in place of its head."""
    pinned: int
    """Leading system messages."""
    chain: list[int]
    """Fingerprints of the original body's prefixes."""
    length: int
    """How many body messages the remembered digest stands for (0: none used)."""
    digest: HumanMessage | None
    """The remembered digest put in, if any."""
    head: list[BaseMessage] = field(default_factory=list)
    """The originals it stands for."""
    canon: Sequence[BaseMessage] = ()
    """``view`` with the engine's stand-ins for unchanged messages (what is converted)."""


def _holds_objects(messages: Sequence[object], known: Sequence[object]) -> bool:
    """True when ``messages`` begins with ``known``'s very objects (or objects equal to them).

    Made for re-gating one list: when the last objects are the same, a list comparison
    finds its items identical by pointer without reading them, so the check costs one
    C-level pass over two arrays of pointers. New objects fail the first test at once.
    """
    k = len(known)
    if not k or len(messages) < k or messages[k - 1] is not known[-1]:
        return False
    if len(messages) == k and type(messages) is list and type(known) is list:
        return messages == known
    return list(messages[:k]) == known


def _legal_cut(body: Sequence[BaseMessage], cut: int) -> bool:
    """True when cutting ``body`` before ``cut`` splits no tool call from its result."""
    if cut < len(body) and isinstance(body[cut], ToolMessage | FunctionMessage):
        return False
    open_calls: set[str] = set()
    for m in body[:cut]:
        if isinstance(m, AIMessage):
            open_calls.update(str(c.get("id")) for c in m.tool_calls)
        elif isinstance(m, ToolMessage):
            open_calls.discard(str(m.tool_call_id))
    if not open_calls:
        return True
    return not any(
        isinstance(m, ToolMessage) and str(m.tool_call_id) in open_calls for m in body[cut:]
    )


_MESSAGE_TYPES: set[type] = set()
"""Message classes seen so far: a set lookup per message is much cheaper than pydantic's
``isinstance``, which matters when a long thread is re-gated every turn."""


def _is_message(m: object) -> bool:
    if isinstance(m, BaseMessage):
        _MESSAGE_TYPES.add(type(m))
        return True
    return False


def as_message_list(messages: Sequence[Any]) -> Sequence[BaseMessage]:
    """``messages`` itself when it holds only messages, else LangChain's conversion of it.

    Raises:
        TypeError: an item is neither a message nor something ``convert_to_messages``
            understands (a dict with ``role``/``content``, a ``(role, text)`` tuple, a str).

    """
    if isinstance(messages, str | bytes):
        raise TypeError(
            "pass a list of messages, not a single string; wrap it: "
            '[HumanMessage(text)] or [("user", text)]'
        )
    if _MESSAGE_TYPES.issuperset(map(type, messages)) or all(
        type(m) in _MESSAGE_TYPES or _is_message(m) for m in messages
    ):
        return messages
    try:
        return convert_to_messages(messages)
    except (ValueError, TypeError, NotImplementedError, KeyError) as exc:
        raise TypeError(
            f"cannot read these messages ({exc}); pass LangChain messages, dicts with "
            "'role' and 'content', or (role, text) tuples"
        ) from exc


# ------------------------------------------------------------------ LCEL


def _as_messages(value: object) -> tuple[Sequence[BaseMessage], bool]:
    if isinstance(value, PromptValue):
        return value.to_messages(), True
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return as_message_list(value), False
    raise TypeError(
        f"the window-budget transformer takes a list of messages or a chat prompt value, "
        f"not {type(value).__name__}; put it after a ChatPromptTemplate or pass messages"
    )


TransformerIO = list[AnyMessage] | ChatPromptValue
"""What the transformer takes and gives: a list of messages or a chat prompt value."""


def _as_size(value: Any) -> Any:
    """A size read back from JSON (lists) as the tuples ``trigger`` / ``keep`` take."""
    if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str):
        return (value[0], value[1])
    if isinstance(value, list):
        return [_as_size(item) for item in value]
    return value


class WindowBudgetRunnable(RunnableSerializable[TransformerIO, TransformerIO]):
    """A ``Runnable`` that condenses the messages flowing through it: ``prompt | this | model``.

    Takes a list of messages or a chat prompt value; returns the same object when the
    transcript is under budget, else ``[*system, digest, *kept]`` (a ``ChatPromptValue`` when
    it was given one). The digest is not stored anywhere: pair it with
    :class:`~langchain_window_budget.CondensingChatMessageHistory` to make it persistent.

    Because the result is not stored, each reply's ``usage_metadata`` measured a list other
    than the next input; the transformer therefore never anchors on it (it calls
    ``engine.ignore_usage()``) and counts every message itself.

    It is serializable the LangChain way (``dumps`` / ``loads`` from ``langchain_core.load``)
    when its parts are: the chat models must be serializable themselves and the counter a
    name (``None``, ``"tiktoken"``, ``"model"``); a callable counter makes ``to_json``
    report it not serializable, as LangChain does for any such object. Load it with
    ``loads(text, allowed_objects=[WindowBudgetRunnable, <your chat model class>],
    valid_namespaces=["langchain_window_budget"])``.
    """

    model: BaseChatModel | None = None
    """The guarded chat model; it writes the digests unless ``summarizer`` is given."""
    context_window: int | None = None
    """Tokens the model accepts (else its profile, else the table of models)."""
    policy: dict[str, Any] | None = None
    """The :class:`~window_budget.BudgetPolicy` as a dict of its fields (a policy object
    given to the constructor is stored so); None is the window-scaled default."""
    counter: Any = None
    """See :data:`CounterSpec`."""
    summarizer: BaseChatModel | None = None
    """A different chat model for the digests."""
    on_summarizer_error: OnSummarizerError | None = None
    """``"raise"`` to raise ``SummarizerError`` when the summary call fails."""
    trigger: Any = None
    """When to condense, in ``SummarizationMiddleware``'s forms (see ``sizes``)."""
    keep: Any = None
    """How much to keep verbatim, in ``SummarizationMiddleware``'s forms."""

    _engine: LangChainCondenser = PrivateAttr()

    model_config = ConfigDict(arbitrary_types_allowed=True)

    def __init__(self, **kwargs: Any) -> None:
        """Build the transformer; keyword arguments as :func:`condense_messages` takes them.

        Raises:
            ConfigError: no window can be found, or a size or the policy is malformed.

        """
        policy = kwargs.get("policy")
        if isinstance(policy, BudgetPolicy):
            kwargs["policy"] = {f.name: getattr(policy, f.name) for f in fields(policy)}
        for name in ("trigger", "keep"):
            kwargs[name] = _as_size(kwargs.get(name))
        super().__init__(**kwargs)
        try:
            policy_obj = None if self.policy is None else BudgetPolicy(**self.policy)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"policy {self.policy!r} is not a BudgetPolicy: {exc}") from exc
        engine = LangChainCondenser(
            self.model,
            context_window=self.context_window,
            policy=policy_obj,
            counter=self.counter,
            summarizer=self.summarizer,
            remember_digests=True,
            on_summarizer_error=self.on_summarizer_error,
            trigger=self.trigger,
            keep=self.keep,
        )
        engine.ignore_usage()
        self._engine = engine

    @property
    def engine(self) -> LangChainCondenser:
        """The condenser doing the work (usage anchoring switched off)."""
        return self._engine

    @classmethod
    def is_lc_serializable(cls) -> bool:
        """True: the transformer is saved by its configuration."""
        return True

    @classmethod
    def get_lc_namespace(cls) -> list[str]:
        """``["langchain_window_budget", "condense"]``, the module it loads from."""
        return ["langchain_window_budget", "condense"]

    def to_json(self) -> Any:
        """LangChain's serialized form; "not implemented" when the counter is a callable."""
        if self.counter is not None and not isinstance(self.counter, str):
            return self.to_json_not_implemented()
        return super().to_json()

    @property
    def InputType(self) -> Any:
        """A list of messages or a chat prompt value."""
        return TransformerIO

    @property
    def OutputType(self) -> Any:
        """The same kinds as the input (the input object itself when under budget)."""
        return TransformerIO

    def _apply(self, value: Any) -> Any:
        messages, was_prompt = _as_messages(value)
        result = self._engine.run(messages)
        return self._wrap(value, result, was_prompt)

    async def _aapply(self, value: Any) -> Any:
        messages, was_prompt = _as_messages(value)
        result = await self._engine.arun(messages)
        return self._wrap(value, result, was_prompt)

    @staticmethod
    def _wrap(value: Any, result: LangChainResult, was_prompt: bool) -> Any:
        if not result.changed:
            return value
        out = list(result.messages)
        return ChatPromptValue(messages=out) if was_prompt else out

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Condense one transcript (the input object itself comes back when under budget)."""
        return self._call_with_config(self._apply, input, config, run_type="chain", **kwargs)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """The async twin of :meth:`invoke`."""
        return await self._acall_with_config(
            self._aapply, input, config, run_type="chain", **kwargs
        )


_ENGINES: OrderedDict[tuple[Any, ...], tuple[tuple[Any, ...], LangChainCondenser]] = OrderedDict()
_ENGINES_LOCK = threading.Lock()
_MAX_ENGINES = 32


def _shared_engine(
    model: BaseChatModel | None,
    context_window: int | None,
    policy: BudgetPolicy | None,
    counter: CounterSpec,
    summarizer: BaseChatModel | None,
    on_summarizer_error: OnSummarizerError | None,
    trigger: Any = None,
    keep: Any = None,
    *,
    remember_digests: bool = True,
) -> LangChainCondenser:
    """One engine per configuration, reused by :func:`condense_messages` calls.

    Chat-history wrappers built per request share one too (``remember_digests=False``).
    Its caches (each conversation's last conversion, the token ledgers) then make a
    repeated call on a transcript that only grew cost the new messages. The objects the key
    names by identity are held with the engine, so their ids cannot be reused while it is
    cached.
    """
    objects = (model, summarizer, counter)
    key = (
        id(model),
        id(summarizer),
        counter if counter is None or isinstance(counter, str) else id(counter),
        context_window,
        repr(policy),
        on_summarizer_error,
        repr(trigger),
        repr(keep),
        remember_digests,
    )
    with _ENGINES_LOCK:
        hit = _ENGINES.get(key)
        if hit is not None:
            _ENGINES.move_to_end(key)
            return hit[1]
    engine = LangChainCondenser(
        model,
        context_window=context_window,
        policy=policy,
        counter=counter,
        summarizer=summarizer,
        remember_digests=remember_digests,
        on_summarizer_error=on_summarizer_error,
        trigger=trigger,
        keep=keep,
    )
    with _ENGINES_LOCK:
        _ENGINES[key] = (objects, engine)
        while len(_ENGINES) > _MAX_ENGINES:
            _ENGINES.popitem(last=False)
    return engine


def condense_messages(
    messages: Sequence[BaseMessage] | None = None,
    *,
    model: BaseChatModel | None = None,
    context_window: int | None = None,
    policy: BudgetPolicy | None = None,
    counter: CounterSpec = None,
    summarizer: BaseChatModel | None = None,
    force: bool = False,
    on_summarizer_error: OnSummarizerError | None = None,
    trigger: TriggerSpec | None = None,
    keep: ContextSize | None = None,
) -> Any:
    """Condense a LangChain transcript, or, without ``messages``, build the LCEL transformer.

    With ``messages``: returns the same list object when under budget, else a new list of
    ``[*leading system messages, digest, *kept tail]`` whose tail holds the caller's own
    objects. Without: returns a :class:`WindowBudgetRunnable` for ``prompt | it | model``.
    ``on_summarizer_error="raise"`` raises ``SummarizerError`` when the summary call fails;
    ``trigger`` / ``keep`` take ``SummarizationMiddleware``'s forms (see
    :class:`LangChainCondenser`).

    >>> from langchain_core.messages import HumanMessage
    >>> history = [HumanMessage("hello")]
    >>> condense_messages(history, context_window=8_000) is history
    True
    """
    if messages is None:
        return WindowBudgetRunnable(
            model=model,
            context_window=context_window,
            policy=policy,
            counter=counter,
            summarizer=summarizer,
            on_summarizer_error=on_summarizer_error,
            trigger=trigger,
            keep=keep,
        )
    engine = _shared_engine(
        model, context_window, policy, counter, summarizer, on_summarizer_error, trigger, keep
    )
    result = engine.run(messages, force=force)
    return messages if not result.changed else list(result.messages)


async def acondense_messages(
    messages: Sequence[BaseMessage],
    *,
    model: BaseChatModel | None = None,
    context_window: int | None = None,
    policy: BudgetPolicy | None = None,
    counter: CounterSpec = None,
    summarizer: BaseChatModel | None = None,
    force: bool = False,
    on_summarizer_error: OnSummarizerError | None = None,
) -> Sequence[BaseMessage]:
    """The async twin of :func:`condense_messages` (messages required)."""
    engine = _shared_engine(
        model, context_window, policy, counter, summarizer, on_summarizer_error, None, None
    )
    result = await engine.arun(messages, force=force)
    return messages if not result.changed else list(result.messages)
