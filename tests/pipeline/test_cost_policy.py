"""The cache-aware default policy: fire rarely and land low, mask only when it pays.

The figures behind each rule are in ``docs/benchmarks.md`` (``bench/bench_session_cost.py``).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from window_budget import (
    AssistantMessage,
    BudgetPolicy,
    Model,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    create_condenser,
    estimate_tokens,
)
from window_budget._policy import PROMPT_CEILING
from window_budget.pipeline import budget_limit, check_window, is_masked
from window_budget.pipeline._mask import MASK_TARGET
from window_budget.testing import ScriptedCompleter


def _limit(window: int, *, output_reserved: bool = False) -> float:
    policy = BudgetPolicy.for_window(window, output_reserved=output_reserved, cache_aware=True)
    return budget_limit(Model("m", window), policy)


def test_the_default_is_cache_aware_and_the_window_share_is_opt_out() -> None:
    # The default fires at the ceiling in a large window; cache_aware=False fills 75 % of it.
    for window in (128_000, 200_000, 1_000_000):
        assert BudgetPolicy.for_window(window) == BudgetPolicy.for_window(window, cache_aware=True)
        assert BudgetPolicy.for_window(window).prompt_ceiling == PROMPT_CEILING + window // 100
        share = BudgetPolicy.for_window(window, cache_aware=False)
        assert share.prompt_ceiling is None
        assert budget_limit(Model("m", window), share) == (window - 2048) * 0.75
    # Where 75 % of the window is under the ceiling, both are the same policy.
    assert BudgetPolicy.for_window(16_384) == BudgetPolicy.for_window(16_384, cache_aware=False)


def test_the_cache_aware_policy_fires_at_the_ceiling_however_large_the_window() -> None:
    # A cached prompt is still billed on every request: the window does not set the limit.
    for window in (32_768, 128_000, 200_000, 1_000_000):
        policy = BudgetPolicy.for_window(window, cache_aware=True)
        ceiling = PROMPT_CEILING + window // 100  # the digest's record beside the conversation
        assert policy.prompt_ceiling == ceiling
        assert _limit(window) == ceiling
        assert policy.keep_recent == min(6000, int(ceiling * 0.35))
        # The ceiling counts the conversation: a large system prompt does not eat into it.
        pinned = budget_limit(Model("m", window), policy, pinned_tokens=20_000)
        assert pinned == min(ceiling + 20_000, (window - 2048) * 0.75)
    # Small windows keep three quarters of what is left after the reserve.
    assert BudgetPolicy.for_window(16_384, cache_aware=True).prompt_ceiling is None
    assert _limit(16_384) == 10_752
    assert _limit(4096) == 2688
    assert BudgetPolicy.for_window(4096, cache_aware=True).keep_recent == 940


def test_an_explicit_policy_has_no_ceiling() -> None:
    assert BudgetPolicy().prompt_ceiling is None
    assert budget_limit(Model("m", 200_000), BudgetPolicy()) == (200_000 - 2048) * 0.75


@given(st.integers(1, 20_000_000), st.booleans())
def test_the_default_limit_is_never_above_the_ceiling_nor_three_quarters(
    window: int, reserved: bool
) -> None:
    policy = BudgetPolicy.for_window(window, output_reserved=reserved, cache_aware=True)
    usable = window - (policy.reserve_tokens or 0)
    limit = budget_limit(Model("m", window), policy)
    ceiling = PROMPT_CEILING + window // 100
    assert policy.trigger_ratio == 0.75
    assert limit <= min(ceiling, usable * 0.75) + 1e-6
    assert limit >= min(ceiling, usable * 0.75) - 1e-6  # one of the two holds it
    assert limit < window
    assert policy.keep_recent <= max(1, limit * 0.35)
    if window >= 1000:
        check_window(window, policy)  # the default always leaves room for a digest and a tail


def _step(i: int, chars: int) -> list:
    return [
        AssistantMessage((ToolCallBlock(f"c{i}", "bash", {"command": f"make step{i}"}),)),
        ToolResultMessage(f"c{i}", "bash", f"step {i} output line\n" * (chars // 20)),
    ]


@settings(max_examples=10, deadline=None)
@given(
    st.sampled_from([32_768, 128_000, 1_000_000]),
    st.lists(st.integers(0, 60_000), min_size=10, max_size=30),
    st.booleans(),
    st.booleans(),
)
def test_a_session_under_the_default_never_sends_a_request_over_the_window(
    window: int, sizes: list[int], masking: bool, cache_aware: bool
) -> None:
    policy = BudgetPolicy.for_window(window, cache_aware=cache_aware)
    if not masking:
        policy = BudgetPolicy(**{**_fields(policy), "mask_keep_outputs": None})
    condenser = create_condenser(model=Model("m", window), policy=policy)
    room = window - (policy.reserve_tokens or 0)  # what a request may hold, the reply aside
    history: list = [UserMessage("Port the exporter. Never touch migrations/.")]
    for i, chars in enumerate(sizes):
        history += _step(i, chars)
        result = condenser.run_sync(history)
        assert result.tokens_after <= room
        assert estimate_tokens(result.messages) <= room
        if cache_aware and window > 100_000:  # the ceiling holds the prompt far below the window
            assert result.tokens_after <= 2 * (PROMPT_CEILING + window // 100)
        history = list(result.messages)


def _fields(policy: BudgetPolicy) -> dict:
    return {name: getattr(policy, name) for name in policy.__dataclass_fields__}


BIG = "line of build output\n" * 400  # ~8,400 characters, ~2,300 tokens


def _agent(steps: int, filler_chars: int) -> list:
    """Tool steps with large outputs, and a long user message no masking can clear."""
    msgs: list = [UserMessage("Fix the flaky invoice export."), UserMessage("x " * filler_chars)]
    for i in range(steps):
        msgs += [
            AssistantMessage((ToolCallBlock(f"c{i}", "bash", {"command": f"make step{i}"}),)),
            ToolResultMessage(f"c{i}", "bash", BIG),
        ]
    return msgs


def _run(msgs: list, ceiling: int | None = 1_000_000) -> tuple:
    fake = ScriptedCompleter(["# Objective\nfix the export"] * 4)
    policy = BudgetPolicy(
        keep_recent=3000, mask_keep_outputs=2, mask_min_chars=1000, prompt_ceiling=ceiling
    )
    condenser = create_condenser(model=Model("m", 40_000), complete_sync=fake.sync, policy=policy)
    return condenser.run_sync(msgs), fake


def test_a_ceiling_below_the_minimum_is_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match=r"BudgetPolicy\.prompt_ceiling must be at least 128"):
        BudgetPolicy(prompt_ceiling=100)
    with pytest.raises(ValueError, match=r"BudgetPolicy\.prompt_ceiling must be a non-negative"):
        BudgetPolicy(prompt_ceiling="24k")  # type: ignore[arg-type]


def test_masking_that_leaves_the_prompt_high_is_not_enough() -> None:
    # Masking rewrites the prompt from the first masked output on, as a digest does, so the
    # cache is lost either way; landing at three quarters of the limit it would fire again soon.
    result, fake = _run(_agent(14, 13_000))  # masking alone: 0.75 of the limit
    assert result.reason == "condensed", result.reason
    assert len(fake.calls) == 1
    assert result.tokens_after <= MASK_TARGET * result.limit
    assert not any(is_masked(m) for m in result.messages)


def test_without_a_ceiling_masking_to_four_fifths_is_enough() -> None:
    result, fake = _run(_agent(14, 13_000), ceiling=None)  # the same 0.75 of the limit
    assert result.reason == "masked", result.reason
    assert fake.calls == []


def test_masking_that_lands_low_is_kept_and_saves_the_summary_call() -> None:
    result, fake = _run(_agent(14, 0))
    assert result.reason == "masked"
    assert fake.calls == []
    assert result.tokens_after <= MASK_TARGET * result.limit


def test_masking_to_two_thirds_of_the_limit_is_enough_under_a_ceiling() -> None:
    # 0.7, chosen with bench_session_cost.py: masking that lands at 0.62 of the limit saves
    # the summary call (with 0.5 it was summarized, 6-8 % dearer at 128k and 200k).
    assert MASK_TARGET == 0.7
    result, fake = _run(_agent(14, 10_000))
    assert result.reason == "masked", result.reason
    assert fake.calls == []
    assert 0.5 < result.tokens_after / result.limit <= MASK_TARGET


def test_a_tail_that_cannot_fit_under_the_ceiling_is_fitted_to_the_window_instead() -> None:
    # Tool-call arguments are never cut: this tail needs its tokens whatever is shortened.
    from window_budget.errors import BudgetError
    from window_budget.pipeline._fit import fit_messages, fit_tail

    call = ToolCallBlock("c1", "write", {"body": "word " * 3000})
    kept = [AssistantMessage([call]), ToolResultMessage("c1", "write", "ok")]
    need = estimate_tokens(kept)
    window = 1_000_000
    policy = BudgetPolicy.for_window(window)
    room = need // 2  # what the ceiling leaves beside the digest and its record
    with pytest.raises(BudgetError):
        fit_messages(list(kept), room, None)
    fitted, shortened = fit_tail(list(kept), room, None, Model("m", window), policy, 3000)
    assert fitted == kept
    assert shortened == ()
    no_ceiling = BudgetPolicy.for_window(window, cache_aware=False)  # the window is the limit
    with pytest.raises(BudgetError):
        fit_tail(list(kept), room, None, Model("m", window), no_ceiling, 3000)


def test_a_weak_cache_gets_a_lower_ceiling() -> None:
    # gpt-4o's cached input costs half: a prompt re-sent from the cache still costs half, so
    # the record gets 0.6 % of the window beside the ceiling instead of 1 %.
    from window_budget._policy import WEAK_CACHE_READ

    for window in (32_768, 200_000, 1_000_000):
        strong = BudgetPolicy.for_window(window, cache_read=0.1)
        assert strong == BudgetPolicy.for_window(window)  # Anthropic's 0.1: the default
        weak = BudgetPolicy.for_window(window, cache_read=0.5)
        assert weak.prompt_ceiling == PROMPT_CEILING + window * 6 // 1000
        assert weak.prompt_ceiling is not None
        assert strong.prompt_ceiling is not None
        assert weak.prompt_ceiling < strong.prompt_ceiling
    assert BudgetPolicy.for_window(1_000_000, cache_read=WEAK_CACHE_READ).prompt_ceiling == 22_000
    below = BudgetPolicy.for_window(1_000_000, cache_read=WEAK_CACHE_READ - 0.01)
    assert below.prompt_ceiling == 26_000
    # No ceiling without cache awareness, whatever the prices.
    off = BudgetPolicy.for_window(1_000_000, cache_aware=False, cache_read=0.5)
    assert off.prompt_ceiling is None


@pytest.mark.parametrize("bad", [-0.1, 1.5, True, "0.5", float("nan")])
def test_a_cache_read_share_out_of_range_is_refused_naming_it(bad: object) -> None:
    with pytest.raises(ValueError, match="cache_read must be a share between 0 and 1"):
        BudgetPolicy.for_window(200_000, cache_read=bad)  # type: ignore[arg-type]


def test_the_cache_read_share_comes_from_the_models_prices() -> None:
    from window_budget.budget import cache_read_share, prices_for

    prices = prices_for("gpt-4o")
    assert prices is not None
    assert prices.input
    assert prices.cache_read
    assert cache_read_share("gpt-4o") == round(prices.cache_read / prices.input, 4) == 0.5
    assert cache_read_share("claude-sonnet-4-5") == 0.1
    assert cache_read_share("no-such-model-anywhere") is None
    assert cache_read_share(None) is None
    # The data lists gpt-3.5-turbo's cache read above its input price: no discount, a share of
    # 1 (a policy refuses a share over 1, so this once made its default policy raise).
    assert cache_read_share("gpt-3-5-turbo") == 1.0
    weak = BudgetPolicy.for_window(16_385, cache_read=cache_read_share("gpt-3-5-turbo"))
    assert weak == BudgetPolicy.for_window(16_385, cache_read=0.5)


@pytest.mark.parametrize(
    "model_id",
    [123, b"gpt-4o", "", " ", "gpt-4o\u2028", "gpt-4o\r\n", "x" * 100_000, ["gpt-4o"]],
)
def test_a_hostile_model_id_has_no_cache_price_and_leaves_the_default(model_id: object) -> None:
    # An LLM's metadata is the caller's data: never an error, at most "unknown" (None), and a
    # policy built from whatever it answers is a valid one.
    from window_budget.budget import cache_read_share

    share = cache_read_share(model_id)  # type: ignore[arg-type]
    assert share is None or 0 <= share <= 1
    policy = BudgetPolicy.for_window(200_000, cache_read=share)
    assert policy.prompt_ceiling is not None
