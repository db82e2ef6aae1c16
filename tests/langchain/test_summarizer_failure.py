"""A failing summarizer is reported (logging) or raised, as the caller chooses."""

from __future__ import annotations

import logging

import pytest
from langchain.agents import create_agent
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_window_budget import (
    CondensingChatMessageHistory,
    WindowBudgetMiddleware,
    condense_messages,
    digest_record,
)
from window_budget import BudgetPolicy
from window_budget.errors import SummarizerError
from window_budget.pipeline.summarize import _flow as summarize_module

from .conftest import RecordingChatModel, tool_loop
from .test_middleware import lookup

WINDOW = 6000


@pytest.fixture(autouse=True)
def _fresh_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(summarize_module, "_WARNED", set())


def _failing() -> RecordingChatModel:
    return RecordingChatModel(sizes=[], summary_calls=[], fail_summary=True, window=WINDOW)


def test_a_failing_summarizer_warns_once_then_logs_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="window_budget")
    model = _failing()
    middleware = WindowBudgetMiddleware(
        model, context_window=WINDOW, policy=BudgetPolicy(keep_recent=1000)
    )
    agent = create_agent(
        model, tools=[lookup], middleware=[middleware], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "t"}}
    for turn in range(6):
        agent.invoke({"messages": [HumanMessage(f"task {turn}: " + "x" * 400)]}, config)
    assert middleware.compactions >= 2
    assert middleware.last_result is not None
    records = [r for r in caplog.records if r.name == "window_budget.pipeline.summarize"]
    assert records[0].levelno == logging.WARNING
    assert all(r.levelno == logging.DEBUG for r in records[1:])
    assert len(records) == len(model.summary_calls) >= 2
    text = records[0].getMessage()
    assert "RuntimeError: summarizer is down" in text
    assert "network-free digest" in text
    digest = agent.get_state(config).values["messages"][0]
    assert (digest_record(digest) or {})["fallback"] is True


def test_on_summarizer_error_raise_stops_the_agent_like_summarization_middleware() -> None:
    model = _failing()
    middleware = WindowBudgetMiddleware(
        model,
        context_window=WINDOW,
        policy=BudgetPolicy(keep_recent=1000),
        on_summarizer_error="raise",
    )
    assert middleware.engine.policy.on_summarizer_error == "raise"
    agent = create_agent(
        model, tools=[lookup], middleware=[middleware], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "t"}}

    def six_turns() -> None:
        for turn in range(6):
            agent.invoke({"messages": [HumanMessage(f"task {turn}: " + "x" * 400)]}, config)

    with pytest.raises(SummarizerError, match="summarizer is down"):
        six_turns()


def test_the_lcel_transformer_and_condense_messages_take_the_option_too() -> None:
    history = tool_loop(12)
    transformer = condense_messages(
        model=_failing(), context_window=WINDOW, on_summarizer_error="raise"
    )
    with pytest.raises(SummarizerError):
        transformer.invoke(history)
    with pytest.raises(SummarizerError):
        condense_messages(
            history, model=_failing(), context_window=WINDOW, on_summarizer_error="raise"
        )
    out = condense_messages(history, model=_failing(), context_window=WINDOW)
    assert (digest_record(out[0]) or {})["fallback"] is True


def test_the_history_wrapper_takes_the_option_and_keeps_the_history_on_raise() -> None:
    live = InMemoryChatMessageHistory()
    wrapper = CondensingChatMessageHistory(
        live, model=_failing(), context_window=WINDOW, on_summarizer_error="raise"
    )
    history = tool_loop(12)
    with pytest.raises(SummarizerError):
        wrapper.add_messages(history)
    assert wrapper.engine.policy.on_summarizer_error == "raise"
    assert live.messages == history  # stored whole, nothing archived or rewritten
    assert not wrapper.archive.messages
