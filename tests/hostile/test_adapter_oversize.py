"""A system prompt larger than the window: both adapters say so with ``BudgetError``.

The README promises "fits or BudgetError"; an adapter that handed the model an over-limit
request (with only a log line) would break it. The caller's stored messages stay intact.
"""

from __future__ import annotations

import asyncio

import pytest

from window_budget import BudgetError, BudgetPolicy

HUGE = "Follow these rules exactly. " * 2_000  # ~15k tokens
WINDOW = 4_096


def test_llama_index_memory_get_raises_when_the_system_prompt_exceeds_the_window() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.base.llms.types import ChatMessage

    from llama_index.memory.window_budget import WindowBudgetMemory

    memory = WindowBudgetMemory.from_defaults(context_window=WINDOW)
    history = [
        ChatMessage(role="system", content=HUGE),
        ChatMessage(role="user", content="hello"),
        ChatMessage(role="assistant", content="hi"),
    ]
    memory.set(history)  # storing never raises: nothing is lost
    with pytest.raises(BudgetError, match="system messages"):
        memory.get()
    with pytest.raises(BudgetError, match="system messages"):
        asyncio.run(memory.aget())
    stored = memory.get_all()
    assert [m.content for m in stored] == [m.content for m in history]


def test_llama_index_memory_get_raises_when_the_prefix_leaves_no_room() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.base.llms.types import ChatMessage

    from llama_index.memory.window_budget import WindowBudgetMemory

    memory = WindowBudgetMemory.from_defaults(context_window=WINDOW)
    memory.put(ChatMessage(role="user", content="hello"))
    with pytest.raises(BudgetError, match="prefix"):
        memory.get(initial_token_count=10**6)
    assert len(memory.get_all()) == 1


def test_langchain_condense_raises_when_the_system_prompt_exceeds_the_window() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    from langchain_window_budget import condense_messages

    history = [SystemMessage(HUGE), HumanMessage("hello"), AIMessage("hi")]
    before = list(history)
    with pytest.raises(BudgetError):
        condense_messages(
            history, context_window=WINDOW, policy=BudgetPolicy(reserve_tokens=0, keep_recent=500)
        )
    assert history == before


def test_langchain_middleware_raises_when_the_system_prompt_exceeds_the_window() -> None:
    pytest.importorskip("langchain")
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import HumanMessage

    from langchain_window_budget import WindowBudgetMiddleware

    model = FakeListChatModel(responses=["ok"])
    middleware = WindowBudgetMiddleware(
        model,
        context_window=WINDOW,
        system_prompt=HUGE,
        policy=BudgetPolicy(reserve_tokens=0, keep_recent=500),
    )
    from langgraph.runtime import Runtime

    state = {"messages": [HumanMessage("hello")]}
    with pytest.raises(BudgetError):
        middleware.before_model(state, Runtime())  # type: ignore[arg-type]
