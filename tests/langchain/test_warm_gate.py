"""The warm gate (``_warm``): the full path's figure and decision, nothing of a thread kept.

Counted, never timed: conversions performed, objects the collector tracks.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langchain_window_budget import LangChainCondenser
from langchain_window_budget._digest import DIGEST_KEY, build_digest
from langchain_window_budget._warm import fingerprint

from .conftest import RecordingChatModel, checkpointed_agent, reload, tool_loop

WINDOW = 50_000_000


class FullPath(LangChainCondenser):
    """The engine as it was before the warm gate: every turn takes the full path."""

    def _warm_run(self, *args: Any, **kwargs: Any) -> None:
        return None


def warm_figure(engine: LangChainCondenser, messages: list[BaseMessage], extra: int) -> int | None:
    """The warm gate's token figure for ``messages`` (None: it declines the turn)."""
    sessions = engine._sessions
    session = sessions.get(messages, "c")
    with sessions.lock:
        got = engine.warm.figure(messages, session, sessions, extra)
    return None if got is None else got[0]


def outcome(
    engine: LangChainCondenser, messages: list[BaseMessage], extra: int
) -> tuple[object, ...]:
    """What a run decided: changed or not, why, on which figure (or what it raised)."""
    try:
        result = engine.run(messages, extra_pinned_tokens=extra, conversation="c")
    except Exception as exc:  # the full path's errors must be the warm engine's too
        return ("raised", type(exc).__name__)
    return (result.changed, result.core.reason, result.core.tokens_before)


# ------------------------------------------------------------------ transcripts

_words = st.text(alphabet="abcdefgh ", min_size=1, max_size=40)
_MODELS = ({}, {"model_name": "recording-model"}, {"model_name": "other-model"})


@st.composite
def turn(draw: st.DrawFn, n: int) -> list[BaseMessage]:
    """One step's new messages (ids unique by ``n``)."""
    kind = draw(st.sampled_from(["user", "tools", "answer", "peer", "digest", "blocks"]))
    text = draw(_words) * draw(st.integers(1, 30))
    if kind == "user":
        return [HumanMessage(text, id=f"h{n}")]
    if kind == "blocks":
        return [
            HumanMessage(
                [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": "x"}}],
                id=f"b{n}",
            )
        ]
    if kind == "tools":
        call = {"name": "lookup", "args": {"q": text[:20]}, "id": f"c{n}", "type": "tool_call"}
        status = draw(st.sampled_from(["success", "error"]))
        return [
            AIMessage("", id=f"a{n}", tool_calls=[call]),
            ToolMessage(text, tool_call_id=f"c{n}", id=f"t{n}", status=status),
        ]
    if kind == "answer":
        figure = draw(st.integers(0, 6000))
        meta = dict(draw(st.sampled_from(_MODELS)))
        if draw(st.booleans()) and draw(st.booleans()):
            meta[DIGEST_KEY] = {"stale_usage": True}
        usage = {"input_tokens": figure, "output_tokens": 5, "total_tokens": figure + 5}
        return [
            AIMessage(
                text,
                id=f"s{n}",
                response_metadata=meta,
                usage_metadata=usage if draw(st.booleans()) else None,
            )
        ]
    if kind == "peer":  # SummarizationMiddleware's summary
        return [HumanMessage(text, id=f"p{n}", additional_kwargs={"lc_source": "summarization"})]
    kept = draw(st.integers(0, 6))
    digest = build_digest(text, covered=3, kept=kept, compactions=1, fallback=True)
    return [digest.model_copy(update={"id": f"d{n}"})]


@st.composite
def evolutions(draw: st.DrawFn) -> list[list[BaseMessage]]:
    """A thread's successive states: appends, edits under the same id, removals, a system
    message put in front."""
    thread: list[BaseMessage] = tool_loop(draw(st.integers(0, 3)))
    states = [list(thread)]
    for n in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(["append", "append", "edit", "remove", "system"]))
        if op == "append" or not thread:
            thread.extend(draw(turn(n)))
        elif op == "edit":
            i = draw(st.integers(0, len(thread) - 1))
            m = thread[i]
            update: dict[str, Any] = {"content": f"{m.text} edited {n}" * draw(st.integers(1, 9))}
            if isinstance(m, AIMessage) and m.usage_metadata and draw(st.booleans()):
                update = {"usage_metadata": {**m.usage_metadata, "input_tokens": 7 * n}}
            thread[i] = m.model_copy(update=update)  # the same id
        elif op == "remove":
            del thread[draw(st.integers(0, len(thread) - 1))]
        elif not thread or not isinstance(thread[0], SystemMessage):
            thread.insert(0, SystemMessage(draw(_words) * 5, id=f"sys{n}"))
        states.append(list(thread))
    return states


