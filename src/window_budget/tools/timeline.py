"""Replay a transcript through the condenser as it grows, and draw what happened.

:func:`simulate` feeds the messages one at a time to a condenser, the way an agent's
loop would, and records the context's size after each one, every point where the gate
fired and where each cut fell. It is pure (the digest is the network-free one unless a
sync completer is given). :func:`plot_timeline` draws the result with matplotlib, the
optional ``[plot]`` extra.

>>> from window_budget import Model, UserMessage
>>> msgs = [UserMessage("x" * 3600) for _ in range(12)]
>>> t = simulate(msgs, Model("m", 8000), BudgetPolicy(keep_recent=2000, reserve_tokens=0))
>>> len(t.context) == len(msgs), t.firings[0].step
(True, 5)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import accumulate
from pathlib import Path
from typing import Any

from window_budget.budget import cached_estimates
from window_budget.contract import BudgetPolicy, Model, SyncCompleteFn, TokenCounter
from window_budget.messages import AgentMessage, AssistantMessage
from window_budget.pipeline import DEFAULT_POLICY, budget_limit, create_condenser

__all__ = ["Firing", "Timeline", "plot_timeline", "simulate"]


@dataclass(frozen=True, slots=True)
class Firing:
    """One point where the gate fired during a replay."""

    step: int
    """Index of the message whose arrival pushed the context over the limit."""
    tokens_before: int
    """Context size when the gate fired."""
    tokens_after: int
    """Context size once the head was folded into the digest."""
    cut: int
    """Index in the original transcript of the first message kept verbatim."""
    dropped: int
    """Messages folded into the digest at this firing (an earlier digest counts as one)."""


@dataclass(frozen=True, slots=True)
class Timeline:
    """What a replay saw: sizes after each message, and every firing."""

    cumulative: tuple[int, ...]
    """Tokens of the uncondensed transcript after each message (pinned tokens included)."""
    context: tuple[int, ...]
    """Tokens the condensed context holds after each message (pinned tokens included)."""
    window: int
    """The context window."""
    limit: float
    """The gate's limit (window less reserve, times the trigger ratio)."""
    firings: tuple[Firing, ...]
    """Every point the gate fired, in order."""
    pinned: int = 0
    """Tokens of system prompts counted on top of the messages."""
    final: tuple[AgentMessage, ...] = ()
    """The condensed context after the last message."""


def simulate(
    messages: Sequence[AgentMessage],
    model: Model,
    policy: BudgetPolicy = DEFAULT_POLICY,
    *,
    counter: TokenCounter | None = None,
    pinned_tokens: int = 0,
    complete_sync: SyncCompleteFn | None = None,
) -> Timeline:
    """Replay ``messages`` through a condenser, one message at a time.

    The gate is checked after every message. Provider usage figures are ignored: they
    measured the original, uncondensed context, so every size here is an estimate. Each
    message is estimated once and the condenser runs only where the gate fires, so the
    replay is one pass over the transcript.

    Raises:
        BudgetError: at some point the context cannot be made to fit (a message larger
            than the window, or a system prompt that leaves no room).

    """
    # A usage figure describes the original run's context, not the replay's.
    plain = [
        replace(m, usage=None) if isinstance(m, AssistantMessage) and m.usage else m
        for m in messages
    ]
    condenser = create_condenser(
        model=Model(model.id, model.context_window),
        policy=policy,
        counter=counter,
        complete_sync=complete_sync,
    )
    limit = budget_limit(model, policy)
    costs = cached_estimates(plain, counter)
    cumulative = [t + pinned_tokens for t in accumulate(costs)]
    context: list[AgentMessage] = []
    origin: list[int] = []  # index in ``messages`` of each context entry; -1 for the digest
    sizes: list[int] = []
    firings: list[Firing] = []
    size = pinned_tokens  # what the condenser's gate would measure for ``context``
    for i, msg in enumerate(plain):
        context.append(msg)
        origin.append(i)
        size += costs[i]
        if size <= limit:
            # Under budget the condenser returns its input untouched (usage figures are
            # stripped, so its gate is this very sum): skip the call, keep the replay linear.
            sizes.append(size)
            continue
        result = condenser.run_sync(context, pinned_tokens=pinned_tokens)
        if result.messages is not context:
            cut = result.plan.cut
            firings.append(
                Firing(
                    i,
                    result.tokens_before,
                    result.tokens_after,
                    origin[cut] if cut < len(origin) else i + 1,
                    cut,
                )
            )
            if result.summary is not None:  # masking or shortening keeps every position
                origin = [-1, *origin[cut:]]
            context = list(result.messages)
        size = result.tokens_after
        sizes.append(size)
    return Timeline(
        tuple(cumulative),
        tuple(sizes),
        model.context_window,
        limit,
        tuple(firings),
        pinned_tokens,
        tuple(context),
    )


