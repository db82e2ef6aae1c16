"""The cost in dollars: prices per part of the bill, sessions priced by hand, unknown stays so."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from window_budget import AssistantMessage, ToolResultMessage, Usage, UserMessage
from window_budget.budget import (
    Cost,
    ModelPrices,
    PriceTier,
    compaction_saving,
    estimate_tokens,
    format_usd,
    prices_for,
    session_cost,
)
from window_budget.messages import CompactionSummaryMessage

SONNET = ModelPrices(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)


def _call(usage: Usage, model: str | None = None) -> AssistantMessage:
    return AssistantMessage("ok", usage=usage, model=model)


def test_a_session_priced_by_hand() -> None:
    # Three calls of an agent on a $3 / $15 model with Anthropic-style caching:
    #   call 1: writes the 10,000-token prefix to the cache
    #     1,000 x $3 + 10,000 x $3.75 + 400 x $15                   = $0.0465
    #   call 2: reads it back, writes the 2,000 new tokens
    #     500 x $3 + 10,000 x $0.30 + 2,000 x $3.75 + 300 x $15      = $0.0165
    #   call 3: reads 12,000, writes nothing
    #     800 x $3 + 12,000 x $0.30 + 200 x $15                      = $0.0090
    # (per million tokens)                                   total  = $0.0720
    calls = [
        UserMessage("port the parser"),
        _call(Usage(1_000, 400, cache_creation_tokens=10_000)),
        ToolResultMessage("t1", "bash", "ok"),
        _call(Usage(500, 300, cache_read_tokens=10_000, cache_creation_tokens=2_000)),
        ToolResultMessage("t2", "bash", "ok"),
        _call(Usage(800, 200, cache_read_tokens=12_000)),
    ]
    cost = session_cost(calls, prices=SONNET)
    assert cost.calls == 3
    assert cost.input == pytest.approx(0.0069)
    assert cost.cache_write == pytest.approx(0.045)
    assert cost.cache_read == pytest.approx(0.0066)
    assert cost.output == pytest.approx(0.0135)
    assert cost.total == pytest.approx(0.072)
    assert cost.describe() == (
        "$0.0720 over 3 calls (input $0.0069, cache read $0.0066, cache write $0.0450, "
        "output $0.0135)"
    )


def test_the_data_prices_the_model_each_call_names() -> None:
    # models.dev lists claude-sonnet-4-5 at the prices above, gpt-4o at $2.50 / $10 with
    # cached input at $1.25: one call of each, by hand.
    assert prices_for("claude-sonnet-4-5-20250929") == SONNET
    gpt4o = prices_for("gpt-4o")
    assert (gpt4o.input, gpt4o.output, gpt4o.cache_read) == (2.5, 10.0, 1.25)
    calls = [
        _call(Usage(1_000, 400, cache_creation_tokens=10_000), "claude-sonnet-4-5-20250929"),
        # 2,000 x $2.50 + 8,000 x $1.25 + 1,000 x $10 = $0.025
        _call(Usage(2_000, 1_000, cache_read_tokens=8_000), "gpt-4o"),
        _call(Usage(0, 0), "<synthetic>"),  # no tokens: costs nothing, whatever its model
    ]
    cost = session_cost(calls)
    assert cost.total == pytest.approx(0.0465 + 0.025)
    # A call that names no model is priced at the session's.
    assert session_cost([_call(Usage(1_000_000, 0))], model="gpt-4o").total == 2.5


def test_unknown_prices_are_unknown_never_invented() -> None:
    calls = [_call(Usage(1_000, 100), "gpt-4o"), _call(Usage(1_000, 100), "replay")]
    cost = session_cost(calls)
    assert cost.total is None
    assert (cost.calls, cost.unpriced) == (1, 1)
    assert cost.missing == ("no prices for model 'replay'",)
    assert cost.describe().startswith("unknown (no prices for model 'replay': 1 calls unpriced")
    # A part used with no price for it: the call is not priced at a made-up rate.
    no_cache = ModelPrices(input=1.0, output=2.0)
    assert no_cache.cost_of(Usage(10, 1, cache_read_tokens=5)).total is None
    assert no_cache.cost_of(Usage(10, 1)).total == pytest.approx(12 / 1_000_000)
    assert session_cost([_call(Usage(5, 5))]).missing == ("no model named",)
    hostile = "gpt\x1b]0;x\x07" + "y" * 500
    (reason,) = session_cost([_call(Usage(5, 5), hostile)]).missing
    assert "\x1b" not in reason
    assert len(reason) < 120


def test_a_large_prompt_is_billed_at_its_tier() -> None:
    tiered = ModelPrices(
        input=1.25, output=10.0, tiers=(PriceTier(above_tokens=200_000, input=2.5, output=15.0),)
    )
    small = tiered.cost_of(Usage(200_000, 1_000))
    large = tiered.cost_of(Usage(200_001, 1_000))
    assert small.total == pytest.approx(0.25 + 0.01)
    assert large.total == pytest.approx(200_001 * 2.5 / 1e6 + 0.015)


@pytest.mark.parametrize(
    "bad",
    [-1.0, float("nan"), float("inf"), "3", True],
)
def test_a_bad_price_is_refused_naming_the_field(bad: object) -> None:
    with pytest.raises(ValueError, match=r"ModelPrices\.cache_read must be"):
        ModelPrices(input=1.0, cache_read=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"PriceTier\.above_tokens"):
        PriceTier(above_tokens=-1)


def test_what_the_last_compaction_saves() -> None:
    archived = [UserMessage("x" * 3_600), _call(Usage(1_000, 10)), UserMessage("y" * 7_200)]
    digest = CompactionSummaryMessage("the work so far", tokens_before=3_000)
    live = [digest, UserMessage("go on"), _call(Usage(500, 10)), _call(Usage(600, 10))]
    saving = compaction_saving(archived, live, SONNET)
    folded = estimate_tokens(archived) - estimate_tokens([digest])
    assert saving.folded_tokens == folded
    assert saving.calls == 2
    assert saving.per_call_uncached == pytest.approx(folded * 3.0 / 1e6)
    assert saving.per_call_cached == pytest.approx(folded * 0.3 / 1e6)
    assert saving.so_far_uncached == pytest.approx(2 * folded * 3.0 / 1e6)
    assert compaction_saving([], live, SONNET) is None
    unknown = compaction_saving(archived, live, None)
    assert (unknown.per_call_uncached, unknown.so_far_cached) == (None, None)


def test_dollars_read_as_people_write_them() -> None:
    assert format_usd(1234.5) == "$1,234.50"
    assert format_usd(0.01234) == "$0.0123"
    assert format_usd(-0.5) == "-$0.5000"


@given(
    st.lists(
        st.tuples(*(st.integers(0, 10**7) for _ in range(4))),
        max_size=20,
    )
)
def test_a_session_costs_the_sum_of_its_calls(parts: list[tuple[int, int, int, int]]) -> None:
    calls = [
        _call(Usage(a, b, cache_read_tokens=c, cache_creation_tokens=d)) for a, b, c, d in parts
    ]
    whole = session_cost(calls, prices=SONNET)
    one_by_one = Cost.sum(session_cost([c], prices=SONNET) for c in calls)
    assert whole.total == pytest.approx(one_by_one.total)
    assert whole.total >= 0
