"""LlamaIndex instrumentation: spans around ``get``/``aget`` and a compaction, the compaction
event with the digest audit, and the summary LLM call told apart by its tag."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.llm import LLMChatStartEvent
from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler
from llama_index.core.llms import MockLLM

from llama_index.memory.window_budget import WindowBudgetMemory
from llama_index.memory.window_budget.instrumentation import SUMMARY_TAG, CompactionEvent
from window_budget.pipeline.summarize import CONDENSER_BRIEF

from .conftest import ScriptedLLM


class Recorder(BaseEventHandler):
    """Keeps every event the root dispatcher sees."""

    events: list[BaseEvent] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "Recorder"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        self.events.append(event)


@pytest.fixture
def handlers() -> Iterator[tuple[Recorder, SimpleSpanHandler]]:
    root = get_dispatcher()
    recorder, spans = Recorder(events=[]), SimpleSpanHandler()
    root.add_event_handler(recorder)
    root.add_span_handler(spans)
    try:
        yield recorder, spans
    finally:
        root.event_handlers.remove(recorder)
        root.span_handlers.remove(spans)


def chat(engine: SimpleChatEngine, turns: int) -> None:
    for i in range(turns):
        engine.chat(f"turn {i}: fix src/app/main.py, run pytest -q " + "tell me more " * 25)


def is_summary_request(event: LLMChatStartEvent) -> bool:
    return bool(event.messages) and (event.messages[0].content or "").startswith(
        CONDENSER_BRIEF[:40]
    )


def test_summary_calls_are_tagged_and_the_apps_are_not(
    handlers: tuple[Recorder, SimpleSpanHandler],
) -> None:
    recorder, _ = handlers
    llm = MockLLM(max_tokens=30)  # its chat() is instrumented, as real LLMs' are
    memory = WindowBudgetMemory.from_defaults(llm=llm, context_window=1500)
    chat(SimpleChatEngine.from_defaults(llm=llm, memory=memory), 30)
    starts = [e for e in recorder.events if isinstance(e, LLMChatStartEvent)]
    summaries = [e for e in starts if is_summary_request(e)]
    assert summaries
    assert all(e.tags.get("window_budget") == "summary" for e in summaries)
    assert all("window_budget" not in e.tags for e in starts if not is_summary_request(e))
    assert SUMMARY_TAG == {"window_budget": "summary"}


def test_compaction_event_carries_the_audit(handlers: tuple[Recorder, SimpleSpanHandler]) -> None:
    recorder, spans = handlers
    llm = ScriptedLLM(window=2500)
    memory = WindowBudgetMemory.from_defaults(llm=llm)
    chat(SimpleChatEngine.from_defaults(llm=llm, memory=memory), 30)
    compactions = [e for e in recorder.events if isinstance(e, CompactionEvent)]
    assert len(compactions) == len(llm.summary_prompts)
    last = compactions[-1]
    assert last.chat_store_key == memory.chat_store_key
    record = last.compaction
    assert record["committed"] is True
    assert record["fallback"] is False
    assert record["audit"] is not None
    # The audit checks the whole ledger; the digest carries a bounded record of it.
    assert record["audit"]["in_ledger"] >= record["ledger_facts"] > 0
    # The same account on the memory (wiring b).
    account = memory.last_compaction
    assert account is not None
    assert account.audit is not None
    assert account.as_dict() == record
    assert account.covered >= account.folded > 0
    # The event is raised inside the compaction's span.
    names = {s.id_: s.id_.split("-")[0] for s in spans.completed_spans}
    assert names[last.span_id].endswith("_compact_sync")


def test_get_and_aget_run_in_spans(handlers: tuple[Recorder, SimpleSpanHandler]) -> None:
    import asyncio

    _, spans = handlers
    memory = WindowBudgetMemory.from_defaults(context_window=2000)
    memory.put(ChatMessage(role="user", content="hi"))
    memory.get()
    asyncio.run(memory.aget())
    names = [s.id_.split("-")[0] for s in spans.completed_spans]
    assert "WindowBudgetMemory.get" in names
    assert "WindowBudgetMemory.aget" in names
    assert "WindowBudgetMemory._compact_async" in names
    parents = {s.id_: s.parent_id for s in spans.completed_spans}
    get_span = next(s for s in spans.completed_spans if s.id_.startswith("WindowBudgetMemory.get-"))
    inner = [i for i, parent in parents.items() if parent == get_span.id_]
    assert any(i.startswith("WindowBudgetMemory._compact_sync") for i in inner)


def test_a_failing_summarizer_is_reported_as_a_fallback_not_committed(
    handlers: tuple[Recorder, SimpleSpanHandler],
) -> None:
    recorder, _ = handlers
    llm = ScriptedLLM(window=2500, fail_summaries=True)
    memory = WindowBudgetMemory.from_defaults(llm=llm)
    for i in range(30):
        memory.put(ChatMessage(role="user", content=f"q{i} " + "please " * 40))
        memory.put(ChatMessage(role="assistant", content=f"a{i} " + "sure " * 40))
    account = memory.last_compaction
    assert account is not None
    assert account.fallback
    assert account.committed is False
    assert account.audit is None
    assert "summarizer is down" in (account.fallback_reason or "")
    events = [e for e in recorder.events if isinstance(e, CompactionEvent)]
    assert events
    assert events[-1].compaction["fallback"] is True


async def test_async_summary_calls_are_tagged(handlers: tuple[Recorder, SimpleSpanHandler]) -> None:
    recorder, _ = handlers
    memory = WindowBudgetMemory.from_defaults(llm=MockLLM(max_tokens=30), context_window=1500)
    for i in range(30):
        await memory.aput(ChatMessage(role="user", content=f"q{i} " + "please " * 40))
        await memory.aput(ChatMessage(role="assistant", content=f"a{i} " + "sure " * 40))
    await memory.aget()
    summaries = [
        e for e in recorder.events if isinstance(e, LLMChatStartEvent) and is_summary_request(e)
    ]
    assert summaries
    assert all(e.tags == SUMMARY_TAG for e in summaries)
    assert any(isinstance(e, CompactionEvent) for e in recorder.events)
