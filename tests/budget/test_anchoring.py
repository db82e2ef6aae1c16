"""Which reported usage figure may anchor the estimate: skipped failures, compactions."""

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
from window_budget.budget import TokenLedger
from window_budget.budget._anchor import anchor_index
from window_budget.messages import message_from_dict, message_to_dict
from window_budget.pipeline import estimate_context

MODEL = Model("claude-sonnet-4-5", 200_000)


def _reply(text: str, prompt: int, *, stop: str | None = "stop") -> AssistantMessage:
    return AssistantMessage(
        text, usage=Usage(prompt, 20), model="claude-sonnet-4-5", stop_reason=stop
    )


def _both(messages: list) -> tuple[int | None, int | None]:
    return anchor_index(messages, MODEL), TokenLedger().anchor(messages, MODEL)


@pytest.mark.parametrize(
    "failed",
    [
        AssistantMessage("", usage=Usage(0, 0), model="claude-sonnet-4-5", stop_reason="aborted"),
        AssistantMessage("", usage=Usage(0, 0), model="<synthetic>"),
        AssistantMessage(
            "partial", usage=Usage(12, 0), model="claude-sonnet-4-5", stop_reason="error"
        ),
    ],
)
def test_a_failed_reply_does_not_drop_the_previous_anchor(failed: AssistantMessage) -> None:
    good = _reply("ok", 5000)
    after = [UserMessage("try again " * 20), failed, UserMessage("and again")]
    msgs = [UserMessage("hi"), good, *after]
    assert _both(msgs) == (1, 1)
    est = estimate_context(msgs, MODEL)
    assert est.anchored
    assert est.context_tokens == 5020 + estimate_tokens(after)
    assert TokenLedger().context(msgs, MODEL) == est


def test_only_failed_replies_leave_the_estimate_unanchored() -> None:
    msgs = [UserMessage("hi"), AssistantMessage("", usage=Usage(0, 0), stop_reason="aborted")]
    assert _both(msgs) == (None, None)
    assert not estimate_context(msgs, MODEL).anchored


def _compacted(kept: int | None) -> list:
    # What a pi file reads as after a compaction that kept the last exchange: the summary,
    # then the kept turns whose usage measured the long transcript before it.
    return [
        CompactionSummaryMessage("goal: ship the parser", 150_000, kept_count=kept),
        UserMessage("fix the failing test"),
        _reply("looking", 150_000),
        ToolResultMessage("t1", "read", "file body " * 30),
    ]


def test_usage_on_turns_kept_by_a_compaction_never_anchors() -> None:
    msgs = _compacted(kept=3)
    assert _both(msgs) == (None, None)
    est = estimate_context(msgs, MODEL)
    assert not est.anchored
    assert est.context_tokens == estimate_tokens(msgs)


def test_usage_after_the_kept_turns_anchors_again() -> None:
    msgs = [*_compacted(kept=3), _reply("fixed", 2_000)]
    assert _both(msgs) == (4, 4)
    assert estimate_context(msgs, MODEL).context_tokens == 2_020


def test_a_figure_after_an_inline_compaction_is_judged_by_what_it_measured() -> None:
    # A whole file read with an earlier compaction inside: the figure after the summary
    # measured the summary and what followed, not the long history before it.
    history = [UserMessage("old work " * 4000), _reply("done", 9_000)]
    after = [
        CompactionSummaryMessage("goal: ship", 9_000, kept_count=0),
        UserMessage("next task"),
        _reply("on it", 600),
    ]
    msgs = [*history, *after]
    assert _both(msgs) == (4, 4)
    assert estimate_context(msgs, MODEL).context_tokens == 620


def test_compaction_kept_count_survives_a_round_trip() -> None:
    msg = CompactionSummaryMessage("s", 10, kept_count=3)
    assert message_from_dict(message_to_dict(msg)) == msg
    assert message_from_dict(message_to_dict(CompactionSummaryMessage("s"))).kept_count is None
    hostile = {"role": "compactionSummary", "summary": "s", "keptCount": "lots"}
    assert message_from_dict(hostile).kept_count is None  # type: ignore[union-attr]


_turn = st.one_of(
    st.builds(UserMessage, st.text(max_size=40)),
    st.builds(UserMessage, st.integers(0, 600).map(lambda n: "word " * n)),
    st.builds(
        lambda p, stop: _reply("r", p, stop=stop),
        st.integers(0, 400),
        st.sampled_from(["stop", "error", "aborted", None]),
    ),
    st.builds(
        lambda k: CompactionSummaryMessage("summary", kept_count=k), st.none() | st.integers(0, 4)
    ),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_turn, max_size=12))
def test_gate_and_ledger_choose_the_same_anchor(msgs: list) -> None:
    chosen = anchor_index(msgs, MODEL)
    assert chosen == TokenLedger().anchor(msgs, MODEL)
    if chosen is not None:
        usage = msgs[chosen].usage
        assert usage.prompt_tokens > 0
        assert msgs[chosen].stop_reason not in ("error", "aborted")
