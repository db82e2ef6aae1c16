"""The usage report shows the transcript as the provider counts it when given a calibration."""

from __future__ import annotations

from window_budget import UserMessage
from window_budget.budget import Calibration
from window_budget.tools.report import analyze, format_report, format_report_rich


def test_the_report_carries_the_calibrated_total() -> None:
    msgs = [UserMessage("configure the loader " * 50)]
    cal = Calibration(model="claude-sonnet-4-5", ratio=1.25, overhead_tokens=3000, samples=12)
    report = analyze(msgs, 200_000, calibration=cal)
    assert report.calibrated_total == round(report.total * 1.25) + 3000
    text = format_report(report)
    assert f"calibrated: {report.calibrated_total:,} tokens" in text
    assert "x1.250 over 12 calls" in text
    assert "3,000" in text
    assert "calibrated:" in format_report_rich(report, width=200)
    assert report.as_dict()["calibration"] == {
        "model": "claude-sonnet-4-5",
        "ratio": 1.25,
        "overhead_tokens": 3000,
        "samples": 12,
    }


def test_without_a_calibration_nothing_changes() -> None:
    report = analyze([UserMessage("hello")], 1000)
    assert report.calibrated_total is None
    assert "calibrated" not in format_report(report)