def plot_timeline(timeline: Timeline, path: str | Path | None = None, *, title: str = "") -> Any:
    """Draw a :class:`Timeline` with matplotlib; save a PNG when ``path`` is given.

    Returns the matplotlib ``Figure``. No pyplot and no GUI backend are involved (the
    figure renders with Agg), so it works headless and leaves a notebook's backend alone.
    ``title`` is plain text: a ``$`` in a file name is not mathtext.

    Raises:
        ImportError: matplotlib is missing; the message names the extra to install.

    """
    try:
        from matplotlib.figure import Figure
        from matplotlib.ticker import FuncFormatter
    except ImportError as exc:
        raise ImportError('plotting needs matplotlib; pip install "window-budget[plot]"') from exc

    n = len(timeline.context)
    xs = list(range(1, n + 1))
    fig = Figure(figsize=(10, 5.2), dpi=110)
    ax = fig.subplots()
    ax.plot(
        xs,
        timeline.cumulative,
        color="#9a9a9a",
        linestyle="--",
        linewidth=1.4,
        label="transcript, never condensed",
    )
    ax.plot(
        xs, timeline.context, color="#1f6fb4", linewidth=2.0, label="context with window-budget"
    )
    ax.axhline(
        timeline.window,
        color="#c0392b",
        linewidth=1.6,
        label=f"context window ({timeline.window:,})",
    )
    ax.axhline(
        timeline.limit,
        color="#e67e22",
        linestyle="-.",
        linewidth=1.4,
        label=f"trigger limit ({timeline.limit:,.0f})",
    )
    _draw_firings(ax, timeline)
    top = max([timeline.window, *timeline.cumulative[-1:], *timeline.context])
    ax.set_ylim(0, top * 1.08)
    ax.set_xlim(0.5, max(n, 1) + 0.5)
    ax.set_xlabel("message")
    ax.set_ylabel("tokens (estimated)")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    heading = title or "context size as the conversation grows"
    # The title is often a file name: a ``$`` in it is a dollar sign, not mathtext.
    ax.set_title(
        f"{heading}\n{len(timeline.firings)} condensations over {n} messages",
        fontsize=11,
        parse_math=False,
    )
    ax.grid(alpha=0.25)
    ax.legend(loc="upper left", fontsize=8, framealpha=0.9)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, format="png")
    return fig


def _draw_firings(ax: Any, timeline: Timeline) -> None:
    """Each firing: a line at its cut, an arrow from the size before to the size after."""
    for k, f in enumerate(timeline.firings):
        ax.axvline(
            f.cut + 0.5,
            color="#27ae60",
            linestyle=":",
            linewidth=1.1,
            label="cut (first message kept verbatim)" if k == 0 else None,
        )
        ax.annotate(
            "",
            xy=(f.step + 1, f.tokens_after),
            xytext=(f.step + 1, f.tokens_before),
            arrowprops={"arrowstyle": "->", "color": "#1f6fb4", "lw": 1.0},
        )
    if timeline.firings:
        ax.scatter(
            [f.step + 1 for f in timeline.firings],
            [f.tokens_before for f in timeline.firings],
            marker="v",
            s=46,
            color="#c0392b",
            zorder=5,
            label="gate fires",
        )
