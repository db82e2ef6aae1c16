"""Ahead-of-time compaction of ``WindowBudgetMemory`` through a real ``SimpleChatEngine``.

The chat engine answers with ``MockLLM``; the memory's digests are written by an LLM whose
``achat`` waits on an ``asyncio.Event`` the test sets, so nothing depends on timing. Every
digest names its call (``digest-N``) and the turns it saw (``turn-K``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.storage.chat_store import SimpleChatStore

from llama_index.memory.window_budget import WindowBudgetMemory
from llama_index.memory.window_budget.convert import is_digest

WINDOW = 6_000
MARK = re.compile(r"turn-(\d+)\b")
HANG = 10.0
"""Seconds a gated summary call waits for a gate nobody sets (a summary call on the turn)."""


class GatedLLM(MockLLM):
    """Writes digests: call ``n`` waits for its gate when one is set; ``fail`` calls raise."""

    _gates: dict[int, asyncio.Event] = PrivateAttr(default_factory=dict)
    _seen: list[set[int]] = PrivateAttr(default_factory=list)
    _fail: set[int] = PrivateAttr(default_factory=set)
    _cancelled: list[int] = PrivateAttr(default_factory=list)

    def gate(self, n: int) -> asyncio.Event:
        return self._gates.setdefault(n, asyncio.Event())

    _sync: int = PrivateAttr(default=0)

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        self._sync += 1
        marks = sorted({int(k) for m in messages[1:] for k in MARK.findall(m.content or "")})
        files = ", ".join(f"src/mod_{k}.py" for k in marks)
        reply = f"# Objective\nFix the modules under src/: {files}.\n# Plan\nGo on (sync)."
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=reply))

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        n = len(self._seen)
        text = "\n".join(m.content or "" for m in messages[1:])
        marks = {int(k) for k in MARK.findall(text)}
        self._seen.append(marks)
        gate = self._gates.get(n)
        try:
            if gate is not None:  # bounded, so a test without the wiring fails, not hangs
                await asyncio.wait_for(gate.wait(), HANG)
        except asyncio.CancelledError:
            self._cancelled.append(n)
            raise
        if n in self._fail:
            raise RuntimeError(f"summarizer down (call {n})")
        listed = ", ".join(f"turn-{k}" for k in sorted(marks))
        files = ", ".join(f"src/mod_{k}.py" for k in sorted(marks))
        reply = (
            f"# Objective\nFix the modules under src/: {files}.\n"
            f"# Plan\nGo on (digest-{n} of {listed})."
        )
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=reply))


def ask(k: int) -> str:
    return f"turn-{k}: please fix src/mod_{k}.py " + "details " * 80


def build(
    writer: GatedLLM, store: SimpleChatStore | None = None, key: str = "chat"
) -> tuple[SimpleChatEngine, WindowBudgetMemory]:
    memory = WindowBudgetMemory.from_defaults(
        llm=writer,
        context_window=WINDOW,
        chat_store=store or SimpleChatStore(),
        chat_store_key=key,
        precompact=0.5,
    )
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=8), memory=memory)
    return engine, memory


async def until(
    engine: SimpleChatEngine, memory: WindowBudgetMemory, start: int, state: str
) -> int:
    """Chat from turn ``start`` until the background digest is in ``state``; the next turn."""
    assert memory.ahead is not None
    for k in range(start, start + 60):
        await engine.achat(ask(k))
        assert memory.last_compaction is None, "compacted before the background digest"
        if memory.ahead.state() == state:
            return k + 1
    raise AssertionError(f"no background digest in state {state!r}")


async def compact(engine: SimpleChatEngine, memory: WindowBudgetMemory, start: int) -> int:
    """Chat from turn ``start`` until a digest is committed; the next turn."""
    for k in range(start, start + 60):
        await engine.achat(ask(k))
        if memory.last_compaction is not None and memory.last_compaction.committed:
            return k + 1
    raise AssertionError("no turn compacted")


def assert_written_on_the_turn(writer: GatedLLM, first: int, memory: WindowBudgetMemory) -> str:
    """The stored digest is the reply of a call from ``first`` on, and covers the head folded.

    (A long head takes several calls, each carrying the digest before; after a compaction
    the next background digest may start at once.)
    """
    text, named, kept = digest_of(memory)
    call = int(re.findall(r"digest-(\d+) ", text)[0])
    assert call >= first
    assert named == writer._seen[call]
    assert not named & kept
    assert named | kept == set(range(max(kept) + 1))
    return text


def digest_of(memory: WindowBudgetMemory) -> tuple[str, set[int], set[int]]:
    """The stored digest's text, the turns it names, the turns the kept messages name."""
    stored = memory.get_all()
    digests = [m for m in stored if is_digest(m)]
    assert len(digests) == 1
    text = digests[0].content or ""
    kept = {int(k) for m in stored if m not in digests for k in MARK.findall(m.content or "")}
    return text, {int(k) for k in MARK.findall(text)}, kept


