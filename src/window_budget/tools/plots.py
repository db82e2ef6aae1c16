"""Pictures of a session, with matplotlib (the optional ``[plot]`` extra).

* :func:`plot_session` — the context over a session against the window and the gate's
  limit, each compaction and the tokens it freed (a replay from
  :func:`window_budget.tools.timeline.simulate`).
* :func:`compare_policies` and :func:`plot_policies` — the same session under several
  policies on one chart, with how often each compacted.
* :func:`plot_condense_results` — what a live run did, call by call: the results a
  framework adapter records (``WindowBudgetMiddleware.last_result.core``,
  ``WindowBudgetMemory.last_result``), one per model call.
* :func:`ledgers_over` and :func:`plot_fact_survival` — the fact ledger after each
  compaction of a replay: how many facts each compaction recorded, and how many of them
  the later compactions still carry, by kind.
* :func:`usage_points` and :func:`plot_estimate_vs_reported` — the library's estimate of
  each request against the size the provider reported, where a transcript carries usage.

Every function returns a matplotlib ``Figure`` drawn without pyplot (the Agg canvas), so
it works headless, leaves a notebook's backend alone, and shows itself in Jupyter when it
is the last expression of a cell. matplotlib is imported only when a figure is drawn:
``import window_budget.tools.plots`` works without it.

>>> from window_budget import Model, UserMessage
>>> msgs = [UserMessage("x" * 3600) for _ in range(12)]
>>> runs = compare_policies(msgs, Model("m", 8000), {"default": BudgetPolicy(
...     keep_recent=2000, reserve_tokens=0)})
>>> len(runs["default"].firings)
2
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from window_budget.budget import estimate_message_tokens, format_usd, resolve_counter, session_cost
from window_budget.contract import (
    BudgetPolicy,
    CondenseResult,
    Model,
    SyncCompleteFn,
    TokenCounter,
)
from window_budget.digest import is_digest
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    CompactionSummaryMessage,
)
from window_budget.tools.timeline import Timeline, plot_timeline, simulate

if TYPE_CHECKING:
    from window_budget.budget import Calibration

from window_budget.tools._fact_plots import ledgers_over, plot_fact_survival
from window_budget.tools._plot_base import PALETTE, _figure, _thousands

__all__ = [
    "UsagePoint",
    "compare_policies",
    "ledgers_over",
    "plot_condense_results",
    "plot_estimate_vs_reported",
    "plot_fact_survival",
    "plot_policies",
    "plot_session",
    "usage_points",
]

CounterLike = TokenCounter | Callable[[str], int] | str | None
"""What :func:`plot_estimate_vs_reported` takes for a counter (see ``resolve_counter``)."""


def plot_session(timeline: Timeline, *, title: str = "") -> Any:
    """The context over a session: the window, the limit, each compaction and what it freed.

    Draws :func:`~window_budget.tools.timeline.plot_timeline`'s chart and labels each
    compaction's arrow with the tokens it freed.

    Raises:
        ImportError: matplotlib is missing; the message names the extra to install.

    """
    fig = plot_timeline(timeline, title=title)
    ax = fig.axes[0]
    for f in timeline.firings:
        freed = f.tokens_before - f.tokens_after
        ax.annotate(
            f"−{freed:,}",
            xy=(f.step + 1, (f.tokens_before + f.tokens_after) / 2),
            xytext=(4, 0),
            textcoords="offset points",
            fontsize=7.5,
            color="#1f6fb4",
            va="center",
        )
    return fig


def compare_policies(
    messages: Sequence[AgentMessage],
    model: Model,
    policies: Mapping[str, BudgetPolicy],
    *,
    counter: TokenCounter | None = None,
    pinned_tokens: int = 0,
    complete_sync: SyncCompleteFn | None = None,
) -> dict[str, Timeline]:
    """Replay one session under each of ``policies`` (by label); the replays, by label.

    Each replay is :func:`~window_budget.tools.timeline.simulate`: the message list is not
    changed, and the digest is the network-free one unless ``complete_sync`` is given.

    Raises:
        BudgetError: under some policy the context cannot be made to fit.

    """
    return {
        label: simulate(
            messages,
            model,
            policy,
            counter=counter,
            pinned_tokens=pinned_tokens,
            complete_sync=complete_sync,
        )
        for label, policy in policies.items()
    }


def plot_policies(timelines: Mapping[str, Timeline], *, title: str = "") -> Any:
    """The same session under several policies on one chart (from :func:`compare_policies`).

    Each policy is one colour: its context line, its limit (dashed) and a marker where
    its gate fired; the legend says how many compactions each made.

    Raises:
        ImportError: matplotlib is missing; the message names the extra to install.
        ValueError: ``timelines`` is empty.

    """
    if not timelines:
        raise ValueError("plot_policies needs at least one replay; got none")
    fig = _figure(figsize=(10, 5.2), dpi=110)
    ax = fig.subplots()
    first = next(iter(timelines.values()))
    xs = list(range(1, len(first.cumulative) + 1))
    ax.plot(
        xs,
        first.cumulative,
        color="#9a9a9a",
        linestyle="--",
        linewidth=1.2,
        label="transcript, never condensed",
    )
    windows = sorted({t.window for t in timelines.values()})
    for window in windows:
        ax.axhline(window, color="#c0392b", linewidth=1.4, label=f"context window ({window:,})")
    for k, (label, t) in enumerate(timelines.items()):
        colour = PALETTE[k % len(PALETTE)]
        steps = list(range(1, len(t.context) + 1))
        ax.plot(
            steps,
            t.context,
            color=colour,
            linewidth=1.8,
            label=f"{label}: {len(t.firings)} compactions",
        )
        ax.axhline(t.limit, color=colour, linestyle=":", linewidth=1.0)
        if t.firings:
            ax.scatter(
                [f.step + 1 for f in t.firings],
                [f.tokens_before for f in t.firings],
                marker="v",
                s=30,
                color=colour,
                zorder=5,
            )
    top = max(
        [*windows, *first.cumulative[-1:], *(max(t.context, default=0) for t in timelines.values())]
    )
    ax.set_ylim(0, top * 1.08)
    ax.set_xlim(0.5, max(len(xs), 1) + 0.5)
    ax.set_xlabel("message")
    ax.set_ylabel("tokens (estimated)")
    _thousands(ax)
    ax.set_title(
        title or "one session under several policies (dotted: each policy's limit)", fontsize=11
    )
    ax.grid(alpha=0.25)
    ax.legend(loc="upper left", fontsize=8, framealpha=0.9)
    fig.tight_layout()
    return fig


def plot_condense_results(
    results: Sequence[CondenseResult], *, window: int | None = None, title: str = ""
) -> Any:
    """What a live run did, one condense run per model call: stored size, size sent, limit.

    For each call the grey line is the thread as stored before the call
    (``tokens_before``), the blue line what the model was sent (``tokens_after``); each
    compaction is marked and labelled with the tokens it freed. ``window`` adds the
    window's line.

    Raises:
        ImportError: matplotlib is missing; the message names the extra to install.
        ValueError: ``results`` is empty.

    """
    if not results:
        raise ValueError("plot_condense_results needs at least one result; got none")
    fig = _figure(figsize=(10, 4.8), dpi=110)
    ax = fig.subplots()
    xs = list(range(1, len(results) + 1))
    ax.plot(
        xs,
        [r.tokens_before for r in results],
        color="#9a9a9a",
        linestyle="--",
        linewidth=1.3,
        label="thread as stored, before the call",
    )
    ax.plot(
        xs,
        [r.tokens_after for r in results],
        color="#1f6fb4",
        linewidth=2.0,
        label="sent to the model",
    )
    limits = sorted({r.limit for r in results})
    for k, limit in enumerate(limits):
        ax.axhline(
            limit,
            color="#e67e22",
            linestyle="-.",
            linewidth=1.3,
            label=f"trigger limit ({limit:,.0f})" if k == 0 else None,
        )
    if window is not None:
        ax.axhline(window, color="#c0392b", linewidth=1.5, label=f"context window ({window:,})")
    fired = [(x, r) for x, r in zip(xs, results, strict=True) if r.changed]
    if fired:
        ax.scatter(
            [x for x, _ in fired],
            [r.tokens_before for _, r in fired],
            marker="v",
            s=40,
            color="#c0392b",
            zorder=5,
            label="compaction",
        )
    for x, r in fired:
        ax.annotate(
            f"−{r.tokens_before - r.tokens_after:,}",
            xy=(x, r.tokens_before),
            xytext=(3, 5),
            textcoords="offset points",
            fontsize=7.5,
            color="#1f6fb4",
        )
    top = max([*(r.tokens_before for r in results), *limits, window or 0])
    ax.set_ylim(0, top * 1.12)
    ax.set_xlim(0.5, len(xs) + 0.5)
    ax.set_xlabel("model call")
    ax.set_ylabel("tokens (estimated)")
    _thousands(ax)
    ax.set_title(title or f"{len(fired)} compactions over {len(results)} model calls", fontsize=11)
    ax.grid(alpha=0.25)
    ax.legend(loc="upper left", fontsize=8, framealpha=0.9)
    fig.tight_layout()
    return fig


@dataclass(frozen=True, slots=True)
class UsagePoint:
    """One request of a session: what the library estimates and what the provider reported."""

    index: int
    """Index of the assistant message that carries the usage."""
    estimated: int
    """Estimate of what that request held: the messages since the last compaction before
    it, plus the pinned tokens."""
    reported: int
    """The provider's figure for the same request: input plus cache read and creation."""

    @property
    def ratio(self) -> float:
        """``estimated / reported``: above 1 the estimate errs high (the safe side)."""
        return self.estimated / self.reported if self.reported else float("inf")


