"""The usage meter refuses absurd figures the way it refuses malformed ones."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from window_budget import AssistantMessage, Usage
from window_budget.tools.meter import (
    MAX_USAGE_TOKENS,
    ContextBudget,
    MalformedUsageWarning,
    UsageError,
    parse_usage,
)

ABSURD = [
    1e300,
    math.inf,
    -math.inf,
    math.nan,
    1e10,
    MAX_USAGE_TOKENS + 1,
    10**5000,
    float(MAX_USAGE_TOKENS) * 2,
    -1,
    -0.5,
    2.5,
    "12",
    [],
    True,
]


def _id(value: object) -> str:
    # repr() of a 5,000-digit int is refused by Python itself.
    big = isinstance(value, int) and value > 10**100
    return "5000-digit-int" if big else repr(value)[:20]


SHAPES = [
    lambda v: {"type": "result", "usage": {"input_tokens": v}},
    lambda v: {"type": "result", "input_tokens": 10, "cache_read_input_tokens": v},
    lambda v: {"prompt_tokens": v, "completion_tokens": 3},
    lambda v: {"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": v}},
    lambda v: {"usage_metadata": {"input_tokens": v, "output_tokens": 1, "total_tokens": 1}},
    lambda v: {"input_tokens": 100, "total_tokens": 100, "input_token_details": {"cache_read": v}},
]


@pytest.mark.parametrize("shape", range(len(SHAPES)))
@pytest.mark.parametrize("value", ABSURD, ids=_id)
def test_absurd_figures_are_ignored_with_a_warning(shape: int, value: object) -> None:
    meter = ContextBudget(context_window=100_000)
    meter.update({"type": "result", "input_tokens": 1_000})
    with pytest.warns(MalformedUsageWarning, match="ignored a malformed usage report"):
        assert not meter.update(SHAPES[shape](value))
    assert meter.used_tokens == 1_000
    assert meter.updates == 1
    assert not meter.should_warn
    assert not meter.should_compact


@pytest.mark.parametrize("value", [1e300, math.inf, math.nan, 10**12, 10**5000], ids=_id)
def test_strict_mode_raises_one_sentence_naming_the_field(value: object) -> None:
    meter = ContextBudget(strict=True)
    with pytest.raises(UsageError, match="input_tokens") as info:
        meter.update({"type": "result", "input_tokens": value})
    text = str(info.value)
    assert "\n" not in text
    assert len(text) < 200


@pytest.mark.parametrize(
    "make",
    [
        lambda: Usage(MAX_USAGE_TOKENS + 1, 0),
        lambda: Usage(1, 0, cache_read_tokens=10**40),
        lambda: AssistantMessage("ok", usage=Usage(0, 0, cache_creation_tokens=10**10)),
    ],
)
def test_core_usage_objects_are_bounded_too(make: object) -> None:
    event = make()  # type: ignore[operator]
    with pytest.raises(UsageError, match="more than the 1,000,000,000 tokens"):
        parse_usage(event)
    meter = ContextBudget()
    with pytest.warns(MalformedUsageWarning):
        assert not meter.update(event)
    assert meter.last_usage is None


def test_the_bound_itself_is_accepted() -> None:
    assert parse_usage({"input_tokens": MAX_USAGE_TOKENS}).used_tokens == MAX_USAGE_TOKENS  # type: ignore[union-attr]
    assert parse_usage({"input_tokens": float(MAX_USAGE_TOKENS)}) is not None


@given(st.floats(allow_nan=True, allow_infinity=True) | st.integers())
def test_any_number_is_taken_or_refused_never_crashes(value: float | int) -> None:
    try:
        reading = parse_usage({"type": "result", "input_tokens": value})
    except UsageError:
        return
    assert reading is not None
    assert 0 <= reading.used_tokens <= MAX_USAGE_TOKENS
