"""The gate: is the transcript over budget.

``budget_limit = max(0, window - reserve) * trigger_ratio``; the transcript is over
budget when its estimate is strictly above that.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from window_budget.budget._estimate import estimate_message_tokens, estimate_tokens
from window_budget.contract import BudgetPolicy, Model, TokenCounter, TokenEstimate
from window_budget.digest import is_digest
from window_budget.errors import ConfigError
from window_budget.messages import AgentMessage, AssistantMessage, Usage

if TYPE_CHECKING:
    from window_budget.budget._calibrate import Calibration

__all__ = [
    "ANCHOR_MIN_RATIO",
    "DIGEST_SHARE",
    "MIN_DIGEST_TOKENS",
    "SKIPPED_STOP_REASONS",
    "anchor_index",
    "anchor_usage",
    "budget_limit",
    "check_window",
    "digest_budget",
    "estimate_context",
    "is_over_budget",
    "same_model",
    "usage_is_plausible",
]

ANCHOR_MIN_RATIO = 0.5
"""A reported figure below this share of the estimate cannot be measuring this transcript."""


SKIPPED_STOP_REASONS = frozenset({"error", "aborted", "cancelled", "canceled"})
"""Stop reasons of replies whose usage is not a measure of the prompt (the call failed)."""


def anchor_usage(message: AgentMessage) -> Usage | None:
    """The usage figure an assistant message can anchor with, or None.

    A reply that was aborted or failed reports zero, or whatever the provider had counted
    when it stopped: such a figure is skipped, so the last good figure before it still
    anchors (with the failed reply estimated like any message after the anchor).
    """
    if not isinstance(message, AssistantMessage) or message.usage is None:
        return None
    usage = message.usage
    if usage.prompt_tokens == 0 or (message.stop_reason or "").lower() in SKIPPED_STOP_REASONS:
        return None
    return usage


def same_model(reported: str | None, model: Model | None) -> bool:
    """Whether a usage figure reported by ``reported`` may stand for ``model``.

    Unknown on either side counts as the same; a dated alias matches its base name
    (``gpt-4o-2024-08-06`` and ``gpt-4o``).
    """
    if reported is None or model is None:
        return True
    a, b = reported.lower(), model.id.lower()
    return a == b or a.startswith(b) or b.startswith(a)


def usage_is_plausible(reported_tokens: int, estimated_tokens: int) -> bool:
    """False when a figure is far below the estimate of what it claims to measure.

    Such a figure measured a different, shorter list — the condensed request a
    transformer sent, say — and anchoring on it would let the transcript overflow. A
    figure above the estimate is kept: the provider counts what the estimate cannot see
    (tool schemas, its own framing).
    """
    return reported_tokens >= ANCHOR_MIN_RATIO * estimated_tokens


def budget_limit(model: Model, policy: BudgetPolicy, pinned_tokens: int = 0) -> float:
    """Tokens the transcript, ``pinned_tokens`` included, may hold before the gate fires.

    ``trigger_ratio`` of the usable window, and at most ``prompt_ceiling`` beyond the pinned
    system prompt when the policy sets one (``BudgetPolicy.for_window(w, cache_aware=True)``).

    >>> budget_limit(Model("m", 32_768), BudgetPolicy())
    23040.0
    >>> cheap = BudgetPolicy.for_window(200_000, cache_aware=True)
    >>> budget_limit(Model("m", 200_000), cheap, pinned_tokens=3000)
    21000.0
    """
    reserve = policy.reserve_tokens or 0
    usable = max(0, model.context_window - reserve)
    limit = usable * policy.trigger_ratio
    if policy.prompt_ceiling is not None and policy.prompt_ceiling + pinned_tokens < limit:
        return float(policy.prompt_ceiling + pinned_tokens)
    return limit


def anchor_index(
    messages: Sequence[AgentMessage],
    model: Model | None = None,
    *,
    pinned_tokens: int = 0,
    counter: TokenCounter | None = None,
) -> int | None:
    """Index of the assistant message whose reported usage can anchor the estimate, or None.

    Only the last assistant message with a good usage figure qualifies (zero usage and
    the usage of a failed or aborted reply are skipped, see :func:`anchor_usage`), and
    only when no digest or compaction summary follows it (the digest replaced what that
    figure measured), it is not one of the turns kept verbatim with a digest
    (``kept_count`` of a ``DigestMessage`` or a ``CompactionSummaryMessage``: their
    figures measured the longer transcript), it came from ``model`` (see
    :func:`same_model`), and the figure is plausible for the messages it measured — from
    the last digest, when there is one, up to it (:func:`usage_is_plausible`): a whole
    file read with an earlier compaction inside still anchors on its recent figures.
    """
    found: int | None = None
    start = 0  # where what the figure measured begins: the last digest, or the start
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if is_digest(msg):
            stale_until = i + (getattr(msg, "kept_count", None) or 0)
            if found is None or found <= stale_until:
                return None
            start = i
            break
        if found is None and anchor_usage(msg) is not None:
            if not same_model(msg.model, model):  # type: ignore[union-attr]
                return None
            found = i
    if found is not None:
        usage = messages[found].usage  # type: ignore[union-attr]
        assert usage is not None
        expected = estimate_tokens(messages[start : found + 1], counter) + pinned_tokens
        if not usage_is_plausible(usage.context_tokens, expected):
            return None
    return found


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
    """
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

    The estimate is the heuristic (or ``counter``) over every message plus ``pinned_tokens``;
    see :func:`estimate_context` for the usage-anchored figure.
    """
    limit = budget_limit(model, policy, pinned_tokens)
    return estimate_tokens(messages, counter) + pinned_tokens > limit


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
