"""The usage meter: the usage shapes it reads, latching, malformed usage, the compact prompt."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from window_budget import AssistantMessage, Usage
from window_budget.errors import ConfigError
from window_budget.tools.meter import ContextBudget, MalformedUsageWarning, UsageError, parse_usage


def result_event(nested: bool, inp: int, created: int = 0, read: int = 0) -> dict:
    usage = {
        "input_tokens": inp,
        "cache_creation_input_tokens": created,
        "cache_read_input_tokens": read,
        "output_tokens": 12,
    }
    base = {"type": "result", "subtype": "success", "total_cost_usd": 0.01}
    return {**base, "usage": usage} if nested else {**base, **usage}


@pytest.mark.parametrize("nested", [True, False])
def test_result_event_both_usage_locations(nested: bool) -> None:
    meter = ContextBudget()
    assert meter.update(result_event(nested, 1_000, 2_000, 30_000))
    assert (meter.input_tokens, meter.cache_creation_tokens, meter.cache_read_tokens) == (
        1_000,
        2_000,
        30_000,
    )
    assert meter.used_tokens == 33_000
    assert meter.utilization == pytest.approx(33_000 / 200_000)


def test_langchain_usage_metadata_counts_cache_inside_input() -> None:
    usage_metadata = {
        "input_tokens": 150_000,
        "output_tokens": 300,
        "total_tokens": 150_300,
        "input_token_details": {"cache_read": 100_000, "cache_creation": 20_000},
    }
    reading = parse_usage(usage_metadata)
    assert reading is not None
    assert reading.used_tokens == 150_000
    assert reading.cache_read_tokens == 100_000


def test_object_with_usage_metadata_like_an_ai_message() -> None:
    @dataclass
    class FakeAIMessage:
        content: str = "hi"
        usage_metadata: dict = field(
            default_factory=lambda: {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}
        )

    assert ContextBudget().update(FakeAIMessage())


def test_openai_usage_dict() -> None:
    reading = parse_usage(
        {
            "prompt_tokens": 900,
            "completion_tokens": 50,
            "total_tokens": 950,
            "prompt_tokens_details": {"cached_tokens": 600},
        }
    )
    assert reading is not None
    assert (reading.input_tokens, reading.cache_read_tokens, reading.used_tokens) == (300, 600, 900)


def test_anthropic_usage_dict_and_core_types() -> None:
    assert parse_usage({"input_tokens": 5, "cache_read_input_tokens": 7}).used_tokens == 12  # type: ignore[union-attr]
    assert parse_usage(Usage(10, 5, cache_read_tokens=3, cache_creation_tokens=2)).used_tokens == 15  # type: ignore[union-attr]
    assert parse_usage(AssistantMessage("x", usage=Usage(4, 1))).used_tokens == 4  # type: ignore[union-attr]
    assert parse_usage(AssistantMessage("x")) is None


@pytest.mark.parametrize(
    "event",
    [
        {"type": "system", "subtype": "init"},
        {"type": "assistant", "message": {"usage": {"input_tokens": 199_000}}},
        {"type": "user", "message": {"content": "hi"}},
        {"type": "result", "subtype": "error_during_execution"},
        {"unrelated": 1},
        "a string",
        None,
    ],
)
def test_events_without_usage_are_ignored(event: object) -> None:
    meter = ContextBudget()
    meter.update(result_event(True, 1_000))
    assert not meter.update(event)
    assert meter.used_tokens == 1_000
    assert meter.updates == 1


def test_latest_report_replaces_the_previous() -> None:
    meter = ContextBudget(100_000)
    meter.update(result_event(True, 50_000))
    meter.update(result_event(True, 10_000))
    assert meter.used_tokens == 10_000


def test_warn_latches_until_cleared() -> None:
    meter = ContextBudget(100_000)
    meter.update(result_event(False, 69_999))
    assert not meter.should_warn
    meter.update(result_event(False, 70_000))
    assert meter.should_warn
    assert not meter.should_compact
    meter.update(result_event(False, 10_000))  # usage fell: the flag stays
    assert meter.should_warn
    meter.clear_warning()
    assert not meter.should_warn
    meter.update(result_event(False, 10_000))
    assert not meter.should_warn


def test_compact_implies_warn_and_clears_separately() -> None:
    meter = ContextBudget(100_000)
    meter.update(result_event(True, 10_000, read=68_000))
    assert meter.should_compact
    assert meter.should_warn
    meter.clear_compact()
    assert not meter.should_compact
    assert meter.should_warn
    meter.update(result_event(True, 1_000))
    assert not meter.should_compact


@given(st.lists(st.integers(0, 300_000), max_size=30))
def test_flags_equal_any_report_crossing(values: list[int]) -> None:
    meter = ContextBudget()
    for v in values:
        meter.update({"type": "result", "input_tokens": v})
    assert meter.should_warn == any(v >= 140_000 for v in values)
    assert meter.should_compact == any(v >= 156_000 for v in values)
    if meter.should_compact:
        assert meter.should_warn


@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": "1200"},
        {"input_tokens": -5},
        {"input_tokens": 10, "cache_read_input_tokens": 1.5},
        {"input_tokens": True},
        {"prompt_tokens": 10, "prompt_tokens_details": "cached"},
        {"input_tokens": 10, "total_tokens": 10, "input_token_details": {"cache_read": 50}},
    ],
)
def test_malformed_usage_is_ignored_with_a_warning(usage: dict) -> None:
    meter = ContextBudget()
    meter.update(result_event(True, 1_000))
    with pytest.warns(MalformedUsageWarning, match="ignored a malformed usage report"):
        assert not meter.update({"type": "result", "usage": usage})
    assert meter.used_tokens == 1_000


def test_malformed_usage_raises_in_strict_mode() -> None:
    meter = ContextBudget(strict=True)
    with pytest.raises(UsageError, match="cannot be negative"):
        meter.update({"type": "result", "usage": {"input_tokens": -1}})
    with pytest.raises(ValueError, match="not strings"):
        meter.update({"type": "result", "input_tokens": "12"})


def test_whole_floats_are_accepted() -> None:
    assert parse_usage({"input_tokens": 12.0}).used_tokens == 12  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "kwargs",
    [{"context_window": 0}, {"warn_ratio": 0.9}, {"warn_ratio": 0}, {"context_window": 1.5}],
)
def test_bad_configuration(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        ContextBudget(**kwargs)


def test_build_compact_prompt() -> None:
    meter = ContextBudget()
    assert meter.build_compact_prompt("port the loader", "TESTING") == (
        "/compact focus on port the loader -- current state is TESTING"
    )
    prompt = meter.build_compact_prompt(
        "port\nthe loader", "DRAFT", scratch_path="/w/my job/.context/scratch.md"
    )
    assert prompt.splitlines() == [
        "/compact focus on port the loader -- current state is DRAFT",
        "After compaction, read /w/my job/.context/scratch.md for preserved context.",
    ]
    with pytest.raises(ConfigError):
        meter.build_compact_prompt("  ", "x")
