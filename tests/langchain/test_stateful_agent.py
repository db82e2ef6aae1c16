"""An agent with the middleware, driven through random turns, loses no message.

Hypothesis' stateful testing runs ``create_agent`` with :class:`WindowBudgetMiddleware` over an
``InMemorySaver`` thread: user turns of random size, with random numbers of tool rounds,
through ``invoke`` and ``ainvoke`` (each on a fresh event loop), with the default policy, the
peer's ``trigger`` / ``keep`` conventions, or ahead-of-time compaction. The recording model
fails any request larger than its window. After every turn: every message the thread held
before is still in the archive the middleware wrote or in the thread (by id, in order), every
original text is there word for word (a kept message shortened to fit keeps its id in the
thread; its original is archived), every question asked is in the thread or the memory store
(what ``recall`` reads, without the archive callback), and the thread never holds a tool result
without its call.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.store.memory import InMemoryStore

from langchain_window_budget import LangGraphMemoryStore, is_digest
from window_budget.messages import message_from_dict, message_text

from .conftest import RecordingChatModel, in_order, provider_valid

pytest.importorskip("langchain.agents")

WINDOW = 4000
SHORTENED = "removed by window-budget"


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}: " + "r" * 600


def _key(message: BaseMessage) -> tuple[str, str, tuple[str, ...]]:
    calls = (
        tuple(str(c["id"]) for c in message.tool_calls) if isinstance(message, AIMessage) else ()
    )
    return (message.type, message.text, calls)


class AgentMachine(RuleBasedStateMachine):
    """Random turns of a checkpointed agent; what the thread held is the reference."""

    def __init__(self) -> None:
        super().__init__()
        self.agent: Any = None
        self.model: Any = None
        self.archived: list[BaseMessage] = []
        self.seen: list[Any] = []
        self.texts: set[Any] = set()
        self.asked: set[str] = set()
        self.memory = LangGraphMemoryStore(InMemoryStore())
        self.turn = 0
        self.config: dict[str, Any] = {"configurable": {"thread_id": "t"}}

    @initialize(sizes=st.sampled_from(["default", "peer", "precompact"]))
    def build(self, sizes: str) -> None:
        from langchain.agents import create_agent
        from langgraph.checkpoint.memory import InMemorySaver

        from langchain_window_budget import WindowBudgetMiddleware

        self.model = RecordingChatModel(sizes=[], summary_calls=[], window=WINDOW)
        extra: dict[str, Any] = {}
        if sizes == "peer":
            extra = {"trigger": ("tokens", 2500), "keep": ("messages", 6)}
        elif sizes == "precompact":  # background digests on ainvoke, each on its own loop
            extra = {"precompact": 0.4}
        middleware = WindowBudgetMiddleware(
            model=self.model,
            context_window=WINDOW,
            archive=self.archived.extend,
            memory=self.memory,
            **extra,
        )
        self.agent = create_agent(
            self.model, tools=[lookup], middleware=[middleware], checkpointer=InMemorySaver()
        )

    def _ask(self, words: int, rounds: int) -> HumanMessage:
        self.model.tool_rounds = rounds
        self.turn += 1
        return HumanMessage(" ".join(f"t{self.turn}w{i}" for i in range(words)))

    @rule(words=st.integers(1, 400), rounds=st.integers(0, 3))
    def turn_sync(self, words: int, rounds: int) -> None:
        self.agent.invoke({"messages": [self._ask(words, rounds)]}, self.config)

    @rule(words=st.integers(1, 400), rounds=st.integers(0, 2))
    def turn_async(self, words: int, rounds: int) -> None:
        ask = self._ask(words, rounds)
        asyncio.run(self.agent.ainvoke({"messages": [ask]}, self.config))

    @rule(rounds=st.integers(0, 2))
    def same_question_again(self, rounds: int) -> None:
        # The same words every time (and the model's same answers): nothing keyed by content
        # may take one message for another.
        self.model.tool_rounds = rounds
        self.agent.invoke({"messages": [HumanMessage("same question")]}, self.config)

    @invariant()
    def nothing_is_lost(self) -> None:
        if self.agent is None:
            return
        thread = self.agent.get_state(self.config).values.get("messages", [])
        assert provider_valid(thread)
        key = self.memory.key
        held = [m for m in [*self.archived, *thread] if not is_digest(m, key=key)]
        # A kept message the window made the middleware shorten keeps its id in the thread,
        # and its original goes to the archive (after the head dropped with it).
        now = [(m.type, m.id) for m in held]
        assert in_order(self.seen, now)
        self.seen = now
        self.texts |= {_key(m) for m in held if SHORTENED not in m.text}
        assert self.texts <= {_key(m) for m in held}  # every original, word for word
        # The memory store alone (no archive callback) keeps every question too: recall's.
        self.asked |= {m.text for m in thread if m.type == "human" and not is_digest(m, key=key)}
        self.asked -= {m.text for m in thread if SHORTENED in m.text}
        stored = {message_text(message_from_dict(dict(o))) for _, o in self.memory.originals("t")}
        assert self.asked <= stored | {m.text for m in thread}


AgentMachine.TestCase.settings = settings(max_examples=15, stateful_step_count=12, deadline=None)
test_agent_machine = AgentMachine.TestCase
