"""Pictures of a session: what each figure draws, and the numbers behind it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from window_budget import (
    AssistantMessage,
    BudgetPolicy,
    CompactionSummaryMessage,
    Model,
    ToolCallBlock,
    ToolResultMessage,
    Usage,
    UserMessage,
    create_condenser,
)
from window_budget.budget import estimate_message_tokens
from window_budget.tools.plots import (
    compare_policies,
    ledgers_over,
    plot_condense_results,
    plot_estimate_vs_reported,
    plot_fact_survival,
    plot_policies,
    plot_session,
    usage_points,
)
from window_budget.tools.timeline import simulate

pytest.importorskip("matplotlib")


def session(turns: int = 30) -> list:
    msgs: list = []
    for i in range(turns):
        msgs.append(UserMessage(f"turn {i}: please look at file_{i}.py " + "word " * 120))
        msgs.append(
            AssistantMessage(
                [ToolCallBlock(f"c{i}", "read", {"path": f"file_{i}.py"})],
                usage=Usage(100 * i + 7, 20, cache_read_tokens=50),
            )
        )
        msgs.append(ToolResultMessage(f"c{i}", "read", "line of code\n" * 60))
    return msgs


def test_usage_points_pair_each_request_with_the_estimate_of_what_it_held() -> None:
    msgs = session(5)
    points = usage_points(msgs, pinned_tokens=300)
    assert [p.index for p in points] == [1, 4, 7, 10, 13]
    for p in points:
        assert p.estimated == 300 + sum(estimate_message_tokens(m) for m in msgs[: p.index])
        assert p.reported == msgs[p.index].usage.prompt_tokens
        assert p.ratio == p.estimated / p.reported


def test_usage_points_restart_after_a_compaction_the_model_saw() -> None:
    summary = CompactionSummaryMessage("earlier work: read file_0..file_4", 9000)
    msgs = [*session(3), summary, *session(2)]
    points = usage_points(msgs)
    after = [p for p in points if p.index > 9]
    first = after[0]
    assert first.estimated == sum(estimate_message_tokens(m) for m in msgs[9 : first.index])


def test_usage_points_skip_replies_without_a_prompt_figure() -> None:
    msgs = [
        UserMessage("hi"),
        AssistantMessage("hello", usage=Usage(0, 5)),
        AssistantMessage("again"),
    ]
    assert usage_points(msgs) == []
    with pytest.raises(ValueError, match="no assistant message carries provider usage"):
        plot_estimate_vs_reported(msgs)


def test_estimate_figure_draws_reported_each_counter_and_the_ratio() -> None:
    msgs = session(8)
    fig = plot_estimate_vs_reported(
        msgs, counters={"heuristic": None, "tight": len}, pinned_tokens=10
    )
    top, bottom = fig.axes
    labels = [line.get_label() for line in top.get_lines()]
    assert labels == ["provider reported (input + cache)", "heuristic", "tight"]
    ratios = list(bottom.get_lines()[0].get_ydata())
    assert ratios == [p.ratio for p in usage_points(msgs, pinned_tokens=10)]


def test_session_figure_labels_every_compaction_with_the_tokens_it_freed() -> None:
    timeline = simulate(
        session(), Model("m", 6000), BudgetPolicy(keep_recent=1500, reserve_tokens=0)
    )
    assert len(timeline.firings) >= 2
    fig = plot_session(timeline, title="demo")
    texts = {t.get_text() for t in fig.axes[0].texts}
    for f in timeline.firings:
        assert f"−{f.tokens_before - f.tokens_after:,}" in texts


def test_policies_share_one_chart_and_the_legend_counts_compactions() -> None:
    msgs = session()
    before = list(msgs)
    runs = compare_policies(
        msgs,
        Model("m", 8000),
        {
            "default": BudgetPolicy(reserve_tokens=0, keep_recent=2000),
            "early": BudgetPolicy(reserve_tokens=0, keep_recent=2000, trigger_ratio=0.4),
        },
    )
    assert msgs == before
    assert len(runs["early"].firings) > len(runs["default"].firings) > 0
    fig = plot_policies(runs)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    for label, t in runs.items():
        assert f"{label}: {len(t.firings)} compactions" in legend
    with pytest.raises(ValueError, match="at least one replay"):
        plot_policies({})


def test_importing_the_plots_module_does_not_import_matplotlib() -> None:
    code = (
        "import sys, window_budget, window_budget.tools.plots, window_budget.tools.display; "
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_condense_results_figure_marks_each_compaction_a_live_run_made() -> None:
    condenser = create_condenser(
        model=Model("m", 5000), policy=BudgetPolicy(keep_recent=1200, reserve_tokens=0)
    )
    thread: list = []
    results = []
    for msg in session(20):
        thread.append(msg)
        result = condenser.run_sync(thread)
        results.append(result)
        thread = list(result.messages)
    fired = [r for r in results if r.changed]
    assert len(fired) >= 2
    fig = plot_condense_results(results, window=5000)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == [
        f"−{r.tokens_before - r.tokens_after:,}" for r in fired
    ]
    sent = list(ax.get_lines()[1].get_ydata())
    assert sent == [r.tokens_after for r in results]
    with pytest.raises(ValueError, match="at least one result"):
        plot_condense_results([])


def test_fact_survival_stacks_each_ledger_by_the_compaction_that_recorded_it() -> None:
    msgs = session(40)
    ledgers = ledgers_over(msgs, Model("m", 6000), BudgetPolicy(keep_recent=1500, reserve_tokens=0))
    assert len(ledgers) >= 3
    assert [ledger.generations for ledger in ledgers] == list(range(1, len(ledgers) + 1))
    fig = plot_fact_survival(ledgers)
    left = fig.axes[0]
    tops: dict[float, float] = {}
    for bar in left.patches:
        x = round(bar.get_x() + bar.get_width() / 2)
        tops[x] = max(tops.get(x, 0.0), bar.get_y() + bar.get_height())
    assert [tops[x] for x in range(1, len(ledgers) + 1)] == [len(lg.facts) for lg in ledgers]
    with pytest.raises(ValueError, match="at least one ledger"):
        plot_fact_survival([])


def test_a_calibration_adds_the_estimate_as_the_provider_would_count_it() -> None:
    from window_budget.budget import calibrate

    msgs = session(12)
    cal = calibrate(msgs)
    assert cal is not None
    fig = plot_estimate_vs_reported(msgs, calibration=cal)
    top = fig.axes[0]
    lines = {line.get_label(): list(line.get_ydata()) for line in top.get_lines()}
    label = f"calibrated (×{cal.ratio:.2f} + {cal.overhead_tokens:,})"
    assert lines[label] == [cal.apply(p.estimated) for p in usage_points(msgs)]


def test_a_masking_pass_keeps_the_replay_aligned_with_the_transcript() -> None:
    from window_budget import (
        AssistantMessage,
        BudgetPolicy,
        ToolCallBlock,
        ToolResultMessage,
        UserMessage,
    )

    msgs: list = [UserMessage("Build every part.")]
    for i in range(120):
        output = "line of build output\n" * 300 if i % 3 == 0 else f"part {i} " + "y" * 1500
        msgs += [
            AssistantMessage((ToolCallBlock(f"c{i}", "bash", {"command": f"make {i}"}),)),
            ToolResultMessage(f"c{i}", "bash", output),
            UserMessage(f"next {i}"),
        ]
    timeline = simulate(msgs, Model("m", 40_000), BudgetPolicy(keep_recent=3000))
    # The same replay by hand: where each digest's kept tail starts in the transcript.
    condenser = create_condenser(model=Model("m", 40_000), policy=BudgetPolicy(keep_recent=3000))
    context: list = []
    starts: list[int] = []
    kinds: list[str] = []
    for m in msgs:
        result = condenser.run_sync([*context, m])
        if result.changed:
            kinds.append(result.reason)
            if result.summary is not None:
                first = result.messages[1]
                starts.append(next(i for i, x in enumerate(msgs) if x is first))
        context = list(result.messages)
    assert "masked" in kinds
    assert "condensed" in kinds
    digests = [f.cut for f, kind in zip(timeline.firings, kinds, strict=True) if kind != "masked"]
    assert digests == starts
