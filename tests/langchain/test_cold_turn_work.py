"""The work a cold turn costs: a thread handed back as new objects is recognised, not redone.

Counted, never timed: message keys built, conversions performed, messages estimated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)

from langchain_window_budget import LangChainCondenser, _convert, condense_messages
from langchain_window_budget._identity import same_messages
from window_budget import BudgetPolicy

from .conftest import reload, tool_loop

WINDOW = 50_000_000


@pytest.fixture
def work(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts keys built, field-by-field comparisons and conversions in the adapter."""
    counts = {"keys": 0, "compared": 0, "converted": 0}

    def counted(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return real(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(_convert, "message_key", counted("keys", _convert.message_key))
    monkeypatch.setattr(_convert, "same_message", counted("compared", _convert.same_message))
    monkeypatch.setattr(_convert, "to_core", counted("converted", _convert.to_core))
    from window_budget import bridge
    from window_budget.budget import ContentCache

    monkeypatch.setattr(bridge.codec, "CONVERSIONS", ContentCache())
    monkeypatch.setattr(bridge, "RECOGNISED", bridge.codec.Recognised())
    monkeypatch.setattr(bridge.digests, "DIGESTS", ContentCache())
    return counts


def test_an_unchanged_thread_as_new_objects_costs_only_what_was_appended(
    work: dict[str, int],
) -> None:
    thread = tool_loop(500)  # 2,000 messages
    engine = LangChainCondenser(context_window=WINDOW, remember_digests=True)
    first = engine.run(reload(thread))
    assert not first.changed
    assert work["converted"] == len(thread)
    estimated = engine.condenser.estimated
    for turn in range(3):
        thread = [*thread, HumanMessage(f"turn {turn}", id=f"new{turn}")]
        work.update(keys=0, compared=0, converted=0)
        loaded = reload(thread)
        out = engine.run(loaded)
        assert out.messages is loaded  # the caller's own list back
        assert engine.reused_prefix == len(thread) - 1
        # Only the appended message: keyed, converted and estimated once each.
        assert work == {"keys": 1, "compared": 0, "converted": 1}
        assert engine.condenser.estimated == estimated + turn + 1


def test_condense_messages_on_a_reloaded_list_converts_nothing_again(work: dict[str, int]) -> None:
    thread = tool_loop(250)
    condense_messages(reload(thread), context_window=WINDOW)
    work.update(keys=0, compared=0, converted=0)
    for _ in range(3):
        loaded = reload(thread)
        assert condense_messages(loaded, context_window=WINDOW) is loaded
    assert work == {"keys": 0, "compared": 0, "converted": 0}


def test_an_edit_under_the_same_id_breaks_the_match_and_is_converted_afresh(
    work: dict[str, int],
) -> None:
    thread = tool_loop(50)
    engine = LangChainCondenser(context_window=WINDOW)
    before = engine.estimate(reload(thread))
    edited = reload(thread)
    call = dict(edited[1].tool_calls[0])
    call["args"] = {"i": "a much longer argument " * 40}
    edited[1] = edited[1].model_copy(update={"tool_calls": [call]})  # same id "a0"
    work.update(converted=0)
    assert engine.estimate(edited) > before
    assert engine.reused_prefix == 0
    assert work["converted"] == 1  # the edited message; the rest hit the caches


def test_a_condensed_result_holds_the_callers_objects_not_the_stand_ins(
    work: dict[str, int],
) -> None:
    policy = BudgetPolicy(keep_recent=2_000, reserve_tokens=0)
    engine = LangChainCondenser(context_window=12_000, policy=policy)
    thread = tool_loop(8)
    assert not engine.run(reload(thread)).changed
    grown = reload([*thread, *tool_loop(20, start=8)])
    out = engine.run(grown)
    assert out.changed
    assert engine.reused_prefix == len(thread)
    ids = {id(m) for m in grown}
    assert all(id(m) in ids for m in out.dropped)
    assert all(id(m) in ids for m in out.messages if m is not out.digest)
    assert len(out.dropped) + len(out.messages) - 1 == len(grown)


_text = st.text(max_size=20)


@st.composite
def message_pairs(draw: st.DrawFn) -> tuple[BaseMessage, BaseMessage]:
    """Two messages under one id that differ (or not) in one field the conversion reads."""
    kind = draw(st.sampled_from(["human", "ai", "tool"]))
    field = draw(st.sampled_from(["none", "content", "kwargs", "meta", "usage", "calls", "status"]))
    text, other = draw(_text), draw(_text)

    def build(changed: bool) -> BaseMessage:
        value = other if changed else text
        if kind == "human":
            return HumanMessage(
                value if field == "content" else text,
                id="m",
                additional_kwargs={"k": value} if field == "kwargs" else {},
            )
        if kind == "tool":
            return ToolMessage(
                value if field == "content" else text,
                tool_call_id="c",
                id="m",
                status="error" if changed and field == "status" else "success",
            )
        usage = {"input_tokens": len(value), "output_tokens": 1, "total_tokens": len(value) + 1}
        return AIMessage(
            value if field == "content" else text,
            id="m",
            response_metadata={"model_name": value} if field == "meta" else {},
            usage_metadata=usage if field == "usage" else None,
            tool_calls=[{"name": "f", "args": {"q": value}, "id": "c", "type": "tool_call"}]
            if field == "calls"
            else [],
        )

    return build(False), build(draw(st.booleans()))


@settings(max_examples=200, deadline=None)
@given(message_pairs())
def test_same_messages_says_equal_only_when_the_conversion_is_equal(
    pair: tuple[BaseMessage, BaseMessage],
) -> None:
    a, b = pair
    loaded = reload([b])
    if same_messages(loaded, [a]):
        assert _convert.to_core(loaded[0]) == _convert.to_core(a)
    assert same_messages(reload([a]), [a])


def test_same_messages_tells_classes_apart() -> None:
    assert not same_messages([HumanMessage("x", id="m")], [AIMessage("x", id="m")])
    assert not same_messages([HumanMessage("x")], [])


def test_an_edit_after_several_reloaded_turns_is_still_seen(work: dict[str, int]) -> None:
    thread = tool_loop(30)
    engine = LangChainCondenser(context_window=WINDOW)
    figures = [engine.estimate(reload(thread)) for _ in range(3)]  # stand-ins kept
    assert figures[0] == figures[1] == figures[2]
    same = reload(thread)
    assert engine.estimate(same) == figures[0]
    assert engine.estimate(same) == figures[0]  # the caller's list again
    edited = reload(thread)
    edited[4] = HumanMessage(edited[4].content + " and much more " * 50, id=edited[4].id)
    assert engine.estimate(edited) > figures[0]
    assert engine.reused_prefix == 0
    assert engine.estimate(reload(thread)) == figures[0]  # and back


def test_the_engine_keeps_no_turns_list_alive_when_asked_not_to() -> None:
    import gc
    import weakref

    thread = tool_loop(20)
    engine = LangChainCondenser(context_window=WINDOW)
    engine.run(reload(thread))
    loaded = reload(thread)
    probe = weakref.ref(loaded[3])
    result = engine.run(loaded, own_objects=False)
    assert engine.reused_prefix == len(thread)
    # Nothing was done: the result holds no message at all (the caller has its list).
    assert not result.changed
    assert result.messages == ()
    del loaded
    gc.collect()
    assert probe() is None  # neither this turn's objects nor stand-ins are kept
    own = reload(thread)
    assert engine.run(own).messages is own  # by default the caller's own list comes back


def test_the_middleware_recognises_a_checkpointed_thread_every_turn(work: dict[str, int]) -> None:
    from .conftest import checkpointed_agent

    agent, middleware, config = checkpointed_agent(100, WINDOW)
    agent.invoke({"messages": [HumanMessage("first")]}, config)
    for i in range(3):
        work.update(keys=0, compared=0, converted=0)
        agent.invoke({"messages": [HumanMessage(f"next {i}")]}, config)
        assert middleware.engine.reused_prefix >= 400
        assert work["converted"] <= 2
        assert work["compared"] == 0
        last = middleware.thread_state("t").last_result
        assert last is not None
        assert not last.changed
        assert last.messages == ()  # no turn's objects kept, nor stand-ins for them


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts the passes that read messages: type scans, field dicts, fingerprints, estimates."""
    from langchain_window_budget import _sessions
    from window_budget import bridge
    from window_budget.budget import _ledger as ledger

    counts = {"scanned": 0, "fields": 0, "fingerprinted": 0, "estimated": 0}

    def counted(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return real(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(_sessions, "as_message_list", counted("scanned", _sessions.as_message_list))
    monkeypatch.setattr(_sessions, "message_fields", counted("fields", _sessions.message_fields))
    monkeypatch.setattr(bridge, "head_chain", counted("fingerprinted", bridge.head_chain))
    monkeypatch.setattr(ledger, "cached_estimates", counted("estimated", ledger.cached_estimates))
    return counts


@pytest.mark.parametrize("remember", [False, True])
def test_regating_the_same_list_reads_no_message(reads: dict[str, int], remember: bool) -> None:
    thread = tool_loop(500)
    engine = LangChainCondenser(context_window=WINDOW, remember_digests=remember)
    first = engine.run(thread)
    estimated = engine.condenser.estimated
    reads.update(scanned=0, fields=0, fingerprinted=0, estimated=0)
    for _ in range(3):
        out = engine.run(thread)
        assert out.messages is thread
        assert out.core.tokens_before == first.core.tokens_before
    # One comparison of pointers per layer; no message is scanned, keyed or estimated.
    assert reads == {"scanned": 0, "fields": 0, "fingerprinted": 0, "estimated": 0}
    assert engine.condenser.estimated == estimated


def test_a_grown_list_reads_only_what_was_appended(reads: dict[str, int]) -> None:
    thread = tool_loop(200)
    engine = LangChainCondenser(context_window=WINDOW, remember_digests=True)
    engine.run(thread)
    estimated = engine.condenser.estimated
    reads.update(scanned=0, fields=0, fingerprinted=0, estimated=0)
    grown = [*thread, HumanMessage("one more", id="more")]
    assert engine.run(grown).messages is grown
    assert engine.condenser.estimated == estimated + 1
    assert reads["scanned"] == 0  # the known objects' types are not scanned again


def test_a_new_engine_recognises_a_thread_another_engine_converted(work: dict[str, int]) -> None:
    thread = tool_loop(300)
    first = LangChainCondenser(context_window=WINDOW).estimate(reload(thread))
    work.update(keys=0, compared=0, converted=0)
    for _ in range(2):
        fresh = LangChainCondenser(context_window=WINDOW)  # a new request's engine, say
        assert fresh.estimate(reload(thread)) == first
    # Every id looked up at once and the fields compared in C: no key, no conversion.
    assert work == {"keys": 0, "compared": 0, "converted": 0}


def test_a_new_engine_still_sees_an_edit_under_a_known_id(work: dict[str, int]) -> None:
    thread = tool_loop(40)
    before = LangChainCondenser(context_window=WINDOW).estimate(reload(thread))
    edited = reload(thread)
    call = dict(edited[5].tool_calls[0])
    call["args"] = {"i": "a much longer argument " * 40}
    edited[5] = edited[5].model_copy(update={"tool_calls": [call]})  # same id
    work.update(keys=0, compared=0, converted=0)
    assert LangChainCondenser(context_window=WINDOW).estimate(edited) > before
    assert work["converted"] == 1  # the edited message only


def test_threads_taking_turns_on_one_middleware_build_no_keys(work: dict[str, int]) -> None:
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_window_budget import WindowBudgetMiddleware

    from .conftest import RecordingChatModel

    model = RecordingChatModel(sizes=[], summary_calls=[])
    model.window = WINDOW
    model.tool_rounds = 0
    middleware = WindowBudgetMiddleware(model=model, context_window=WINDOW)
    agent = create_agent(model, tools=[], middleware=[middleware], checkpointer=InMemorySaver())
    configs = [{"configurable": {"thread_id": name}} for name in ("alice", "bob")]
    for i, config in enumerate(configs):
        agent.update_state(config, {"messages": tool_loop(100, start=1000 * i)})
        agent.invoke({"messages": [HumanMessage("first")]}, config)
    for turn in range(2):
        for config in configs:
            work.update(keys=0, compared=0, converted=0)
            agent.invoke({"messages": [HumanMessage(f"turn {turn}")]}, config)
            # The other thread ran in between: its messages are recognised by id, and
            # only this turn's new messages (the question, the reply) are keyed.
            assert work["keys"] <= 2
            assert work["converted"] <= 2
            assert work["compared"] == 0  # no message compared one by one


def test_a_message_listed_twice_gets_two_core_objects() -> None:
    from langchain_window_budget._convert import Converter

    again = HumanMessage("the same words " * 20, id="dup")
    thread = [again, AIMessage("between", id="b"), again, reload([again])[0]]
    core = Converter().convert(thread).core
    assert len({id(c) for c in core}) == len(thread)  # the mapping back is by identity
    assert core[0] == core[2] == core[3]
