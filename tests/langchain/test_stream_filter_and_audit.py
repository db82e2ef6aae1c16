"""What a UI filters out of ``stream_mode="messages"``, and the digest audit LangChain users see."""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_window_budget import (
    WindowBudgetMiddleware,
    condense_messages,
    digest_record,
    is_digest,
)
from langchain_window_budget.condense import LangChainCondenser
from window_budget import BudgetPolicy

from .conftest import RecordingChatModel, digest_model
from .test_middleware import lookup

WINDOW = 6000


def test_a_ui_filters_the_digest_out_of_the_message_stream() -> None:
    model = RecordingChatModel(sizes=[], summary_calls=[], window=WINDOW)
    middleware = WindowBudgetMiddleware(
        model, context_window=WINDOW, policy=BudgetPolicy(keep_recent=1000)
    )
    agent = create_agent(
        model, tools=[lookup], middleware=[middleware], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "ui"}}
    shown, hidden = [], []
    for turn in range(5):
        for chunk, metadata in agent.stream(
            {"messages": [HumanMessage(f"task {turn}: " + "x" * 400)]},
            config,
            stream_mode="messages",
        ):
            (hidden if is_digest(chunk, metadata) else shown).append(chunk)
    assert middleware.compactions >= 2
    assert any(digest_record(m) is not None for m in hidden)
    assert any(isinstance(m, RemoveMessage) for m in hidden)  # the rewrite's marker too
    assert not any(digest_record(m) is not None or isinstance(m, RemoveMessage) for m in shown)
    assert any(isinstance(m, AIMessage) for m in shown)
    assert any(isinstance(m, ToolMessage) for m in shown)
    # Without metadata the helper still knows the digest by its record, and nothing else.
    assert all(is_digest(m) == (digest_record(m) is not None) for m in hidden + shown)


FACTY = [
    HumanMessage("Rename src/config.yaml to src/config.toml and run `make test-all`."),
    AIMessage("Renamed src/config.yaml; running make test-all now."),
    HumanMessage("Never touch deploy/prod.env. Also fix tests/test_loader.py."),
    AIMessage("Fixed tests/test_loader.py, deploy/prod.env untouched."),
]


STATES_THE_OBJECTIVE = f"# Objective\n{FACTY[0].content}"


def _long_head() -> list:
    filler = [
        m
        for i in range(30)
        for m in (HumanMessage(f"step {i}: " + "q" * 300), AIMessage(f"done {i}: " + "a" * 300))
    ]
    return [*FACTY, *filler]


def test_the_digest_audit_is_in_the_record_and_on_the_result() -> None:
    # The fake summarizer's digest names the objective only: the audit pins the rest back.
    engine = LangChainCondenser(digest_model(STATES_THE_OBJECTIVE), context_window=WINDOW)
    result = engine.run(_long_head())
    assert result.digest is not None
    assert result.audit is not None
    assert result.audit.checked >= 1
    assert result.audit.found < result.audit.checked
    record = digest_record(result.digest)
    assert record is not None
    assert record["audit"]["appended"] == result.audit.appended >= 1
    # condense_messages and the transformer hand back the digest with the same record.
    out = condense_messages(
        _long_head(), model=digest_model(STATES_THE_OBJECTIVE), context_window=WINDOW
    )
    assert "audit" in (digest_record(out[0]) or {})


def test_a_network_free_digest_has_no_audit() -> None:
    result = LangChainCondenser(None, context_window=WINDOW).run(_long_head())
    assert result.audit is None
    assert "audit" not in (digest_record(result.digest) or {})
