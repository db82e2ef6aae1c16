"""What the gate and the slice decided, and the decision for a cut the caller chose.

:class:`CondenseDecision` is the sans-I/O half of a condenser run (see
``WindowCondenser.decide``). :func:`decide_at` is the decision when the caller's own rule
already chose the cut (an adapter honouring a framework's ``keep=``): the head before it is
folded, and the cut moves forward only as far as the *window* needs, never for the gate's
trigger, so a tail that fits the window is kept whole. The condenser's own decision is made
of the parts here: :func:`decide_forced` for a forced run, :func:`check_room` for a limit too
small for a digest and a tail, :func:`slice_for` for where the gate's cut falls, :func:`noop`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from window_budget.budget import TokenLedger
from window_budget.contract import (
    BudgetPolicy,
    CondensePlan,
    CondenserDeps,
    CondenseResult,
    Model,
)
from window_budget.errors import BudgetError
from window_budget.messages import AgentMessage
from window_budget.pipeline._gate import MIN_DIGEST_TOKENS, budget_limit, digest_budget
from window_budget.pipeline._slice import plan_at, plan_force_slice, plan_slice

__all__ = [
    "CondenseDecision",
    "check_room",
    "decide_at",
    "decide_forced",
    "noop",
    "slice_for",
]


@dataclass(frozen=True, slots=True)
class CondenseDecision:
    """What the gate and the slice decided, before any model call (see ``decide``)."""

    result: CondenseResult | None
    """The final result when there is nothing to do (a no-op), else None."""
    plan: CondensePlan
    """Where the cut falls."""
    limit: float
    """The gate's limit."""
    tokens_before: int
    """Estimate of the input, pinned tokens included (usage-anchored when possible)."""
    pinned: int
    """Tokens kept outside the transcript (system prompt)."""
    room: int | None
    """Tokens for digest plus tail; None when no window is known."""
    digest_budget: int
    """The digest's token budget."""


