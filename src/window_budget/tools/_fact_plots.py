"""What a session's facts do over its compactions: the ledgers, and which survive."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from window_budget.contract import (
    BudgetPolicy,
    Model,
    SyncCompleteFn,
    TokenCounter,
)
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
)
from window_budget.pipeline import create_condenser

if TYPE_CHECKING:
    from window_budget.pipeline.summarize.facts import FactLedger

from window_budget.tools._plot_base import PALETTE, _figure

__all__ = ["ledgers_over", "plot_fact_survival"]


def ledgers_over(
    messages: Sequence[AgentMessage],
    model: Model,
    policy: BudgetPolicy | None = None,
    *,
    counter: TokenCounter | None = None,
    complete_sync: SyncCompleteFn | None = None,
) -> list[FactLedger]:
    """Replay ``messages`` one at a time, as an agent loop would; the ledger after each digest.

    Like :func:`~window_budget.tools.timeline.simulate` (usage figures ignored, the message list
    not changed), but it keeps the fact ledger each digest carries, in order. A
    compaction that only masked tool outputs writes no digest and adds no entry.
    """
    plain = [
        replace(m, usage=None) if isinstance(m, AssistantMessage) and m.usage else m
        for m in messages
    ]
    condenser = create_condenser(
        model=Model(model.id, model.context_window),
        policy=policy or BudgetPolicy(),
        counter=counter,
        complete_sync=complete_sync,
    )
    context: list[AgentMessage] = []
    ledgers: list[FactLedger] = []
    for msg in plain:
        context.append(msg)
        result = condenser.run_sync(context)
        if result.messages is not context:
            context = list(result.messages)
            ledger = condenser.ledger(result.summary.message) if result.summary else None
            if ledger is not None:
                ledgers.append(ledger)
    return ledgers


def _cohort(first: int, bounds: Sequence[int]) -> int:
    """The compaction (0-based) that first recorded a fact seen at archive position ``first``."""
    for k, end in enumerate(bounds):
        if first < end:
            return k
    return len(bounds) - 1


def plot_fact_survival(ledgers: Sequence[FactLedger], *, title: str = "") -> Any:
    """Fact survival across successive compactions (the ledgers of :func:`ledgers_over`).

    Left: after each compaction, the facts its ledger carries, stacked by the compaction
    that first recorded them — a band that thins is a generation being forgotten. Right:
    the same ledgers by kind. Facts known only from a carried digest's text (no archive
    position) count with the first compaction.

    Raises:
        ImportError: matplotlib is missing; the message names the extra to install.
        ValueError: ``ledgers`` is empty.

    """
    from window_budget.pipeline.summarize.facts import FACT_KINDS

    if not ledgers:
        raise ValueError("plot_fact_survival needs at least one ledger; got none")
    bounds = [ledger.archived for ledger in ledgers]
    n = len(ledgers)
    xs = list(range(1, n + 1))
    fig = _figure(figsize=(11, 4.6), dpi=110)
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    base = [0] * n
    for cohort in range(n):
        heights = [
            sum(1 for f in ledger.facts if _cohort(max(f.first, 0), bounds) == cohort)
            if g >= cohort
            else 0
            for g, ledger in enumerate(ledgers)
        ]
        if not any(heights):
            continue
        left.bar(
            xs,
            heights,
            bottom=base,
            color=PALETTE[cohort % len(PALETTE)],
            edgecolor="white",
            linewidth=0.5,
            label=f"recorded at compaction {cohort + 1}" if cohort < 6 else None,
        )
        base = [b + h for b, h in zip(base, heights, strict=True)]
    left.set_xlabel("compaction")
    left.set_ylabel("facts in the ledger")
    left.set_xticks(xs)
    left.grid(alpha=0.25, axis="y")
    left.legend(loc="upper left", fontsize=7.5, framealpha=0.9)
    left.set_title("facts carried, by the compaction that recorded them", fontsize=10)
    for k, kind in enumerate(FACT_KINDS):
        counts = [len(ledger.of_kind(kind)) for ledger in ledgers]
        if any(counts):
            right.plot(
                xs,
                counts,
                marker="o",
                markersize=3,
                color=PALETTE[k % len(PALETTE)] if k < len(PALETTE) else "#777777",
                linestyle="-" if k < len(PALETTE) else "--",
                label=kind,
            )
    right.set_xlabel("compaction")
    right.set_xticks(xs)
    right.grid(alpha=0.25)
    right.legend(loc="upper left", fontsize=7.5, framealpha=0.9, ncol=2)
    right.set_title("facts carried, by kind", fontsize=10)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig
