"""Where users really run: new message objects every turn, many threads on one agent."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    messages_from_dict,
    messages_to_dict,
)
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langchain_window_budget import (
    LangChainCondenser,
    WindowBudgetMiddleware,
    _convert,
    _digest,
    condense_messages,
)
from window_budget import BudgetPolicy, estimate_tokens

from .conftest import RecordingChatModel, request_tokens, tool_loop

WINDOW = 200_000


@pytest.fixture(autouse=True)
def fresh_digest_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no remembered digests (the memory is process-wide)."""
    from window_budget import bridge
    from window_budget.budget import ContentCache

    monkeypatch.setattr(bridge.digests, "DIGESTS", ContentCache())


@pytest.fixture
def conversions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts LangChain → core conversions (the work the cache must save)."""
    calls = [0]
    real = _convert.to_core

    def counting(message: object, **kwargs: object) -> object:
        calls[0] += 1
        return real(message, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_convert, "to_core", counting)
    from window_budget import bridge
    from window_budget.budget import ContentCache

    monkeypatch.setattr(bridge.codec, "CONVERSIONS", ContentCache())
    monkeypatch.setattr(bridge, "RECOGNISED", bridge.codec.Recognised())
    return calls


def test_a_deserialized_transcript_is_not_converted_again(conversions: list[int]) -> None:
    history = tool_loop(150)
    engine = LangChainCondenser(context_window=WINDOW)
    first = engine.estimate(history)
    assert conversions[0] == len(history)
    for _ in range(3):
        loaded = messages_from_dict(messages_to_dict(history))
        assert loaded[5] is not history[5]
        fresh_engine = LangChainCondenser(context_window=WINDOW)  # a new request, say
        assert fresh_engine.estimate(loaded) == first
    assert conversions[0] == len(history)


def test_content_changed_under_the_same_id_is_converted_afresh(conversions: list[int]) -> None:
    engine = LangChainCondenser(context_window=WINDOW)
    before = engine.estimate([HumanMessage("short", id="m1")])
    after = LangChainCondenser(context_window=WINDOW).estimate(
        [HumanMessage("short but now much longer " * 40, id="m1")]
    )
    assert after > before
    assert conversions[0] == 2
    usage_changed = LangChainCondenser(context_window=WINDOW)
    a = AIMessage("x", id="a1")
    b = AIMessage(
        "x", id="a1", usage_metadata={"input_tokens": 9, "output_tokens": 1, "total_tokens": 10}
    )
    usage_changed.estimate([a])
    usage_changed.estimate([HumanMessage("q", id="q"), b])
    assert conversions[0] == 5  # the usage figure is part of what decides the conversion


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"findings for {q}: " + "f" * 300


def _seeded_agent(
    model: RecordingChatModel, middleware: WindowBudgetMiddleware, threads: dict[str, int]
):  # type: ignore[no-untyped-def]
    agent = create_agent(
        model, tools=[lookup], middleware=[middleware], checkpointer=InMemorySaver()
    )
    for thread, turns in threads.items():
        agent.update_state({"configurable": {"thread_id": thread}}, {"messages": tool_loop(turns)})
    return agent


def test_a_checkpointed_thread_converts_only_new_messages_per_invoke(
    recording_model: RecordingChatModel, conversions: list[int]
) -> None:
    recording_model.window = WINDOW
    recording_model.tool_rounds = 0
    # 75 % of the window: the 400-message thread never compacts (the default's ceiling would).
    policy = BudgetPolicy.for_window(WINDOW, cache_aware=False)
    middleware = WindowBudgetMiddleware(model=recording_model, context_window=WINDOW, policy=policy)
    agent = _seeded_agent(recording_model, middleware, {"t": 100})
    config = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("first")]}, config)
    for i in range(3):
        before = conversions[0]
        state = agent.invoke({"messages": [HumanMessage(f"next {i}")]}, config)
        assert len(state["messages"]) >= 400
        # The checkpointer handed over new objects; only the two new messages converted.
        assert conversions[0] - before <= 2


def test_the_gate_runs_once_per_model_call(recording_model: RecordingChatModel) -> None:
    recording_model.window = WINDOW
    recording_model.tool_rounds = 2
    middleware = WindowBudgetMiddleware(
        model=recording_model, context_window=WINDOW, system_prompt="be brief"
    )
    agent = create_agent(
        recording_model,
        tools=[lookup],
        system_prompt="be brief",
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    for i in range(3):
        agent.invoke(
            {"messages": [HumanMessage(f"task {i}")]}, {"configurable": {"thread_id": "once"}}
        )
    assert recording_model.calls == 9
    assert middleware.gates == recording_model.calls


def test_state_is_kept_per_thread(recording_model: RecordingChatModel) -> None:
    recording_model.window = 8_000
    recording_model.tool_rounds = 0
    policy = BudgetPolicy(keep_recent=1_500, reserve_tokens=512)
    middleware = WindowBudgetMiddleware(model=recording_model, context_window=8_000, policy=policy)
    agent = _seeded_agent(recording_model, middleware, {"big": 20, "small": 1})
    agent.invoke({"messages": [HumanMessage("go on")]}, {"configurable": {"thread_id": "big"}})
    agent.invoke({"messages": [HumanMessage("hello")]}, {"configurable": {"thread_id": "small"}})
    big, small = middleware.thread_state("big"), middleware.thread_state("small")
    assert big.last_result is not None
    assert small.last_result is not None
    assert big.last_result.changed  # the big thread was condensed ...
    assert not small.last_result.changed  # ... the small one, on the same instance, was not
    assert middleware.compactions == 1
    small_state = agent.get_state({"configurable": {"thread_id": "small"}}).values["messages"]
    assert estimate_tokens([_convert.to_core(m) for m in small_state]) < 2_000
    assert len(small_state) == 6


def _turn(i: int) -> list[BaseMessage]:
    return [
        HumanMessage(f"question {i}: " + "q" * 600, id=f"h{i}"),
        AIMessage(f"answer {i}: " + "a" * 600, id=f"a{i}"),
    ]


def test_the_lcel_transformer_does_not_summarize_a_head_twice(
    recording_model: RecordingChatModel,
) -> None:
    transformer = condense_messages(
        model=recording_model,
        context_window=4_000,
        policy=BudgetPolicy(keep_recent=1_000, reserve_tokens=0),
    )
    stored: list[BaseMessage] = []  # an unabridged history, as a chat store keeps it
    digests: list[str] = []
    calling_turns = 0
    for i in range(50):
        stored.extend(_turn(i))
        calls = len(recording_model.summary_calls)
        out = transformer.invoke(list(stored))
        made = len(recording_model.summary_calls) - calls
        again = transformer.invoke(messages_from_dict(messages_to_dict(stored)))
        # Re-reading the same history (new objects) summarizes nothing.
        assert len(recording_model.summary_calls) - calls == made
        assert [m.content for m in again] == [m.content for m in out]
        assert request_tokens(out) <= 4_000 * 0.75
        head = str(out[0].id)  # each digest written gets a new id
        if made:
            calling_turns += 1
            assert head not in digests  # a call happens only for a new compaction
            digests.append(head)
    # Without remembering, every over-budget turn (most of the 50) would summarize again.
    assert 0 < calling_turns == len(digests) <= 50 // 5


def test_condense_messages_reuses_the_digest_across_calls(
    recording_model: RecordingChatModel,
) -> None:
    policy = BudgetPolicy(keep_recent=1_000, reserve_tokens=0)
    history = [m for i in range(12) for m in _turn(i)]
    first = condense_messages(history, model=recording_model, context_window=4_000, policy=policy)
    calls = len(recording_model.summary_calls)
    assert calls > 0
    history.extend(_turn(12))
    second = condense_messages(history, model=recording_model, context_window=4_000, policy=policy)
    assert len(recording_model.summary_calls) == calls  # the head it already summarized
    assert second[0] is first[0]
    assert [m.id for m in second[-2:]] == ["h12", "a12"]


def test_a_remembered_head_is_not_reused_where_the_cut_would_orphan_a_result(
    recording_model: RecordingChatModel,
) -> None:
    from window_budget import bridge

    engine = LangChainCondenser(
        recording_model,
        context_window=4_000,
        remember_digests=True,
        policy=BudgetPolicy(keep_recent=1_000, reserve_tokens=0),
    )
    head = [m for i in range(12) for m in _turn(i)]
    head.append(
        AIMessage(
            "let me check",
            id="call-ai",
            tool_calls=[{"name": "lookup", "args": {"q": "x"}, "id": "late", "type": "tool_call"}],
        )
    )
    # Remembered from a transcript where nothing answered the call (a legal cut there).
    earlier = engine.run([*head, HumanMessage("never mind", id="h-late")], force=True)
    assert earlier.digest is not None
    chain = bridge.head_chain(
        engine._sessions.get(head, None).converter.codec, head, engine._digest_seed
    )
    bridge.remember_digest(chain, len(head), earlier.digest, engine._digest_seed)
    # The same head, now followed by the result of the call it left open.
    second = [
        *head,
        ToolMessage("the result " + "r" * 600, tool_call_id="late", id="t-late"),
        AIMessage("done " + "d" * 600, id="a-done"),
    ]
    out = engine.run(second).messages
    for i, m in enumerate(out):
        if isinstance(m, ToolMessage):
            assert isinstance(out[i - 1], AIMessage)
            assert any(c["id"] == m.tool_call_id for c in out[i - 1].tool_calls)


def test_an_edit_under_the_same_id_is_seen_by_the_same_engine() -> None:
    engine = LangChainCondenser(context_window=WINDOW)
    call = {"name": "lookup", "args": {"q": "x"}, "id": "c1", "type": "tool_call"}
    a = [HumanMessage("short", id="m1"), AIMessage("", id="a1", tool_calls=[call])]
    before = engine.estimate(a)
    longer = {**call, "args": {"q": "a much longer query " * 20}}
    b = [HumanMessage("short", id="m1"), AIMessage("", id="a1", tool_calls=[longer])]
    assert engine.estimate(b) > before  # same ids, new objects, tool arguments edited
    c = [HumanMessage("short but now much longer " * 20, id="m1"), b[1]]
    assert engine.estimate(c) > engine.estimate(b)


def test_every_digest_field_survives_checkpointer_json_and_pickle(
    recording_model: RecordingChatModel,
) -> None:
    import pickle
    from dataclasses import dataclass
    from typing import Any

    from window_budget import DigestMessage, bridge

    @dataclass(frozen=True, slots=True)
    class LedgerDigest(DigestMessage):
        facts: dict[str, Any] | None = None

    facts = {"objective": "ship the release", "files": ["setup.py"], "n": 2}
    source = LedgerDigest("[digest]", facts=facts)
    digest = _digest.build_digest(
        "digest text", covered=9, kept=3, compactions=1, fallback=False, source=source
    )
    agent = create_agent(recording_model, tools=[], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "record"}}
    agent.update_state(config, {"messages": [digest]})
    stored = agent.get_state(config).values["messages"][0]
    for back in (
        stored,
        messages_from_dict(messages_to_dict([digest]))[0],
        pickle.loads(pickle.dumps(digest)),
    ):
        record = _digest.digest_record(back)
        assert record is not None
        assert record["facts"] == facts
        rebuilt = bridge.digest_from_record(back.content, record, kind=LedgerDigest)
        assert (rebuilt.facts, rebuilt.covered_count, rebuilt.kept_count) == (facts, 9, 3)
        core = _convert.to_core(back)
        assert isinstance(core, DigestMessage)
        assert (core.covered_count, core.kept_count) == (9, 3)
