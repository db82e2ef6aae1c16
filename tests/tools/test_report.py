from __future__ import annotations

import builtins
import json
from typing import Any

import pytest

from window_budget import (
    AgentMessage,
    AssistantMessage,
    BudgetPolicy,
    ConfigError,
    CustomMessage,
    ImageBlock,
    Model,
    TextBlock,
    ToolResultMessage,
    UserMessage,
    estimate_tokens,
)
from window_budget.budget import CallableCounter, estimate_message_tokens
from window_budget.pipeline import MessageCategory
from window_budget.tools.report import UsageReport, analyze, format_report, format_report_rich

C = MessageCategory


def _transcript() -> list[AgentMessage]:
    return [
        CustomMessage("system", "be brief"),
        CustomMessage("file", "README: " + "r" * 300),
        UserMessage([TextBlock("what is in this picture?"), ImageBlock("aGk=", "image/png")]),
        AssistantMessage("a cat"),
        ToolResultMessage("c1", "bash", "ok"),
        ToolResultMessage("c2", "bash", "boom", is_error=True),
        UserMessage([ImageBlock("aGk=", "image/jpeg")]),
    ]


def test_analyze_totals_and_breakdowns() -> None:
    msgs = _transcript()
    report = analyze(msgs, 10_000)
    assert report.total == estimate_tokens(msgs)
    assert report.window == 10_000
    assert report.available == 10_000 - report.total
    assert report.percentage == pytest.approx(report.total / 100)
    assert report.image_count == 2
    assert report.message_count == len(msgs)
    assert report.over_budget is False
    assert report.limit == 10_000
    assert sum(report.per_category.values()) == report.total
    assert sum(report.per_role.values()) == report.total
    assert report.per_category[C.SYSTEM] == estimate_message_tokens(msgs[0])
    assert report.per_category[C.ERROR] == estimate_message_tokens(msgs[5])
    assert report.per_category[C.SYSTEM_OUTPUT] == estimate_message_tokens(msgs[4])
    assert list(report.per_role) == ["custom", "user", "assistant", "toolResult"]
    assert set(report.per_category) == set(C)


def test_category_budgets_follow_the_shares() -> None:
    report = analyze([], 10_000)
    assert report.category_budgets[C.DIALOG] == 5000
    assert report.category_budgets[C.SYSTEM] == 1000
    custom = analyze([], 10_000, shares={"dialog": 0.6, "context": 0.25})
    assert custom.category_budgets[C.DIALOG] == 6000


def test_over_budget_against_window_or_policy_limit() -> None:
    msgs = [UserMessage("x" * 3600)]  # 1,004 tokens
    assert analyze(msgs, 1000).over_budget is True
    assert analyze(msgs, 2000).over_budget is False
    with_policy = analyze(msgs, Model("m", 2000), policy=BudgetPolicy(reserve_tokens=500))
    assert with_policy.limit == 1125.0
    assert with_policy.over_budget is False
    tight = analyze(msgs, 2000, policy=BudgetPolicy(reserve_tokens=1000))
    assert tight.over_budget is True
    assert analyze([], 10).available == 10
    assert analyze(msgs, 500).available == 0


def test_pinned_tokens_count_as_system() -> None:
    report = analyze([UserMessage("hi")], 1000, pinned_tokens=300)
    assert report.per_category[C.SYSTEM] == 300
    assert report.per_role["pinned"] == 300
    assert report.total == 300 + estimate_message_tokens(UserMessage("hi"))


def test_counter_is_used_and_named() -> None:
    counter = CallableCounter(len, name="chars")
    report = analyze([UserMessage("abcdef")], 1000, counter=counter)
    assert report.total == estimate_message_tokens(UserMessage("abcdef"), counter)
    assert report.counter_name == "chars"


@pytest.mark.parametrize("bad", [0, -5, 1.5, True])
def test_bad_window(bad: Any) -> None:
    with pytest.raises(ConfigError, match="window"):
        analyze([], bad)


def test_bad_pinned() -> None:
    with pytest.raises(ConfigError, match="pinned_tokens"):
        analyze([], 100, pinned_tokens=-1)


def test_plain_text_summary() -> None:
    report = analyze(_transcript(), 10_000)
    text = format_report(report)
    assert text == str(report)
    assert f"{report.total:,} / 10,000 tokens" in text
    assert "within budget" in text
    assert "images: 2" in text
    for cat in C:
        assert cat.name in text
    assert "toolResult" in text
    assert "OVER BUDGET" in format_report(analyze(_transcript(), 100))


def test_as_dict_is_json_ready() -> None:
    data = analyze(_transcript(), 10_000).as_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["per_category"]["DIALOG"] > 0


def test_rich_rendering_with_bars() -> None:
    pytest.importorskip("rich")
    report = analyze(_transcript(), 10_000)
    text = format_report_rich(report)
    assert text != format_report(report)
    assert "━" in text  # the bars
    assert "DIALOG" in text
    assert "\x1b[" not in text
    assert "\x1b[" in format_report_rich(report, color=True)
    assert "OVER BUDGET" in format_report_rich(analyze(_transcript(), 100))


def test_rich_absent_falls_back_to_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_rich(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "rich" or name.startswith("rich."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_rich)
    report = analyze(_transcript(), 10_000)
    assert format_report_rich(report) == format_report(report)


def test_report_is_frozen() -> None:
    report = analyze([], 10)
    assert isinstance(report, UsageReport)
    with pytest.raises(AttributeError):
        report.total = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        report.per_category[C.SYSTEM] = 1  # type: ignore[index]
