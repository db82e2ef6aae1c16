"""Self-calibration: the ratio and overhead a provider counts, learned from reported usage."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from window_budget import (
    AssistantMessage,
    CompactionSummaryMessage,
    Model,
    ToolResultMessage,
    Usage,
    UserMessage,
    estimate_tokens,
)
from window_budget.budget import (
    MAX_RATIO,
    Calibration,
    calibrate,
    calibrate_many,
    estimate_message_tokens,
    model_key,
)
from window_budget.pipeline import estimate_context

MODEL = Model("claude-sonnet-4-5-20250929", 200_000)


def _session(
    ratio: float,
    overhead: int,
    sizes: list[int],
    *,
    model: str = MODEL.id,
    failed_at: int | None = None,
) -> list:
    """A tool loop whose provider counts ``ratio`` x the estimate plus ``overhead``."""
    msgs: list = [UserMessage("look at the repository and fix the failing test")]
    for i, size in enumerate(sizes):
        before = estimate_tokens(msgs)
        if i == failed_at:
            msgs.append(AssistantMessage("", usage=Usage(0, 0), model=model, stop_reason="aborted"))
        prompt = overhead + round(ratio * estimate_tokens(msgs))
        msgs.append(
            AssistantMessage(
                f"reading file {i}", usage=Usage(prompt, 30), model=model, stop_reason="toolUse"
            )
        )
        assert before <= estimate_tokens(msgs)
        msgs.append(ToolResultMessage(f"t{i}", "read", f"line {i}: value = compute({i})\n" * size))
    return msgs


@settings(max_examples=60, deadline=None)
@given(
    st.floats(0.6, 1.8),
    st.integers(0, 6000),
    st.lists(st.integers(5, 400), min_size=4, max_size=30),
)
def test_a_constant_ratio_and_overhead_are_recovered(
    ratio: float, overhead: int, sizes: list[int]
) -> None:
    cal = calibrate(_session(ratio, overhead, sizes))
    assert cal is not None
    assert cal.ratio == pytest.approx(ratio, rel=0.02)
    assert abs(cal.overhead_tokens - overhead) <= 0.02 * overhead + 50
    assert cal.model == "claude-sonnet-4-5"


def test_one_wild_figure_does_not_move_the_median() -> None:
    msgs = _session(1.2, 2000, [100] * 12)
    wild = msgs[13]
    assert isinstance(wild, AssistantMessage)
    assert wild.usage is not None
    msgs[13] = AssistantMessage(
        wild.content, usage=Usage(wild.usage.input_tokens * 3, 30), model=wild.model
    )
    cal = calibrate(msgs)
    assert cal is not None
    assert cal.ratio == pytest.approx(1.2, rel=0.02)


def test_the_ratio_is_bounded() -> None:
    cal = calibrate(_session(5.0, 0, [50] * 8))
    assert cal is not None
    assert cal.ratio == MAX_RATIO
    with pytest.raises(ValueError, match=r"Calibration\.ratio"):
        Calibration(ratio=3.0)
    with pytest.raises(ValueError, match=r"Calibration\.overhead_tokens"):
        Calibration(overhead_tokens=-1)


def test_failed_replies_are_skipped() -> None:
    cal = calibrate(_session(1.3, 1500, [80] * 8, failed_at=4))
    assert cal is not None
    assert cal.ratio == pytest.approx(1.3, rel=0.02)


def test_growth_across_a_compaction_is_not_growth() -> None:
    head = _session(1.25, 1000, [200] * 6)
    # After the compaction the prompt is much smaller: a naive ratio would go negative or wild.
    tail = _session(1.25, 1000, [200] * 6)[1:]
    msgs = [*head, CompactionSummaryMessage("summary of the work so far", 40_000), *tail]
    cal = calibrate(msgs)
    assert cal is not None
    assert cal.samples == 5 + 5  # none across the summary
    assert cal.ratio == pytest.approx(1.25, rel=0.02)


def test_too_few_calls_learn_nothing() -> None:
    assert calibrate(_session(1.2, 0, [100, 100])) is None
    assert calibrate([UserMessage("hi"), AssistantMessage("hello")]) is None


def test_figures_of_another_model_are_not_mixed_in() -> None:
    claude = _session(1.2, 2000, [100] * 6)
    gpt = _session(0.8, 500, [100] * 6, model="gpt-4o-2024-08-06")
    mixed = [*claude, *gpt[1:]]
    cal = calibrate(mixed, model="anthropic/claude-sonnet-4-5")
    assert cal is not None
    assert cal.ratio == pytest.approx(1.2, rel=0.02)
    table = calibrate_many([mixed, _session(0.8, 500, [60] * 5, model="gpt-4o")])
    assert set(table) == {"claude-sonnet-4-5", "gpt-4o"}
    assert table["gpt-4o"].ratio == pytest.approx(0.8, rel=0.03)
    assert table[model_key("claude-sonnet-4-5-20250929")] == cal


def test_the_gate_applies_it_to_what_no_figure_covers() -> None:
    cal = Calibration(model="claude-sonnet-4-5", ratio=1.25, overhead_tokens=3000, samples=9)
    msgs = [UserMessage("x " * 400), AssistantMessage("ok", usage=Usage(9000, 100), model=MODEL.id)]
    after = [ToolResultMessage("t", "read", "y " * 500)]
    anchored = estimate_context([*msgs, *after], MODEL, calibration=cal)
    assert anchored.anchored
    assert anchored.context_tokens == 9100 + round(1.25 * estimate_tokens(after))
    # The same model without usage: the whole estimate is calibrated, overhead included.
    bare = [UserMessage("x " * 400), AssistantMessage("ok"), *after]
    plain = estimate_context(bare, MODEL, calibration=cal)
    assert not plain.anchored
    assert plain.context_tokens == round(1.25 * estimate_tokens(bare)) + 3000
    assert estimate_context(bare, MODEL).context_tokens == estimate_tokens(bare)


def test_calibration_never_changes_the_transcript() -> None:
    msgs = _session(1.1, 100, [50] * 5)
    snapshot = list(msgs)
    calibrate(msgs)
    calibrate_many([msgs])
    assert msgs == snapshot
    assert [estimate_message_tokens(m) for m in msgs] == [
        estimate_message_tokens(m) for m in snapshot
    ]


def test_figures_on_turns_a_compaction_kept_are_not_learned_from() -> None:
    tail = _session(1.25, 1000, [200] * 6)[1:]
    # Two kept turns whose figures measured the long transcript before the compaction.
    kept = [
        AssistantMessage("earlier", usage=Usage(150_000, 30), model=MODEL.id),
        ToolResultMessage("k", "read", "old output " * 50),
    ]
    msgs = [CompactionSummaryMessage("summary", 150_000, kept_count=2), *kept, *tail]
    cal = calibrate(msgs)
    assert cal is not None
    assert cal.ratio == pytest.approx(1.25, rel=0.02)


def test_a_pinned_system_prompt_is_not_counted_as_overhead_twice() -> None:
    msgs = _session(1.0, 4000, [100] * 6)
    assert calibrate(msgs).overhead_tokens == pytest.approx(4000, abs=40)  # type: ignore[union-attr]
    pinned = calibrate(msgs, pinned_tokens=3000)
    assert pinned is not None
    assert pinned.overhead_tokens == pytest.approx(1000, abs=40)