_configs = st.fixed_dictionaries(
    {
        "context_window": st.sampled_from([8_000, 16_000, 1_000_000]),
        "trigger": st.sampled_from([None, ("tokens", 3_000), ("messages", 12)]),
        "keep": st.sampled_from([None, ("messages", 4)]),
    }
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(evolutions(), _configs, st.integers(0, 3_000))
def test_the_warm_gate_counts_and_decides_as_the_full_path(
    states: list[list[BaseMessage]], config: dict[str, Any], extra: int
) -> None:
    model = RecordingChatModel(sizes=[], summary_calls=[], window=10**9)  # its id: same_model
    warm, full = LangChainCondenser(model, **config), FullPath(model, **config)
    for thread in states:
        figure = warm_figure(warm, reload(thread), extra)
        assert figure is not None  # only the four message classes, no provider compaction
        expected = full.estimate(reload(thread), extra_pinned_tokens=extra, conversation="c")
        assert figure == expected
        assert warm.estimate(reload(thread), extra_pinned_tokens=extra, conversation="c") == figure
        assert outcome(warm, reload(thread), extra) == outcome(full, reload(thread), extra)


def test_a_fingerprint_changes_with_every_field_the_conversion_reads() -> None:
    call = {"name": "f", "args": {"q": 1}, "id": "c", "type": "tool_call"}
    base = AIMessage("x", id="m", tool_calls=[call], usage_metadata=None)
    variants = [
        base.model_copy(update={"content": "y"}),
        base.model_copy(update={"content": [{"type": "text", "text": "x"}]}),
        base.model_copy(update={"id": "n"}),
        base.model_copy(update={"name": "someone"}),
        base.model_copy(update={"tool_calls": [{**call, "args": {"q": 2}}]}),
        base.model_copy(update={"tool_calls": [{**call, "name": "g"}]}),
        base.model_copy(update={"invalid_tool_calls": [{"name": "g", "args": "{", "id": "i"}]}),
        base.model_copy(update={"additional_kwargs": {"reasoning_content": "hm"}}),
        base.model_copy(update={"response_metadata": {"model_name": "other"}}),
        base.model_copy(update={"response_metadata": {"model_provider": "other"}}),
        base.model_copy(update={"response_metadata": {"stop_reason": "error"}}),
        base.model_copy(update={"response_metadata": {DIGEST_KEY: {"stale_usage": True}}}),
        base.model_copy(
            update={"usage_metadata": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}
        ),
        HumanMessage("x", id="m"),
    ]
    prints = {fingerprint(base), *map(fingerprint, variants)}
    assert len(prints) == len(variants) + 1
    tool = ToolMessage("x", tool_call_id="c", id="t")
    assert fingerprint(tool) != fingerprint(tool.model_copy(update={"tool_call_id": "d"}))
    assert fingerprint(tool) != fingerprint(tool.model_copy(update={"status": "error"}))
    assert fingerprint(reload([tool])[0]) == fingerprint(tool)  # new objects, same print


def test_arguments_and_usage_equal_only_as_numbers_print_apart() -> None:
    # Arguments and usage of str and int values hash as tuples of their items, where 1, 1.0
    # and True would hash alike: a bool or a float takes the repr instead.
    call = {"name": "f", "args": {"q": 1}, "id": "c", "type": "tool_call"}
    base = AIMessage("x", id="m", tool_calls=[call])
    args = [{"q": True}, {"q": 1.0}, {"q": "1"}, {"q": [1]}, {"q": 1, "r": None}, {"r": 1}]
    variants = [base.model_copy(update={"tool_calls": [{**call, "args": a}]}) for a in args]
    assert len({fingerprint(base), *map(fingerprint, variants)}) == len(args) + 1
    usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
    used = AIMessage("x", id="m", usage_metadata=usage)  # type: ignore[arg-type]
    odd = used.model_copy(update={"usage_metadata": {**usage, "input_tokens": True}})
    assert fingerprint(used) != fingerprint(odd)
    # A call with no arguments or id (what the conversion tolerates) prints, never raises.
    bare = base.model_copy(update={"tool_calls": [{"name": "f", "args": None}]})
    assert isinstance(fingerprint(bare), int)


def test_a_warm_turn_converts_only_what_was_appended(converted: list[int]) -> None:
    thread = tool_loop(250)  # 1,000 messages
    engine = LangChainCondenser(context_window=WINDOW)
    assert not engine.run(reload(thread), conversation="c").changed
    assert converted[0] == len(thread)
    for turn in range(3):
        thread = [
            *thread,
            HumanMessage(f"turn {turn}", id=f"n{turn}"),
            AIMessage("ok", id=f"r{turn}"),
        ]
        converted[0] = 0
        out = engine.run(reload(thread), conversation="c", own_objects=False)
        assert not out.changed
        assert converted[0] == 2
        assert engine.reused_prefix == len(thread) - 2
    edited = reload(thread)
    edited[7] = edited[7].model_copy(update={"content": "changed under the same id"})
    converted[0] = 0
    assert engine.run(edited, conversation="c").core.tokens_before != out.core.tokens_before
    assert converted[0] == 1  # the edited message only


def _tracked_from(root: object) -> int:
    """Objects the cyclic collector tracks that ``root`` reaches (not through modules,
    classes or functions: those lead to the whole process)."""
    stop = (type, type(gc), type(_tracked_from), type(len))
    seen: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, stop) or not gc.is_tracked(obj):
            continue
        seen.add(id(obj))
        stack.extend(gc.get_referents(obj))
    return len(seen)


