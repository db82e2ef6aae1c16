"""What the gate and the slice decided, and the decision for a cut the caller chose.

:class:`CondenseDecision` is the sans-I/O half of a condenser run (see
``WindowCondenser.decide``). :func:`decide_at` is the decision when the caller's own rule
already chose the cut (an adapter honouring a framework's ``keep=``): the head before it is
folded, and the cut moves forward only as far as the *window* needs, never for the gate's
trigger, so a tail that fits the window is kept whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from window_budget.budget import TokenLedger
from window_budget.contract import CondensePlan, CondenserDeps, CondenseResult
from window_budget.errors import BudgetError
from window_budget.messages import AgentMessage
from window_budget.pipeline._gate import MIN_DIGEST_TOKENS, budget_limit, digest_budget
from window_budget.pipeline._slice import plan_at, plan_slice

__all__ = ["CondenseDecision", "decide_at"]


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
