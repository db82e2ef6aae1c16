"""The trim strategy: drop by category instead of writing a digest (no model involved)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from window_budget.budget import estimate_tokens
from window_budget.contract import CondensePlan, CondenseResult, TokenCounter
from window_budget.errors import BudgetError
from window_budget.messages import AgentMessage, AssistantMessage

__all__ = ["trim_result"]


def trim_result(
    messages: Sequence[AgentMessage],
    *,
    room: int,
    pinned: int,
    limit: float,
    tokens_before: int,
    counter: TokenCounter | None,
) -> CondenseResult:
    """Trim ``messages`` by category into ``room`` tokens; the result as the condenser gives it.

    Raises:
        BudgetError: even trimmed, the transcript and ``pinned`` exceed ``limit``.

    """
    from window_budget.tools.categories import trim_messages_by_category

    kept, dropped = trim_messages_by_category(messages, room, counter=counter)
    plan = CondensePlan(0, tuple(kept), tuple(dropped))
    if (
        not dropped
        and len(kept) == len(messages)
        and all(a is b for a, b in zip(kept, messages, strict=True))
    ):
        return CondenseResult(
            messages, plan, None, tokens_before, tokens_before, limit, "nothing-condensable"
        )
    # The usage the kept replies report measured the untrimmed transcript: left on them,
    # it would anchor the next check on a figure that is no longer true.
    out = [
        replace(m, usage=None) if isinstance(m, AssistantMessage) and m.usage else m for m in kept
    ]
    after = estimate_tokens(out, counter) + pinned
    if after > limit:
        raise BudgetError(
            f"trimming by category left {after:,} tokens against a limit of "
            f"{limit:,.0f}; the pinned system messages alone need "
            f"{pinned:,} — shorten them or raise the window",
            needed=after,
            available=int(limit),
        )
    return CondenseResult(out, plan, None, tokens_before, after, limit, "trimmed")
