"""LlamaIndex ``Memory`` with the block, driven through random puts, archives every flush.

Hypothesis' stateful testing puts turns (plain, with tool calls, repeated word for word;
sync and async, each async call on a fresh event loop) into a ``Memory`` whose short-term
queue flushes into :class:`WindowBudgetMemoryBlock`, and reads it. After every step the
block's memory store holds exactly the oldest messages put, in order (those ``Memory``
flushed, none twice, across a restart over the same stores too), and what ``Memory.get``
returns never holds a tool result without its call.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
from llama_index.core.memory import Memory

from llama_index.memory.window_budget import WindowBudgetMemoryBlock
from window_budget.messages import message_from_dict, message_text

from .conftest import ScriptedLLM, pairs_kept

SESSION = "s1"


def _words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


class BlockMachine(RuleBasedStateMachine):
    """Random puts into a Memory with the block; what was put is the reference."""

    def __init__(self) -> None:
        super().__init__()
        self.memory: Any = None
        self.block: Any = None
        self.put: list[str] = []
        self.turn = 0

    @initialize(writer=st.sampled_from(["none", "model"]), max_tokens=st.sampled_from([300, 900]))
    def build(self, writer: str, max_tokens: int) -> None:
        llm = ScriptedLLM(window=8000) if writer == "model" else None
        self._start(WindowBudgetMemoryBlock(llm=llm, max_tokens=max_tokens))

    def _start(self, block: WindowBudgetMemoryBlock) -> None:
        self.block = block
        self.memory = Memory.from_defaults(
            session_id=SESSION,
            memory_blocks=[block],
            token_limit=2000,
            chat_history_token_ratio=0.5,
            token_flush_size=300,
        )

    @rule()
    def restart(self) -> None:
        # Another process: a new block and a new Memory over the block's stores. Memory's
        # own queue is its in-memory SQL table, gone with it: what it had not flushed yet
        # is LlamaIndex's to lose, so the reference becomes what the block archived.
        old = self.block
        self._start(
            WindowBudgetMemoryBlock(
                llm=old.llm,
                max_tokens=old.max_tokens,
                chat_store=old.chat_store,
                memory_store=old.store,
            )
        )
        self.put = self._archived()

    def _add(self, messages: list[ChatMessage], *, run_async: bool = False) -> None:
        if run_async:
            asyncio.run(self.memory.aput_messages(messages))
        else:
            self.memory.put_messages(messages)
        self.put += [m.content or "" for m in messages]
        self.turn += 1

    @rule(words=st.integers(1, 120), run_async=st.booleans())
    def plain_turn(self, words: int, run_async: bool) -> None:
        t = self.turn
        turn = [
            ChatMessage(role="user", content=_words(words, f"u{t}w")),
            ChatMessage(role="assistant", content=_words(max(1, words // 3), f"a{t}w")),
        ]
        self._add(turn, run_async=run_async)

    @rule(words=st.integers(1, 80))
    def tool_turn(self, words: int) -> None:
        t = self.turn
        call = f"c{t}"
        self._add(
            [
                ChatMessage(role="user", content=_words(5, f"u{t}w")),
                ChatMessage(
                    role="assistant",
                    blocks=[ToolCallBlock(tool_call_id=call, tool_name="lookup", tool_kwargs={})],
                ),
                ChatMessage(
                    role="tool",
                    content=_words(words, f"r{t}w"),
                    additional_kwargs={"tool_call_id": call},
                ),
                ChatMessage(role="assistant", content=_words(5, f"a{t}w")),
            ]
        )

    @rule(words=st.integers(1, 30))
    def repeated_turn(self, words: int) -> None:
        same = [
            ChatMessage(role="user", content=_words(words, "same")),
            ChatMessage(role="assistant", content="ok"),
        ]
        self._add(same)

    @rule()
    def read(self) -> None:
        view = self.memory.get()
        assert pairs_kept(view), view

    @invariant()
    def flushed_messages_are_archived_once_in_order(self) -> None:
        if self.block is None or self.block.store is None:
            return
        archived = self._archived()
        assert archived == self.put[: len(archived)]

    def _archived(self) -> list[str]:
        store = self.block.store
        return [message_text(message_from_dict(dict(o))) for _, o in store.originals(SESSION)]


BlockMachine.TestCase.settings = settings(max_examples=30, stateful_step_count=20, deadline=None)
test_block_machine = BlockMachine.TestCase
