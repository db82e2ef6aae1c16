"""A memory driven through random sequences of LlamaIndex's calls keeps every message.

Hypothesis' stateful testing builds memories with each digest role, with no LLM, an LLM that
writes digests or one whose first summary calls fail, with and without a memory store and
ahead-of-time compaction, over a ``SimpleChatStore`` or a ``SQLiteChatStore`` file, and the
archive in the chat store, a separate store or a ``JsonlChatStore``. It puts turns (plain,
with tool calls, repeated word for word, oversized; sync, and async on a fresh event loop
each time, as ``asyncio.run`` cells make them), reads views under a caller's prefix up to the
whole limit, hands the history back through ``set`` as chat engines do, starts over, compacts
by hand, and saves and restores the memory (``to_dict`` and ``to_string``, in this process
or as another would). After every step: the whole original conversation
(``get_all(include_archived=True)``) is what was put, in order; every view fits the limit,
opens on neither a tool result nor an assistant message, and never parts a tool call from
its result; a restored memory keeps its memory store and what it holds.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from typing import Any, Literal

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.storage.chat_store import SimpleChatStore
from llama_index.storage.chat_store.sqlite import SQLiteChatStore

from llama_index.memory.window_budget import JsonlChatStore, WindowBudgetMemory, is_digest

from .conftest import ScriptedLLM, pairs_kept

WINDOW = 1500


def _key(message: ChatMessage) -> tuple[str, str, tuple[str, ...]]:
    calls = tuple(b.tool_call_id or "" for b in message.blocks if isinstance(b, ToolCallBlock))
    return (str(message.role.value), message.content or "", calls)


def _words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


class MemoryMachine(RuleBasedStateMachine):
    """Random LlamaIndex calls against a memory; what was put is the reference."""

    def __init__(self) -> None:
        super().__init__()
        self.memory: Any = None
        self.expected: list[tuple[str, str, tuple[str, ...]]] = []
        self.turn = 0
        self.directory: str | None = None
        self.has_store = False

    @initialize(
        digest_role=st.sampled_from(["pair", "system", "user"]),
        writer=st.sampled_from(["none", "model", "flaky model"]),
        memory_store=st.booleans(),
        archive=st.sampled_from(["chat store", "own", "jsonl"]),
        precompact=st.sampled_from([None, 0.4]),
        sqlite=st.booleans(),
    )
    def build(
        self,
        digest_role: Literal["pair", "system", "user"],
        writer: str,
        memory_store: bool,
        archive: str,
        precompact: float | None,
        sqlite: bool,
    ) -> None:
        self.has_store = memory_store
        llm = None
        if writer != "none":
            # A failing summary call falls back to the network-free digest (the default).
            flaky = 2 if writer == "flaky model" else 0
            llm = ScriptedLLM(window=WINDOW * 4, flaky_summaries=flaky)
        chat_store = SimpleChatStore()
        if sqlite:  # a store with its own transaction for the rewrite, in a file
            path = f"{self._directory()}/chat.sqlite"
            chat_store = SQLiteChatStore.from_params(database=path)
        self.memory = WindowBudgetMemory.from_defaults(
            llm=llm,
            chat_store=chat_store,
            context_window=WINDOW,
            digest_role=digest_role,
            memory_store=memory_store or None,
            precompact=precompact,
            archive_store={
                "chat store": None,
                "own": SimpleChatStore(),
                "jsonl": JsonlChatStore(directory=f"{self._directory()}/archive"),
            }[archive],
        )

    def _directory(self) -> str:
        if self.directory is None:
            self.directory = tempfile.mkdtemp(prefix="wb-archive-")
        return self.directory

    def teardown(self) -> None:
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)

    def _put(self, messages: list[ChatMessage]) -> None:
        self.memory.put_messages(messages)
        self.expected += [_key(m) for m in messages]
        self.turn += 1

    @rule(words=st.integers(1, 200), reply=st.integers(1, 200))
    def plain_turn(self, words: int, reply: int) -> None:
        t = self.turn
        self._put(
            [
                ChatMessage(role="user", content=_words(words, f"u{t}w")),
                ChatMessage(role="assistant", content=_words(reply, f"a{t}w")),
            ]
        )

    @rule(calls=st.integers(1, 3), words=st.integers(1, 150))
    def tool_turn(self, calls: int, words: int) -> None:
        t = self.turn
        ids = [f"c{t}-{k}" for k in range(calls)]
        turn = [
            ChatMessage(role="user", content=_words(5, f"u{t}w")),
            ChatMessage(
                role="assistant",
                blocks=[
                    ToolCallBlock(tool_call_id=c, tool_name="lookup", tool_kwargs={"q": c})
                    for c in ids
                ],
            ),
            *(
                ChatMessage(
                    role="tool",
                    content=_words(words, f"r{c}w"),
                    additional_kwargs={"tool_call_id": c},
                )
                for c in ids
            ),
            ChatMessage(role="assistant", content=_words(10, f"a{t}w")),
        ]
        self._put(turn)

    @rule(words=st.integers(1, 120))
    def async_turn(self, words: int) -> None:
        # Each call on a fresh event loop, as a notebook's asyncio.run cells make them.
        t = self.turn
        turn = [
            ChatMessage(role="user", content=_words(words, f"u{t}w")),
            ChatMessage(role="assistant", content=_words(words, f"a{t}w")),
        ]
        asyncio.run(self.memory.aput_messages(turn))
        self.expected += [_key(m) for m in turn]
        self.turn += 1
        view = asyncio.run(self.memory.aget())
        assert self.memory.count_tokens(view) <= self.memory.token_limit

    @rule(words=st.integers(1, 40))
    def repeated_turn(self, words: int) -> None:
        # Equal messages again and again ("ok", the same tool output): nothing keyed by
        # content may take one for another.
        self._put(
            [
                ChatMessage(role="user", content=_words(words, "same")),
                ChatMessage(role="assistant", content="ok"),
            ]
        )

    @rule(words=st.integers(800, 3000))
    def oversized_turn(self, words: int) -> None:
        self._put([ChatMessage(role="user", content=_words(words, f"big{self.turn}w"))])

    @rule(share=st.floats(0, 1))
    def read_with_prefix(self, share: float) -> None:
        # A chat engine's prefix, up to the whole limit (ChatMemoryBuffer's edge).
        prefix = int(share * self.memory.token_limit)
        view = self.memory.get(initial_token_count=prefix)
        assert self.memory.count_tokens(view) + prefix <= self.memory.token_limit

    @rule()
    def engine_hands_history_back(self) -> None:
        self.memory.set(self.memory.get_all())

    @rule()
    def start_over(self) -> None:
        self.memory.reset()
        self.expected = []

    @precondition(lambda self: self.expected)
    @rule()
    def compact_now(self) -> None:
        self.memory.compact()

    @rule(as_text=st.booleans(), elsewhere=st.booleans())
    def save_and_restore(self, as_text: bool, elsewhere: bool) -> None:
        before = [_key(m) for m in self.memory.get_all(include_archived=True)]
        filed = self._filed()
        data = self.memory.to_dict()
        given: dict[str, Any] = {}
        if elsewhere:  # another process: the data alone, and what it cannot carry
            data["instance"] = "saved elsewhere"
            given["llm"] = self.memory.llm
            if isinstance(self.memory.archive_store, JsonlChatStore):
                given["archive_store"] = self.memory.archive_store
            if isinstance(self.memory.chat_store, SQLiteChatStore):
                given["chat_store"] = self.memory.chat_store
        if as_text:
            self.memory = WindowBudgetMemory.from_string(json.dumps(data), **given)
        else:
            self.memory = WindowBudgetMemory.from_dict(data, **given)
        assert [_key(m) for m in self.memory.get_all(include_archived=True)] == before
        # The memory store comes back too: recall reaches what was folded before the save.
        assert (self.memory.memory_store is not None) == self.has_store
        assert self._filed() == filed

    def _filed(self) -> list[Any]:
        """What the memory store holds of this conversation: its originals, in order."""
        store = self.memory.memory_store
        return [] if store is None else list(store.originals(self.memory.chat_store_key))

    @invariant()
    def nothing_is_lost(self) -> None:
        if self.memory is None:
            return
        whole = self.memory.get_all(include_archived=True)
        assert [_key(m) for m in whole if not is_digest(m)] == self.expected

    @invariant()
    def the_view_fits_and_keeps_pairs(self) -> None:
        if self.memory is None:
            return
        view = self.memory.get()
        assert self.memory.count_tokens(view) <= self.memory.token_limit
        body = [m for m in view if m.role != MessageRole.SYSTEM]
        if body:
            assert body[0].role not in (MessageRole.TOOL, MessageRole.ASSISTANT), body[0]
        assert pairs_kept(view), view


MemoryMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=20, deadline=None)
test_memory_machine = MemoryMachine.TestCase
