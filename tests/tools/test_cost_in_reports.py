"""The cost in dollars where usage is shown: the meter and the usage report."""

from __future__ import annotations

import warnings

import pytest

from window_budget import AssistantMessage, Model, ToolResultMessage, Usage, UserMessage
from window_budget.budget import ModelPrices
from window_budget.errors import ConfigError
from window_budget.tools.meter import ContextBudget
from window_budget.tools.report import analyze, format_report, format_report_rich

PRICES = ModelPrices(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)


def test_the_meter_adds_up_each_report_by_hand() -> None:
    meter = ContextBudget(prices=PRICES)
    # 1,000 x $3 + 10,000 x $3.75 + 400 x $15 = $0.0465 (per million)
    meter.update(
        {"input_tokens": 1_000, "cache_creation_input_tokens": 10_000, "output_tokens": 400}
    )
    # OpenAI shape: 12,000 prompt of which 10,000 cached -> 2,000 x $3 + 10,000 x $0.30
    # + 300 x $15 = $0.0135
    meter.update(
        {
            "prompt_tokens": 12_000,
            "completion_tokens": 300,
            "prompt_tokens_details": {"cached_tokens": 10_000},
        }
    )
    meter.update({"type": "assistant"})  # no usage: not a request
    assert meter.cost.calls == 2
    assert meter.cost.total == pytest.approx(0.0465 + 0.0135)


def test_the_meter_prices_at_the_model_it_is_told_or_the_message_names() -> None:
    meter = ContextBudget(model="gpt-4o")
    meter.update(AssistantMessage("a", usage=Usage(1_000_000, 0)))  # $2.50 at gpt-4o
    meter.update(AssistantMessage("b", usage=Usage(1_000_000, 0), model="claude-sonnet-4-5"))
    assert meter.cost.total == pytest.approx(2.5 + 3.0)


def test_the_meter_says_unknown_without_prices() -> None:
    meter = ContextBudget()
    meter.update({"input_tokens": 10, "output_tokens": 1})
    assert meter.cost.total is None
    assert meter.cost.missing == ("no model named",)
    replay = ContextBudget(model="replay")
    replay.update({"input_tokens": 10, "output_tokens": 1})
    assert replay.cost.missing == ("no prices for model 'replay'",)


def test_a_malformed_report_is_not_billed() -> None:
    meter = ContextBudget(prices=PRICES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        meter.update({"input_tokens": "lots"})
    assert (meter.cost.calls, meter.cost.unpriced) == (0, 0)


@pytest.mark.parametrize(("field", "value"), [("model", 3), ("prices", {"input": 3.0})])
def test_bad_meter_options_are_named(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"^{field} must be"):
        ContextBudget(**{field: value})  # type: ignore[arg-type]


def test_the_usage_report_shows_the_cost() -> None:
    msgs = [
        UserMessage("port the parser"),
        AssistantMessage("a", usage=Usage(1_000, 400, 0, 10_000)),
        ToolResultMessage("t1", "bash", "ok"),
        AssistantMessage("b", usage=Usage(500, 300, 10_000, 2_000)),
    ]
    report = analyze(msgs, Model("claude-sonnet-4-5", 200_000))
    assert report.cost.total == pytest.approx(0.063)
    line = (
        "cost: $0.0630 over 2 calls (input $0.0045, cache read $0.0030, cache write $0.0450, "
        "output $0.0105)"
    )
    assert line in format_report(report)
    assert line in " ".join(format_report_rich(report, width=200).split())
    assert report.as_dict()["cost"]["total_usd"] == pytest.approx(0.063)
    assert "cost: $0.0630" in report._repr_html_()
    unknown = analyze(msgs, 200_000)
    assert "cost: unknown (no model named: 2 calls unpriced)" in format_report(unknown)
    given = analyze(msgs, 200_000, prices=PRICES)
    assert given.cost.total == pytest.approx(0.063)
    assert "cost:" not in format_report(analyze([UserMessage("hi")], 1_000))


def test_a_hostile_model_name_is_escaped_in_html_and_not_markup_in_rich() -> None:
    model = "<script>alert(1)</script>[bold red]x"
    msgs = [AssistantMessage("a", usage=Usage(10, 1), model=model)]
    report = analyze(msgs, 1_000)
    assert "<script>" not in report._repr_html_()
    assert "[bold red]" in format_report_rich(report, width=300)
