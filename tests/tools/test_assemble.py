from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from window_budget import ConfigError
from window_budget.budget import CallableCounter, HeuristicCounter, TiktokenCounter
from window_budget.tools.assemble import (
    TRUNCATION_MARKER,
    AssembledPrompt,
    Section,
    assemble_prompt,
)

CHARS = CallableCounter(len, name="chars")


def _worker_sections() -> list[tuple[int, str, str]]:
    """A worker agent's turn: seven sections adding up to about 2,500 characters."""
    sizes = [
        ("rule", 100),
        ("directive", 200),
        ("architect_plan", 400),
        ("episodic_lessons", 600),
        ("banned_patterns", 500),
        ("preferred_approaches", 400),
        ("strategic_lessons", 300),
    ]
    # Given out of order, to show the output follows priority, not input order.
    sections = [(p, label, chr(ord("a") + p) * size) for p, (label, size) in enumerate(sizes)]
    return sections[::-1]


def test_worker_example_under_2500_characters() -> None:
    result = assemble_prompt(_worker_sections(), 2500, counter=CHARS)
    assert len(result.text) <= 2500
    assert result.used_tokens == len(result.text)
    # 2,500 characters of content plus six separators do not fit: the least essential
    # section is the one cut short, everything else is whole and in priority order.
    assert result.included == (
        "rule",
        "directive",
        "architect_plan",
        "episodic_lessons",
        "banned_patterns",
        "preferred_approaches",
        "strategic_lessons",
    )
    assert result.truncated == ("strategic_lessons",)
    assert result.dropped == ()
    parts = result.text.split("\n\n")
    assert [p[0] for p in parts[:6]] == list("abcdef")
    assert [len(p) for p in parts[:6]] == [100, 200, 400, 600, 500, 400]
    # The cut section ends with the library's marker, counting the 300 - kept chars cut.
    kept = len(parts[6].split("\n")[0])
    assert 0 < kept < 300
    assert parts[6] == "g" * kept + TRUNCATION_MARKER.replace("{n}", str(300 - kept))


def test_worker_example_tighter_budget_drops_the_tail() -> None:
    result = assemble_prompt(_worker_sections(), 1500, counter=CHARS)
    assert result.used_tokens <= 1500
    assert result.included[:4] == ("rule", "directive", "architect_plan", "episodic_lessons")
    assert result.truncated == ("banned_patterns",)
    assert result.dropped == ("preferred_approaches", "strategic_lessons")


def test_worker_example_in_tokens_at_four_chars_per_token() -> None:
    result = assemble_prompt(_worker_sections(), 625, counter=HeuristicCounter(4.0))
    assert result.used_tokens <= 625
    # Six sections take 553 tokens; the 72 left are under the 100-token minimum for a
    # cut section (the default minimum), so the last one is dropped rather than stubbed.
    assert result.dropped == ("strategic_lessons",)
    assert result.truncated == ()


def test_everything_fits_untouched() -> None:
    result = assemble_prompt([(1, "b", "second"), (0, "a", "first")], 1000)
    assert result.text == "first\n\nsecond"
    assert result.truncated == ()
    assert result.dropped == ()
    assert str(result) == result.text


def test_too_little_room_drops_instead_of_a_stub() -> None:
    sections = [(0, "head", "x" * 90), (1, "body", "y" * 500)]
    result = assemble_prompt(sections, 150, counter=CHARS)
    assert result.included == ("head",)
    assert result.dropped == ("body",)
    assert result.text == "x" * 90


def test_after_the_first_miss_everything_less_essential_is_dropped() -> None:
    sections = [(0, "a", "a" * 50), (1, "big", "b" * 500), (2, "small", "c")]
    result = assemble_prompt(sections, 120, counter=CHARS, min_truncated_tokens=1000)
    assert result.included == ("a",)
    assert result.dropped == ("big", "small")


def test_section_bigger_than_the_whole_budget() -> None:
    result = assemble_prompt([(0, "huge", "z" * 10_000)], 300, counter=CHARS)
    assert result.truncated == ("huge",)
    assert len(result.text) <= 300
    assert result.text.startswith("z" * 200)


