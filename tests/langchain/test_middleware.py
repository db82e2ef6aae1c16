"""WindowBudgetMiddleware inside a real create_agent graph with a checkpointer."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langchain_window_budget import WindowBudgetMiddleware, digest_record
from langchain_window_budget._convert import usage_is_stale
from window_budget import BudgetPolicy
from window_budget.contract import Model
from window_budget.digest import SESSION_HEADER
from window_budget.errors import ConfigError
from window_budget.pipeline import budget_limit

from .conftest import RecordingChatModel, provider_valid

WINDOW = 8000
POLICY = BudgetPolicy(keep_recent=2500, reserve_tokens=512)
SYSTEM = "You are a meticulous research agent. " * 40


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"findings for {q}: " + "f" * 1800


def _agent(model: RecordingChatModel, **kw: object):  # type: ignore[no-untyped-def]
    middleware = WindowBudgetMiddleware(model=model, context_window=WINDOW, policy=POLICY, **kw)  # type: ignore[arg-type]
    agent = create_agent(
        model,
        tools=[lookup],
        system_prompt=SYSTEM,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    return agent, middleware


@pytest.mark.slow
def test_two_hundred_model_calls_never_exceed_the_window(
    recording_model: RecordingChatModel,
) -> None:
    recording_model.window = WINDOW
    agent, middleware = _agent(recording_model)
    config = {"configurable": {"thread_id": "t1"}}
    turns = 0
    while recording_model.calls < 220:
        turns += 1
        state = agent.invoke({"messages": [HumanMessage(f"task {turns}: " + "x" * 500)]}, config)
        assert provider_valid(state["messages"])
    assert max(recording_model.sizes) <= WINDOW
    assert middleware.compactions >= 5
    assert recording_model.summary_calls
    # The state was rewritten persistently: one digest at the head, carried forward.
    saved = agent.get_state(config).values["messages"]
    assert digest_record(saved[0]) is not None
    assert digest_record(saved[0])["compactions"] == middleware.compactions  # type: ignore[index]
    assert sum(1 for m in saved if digest_record(m)) == 1


async def test_async_agent(recording_model: RecordingChatModel) -> None:
    recording_model.window = WINDOW
    agent, middleware = _agent(recording_model)
    config = {"configurable": {"thread_id": "t2"}}
    for i in range(25):
        await agent.ainvoke({"messages": [HumanMessage(f"task {i}: " + "x" * 500)]}, config)
    assert max(recording_model.sizes) <= WINDOW
    assert middleware.compactions >= 1


def test_summary_call_stays_out_of_the_message_stream(recording_model: RecordingChatModel) -> None:
    recording_model.window = WINDOW
    agent, middleware = _agent(recording_model)
    config = {"configurable": {"thread_id": "t3"}}
    streamed: list[str] = []
    for i in range(12):
        for chunk, _meta in agent.stream(
            {"messages": [HumanMessage(f"t{i} " + "x" * 500)]}, config, stream_mode="messages"
        ):
            if isinstance(chunk, AIMessage):  # AIMessageChunk too
                streamed.append(chunk.text)
    assert middleware.compactions >= 1
    assert streamed
    # The summary model's reply never reaches the stream (the digest itself, a state
    # update, may: it is a HumanMessage).
    assert not any("keep going" in s for s in streamed)


def test_system_prompt_is_counted(recording_model: RecordingChatModel) -> None:
    middleware = WindowBudgetMiddleware(
        model=recording_model, context_window=WINDOW, policy=POLICY, system_prompt=SYSTEM
    )
    history = [HumanMessage("q " * 10)]
    bare = WindowBudgetMiddleware(model=recording_model, context_window=WINDOW, policy=POLICY)
    system_tokens = middleware.thread_state(None).system_tokens
    assert (
        middleware.engine.estimate(history, extra_pinned_tokens=system_tokens)
        > bare.engine.estimate(history) + 300
    )


def test_window_from_profile_or_clear_error() -> None:
    with_profile = GenericFakeChatModel(messages=iter([]), profile={"max_input_tokens": 50_000})
    assert WindowBudgetMiddleware(model=with_profile).engine.context_window == 50_000
    with pytest.raises(ConfigError, match="context_window="):
        WindowBudgetMiddleware(model=GenericFakeChatModel(messages=iter([])))


def test_tool_loop_without_human_in_tail(recording_model: RecordingChatModel) -> None:
    recording_model.window = WINDOW
    recording_model.stop_after_calls = 40  # one long tool loop inside a single turn
    agent, middleware = _agent(recording_model)
    state = agent.invoke(
        {"messages": [HumanMessage("go")]},
        {"configurable": {"thread_id": "t4"}, "recursion_limit": 500},
    )
    assert middleware.compactions >= 1
    assert max(recording_model.sizes) <= WINDOW
    messages = state["messages"]
    assert messages[0].text.startswith(SESSION_HEADER)
    assert provider_valid(messages)
    assert any(isinstance(m, ToolMessage) for m in messages)
    assert isinstance(messages[-1], AIMessage)


def test_first_call_with_unknown_system_prompt_is_condensed_for_that_call(
    recording_model: RecordingChatModel,
) -> None:
    big_system = "Follow the house rules carefully. " * 400  # ~2,900 tokens (cl100k_base: 2,400)
    recording_model.window = WINDOW
    recording_model.tool_rounds = 0
    middleware = WindowBudgetMiddleware(
        model=recording_model,
        context_window=WINDOW,
        policy=BudgetPolicy(keep_recent=800, reserve_tokens=512),
    )
    agent = create_agent(
        recording_model,
        tools=[lookup],
        system_prompt=big_system,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    history = [HumanMessage(f"old note {i}: " + "n" * 700) for i in range(14)]  # ~2,900
    agent.invoke({"messages": history}, {"configurable": {"thread_id": "t5"}})
    # before_model could not know the system prompt yet; wrap_model_call condensed the
    # request itself, so the model never saw more than the limit.
    assert recording_model.sizes[0] <= (WINDOW - 512) * 0.75 + 50
    assert middleware.thread_state("t5").system_tokens > 2500


def test_failing_summarizer_in_an_agent(recording_model: RecordingChatModel) -> None:
    recording_model.window = WINDOW
    recording_model.fail_summary = True
    agent, middleware = _agent(recording_model)
    config = {"configurable": {"thread_id": "t6"}}
    for i in range(20):
        state = agent.invoke({"messages": [HumanMessage(f"task {i}: " + "x" * 500)]}, config)
    assert middleware.compactions >= 1
    record = digest_record(state["messages"][0])
    assert record is not None
    assert record["fallback"] is True
    assert max(recording_model.sizes) <= WINDOW


def test_failing_summarizer_raises_when_asked_and_keeps_the_thread(
    recording_model: RecordingChatModel,
) -> None:
    from window_budget.errors import SummarizerError

    recording_model.window = WINDOW
    recording_model.fail_summary = True
    policy = BudgetPolicy(keep_recent=2500, reserve_tokens=512, on_summarizer_error="raise")
    middleware = WindowBudgetMiddleware(model=recording_model, context_window=WINDOW, policy=policy)
    agent = create_agent(
        recording_model,
        tools=[lookup],
        system_prompt=SYSTEM,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t7"}}
    sent = 0

    def run_until_failure() -> None:
        nonlocal sent
        for i in range(20):
            agent.invoke({"messages": [HumanMessage(f"task {i}: " + "x" * 500)]}, config)
            sent += 1

    with pytest.raises(SummarizerError):
        run_until_failure()
    saved = agent.get_state(config).values["messages"]
    humans = [m for m in saved if isinstance(m, HumanMessage)]
    assert len(humans) == sent + 1  # every turn, including the one that failed, is kept
    assert not any(digest_record(m) for m in saved)


# ------------------------------------------------------- review regressions


def test_reply_to_a_call_only_condensed_request_does_not_anchor_the_next_gate(
    recording_model: RecordingChatModel,
) -> None:
    # Review bug 1 (agent2): the first request was condensed for that call only; the
    # reply's usage measured that short request, and the next gate anchored on it and
    # let the full, over-limit state through.
    window = 8000
    limit = budget_limit(Model("m", window), BudgetPolicy())  # the policy given below
    recording_model.window = window
    recording_model.stop_after_calls = 3
    recording_model.reply_chars = 10
    middleware = WindowBudgetMiddleware(
        model=recording_model, context_window=window, policy=BudgetPolicy(keep_recent=1000)
    )
    system = "You are careful. " * 200
    agent = create_agent(
        recording_model,
        tools=[lookup],
        system_prompt=system,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    history: list[BaseMessage] = []
    for i in range(9):
        history += [HumanMessage(f"q{i} " + "h" * 700), AIMessage(f"a{i} " + "a" * 700)]
    history.append(HumanMessage("go"))
    # Under the limit without the system prompt, over it with it.
    system_tokens = middleware.engine.count_messages([SystemMessage(system)])
    assert middleware.engine.estimate(history) <= limit
    assert middleware.engine.estimate(history, extra_pinned_tokens=system_tokens) > limit
    replies: list[AIMessage] = []
    for update in agent.stream(
        {"messages": history}, {"configurable": {"thread_id": "agent2"}}, stream_mode="updates"
    ):
        for node, value in update.items():
            if node == "model":
                replies += [m for m in value["messages"] if isinstance(m, AIMessage)]
    assert len(recording_model.sizes) == 3
    assert max(recording_model.sizes) <= limit + 50
    # The first request was condensed for that call only: its reply is marked ...
    assert usage_is_stale(replies[0])
    assert not any(usage_is_stale(m) for m in replies[1:])
    # ... so the next gate counted the full state and rewrote it persistently.
    saved = agent.get_state({"configurable": {"thread_id": "agent2"}}).values["messages"]
    assert digest_record(saved[0]) is not None
    assert middleware.compactions == 1


def test_system_prompt_passed_to_the_middleware_counts_on_the_first_gate(
    recording_model: RecordingChatModel,
) -> None:
    system = "You are careful. " * 200
    recording_model.window = 8000
    recording_model.tool_rounds = 0
    middleware = WindowBudgetMiddleware(
        model=recording_model,
        context_window=8000,
        policy=BudgetPolicy(keep_recent=1000),
        system_prompt=system,
    )
    agent = create_agent(
        recording_model,
        tools=[lookup],
        system_prompt=system,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    history = [HumanMessage(f"q{i} " + "h" * 700) for i in range(20)]
    agent.invoke({"messages": history}, {"configurable": {"thread_id": "sys"}})
    assert middleware.compactions == 1  # the first before_model already rewrote the state


def test_trim_strategy_keeps_every_agent_request_in_the_limit(
    recording_model: RecordingChatModel,
) -> None:
    # Review bug 2 (agent1t): after a trim the kept replies' usage was stale.
    window = 6000
    limit = budget_limit(Model("m", window), BudgetPolicy())  # the policy given below
    recording_model.window = window
    system = "You are careful. " * 100
    dropped: list[BaseMessage] = []
    middleware = WindowBudgetMiddleware(
        model=recording_model,
        context_window=window,
        policy=BudgetPolicy(strategy="trim"),
        system_prompt=system,
        archive=dropped.extend,
    )
    agent = create_agent(
        recording_model,
        tools=[lookup],
        system_prompt=system,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    recording_model.stop_after_calls = 40  # a 40-call tool loop (trims drop the human turn)
    config = {"configurable": {"thread_id": "trim"}, "recursion_limit": 200}
    agent.invoke({"messages": [HumanMessage("go " + "u" * 300)]}, config)
    assert len(recording_model.sizes) == 40
    assert middleware.compactions >= 3
    assert not recording_model.summary_calls
    # The fake reports 20 output tokens for replies of ~100: allow that much drift.
    assert max(recording_model.sizes) <= limit + 150
    assert dropped  # what the trims removed reached the archive callback
    assert middleware.last_result is not None