def decide_at(
    messages: Sequence[AgentMessage],
    cut: int,
    deps: CondenserDeps,
    ledger: TokenLedger,
    pinned_tokens: int,
) -> CondenseDecision:
    """Fold ``messages[:cut]``; the tail stays whole unless the window itself cannot hold it.

    The room for digest and tail is the usable window (window minus ``reserve_tokens``),
    not the gate's trigger limit. When the tail is too large for it, the cut moves forward
    to the first legal cut whose tail fits; only a newest tool group larger than the window
    is shortened afterwards (``finish``). ``cut == 0`` is a no-op.

    Raises:
        ValueError: ``cut`` is outside ``0..len(messages)``.
        BudgetError: the window minus the pinned tokens leaves no room for a digest.

    """
    model, policy = deps.model, deps.policy
    assert model is not None
    n = len(messages)
    if isinstance(cut, bool) or not isinstance(cut, int) or not 0 <= cut <= n:
        raise ValueError(f"cut must be an int in 0..{n}, got {cut!r}")
    limit = budget_limit(model, policy)
    before = ledger.context(messages, model, pinned_tokens=pinned_tokens).context_tokens
    if cut == 0:
        result = CondenseResult(
            messages, plan_at(messages, 0), None, before, before, limit, "nothing-condensable"
        )
        return CondenseDecision(result, result.plan, limit, before, 0, None, 0)
    usable = max(0, model.context_window - (policy.reserve_tokens or 0))
    room = usable - pinned_tokens
    if room < 2 * MIN_DIGEST_TOKENS:
        raise BudgetError(
            f"pinned messages (system prompt) need {pinned_tokens:,} tokens of a usable window "
            f"of {usable:,} — shorten the system prompt or raise the window",
            needed=pinned_tokens + 2 * MIN_DIGEST_TOKENS,
            available=usable,
        )
    budget = min(
        digest_budget(model.context_window, policy.digest_max_tokens),
        max(MIN_DIGEST_TOKENS, room // 4),
    )
    prefix = ledger.prefix(messages)
    if prefix[n] - prefix[cut] > room - budget:
        fit = plan_slice(
            messages,
            replace(policy, keep_unit="tokens"),
            prefix=prefix,
            tail_budget=max(room - budget, 0),
            blocked=ledger.blocked(messages),
        )
        cut = max(cut, fit.cut)
    return CondenseDecision(
        None, plan_at(messages, cut), limit, before, pinned_tokens, room, budget
    )


def noop(
    messages: Sequence[AgentMessage],
    plan: CondensePlan,
    before: int,
    limit: float,
    reason: str,
) -> CondenseDecision:
    """Nothing to do, for ``reason``: the result is ``messages`` themselves."""
    result = CondenseResult(messages, plan, None, before, before, limit, reason)
    return CondenseDecision(result, plan, limit, before, 0, None, 0)


def decide_forced(
    messages: Sequence[AgentMessage],
    deps: CondenserDeps,
    ledger: TokenLedger,
    pinned_tokens: int,
) -> CondenseDecision:
    """The decision of a forced run: fold what the slice allows, whatever the gate says."""
    model, policy = deps.model, deps.policy
    plan = plan_force_slice(
        messages,
        blocked=ledger.blocked(messages),
        policy=policy,
        prefix=ledger.prefix(messages),
    )
    before = ledger.total(messages) + pinned_tokens
    limit = budget_limit(model, policy, pinned_tokens) if model else math.inf
    if plan.cut == 0:
        return noop(messages, plan, before, limit, "nothing-condensable")
    room = int(limit) - pinned_tokens if model else None
    cap = digest_budget(model.context_window if model else 0, policy.digest_max_tokens)
    budget = cap if room is None else min(cap, max(MIN_DIGEST_TOKENS, room // 4))
    return CondenseDecision(None, plan, limit, before, pinned_tokens, room, budget)


def check_room(
    room: int, limit: float, pinned_tokens: int, model: Model, policy: BudgetPolicy
) -> None:
    """Raise when the gate's limit leaves too little ``room`` for a digest and a tail.

    Raises:
        BudgetError: naming the limit and what to change (the reserve, the window, or the
            system prompt when the pinned messages take most of it).

    """
    if room >= 2 * MIN_DIGEST_TOKENS:
        return
    how = (
        f"{model.context_window:,} window, {policy.reserve_tokens or 0:,} reserved, "
        f"ratio {policy.trigger_ratio}"
    )
    if pinned_tokens <= limit / 2:
        raise BudgetError(
            f"the limit is only {limit:,.0f} tokens ({how}), too little for a digest "
            "and a tail — lower reserve_tokens or raise the window",
            needed=pinned_tokens + 2 * MIN_DIGEST_TOKENS,
            available=int(limit),
        )
    raise BudgetError(
        f"pinned messages (system prompt) need {pinned_tokens:,} tokens but the limit "
        f"is {limit:,.0f} ({how}) — shorten the system prompt or raise the window",
        needed=pinned_tokens + 2 * MIN_DIGEST_TOKENS,
        available=int(limit),
    )


def slice_for(
    messages: Sequence[AgentMessage],
    policy: BudgetPolicy,
    prefix: Sequence[int],
    blocked: Sequence[bool],
    token_budget: int,
) -> CondensePlan:
    """Where the gate's cut falls: the policy's tail, within ``token_budget`` for the tail."""
    if policy.keep_unit != "tokens":  # turns or messages: the tail also fits the room
        turn_plan = plan_slice(messages, policy, blocked=blocked)
        token_plan = plan_slice(
            messages,
            replace(policy, keep_unit="tokens"),
            prefix=prefix,
            tail_budget=token_budget,
            blocked=blocked,
        )
        return turn_plan if turn_plan.cut >= token_plan.cut else token_plan
    # At most half of what the digest leaves, so a compaction leaves headroom instead of
    # refilling a small window to the brim and firing again on the next turn.
    return plan_slice(
        messages,
        policy,
        prefix=prefix,
        blocked=blocked,
        tail_budget=min(policy.keep_recent, token_budget // 2),
    )
