"""A kept message the thread keeps only shortened still has its original in the memory store.

When the window cannot hold the tail a ``keep=`` rule (or the newest turn) asks for, the
middleware and the chat history store a shortened copy in place of the message. The original
then leaves the thread: it must reach the memory store, so ``recall`` gives it back word for
word, and not only the ``archive`` callback a caller may not have passed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.store.memory import InMemoryStore

from langchain_window_budget import LangChainCondenser, LangGraphMemoryStore, recall_tool
from window_budget import BudgetPolicy
from window_budget.messages import message_from_dict, message_text

from .conftest import RecordingChatModel, tool_loop

pytest.importorskip("langchain.agents")

SHORTENED = "removed by window-budget"
BIG = " ".join(f"t8w{i}" for i in range(550))  # the eighth turn: too long to keep whole


def _originals(memory: LangGraphMemoryStore, conversation: str) -> list[str]:
    return [message_text(message_from_dict(dict(o))) for _, o in memory.originals(conversation)]


def _agent(memory: LangGraphMemoryStore) -> tuple[Any, Any]:
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_window_budget import WindowBudgetMiddleware

    model = RecordingChatModel(sizes=[], summary_calls=[], window=4000, tool_rounds=0)
    middleware = WindowBudgetMiddleware(
        model=model,
        context_window=4000,
        trigger=("tokens", 2500),
        keep=("messages", 4),
        memory=memory,
    )
    agent = create_agent(model, tools=[], middleware=[middleware], checkpointer=InMemorySaver())
    return agent, middleware


def _turns() -> list[HumanMessage]:
    words = [40, 1, 1, 1, 14, 1, 15]
    asks = [HumanMessage(" ".join(f"t{n}w{i}" for i in range(w))) for n, w in enumerate(words, 1)]
    return [*asks, HumanMessage(BIG)]


@pytest.mark.parametrize("run_async", [False, True], ids=["invoke", "ainvoke"])
def test_the_middleware_files_the_original_of_a_message_it_shortened(run_async: bool) -> None:
    memory = LangGraphMemoryStore(InMemoryStore())
    agent, middleware = _agent(memory)
    config: dict[str, Any] = {"configurable": {"thread_id": "t"}}
    for ask in _turns():
        if run_async:
            asyncio.run(agent.ainvoke({"messages": [ask]}, config))
        else:
            agent.invoke({"messages": [ask]}, config)
    assert middleware.last_result is not None
    assert middleware.last_result.replaced
    thread: list[BaseMessage] = agent.get_state(config).values["messages"]
    assert any(m.text.startswith("t8w0") and SHORTENED in m.text for m in thread)
    assert BIG in _originals(memory, "t")
    recalled = recall_tool(memory, "t").invoke({"query": "t8w549"})
    assert "t8w549" in recalled


def test_the_chat_history_files_the_original_of_a_message_it_shortened() -> None:
    from langchain_core.chat_history import InMemoryChatMessageHistory

    from langchain_window_budget import CondensingChatMessageHistory

    memory = LangGraphMemoryStore(InMemoryStore())
    engine = LangChainCondenser(
        context_window=4000, policy=BudgetPolicy(keep_recent=800), memory=memory
    )
    history = CondensingChatMessageHistory(
        InMemoryChatMessageHistory(), engine=engine, session_id="s-1"
    )
    for i in range(4):
        history.add_messages(tool_loop(1, start=i))
    paste = "paste: " + " ".join(f"p{i}" for i in range(4000))
    history.add_messages([HumanMessage(paste)])
    assert any(SHORTENED in m.text for m in history.messages)
    assert paste in _originals(memory, "s-1")
    assert paste in [m.text for m in history.archive.messages]