async def running(**options: Any) -> tuple[GatedLLM, Any, WindowBudgetMemory, int]:
    """A chat engine whose first background digest is running, held at its gate; the LLM,
    the engine, its memory and the next turn's index."""
    writer = GatedLLM(**options)
    writer.gate(0)
    engine, memory = build(writer)
    assert memory.ahead is not None
    k = await until(engine, memory, 0, "running")
    return writer, engine, memory, k


async def test_the_compacting_call_uses_the_ready_digest_of_the_head_it_folds() -> None:
    writer, engine, memory, k = await running()
    writer.gate(0).set()
    assert await memory.ahead.wait() == "ready"
    writer.gate(1)  # never set: a call the compacting turn waited for would not return
    await compact(engine, memory, k)
    text, named, kept = digest_of(memory)
    assert "digest-0" in text
    assert named == writer._seen[0]
    assert not named & kept
    assert named | kept == set(range(max(kept) + 1))
    archived = memory.get_all(include_archived=True)
    assert {int(k) for m in archived for k in MARK.findall(m.content or "")} >= named
    assert writer._sync == 0
    await memory.aclose()  # the next background digest (call 1) may have started: cancelled
    assert memory.ahead.state() in ("none", "cancelled")


async def test_a_stale_digest_is_not_used() -> None:
    writer, engine, memory, k = await running()
    writer.gate(0).set()
    assert await memory.ahead.wait() == "ready"
    # The head is rewritten on the turn that crosses the trigger (aset keeps the archive).
    for step in range(k, k + 60):
        history = memory.get_all()
        changed = "turn-0: CHANGED, please fix src/mod_0.py " + "x " * 80
        history[0] = ChatMessage(role=MessageRole.USER, content=changed)
        await engine.achat(ask(step), chat_history=history)
        if memory.last_compaction is not None:
            break
    text = assert_written_on_the_turn(writer, 1, memory)
    assert "digest-0 " not in text
    assert "CHANGED" in text


async def test_a_cancelled_digest_is_not_used() -> None:
    writer, engine, memory, k = await running()
    assert memory.ahead.cancel()
    assert await memory.ahead.wait() == "cancelled"
    assert writer._cancelled == [0]
    await compact(engine, memory, k)
    assert_written_on_the_turn(writer, 1, memory)


async def test_a_failed_background_digest_is_written_again_on_the_compacting_call() -> None:
    writer = GatedLLM()
    writer._fail = {0}
    engine, memory = build(writer)
    assert memory.ahead is not None
    k = await until(engine, memory, 0, "failed")
    await compact(engine, memory, k)
    assert_written_on_the_turn(writer, 1, memory)


async def test_a_summarizer_that_always_fails_leaves_the_store_as_it_was() -> None:
    writer = GatedLLM()
    writer._fail = set(range(100))
    engine, memory = build(writer)
    assert memory.ahead is not None
    k = await until(engine, memory, 0, "failed")
    for step in range(k, k + 60):
        await engine.achat(ask(step))
        if memory.last_compaction is not None:
            break
    compaction = memory.last_compaction
    assert compaction is not None
    assert compaction.fallback
    assert not compaction.committed
    assert not any(is_digest(m) for m in memory.get_all())
    view = await memory.aget()
    assert any("digest" in (m.content or "").lower() for m in view)


async def test_two_conversations_in_one_store_each_use_their_own_digest() -> None:
    store = SimpleChatStore()
    writers = {"a": GatedLLM(), "b": GatedLLM()}
    built = {key: build(writers[key], store, key) for key in ("a", "b")}
    offset = {"a": 0, "b": 1000}
    k = 0
    while any(m.ahead is not None and m.ahead.state() == "none" for _, m in built.values()):
        assert k < 60
        for key, (engine, _) in built.items():
            await engine.achat(ask(offset[key] + k))
        k += 1
    for key, (engine, memory) in built.items():
        assert memory.ahead is not None
        assert await memory.ahead.wait() == "ready"
        writers[key].gate(1)  # never set (see the first test)
        await compact(engine, memory, offset[key] + k)
        text, named, kept = digest_of(memory)
        assert "digest-0 " in text
        assert named == writers[key]._seen[0]
        assert named
        assert all(offset[key] <= n < offset[key] + 1000 for n in named | kept)
        await memory.aclose()


def test_get_stays_synchronous_and_starts_nothing() -> None:
    writer = GatedLLM()
    engine, memory = build(writer)
    assert memory.ahead is not None
    for k in range(60):
        engine.chat(ask(k))
        if memory.last_compaction is not None:
            break
    assert memory.last_compaction is not None
    assert memory.last_compaction.committed
    assert writer._sync >= 1
    assert not writer._seen
    assert memory.ahead.state() == "none"


def test_precompact_must_sit_below_the_trigger() -> None:
    with pytest.raises(ValueError, match="precompact_ratio"):
        WindowBudgetMemory.from_defaults(llm=MockLLM(), context_window=WINDOW, precompact=0.95)
