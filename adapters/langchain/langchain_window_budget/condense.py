"""``condense_messages``, its async twin, and the names the LangChain engine is imported by.

:class:`LangChainCondenser` (in ``_engine``) converts a LangChain transcript, runs the
core's gate → slice → summarize on the converted copy, and maps the result back: the
caller's own message objects for the kept tail, one digest ``HumanMessage`` for the dropped
head. :class:`WindowBudgetRunnable` (in ``_lcel``) is the LCEL transformer; both are
importable from here and from :mod:`langchain_window_budget`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from langchain_window_budget._engine import LangChainCondenser
from langchain_window_budget._lcel import WindowBudgetRunnable
from langchain_window_budget._result import LangChainResult
from langchain_window_budget._sessions import as_message_list
from langchain_window_budget._window import CounterSpec, OnSummarizerError, resolve_window
from langchain_window_budget.completer import Summarizer
from langchain_window_budget.sizes import ContextSize, TriggerSpec
from window_budget.contract import BudgetPolicy

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


_ENGINES: OrderedDict[tuple[Any, ...], tuple[tuple[Any, ...], LangChainCondenser]] = OrderedDict()
_ENGINES_LOCK = threading.Lock()
_MAX_ENGINES = 32


def _shared_engine(
    model: BaseChatModel | None,
    context_window: int | None,
    policy: BudgetPolicy | None,
    counter: CounterSpec,
    summarizer: Summarizer | None,
    on_summarizer_error: OnSummarizerError | None,
    trigger: Any = None,
    keep: Any = None,
    *,
    remember_digests: bool = True,
    precompact: float | None = None,
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
        precompact,
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
        precompact=precompact,
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
    summarizer: Summarizer | None = None,
    force: bool = False,
    on_summarizer_error: OnSummarizerError | None = None,
    trigger: TriggerSpec | None = None,
    keep: ContextSize | None = None,
    precompact: float | None = None,
) -> Any:
    """Condense a LangChain transcript, or, without ``messages``, build the LCEL transformer.

    With ``messages``: returns the same list object when under budget, else a new list of
    ``[*leading system messages, digest, *kept tail]`` whose tail holds the caller's own
    objects. Without: returns a :class:`WindowBudgetRunnable` for ``prompt | it | model``.
    ``on_summarizer_error="raise"`` raises ``SummarizerError`` when the summary call fails;
    ``trigger`` / ``keep`` take ``SummarizationMiddleware``'s forms (see
    :class:`LangChainCondenser`). ``precompact`` is the transformer's (ahead-of-time
    compaction on its async path, see :class:`WindowBudgetRunnable`); a call with
    ``messages`` is synchronous and never waits on it.

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
            precompact=precompact,
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
    summarizer: Summarizer | None = None,
    force: bool = False,
    on_summarizer_error: OnSummarizerError | None = None,
    trigger: TriggerSpec | None = None,
    keep: ContextSize | None = None,
    precompact: float | None = None,
    conversation: Hashable | None = None,
) -> Sequence[BaseMessage]:
    """The async twin of :func:`condense_messages` (messages required).

    ``precompact``: ahead-of-time compaction (see :class:`WindowBudgetRunnable`), its
    background digests kept per ``conversation`` (a thread or session id; else the first
    message's id names it) in the engine shared by calls with the same settings.
    """
    engine = _shared_engine(
        model,
        context_window,
        policy,
        counter,
        summarizer,
        on_summarizer_error,
        trigger,
        keep,
        precompact=precompact,
    )
    result = await engine.arun(messages, force=force, conversation=conversation)
    return messages if not result.changed else list(result.messages)