@pytest.mark.parametrize("turns", [500, 1_000])
def test_a_middleware_keeps_no_tracked_object_per_message_between_turns(turns: int) -> None:
    agent, middleware, config = checkpointed_agent(turns, WINDOW)  # 2,000 or 4,000 messages
    for i in range(3):
        agent.invoke({"messages": [HumanMessage(f"turn {i}")]}, config)
    assert middleware.compactions == 0
    gc.collect()
    # What the middleware holds does not grow with the thread: well under one per message.
    assert _tracked_from(middleware) < 300


def test_estimate_keeps_no_tracked_object_per_message(converted: list[int]) -> None:
    thread = tool_loop(500)  # 2,000 messages, new objects every call (as a checkpointer's)
    engine = LangChainCondenser(context_window=WINDOW)
    first = engine.estimate(reload(thread), conversation="c")
    gc.collect()
    assert _tracked_from(engine) < 300  # the conversion's stand-ins are not kept
    thread.append(HumanMessage("one more", id="late"))
    converted[0] = 0
    assert engine.estimate(reload(thread), conversation="c") > first
    assert converted[0] == 1  # the process-wide cache still knows the rest
    # A conversation the warm gate has counts for is estimated from them, as cheaply.
    assert not engine.run(reload(thread), conversation="c").changed
    thread.append(HumanMessage("and another", id="later"))
    converted[0] = 0
    warm = engine.estimate(reload(thread), conversation="c")
    assert converted[0] == 1
    assert warm == FullPath(context_window=WINDOW).estimate(reload(thread), conversation="c")
    gc.collect()
    assert _tracked_from(engine) < 300


def test_usage_among_a_digests_kept_turns_never_anchors_past_a_later_summary() -> None:
    model = RecordingChatModel(sizes=[], summary_calls=[], window=10**9)
    warm, full = (cls(model, context_window=1_000_000) for cls in (LangChainCondenser, FullPath))
    usage = {"input_tokens": 900, "output_tokens": 5, "total_tokens": 905}
    thread: list[BaseMessage] = [
        build_digest("earlier turns", covered=4, kept=6, compactions=1, fallback=True),
        HumanMessage("a summary by the peer", additional_kwargs={"lc_source": "summarization"}),
        AIMessage("x", id="a", usage_metadata=usage, response_metadata=dict(_MODELS[1])),
    ]
    # The reply is among the turns the digest kept: its figure measured the older list.
    figure = warm_figure(warm, reload(thread), 0)
    assert figure == full.estimate(reload(thread)) < 900
    thread += [HumanMessage("more " * 40, id=f"h{i}") for i in range(6)]
    thread.append(AIMessage("y", id="b", usage_metadata=usage, response_metadata=_MODELS[1]))
    assert warm_figure(warm, reload(thread), 0) == full.estimate(reload(thread)) >= 905


def test_after_a_compaction_the_warm_turns_keep_no_ledger_of_the_long_thread() -> None:
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_window_budget import WindowBudgetMiddleware
    from window_budget import BudgetPolicy

    model = RecordingChatModel(sizes=[], summary_calls=[])
    model.window = WINDOW
    model.tool_rounds = 0
    policy = BudgetPolicy.for_window(200_000, cache_aware=False)
    middleware = WindowBudgetMiddleware(
        model=model, context_window=200_000, policy=policy, memory=None
    )
    agent = create_agent(model, tools=[], middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    agent.update_state(config, {"messages": tool_loop(500)})  # 2,000 messages, over the limit
    for i in range(3):
        agent.invoke({"messages": [HumanMessage(f"turn {i}")]}, config)
    assert middleware.compactions == 1
    assert len(agent.get_state(config).values["messages"]) < 200
    gc.collect()
    # The compacting turn's conversion and token ledger went with the next warm turn.
    assert _tracked_from(middleware) < 300
