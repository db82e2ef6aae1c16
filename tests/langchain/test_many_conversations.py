"""One engine, many conversations taking turns: each stays warm, none leaks into another.

A web server runs one middleware (one engine) for every user's thread; the threads' turns
interleave, each handed back by the checkpointer as new objects. Counted, never timed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, HumanMessage, messages_from_dict, messages_to_dict

from langchain_window_budget import LangChainCondenser, _sessions
from window_budget import BudgetPolicy
from window_budget.pipeline import _condenser

from .conftest import reload, tool_loop

WINDOW = 50_000_000


def thread_of(tag: str, turns: int) -> list[BaseMessage]:
    """A tool-using thread whose message ids are its own (as LangGraph's UUIDs are)."""
    return [m.model_copy(update={"id": f"{tag}-{m.id}"}) for m in tool_loop(turns)]


def test_conversations_taking_turns_each_cost_only_what_was_appended(
    converted: list[int],
) -> None:
    engine = LangChainCondenser(context_window=WINDOW)
    threads = {tag: thread_of(tag, 100) for tag in ("alice", "bob", "carol")}
    for thread in threads.values():
        engine.run(reload(thread))
    for turn in range(3):
        for tag, thread in threads.items():
            thread.append(HumanMessage(f"turn {turn}", id=f"{tag}-new{turn}"))
            converted[0] = 0
            # Estimates: the ledger's (full path) and the warm gate's (one per conversion).
            estimated = engine.condenser.estimated + engine.warm.converted
            out = engine.run(reload(thread))
            assert not out.changed
            # The other conversations ran in between; this one is still recognised.
            assert engine.reused_prefix == len(thread) - 1
            assert converted[0] == 1
            assert engine.condenser.estimated + engine.warm.converted == estimated + 1


def test_the_middleware_keeps_every_thread_warm_while_threads_interleave(
    converted: list[int],
) -> None:
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_window_budget import WindowBudgetMiddleware

    from .conftest import RecordingChatModel

    model = RecordingChatModel(sizes=[], summary_calls=[])
    model.window = WINDOW
    model.tool_rounds = 0
    middleware = WindowBudgetMiddleware(model=model, context_window=WINDOW)
    agent = create_agent(model, tools=[], middleware=[middleware], checkpointer=InMemorySaver())
    configs = [{"configurable": {"thread_id": tag}} for tag in ("t1", "t2", "t3")]
    for config in configs:
        tag = config["configurable"]["thread_id"]
        agent.update_state(config, {"messages": thread_of(tag, 100)})
        agent.invoke({"messages": [HumanMessage("first")]}, config)
    for i in range(2):
        for config in configs:
            converted[0] = 0
            engine = middleware.engine
            estimated = engine.condenser.estimated + engine.warm.converted
            agent.invoke({"messages": [HumanMessage(f"next {i}")]}, config)
            assert middleware.engine.reused_prefix >= 400
            assert converted[0] <= 2  # the new question (and the last reply)
            assert engine.condenser.estimated + engine.warm.converted - estimated <= 2


def test_remembered_conversations_are_bounded_by_count_and_by_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_sessions, "SESSIONS", 3)
    monkeypatch.setattr(_condenser, "LEDGERS", 2)
    engine = LangChainCondenser(context_window=WINDOW)
    for k in range(6):
        engine.run(reload(thread_of(f"u{k}", 5)))
        assert len(engine._sessions.by_key) <= 3
        assert len(engine.condenser._ledgers) <= 2
    monkeypatch.setattr(_sessions, "SESSION_MESSAGES", 50)
    for k in range(4):
        engine.run(reload(thread_of(f"v{k}", 5)))  # 20 messages each
        # What each remembers: the full path's stand-ins, the warm gate's counts.
        held = sum(len(s.seen) + len(s.counts or ()) for s in engine._sessions.by_key.values())
        assert held <= 50
    assert len(engine._sessions.by_key) == 2
    engine.run(reload(thread_of("big", 30)))  # alone over the bound: still remembered
    assert len(engine._sessions.by_key) == 1


Turn = tuple[int, int, bool]
"""(conversation, messages appended, edit the first message's content)."""


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 6), st.booleans()), min_size=1, max_size=12
    )
)
def test_a_shared_engine_answers_as_a_fresh_one_for_each_conversation(turns: list[Turn]) -> None:
    """Interleaved conversations, two of them starting under the same message id (a
    guessed key that collides), some edited under the same id: every run equals what a
    fresh engine returns for the same messages."""

    def make() -> LangChainCondenser:
        policy = BudgetPolicy(keep_recent=600, reserve_tokens=0)
        return LangChainCondenser(context_window=4_000, policy=policy)

    shared = make()
    threads: dict[int, list[BaseMessage]] = {}
    for who, grow, edit in turns:
        tag = "same" if who < 2 else f"c{who}"  # conversations 0 and 1 collide
        thread = threads.setdefault(who, thread_of(tag, 1 + who))
        start = len(thread)
        thread.extend(
            m.model_copy(update={"id": f"{tag}{who}-{start}-{m.id}"})
            for m in tool_loop(grow, start=start)
        )
        if edit:
            first = thread[0]
            thread[0] = first.model_copy(update={"content": f"{first.content} edited"})
        ours = shared.run(reload(thread))
        theirs = make().run(reload(thread))
        assert _texts(ours.messages) == _texts(theirs.messages)
        assert shared.estimate(reload(thread)) == make().estimate(reload(thread))
        threads[who] = list(ours.messages)


def _texts(messages: list[BaseMessage]) -> list[tuple[str, Any]]:
    return [(m.type, m.content) for m in messages]


class DictHistory(BaseChatMessageHistory):
    """A store-like history: messages kept as dicts, handed back as new objects each read."""

    def __init__(self, rows: dict[str, list[dict[str, Any]]], session_id: str) -> None:
        self.rows, self.session_id = rows, session_id

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return messages_from_dict(self.rows.get(self.session_id, []))

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        self.rows.setdefault(self.session_id, []).extend(messages_to_dict(list(messages)))

    def clear(self) -> None:
        self.rows[self.session_id] = []


def test_wrappers_built_per_request_find_their_session_already_known(
    converted: list[int],
) -> None:
    from langchain_window_budget import CondensingChatMessageHistory

    rows: dict[str, list[dict[str, Any]]] = {}
    for user in ("alice", "bob"):
        DictHistory(rows, user).add_messages(tool_loop(100))
    for turn in range(3):
        for user in ("alice", "bob"):
            # What RunnableWithMessageHistory's factory does: a new wrapper per request.
            wrapper = CondensingChatMessageHistory(DictHistory(rows, user), context_window=WINDOW)
            converted[0] = 0
            wrapper.add_messages([HumanMessage(f"{user} turn {turn}")])  # no id: none needed
            if turn:
                assert wrapper.engine.reused_prefix == 400 + turn  # all but the new question
                assert converted[0] == 1
            assert wrapper.last_result is not None
            assert not wrapper.last_result.changed


def test_a_conversation_name_that_cannot_be_a_key_is_refused_in_one_sentence() -> None:
    engine = LangChainCondenser(context_window=WINDOW)
    with pytest.raises(TypeError, match=r"conversation must be hashable.*not list"):
        engine.run(thread_of("x", 2), conversation=["not", "hashable"])