def test_budget_zero_and_no_sections() -> None:
    zero = assemble_prompt([(0, "a", "text")], 0)
    assert zero.text == ""
    assert zero.used_tokens == 0
    assert zero.dropped == ("a",)
    empty = assemble_prompt([], 10)
    assert empty == AssembledPrompt(
        text="", used_tokens=0, budget_tokens=10, included=(), truncated=(), dropped=()
    )


def test_empty_sections_take_no_room() -> None:
    result = assemble_prompt([(0, "a", "x"), (1, "blank", ""), (2, "c", "y")], 100)
    assert result.text == "x\n\ny"
    assert result.empty == ("blank",)
    assert result.included == ("a", "c")


def test_ties_keep_input_order_and_output_is_deterministic() -> None:
    sections = [Section(1, "first", "one"), Section(1, "second", "two"), (0, "top", "zero")]
    a = assemble_prompt(sections, 100)
    b = assemble_prompt(sections, 100)
    assert a == b
    assert a.included == ("top", "first", "second")


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
def test_bad_budget(bad: Any) -> None:
    with pytest.raises(ConfigError, match="budget"):
        assemble_prompt([], bad)


def test_bad_section() -> None:
    with pytest.raises(ConfigError, match="section 0"):
        assemble_prompt([("a", "b")], 10)  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="priority"):
        assemble_prompt([("0", "b", "c")], 10)  # type: ignore[list-item]


def test_event_through_logging_and_callback(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[dict[str, Any]] = []
    with caplog.at_level(logging.INFO, logger="window_budget.tools.assemble"):
        result = assemble_prompt(
            _worker_sections(),
            1500,
            counter=CHARS,
            context={"agent": "worker", "rule_id": "R-7"},
            on_event=seen.append,
        )
    assert len(seen) == 1
    event = seen[0]
    assert event["event"] == "prompt_assembled"
    assert event["budget_tokens"] == 1500
    assert event["used_tokens"] == result.used_tokens
    assert event["sections_included"] == list(result.included)
    assert event["sections_dropped"] == ["preferred_approaches", "strategic_lessons"]
    assert event["rule_id"] == "R-7"
    assert event["agent"] == "worker"
    records = [r for r in caplog.records if r.name == "window_budget.tools.assemble"]
    assert len(records) == 1
    assert records[0].window_budget_event == event  # type: ignore[attr-defined]
    assert "prompt_assembled" in records[0].getMessage()


def test_context_may_not_overwrite_event_fields() -> None:
    with pytest.raises(ConfigError, match="used_tokens"):
        assemble_prompt([], 10, context={"used_tokens": 3})


def test_tiktoken_counter_is_honoured() -> None:
    counter = TiktokenCounter()
    text = "the quick brown fox jumps over the lazy dog. " * 40
    result = assemble_prompt([(0, "a", text), (1, "b", text)], 700, counter=counter)
    assert result.used_tokens == counter.count(result.text) <= 700
    assert result.counter_name.startswith("tiktoken")
    assert result.truncated == ("b",)


sections_st = st.lists(
    st.tuples(
        st.integers(0, 5),
        st.text(max_size=5),
        st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=600),
    ),
    max_size=8,
)


@given(sections_st, st.integers(0, 800), st.integers(0, 150))
def test_never_exceeds_the_budget(
    sections: list[tuple[int, str, str]], budget: int, min_trunc: int
) -> None:
    for counter in (CHARS, HeuristicCounter()):
        result = assemble_prompt(sections, budget, counter=counter, min_truncated_tokens=min_trunc)
        assert counter.count(result.text) == result.used_tokens <= budget
        labels = [s[1] for s in sorted(sections, key=lambda s: s[0]) if s[2]]
        assert sorted(result.included + result.dropped) == sorted(labels)
        assert len(result.truncated) <= 1


@given(sections_st, st.integers(0, 400))
def test_never_exceeds_with_tiktoken(sections: list[tuple[int, str, str]], budget: int) -> None:
    counter = _TIKTOKEN
    result = assemble_prompt(sections, budget, counter=counter)
    assert counter.count(result.text) <= budget


_TIKTOKEN = TiktokenCounter()
