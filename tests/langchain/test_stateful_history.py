"""A condensing chat history driven through random sequences of writes keeps every message.

Hypothesis' stateful testing writes turns (plain, tool loops, oversized, the same words
again) through the sync and the async path (each async write on a fresh event loop, as
``asyncio.run`` cells make them), reads, and clears, with and without an engine whose memory
store ``recall`` reads. After every step: every message written since the last ``clear()``
is in the archive or the live history, in the order written, and every question is in the
memory store or the live history word for word; the live history fits the window and never
holds a tool result without its call.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.store.memory import InMemoryStore

from langchain_window_budget import (
    CondensingChatMessageHistory,
    LangChainCondenser,
    LangGraphMemoryStore,
    is_digest,
)
from window_budget import BudgetPolicy
from window_budget.messages import message_from_dict, message_text

from .conftest import digest_model, in_order, provider_valid, request_tokens, tool_loop

WINDOW = 3000


def _key(message: BaseMessage) -> tuple[str, str]:
    return (message.type, message.text)


class HistoryMachine(RuleBasedStateMachine):
    """Random writes to a condensing history; what was written is the reference."""

    def __init__(self) -> None:
        super().__init__()
        self.history: Any = None
        self.expected: list[tuple[str, str]] = []
        self.archived_before = 0
        self.turn = 0
        self.memory: LangGraphMemoryStore | None = None
        self.asked: set[str] = set()

    @initialize(
        writer=st.sampled_from(["none", "model"]),
        keep_recent=st.sampled_from([400, 1200]),
        session=st.sampled_from([None, "s1", "memory store"]),
    )
    def build(self, writer: str, keep_recent: int, session: str | None) -> None:
        model = digest_model() if writer == "model" else None
        policy = BudgetPolicy(keep_recent=keep_recent, reserve_tokens=256)
        engine = None
        if session == "memory store":  # recall's store, beside the archive history
            self.memory = LangGraphMemoryStore(InMemoryStore())
            engine = LangChainCondenser(
                model, context_window=WINDOW, policy=policy, memory=self.memory
            )
        self.history = CondensingChatMessageHistory(
            InMemoryChatMessageHistory(),
            model=model,
            context_window=WINDOW,
            policy=policy,
            session_id=session,
            engine=engine,
        )

    def _wrote(self, messages: list[BaseMessage]) -> None:
        self.expected += [_key(m) for m in messages]
        self.turn += 1

    def _plain(self, words: int) -> list[BaseMessage]:
        t = self.turn
        text = " ".join(f"w{t}-{i}" for i in range(words))
        return [HumanMessage(f"ask {t}: {text}", id=f"h{t}"), AIMessage(f"reply {t}", id=f"a{t}")]

    @rule(words=st.integers(1, 300))
    def plain_turn(self, words: int) -> None:
        batch = self._plain(words)
        self.history.add_messages(batch)
        self._wrote(batch)

    @rule(turns=st.integers(1, 3), chars=st.integers(10, 1500))
    def tool_turns(self, turns: int, chars: int) -> None:
        batch = tool_loop(turns, result_chars=chars, start=self.turn * 10)
        self.history.add_messages(batch)
        self._wrote(batch)

    @rule(words=st.integers(1, 300))
    def async_turn(self, words: int) -> None:
        batch = self._plain(words)
        asyncio.run(self.history.aadd_messages(batch))
        self._wrote(batch)

    @rule(words=st.integers(1, 40))
    def repeated_turn(self, words: int) -> None:
        # Equal messages again and again, without ids: nothing keyed by content may take one
        # for another.
        text = " ".join(["same"] * words)
        batch: list[BaseMessage] = [HumanMessage(text), AIMessage("ok")]
        self.history.add_messages(batch)
        self._wrote(batch)

    @rule(chars=st.integers(9000, 20000))
    def oversized_message(self, chars: int) -> None:
        batch: list[BaseMessage] = [HumanMessage(f"paste {self.turn}: " + "x" * chars)]
        self.history.add_messages(batch)
        self._wrote(batch)

    @rule()
    def clear(self) -> None:
        self.history.clear()
        self.expected = []
        self.asked = set()
        self.archived_before = len(self.history.archive.messages)

    @invariant()
    def nothing_is_lost(self) -> None:
        if self.history is None:
            return
        archived = self.history.archive.messages[self.archived_before :]
        live = [m for m in self.history.messages if not is_digest(m)]
        found = [_key(m) for m in [*archived, *live]]
        assert in_order(self.expected, found)
        if self.memory is not None:  # every question is there too, word for word
            self.asked |= {t for kind, t in self.expected if kind == "human"}
            stored = self.memory.originals("memory store")
            held = {message_text(message_from_dict(dict(o))) for _, o in stored}
            assert self.asked <= held | {m.text for m in live}

    @invariant()
    def live_history_fits_and_keeps_pairs(self) -> None:
        if self.history is None:
            return
        live = self.history.messages
        assert provider_valid(live)
        assert request_tokens(live) <= WINDOW


HistoryMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=20, deadline=None)
test_history_machine = HistoryMachine.TestCase
