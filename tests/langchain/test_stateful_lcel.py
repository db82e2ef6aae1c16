"""The LCEL transformer over a growing transcript, driven through random turns.

Hypothesis' stateful testing grows a transcript turn by turn (plain turns, tool loops,
oversized pastes, the same words again) and runs it through ``condense_messages()``'s
transformer as ``prompt | condenser | model`` does every turn, sync and async (each async
call on a fresh event loop), with and without a model writing digests. After every turn the
output fits the window, never holds a tool result without its call, keeps the caller's own
message objects (or a shortened copy of one, same id) for exactly the newest messages, in
order, and its digest says it covers all the others.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_window_budget import condense_messages, digest_record, is_digest
from window_budget import BudgetPolicy

from .conftest import digest_model, provider_valid, request_tokens, tool_loop

WINDOW = 3000
SHORTENED = "removed by window-budget"


class TransformerMachine(RuleBasedStateMachine):
    """A growing transcript through the transformer; the transcript is the reference."""

    def __init__(self) -> None:
        super().__init__()
        self.runnable: Any = None
        self.history: list[BaseMessage] = []
        self.out: list[BaseMessage] = []
        self.turn = 0

    @initialize(writer=st.sampled_from(["none", "model"]), keep=st.sampled_from([400, 1200]))
    def build(self, writer: str, keep: int) -> None:
        self.runnable = condense_messages(
            model=digest_model() if writer == "model" else None,
            context_window=WINDOW,
            policy=BudgetPolicy(keep_recent=keep, reserve_tokens=256),
        )

    def _run(self, batch: list[BaseMessage], run_async: bool) -> None:
        self.history = [*self.history, *batch]
        self.turn += 1
        config = {"configurable": {"thread_id": "t"}}
        if run_async:
            self.out = asyncio.run(self.runnable.ainvoke(self.history, config))
        else:
            self.out = self.runnable.invoke(self.history, config)

    @rule(words=st.integers(1, 300), run_async=st.booleans())
    def plain_turn(self, words: int, run_async: bool) -> None:
        t = self.turn
        text = " ".join(f"w{t}-{i}" for i in range(words))
        self._run(
            [HumanMessage(f"ask {t}: {text}", id=f"h{t}"), AIMessage(f"reply {t}")], run_async
        )

    @rule(turns=st.integers(1, 3), chars=st.integers(10, 1500))
    def tool_turns(self, turns: int, chars: int) -> None:
        self._run(tool_loop(turns, result_chars=chars, start=self.turn * 10), False)

    @rule(words=st.integers(1, 40))
    def same_words_again(self, words: int) -> None:
        self._run([HumanMessage(" ".join(["same"] * words)), AIMessage("ok")], False)

    @rule(chars=st.integers(9000, 20000))
    def oversized_paste(self, chars: int) -> None:
        self._run([HumanMessage(f"paste {self.turn}: " + "x" * chars)], False)

    @invariant()
    def output_is_the_newest_messages_and_a_digest_of_the_rest(self) -> None:
        if not self.history:
            return
        out = self.out
        assert request_tokens(out) <= WINDOW
        assert provider_valid(out)
        digests = [m for m in out if is_digest(m)]
        tail = [m for m in out if not is_digest(m)]
        newest = self.history[len(self.history) - len(tail) :]
        for mine, theirs in zip(tail, newest, strict=True):
            assert mine is theirs or (
                SHORTENED in mine.text and (mine.type, mine.id) == (theirs.type, theirs.id)
            )
        if digests:
            assert len(digests) == 1
            record = digest_record(digests[0])
            assert record is not None
            assert record["covered"] + len(tail) == len(self.history)
        else:
            assert len(tail) == len(self.history)


TransformerMachine.TestCase.settings = settings(
    max_examples=30, stateful_step_count=20, deadline=None
)
test_transformer_machine = TransformerMachine.TestCase
