"""The gate: is the transcript over budget.

``budget_limit = max(0, window - reserve) * trigger_ratio``; the transcript is over
budget when its estimate is strictly above that.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from window_budget.budget import anchor_index, estimate_message_tokens, estimate_tokens
from window_budget.contract import BudgetPolicy, Model, TokenCounter, TokenEstimate
from window_budget.errors import ConfigError
from window_budget.messages import AgentMessage
from window_budget.pipeline._boundary import provider_boundary

if TYPE_CHECKING:
    from window_budget.budget import Calibration

__all__ = [
    "DIGEST_SHARE",
    "MIN_DIGEST_TOKENS",
    "budget_limit",
    "check_window",
    "digest_budget",
    "estimate_context",
    "is_over_budget",
]


def budget_limit(model: Model, policy: BudgetPolicy, pinned_tokens: int = 0) -> float:
    """Tokens the transcript, ``pinned_tokens`` included, may hold before the gate fires.

    ``trigger_ratio`` of the usable window, and at most ``prompt_ceiling`` beyond the pinned
    system prompt when the policy sets one (``BudgetPolicy.for_window(w)`` does).

    >>> budget_limit(Model("m", 32_768), BudgetPolicy())
    23040.0
    >>> cheap = BudgetPolicy.for_window(200_000)
    >>> budget_limit(Model("m", 200_000), cheap, pinned_tokens=3000)
    21000.0
    """
    reserve = policy.reserve_tokens or 0
    usable = max(0, model.context_window - reserve)
    limit = usable * policy.trigger_ratio
    if policy.prompt_ceiling is not None and policy.prompt_ceiling + pinned_tokens < limit:
        return float(policy.prompt_ceiling + pinned_tokens)
    return limit


def estimate_context(
    messages: Sequence[AgentMessage],
    model: Model,
    *,
    counter: TokenCounter | None = None,
    pinned_tokens: int = 0,
    use_usage: bool = True,
    calibration: Calibration | None = None,
) -> TokenEstimate:
    """Measure a transcript against ``model``'s window.

    With ``use_usage`` and a trustworthy usage figure (see :func:`anchor_index`) the
    result is that figure plus the estimate of the messages after it
    (``anchored=True``); otherwise the estimate of every message. ``pinned_tokens``
    (a system prompt the caller keeps outside ``messages``) is added either way —
    unless the figure is anchored, since a provider's figure already includes it.

    A ``calibration`` (see :mod:`window_budget.budget._calibrate`) turns the estimated part
    into the provider's count: the messages after the anchor are scaled by its ratio, an
    un-anchored estimate is scaled and gets the overhead the provider counts on top.

    After a provider's own compaction only what it still reads counts: from the message
    carrying the compaction on (:mod:`window_budget.pipeline._boundary`).
    """
    messages = _from_provider_boundary(messages)
    idx = (
        anchor_index(messages, model, pinned_tokens=pinned_tokens, counter=counter)
        if use_usage
        else None
    )
    if idx is not None:
        usage = messages[idx].usage  # type: ignore[union-attr]
        assert usage is not None
        after = sum(estimate_message_tokens(m, counter) for m in messages[idx + 1 :])
        if calibration is not None:
            after = calibration.apply(after, overhead=False)
        return TokenEstimate(usage.context_tokens + after, model.context_window, True)
    total = estimate_tokens(messages, counter) + pinned_tokens
    if calibration is not None:
        total = calibration.apply(total)
    return TokenEstimate(total, model.context_window, False)


def is_over_budget(
    messages: Sequence[AgentMessage],
    model: Model,
    policy: BudgetPolicy,
    *,
    counter: TokenCounter | None = None,
    pinned_tokens: int = 0,
) -> bool:
    """True when the transcript's estimate is strictly above :func:`budget_limit`.

    The estimate is the heuristic (or ``counter``) over every message plus ``pinned_tokens``
    — from a provider's own compaction on, when the transcript holds one; see
    :func:`estimate_context` for the usage-anchored figure.
    """
    limit = budget_limit(model, policy, pinned_tokens)
    return estimate_tokens(_from_provider_boundary(messages), counter) + pinned_tokens > limit


def _from_provider_boundary(messages: Sequence[AgentMessage]) -> Sequence[AgentMessage]:
    """What the provider still reads: from its newest compaction on (all when there is none)."""
    bound = provider_boundary(messages)
    return messages if bound is None else messages[bound[0] :]


MIN_DIGEST_TOKENS = 64
"""The smallest room a digest is ever given."""
DIGEST_SHARE = 3 / 64
"""Share of a large window the default digest budget takes (6,000 tokens of 128k)."""


def digest_budget(context_window: int, cap: int | None = None) -> int:
    """The digest's token budget: ``cap`` when set, else scaled with the window.

    2,000 tokens up to a 42k window, then :data:`DIGEST_SHARE` of it, at most 16,000. Chosen
    by measurement (``bench/bench_memory_reach.py``, 128k window, network-free digests, facts
    in the digest text after 1 / 5 / 10 compactions): 2,000 tokens kept 63 / 9 / 2 % of the
    planted facts, 4,000 91 / 31 / 13 %, 6,000 95 / 53 / 26 %, 8,000 95 / 71 / 38 %; past
    6,000 the first compaction gains nothing and every request pays for the room.

    >>> digest_budget(32_768), digest_budget(128_000), digest_budget(1_000_000)
    (2000, 6000, 16000)
    """
    if cap is not None:
        return cap
    return max(2000, min(16_000, int(context_window * DIGEST_SHARE)))


def check_window(context_window: int, policy: BudgetPolicy) -> None:
    """Refuse, at construction, a window the policy leaves too little of for digest and tail.

    Adapters call it once they know both, so a too-small ``context_window`` (or a too-large
    ``reserve_tokens``) fails where it is configured, not on the first turn.

    Raises:
        ConfigError: one sentence naming ``context_window`` and ``reserve_tokens``.

    """
    limit = budget_limit(Model("window", context_window), policy)
    if limit < 2 * MIN_DIGEST_TOKENS:
        raise ConfigError(
            f"context_window={context_window:,} leaves a limit of {limit:,.0f} tokens after "
            f"reserve_tokens={policy.reserve_tokens or 0:,} (trigger_ratio "
            f"{policy.trigger_ratio}), too little for a digest and a tail (at least "
            f"{2 * MIN_DIGEST_TOKENS}); raise context_window or lower reserve_tokens "
            f"(BudgetPolicy.for_window({context_window}) scales it)"
        )
