"""A failing summarizer is reported through ``logging``: WARNING once per kind, then DEBUG."""

from __future__ import annotations

import logging

import pytest

from window_budget import AssistantMessage, Model, UserMessage
from window_budget.contract import SummarizeDeps
from window_budget.pipeline.summarize import _flow as summarize_module
from window_budget.pipeline.summarize import summarize_sync
from window_budget.testing import ScriptedCompleter

MSGS = [UserMessage("rename config.yaml to config.toml"), AssistantMessage("done")]


class WrongApiKey(Exception):
    """What a provider SDK raises for a bad key (a distinct type per test run)."""


@pytest.fixture(autouse=True)
def _fresh_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(summarize_module, "_WARNED", set())


def _run(reply: object) -> None:
    fake = ScriptedCompleter([reply])  # type: ignore[list-item]
    s = summarize_sync(MSGS, SummarizeDeps(complete_sync=fake.sync, model=Model("m", 128_000)))
    assert s.fallback


def test_a_failing_model_warns_once_then_logs_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="window_budget")
    for _ in range(3):
        _run(WrongApiKey("401 invalid x-api-key"))
    records = [r for r in caplog.records if r.name == "window_budget.pipeline.summarize"]
    assert [r.levelno for r in records] == [logging.WARNING, logging.DEBUG, logging.DEBUG]
    text = records[0].getMessage()
    assert "WrongApiKey" in text
    assert "401 invalid x-api-key" in text
    assert "network-free digest" in text
    assert 'on_summarizer_error="raise"' in text


def test_each_distinct_failure_warns(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="window_budget")
    _run(WrongApiKey("bad key"))
    _run(TimeoutError("slow"))
    _run("   ")  # an unusable (empty) reply
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3
    assert "TimeoutError" in warnings[1]
    assert "empty reply" in warnings[2]


def test_no_model_bound_is_a_choice_not_a_failure(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="window_budget")
    assert summarize_sync(MSGS).fallback
    assert not [r for r in caplog.records if r.name == "window_budget.pipeline.summarize"]
