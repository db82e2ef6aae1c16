from __future__ import annotations

import pytest

from window_budget import (
    AssistantMessage,
    BudgetPolicy,
    DigestMessage,
    Model,
    Usage,
    UserMessage,
    estimate_tokens,
    is_over_budget,
)
from window_budget.digest import SESSION_HEADER
from window_budget.pipeline import budget_limit, estimate_context


def test_budget_limit_arithmetic() -> None:
    assert budget_limit(Model("m", 32_768), BudgetPolicy()) == (32_768 - 2048) * 0.75
    assert budget_limit(Model("m", 1000), BudgetPolicy(reserve_tokens=5000)) == 0
    assert (
        budget_limit(Model("m", 1000), BudgetPolicy(reserve_tokens=None, trigger_ratio=1.0)) == 1000
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("trigger_ratio", 0),
        ("trigger_ratio", 1.5),
        ("trigger_ratio", -0.1),
        ("keep_recent", -1),
        ("reserve_tokens", -5),
        ("keep_unit", "lines"),
        ("strategy", "delete"),
        ("digest_max_tokens", 10),
    ],
)
def test_bad_policy_names_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"BudgetPolicy.{field}"):
        BudgetPolicy(**{field: value})  # type: ignore[arg-type]


def test_turns_policy_defaults_are_8_turns_at_0_8() -> None:
    p = BudgetPolicy.turns()
    assert (p.keep_recent, p.trigger_ratio, p.keep_unit) == (8, 0.8, "turns")


def test_gate_fires_strictly_above_the_limit() -> None:
    model = Model("m", 1000)
    policy = BudgetPolicy(reserve_tokens=0, trigger_ratio=0.5)
    msgs = [UserMessage("x" * 36 * 5)]  # 50 + 4 framing
    n = estimate_tokens(msgs)
    assert not is_over_budget(msgs, model, policy, pinned_tokens=500 - n)
    assert is_over_budget(msgs, model, policy, pinned_tokens=501 - n)


def test_anchored_estimate_uses_the_last_usage_plus_what_follows() -> None:
    model = Model("m1", 100_000)
    after = UserMessage("x" * 360)
    msgs = [
        UserMessage("hi"),
        AssistantMessage("ok", usage=Usage(5000, 100, 200, 0), model="m1"),
        after,
    ]
    est = estimate_context(msgs, model, pinned_tokens=999)
    assert est.anchored
    assert est.context_tokens == 5300 + estimate_tokens([after])
    assert est.utilization == est.context_tokens / 100_000


def test_usage_from_before_a_digest_or_another_model_is_ignored() -> None:
    model = Model("m1", 100_000)
    stale = [AssistantMessage("ok", usage=Usage(90_000, 10)), DigestMessage(f"{SESSION_HEADER}\nx")]
    est = estimate_context(stale, model)
    assert not est.anchored
    assert est.context_tokens == estimate_tokens(stale)
    other = [AssistantMessage("ok", usage=Usage(90_000, 10), model="other-model")]
    assert not estimate_context(other, model).anchored
    assert not estimate_context(other, model, use_usage=False).anchored