def usage_points(
    messages: Sequence[AgentMessage], *, counter: TokenCounter | None = None, pinned_tokens: int = 0
) -> list[UsagePoint]:
    """Pair each provider usage figure in ``messages`` with the estimate of the same request.

    A request holds the messages before the reply. After a compaction the session's own
    summary (a compaction summary or a digest) starts the context again, so the estimate
    restarts there — the model never saw what came before it. A provider's figure also
    counts the system prompt and tool definitions; pass their size as ``pinned_tokens``
    when you know it (``0`` leaves the gap visible).
    """
    points: list[UsagePoint] = []
    running = pinned_tokens
    for i, message in enumerate(messages):
        if isinstance(message, CompactionSummaryMessage) or is_digest(message):
            running = pinned_tokens
        if (
            isinstance(message, AssistantMessage)
            and message.usage is not None
            and message.usage.prompt_tokens > 0
        ):
            points.append(UsagePoint(i, running, message.usage.prompt_tokens))
        running += estimate_message_tokens(message, counter)
    return points


def plot_estimate_vs_reported(
    messages: Sequence[AgentMessage],
    *,
    counters: Mapping[str, CounterLike] | None = None,
    pinned_tokens: int = 0,
    calibration: Calibration | None = None,
    title: str = "",
) -> Any:
    """The estimate of each request against the provider's figure, and their ratio.

    ``counters`` maps a label to anything :func:`~window_budget.budget._counters.resolve_counter`
    takes (a
    counter, a ``str -> int`` function, ``"tiktoken"``; ``None`` is the heuristic); the
    default draws the heuristic alone. A ``calibration`` (from
    :func:`~window_budget.budget._calibrate.calibrate`, learned with the heuristic) adds
    the heuristic as the provider would count it: scaled by its ratio, plus its overhead
    (``pinned_tokens`` is not added to that line: the overhead stands for it). The lower
    panel shows ``estimate / reported``: above 1 the library errs on the safe side. The
    default title says what the requests cost at models.dev's prices ("cost unknown" when
    a request's model or price is not in the data).

    Raises:
        ImportError: matplotlib is missing; the message names the extra to install.
        ValueError: no assistant message in ``messages`` carries provider usage.

    """
    runs = {
        label: usage_points(messages, counter=resolve_counter(c), pinned_tokens=pinned_tokens)
        for label, c in (counters or {"heuristic estimate": None}).items()
    }
    if calibration is not None:
        runs[f"calibrated (×{calibration.ratio:.2f} + {calibration.overhead_tokens:,})"] = [
            UsagePoint(p.index, calibration.apply(p.estimated), p.reported)
            for p in usage_points(messages)
        ]
    first = next(iter(runs.values()), [])
    if not first:
        raise ValueError(
            "no assistant message carries provider usage, so there is nothing "
            "to compare the estimate with"
        )
    fig = _figure(figsize=(10, 5.6), dpi=110)
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1.2]})
    xs = [p.index + 1 for p in first]
    top.plot(
        xs,
        [p.reported for p in first],
        color="#222222",
        linewidth=2.0,
        marker="o",
        markersize=2.5,
        label="provider reported (input + cache)",
    )
    for k, (label, points) in enumerate(runs.items()):
        colour = PALETTE[k % len(PALETTE)]
        top.plot(xs, [p.estimated for p in points], color=colour, linewidth=1.5, label=label)
        bottom.plot(xs, [p.ratio for p in points], color=colour, linewidth=1.3)
    bottom.axhline(1.0, color="#222222", linewidth=0.8)
    top.set_ylabel("tokens in the request")
    _thousands(top)
    top.grid(alpha=0.25)
    top.legend(loc="upper left", fontsize=8, framealpha=0.9)
    gap = f", {pinned_tokens:,} pinned tokens added" if pinned_tokens else ""
    cost = session_cost(messages).total
    spent = f", {'cost unknown' if cost is None else format_usd(cost)} at models.dev prices"
    top.set_title(
        title or f"estimate against provider-reported usage ({len(first)} requests{spent}{gap})",
        fontsize=11,
    )
    bottom.set_ylabel("estimate / reported")
    bottom.set_xlabel("message")
    bottom.grid(alpha=0.25)
    fig.tight_layout()
    return fig
