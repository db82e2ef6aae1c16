"""Which window an engine guards and how it counts: the window, the policy, the counter specs.

A LangChain chat model states its window in its profile (``max_input_tokens``) or names a
model window-budget's table of models knows; counters are given by name (``"tiktoken"``,
``"model"``), as a callable, or as one of LangChain's message counters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Final, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from langchain_window_budget._convert import chat_model_id
from langchain_window_budget.completer import model_token_counter
from langchain_window_budget.counting import recognise
from langchain_window_budget.sizes import KeepRule, SizeTrigger, apply_sizes, needs_window
from window_budget.bridge import register_counter, register_counter_kind, resolve_counter_spec
from window_budget.budget import cache_read_share, lookup_model, model_for
from window_budget.contract import BudgetPolicy, Model, TokenCounter
from window_budget.errors import ConfigError
from window_budget.pipeline import check_window

__all__ = [
    "UNKNOWN_WINDOW",
    "UNKNOWN_WINDOW_DIGEST",
    "UNKNOWN_WINDOW_SUMMARIZER",
    "CounterSpec",
    "OnSummarizerError",
    "engine_policy",
    "resolve_counter",
    "resolve_window",
    "size_blind",
    "summarizer_window",
]

UNKNOWN_WINDOW: Final = 1 << 30
"""The window of a model that states none, when the sizes given need none: so large that
only the user's trigger ever fires and nothing is shortened (``SummarizationMiddleware``
has no window guard at all)."""

UNKNOWN_WINDOW_DIGEST: Final = 2000
"""The digest's budget then (the default policy's for windows up to 42k)."""

UNKNOWN_WINDOW_SUMMARIZER: Final = 32_000
"""The window each summary request is sized for then (a longer head is summarized in parts)."""


CounterSpec = (
    TokenCounter
    | Callable[[str], int]
    | Callable[[list[BaseMessage]], int]
    | Literal["heuristic", "tiktoken", "model"]
    | None
)
"""How to count tokens: the heuristic (None), ``"tiktoken"``, ``"model"`` (the chat model's
``get_num_tokens_from_messages``), a :class:`~window_budget.contract.TokenCounter`, a
``str -> int``, or LangChain's message counters (``count_tokens_approximately``, a model's
``get_num_tokens_from_messages``, any ``list[BaseMessage] -> int``; told apart by their
signature, see :mod:`langchain_window_budget.counting`)."""

OnSummarizerError = Literal["fallback", "raise"]


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


def resolve_counter(
    counter: CounterSpec,
    chat_model: BaseChatModel | None,
) -> TokenCounter | None:
    """The token counter ``counter`` names (None is the heuristic), for ``chat_model``."""
    return resolve_counter_spec(counter, chat_model)[0]


_SHORT, _LONG = "a", "window budget measures this sentence. " * 100


def size_blind(counter: TokenCounter | None) -> bool:
    """True for a counter that gives one figure whatever the text (a test's constant).

    Such a counter can say when to compact (a trigger) but cannot size anything: every digest
    would cost more than its budget and come out empty. The engine then sizes with the
    heuristic and keeps the counter for the trigger only.
    """
    if counter is None:
        return False
    try:
        return counter.count(_SHORT) == counter.count(_LONG)
    except Exception:  # a counter that fails on a probe is judged when it is used
        return False


def summarizer_window(
    model: BaseChatModel | None, summarizer: object, known: int | None, window: int
) -> Model | None:
    """The model the summary requests are sized for; None: the guarded ``model`` itself.

    A separate ``summarizer`` by its own profile's window (the guarded one when it states
    none); without a known window, a modest one, so a long head is summarized in chunks.
    """
    if summarizer is not None and summarizer is not model:
        try:
            own = resolve_window(summarizer, None)
        except ConfigError:  # no profile: the guarded window is the best guess
            own = window
        return Model(chat_model_id(summarizer) or "langchain-summarizer", own)
    if known is None:
        name = chat_model_id(model) if model is not None else None
        return Model(name or "langchain", UNKNOWN_WINDOW_SUMMARIZER)
    return None


def engine_policy(
    model: BaseChatModel | None,
    context_window: int | None,
    policy: BudgetPolicy | None,
    *,
    trigger: Any,
    keep: Any,
    cache_aware: bool,
    on_summarizer_error: OnSummarizerError | None,
    precompact: float | None,
) -> tuple[int | None, BudgetPolicy, SizeTrigger | None, KeepRule | None]:
    """The window an engine guards, its policy, and the user's trigger and keep rule.

    The window is None when none is found and the sizes given need none (counted sizes
    only: the window guard is off, as the peer's). Without ``policy``, the default for the
    window; a weak prompt cache (gpt-4o's, half price) gets a lower ceiling.

    Raises:
        ConfigError: no window is found and the sizes need one, or the window leaves too
            little beside the policy's reserve.

    """
    try:
        known: int | None = resolve_window(model, context_window)
    except ConfigError:
        if needs_window(trigger, keep):
            raise
        known = None
    window = known if known is not None else UNKNOWN_WINDOW
    if policy is None:
        share = cache_read_share(chat_model_id(model) if model is not None else None)
        policy = BudgetPolicy.for_window(window, cache_aware=cache_aware, cache_read=share)
        if known is None:
            policy = replace(policy, digest_max_tokens=UNKNOWN_WINDOW_DIGEST)
    if on_summarizer_error is not None:
        policy = replace(policy, on_summarizer_error=on_summarizer_error)
    if precompact is not None:
        policy = replace(policy, precompact_ratio=precompact)
    policy, size_trigger, keep_rule = apply_sizes(policy, known, trigger=trigger, keep=keep)
    check_window(window, policy)
    return known, policy, size_trigger, keep_rule
