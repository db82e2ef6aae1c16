"""Fixtures for the LangChain adapter tests: fake chat models and transcript builders.

The whole folder skips cleanly when the ``langchain`` extra is not installed.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain")
pytest.importorskip("langgraph")

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult

from langchain_window_budget._convert import to_core
from window_budget import estimate_tokens
from window_budget.pipeline.summarize import CONDENSER_BRIEF

DEPRECATION = "ignore::langchain_core._api.deprecation.LangChainDeprecationWarning"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # RunnableWithMessageHistory and the in-memory histories are deprecated upstream;
    # the adapter still supports them, so their warnings are not failures here.
    for item in items:
        if "tests/langchain" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.filterwarnings(DEPRECATION))


def request_tokens(messages: Sequence[BaseMessage]) -> int:
    """What the adapter's own estimate says a request costs (system prompt included)."""
    return estimate_tokens([to_core(m) for m in messages])


DIGEST_REPLY = "# Objective\nkeep going\n# Status\nShipped: earlier turns"


class RecordingChatModel(BaseChatModel):
    """A fake tool-calling chat model that records each request's size and enforces a window.

    Summary requests (system prompt == the condenser brief) get a fixed digest reply.
    Other requests: ``tool_rounds`` tool calls per user turn, then a final answer.
    """

    window: int = 10_000
    tool_rounds: int = 3
    reply_chars: int = 400
    sizes: list[int] = []  # noqa: RUF012 - a pydantic field; pydantic copies defaults
    summary_calls: list[dict[str, Any]] = []  # noqa: RUF012
    calls: int = 0
    fail_summary: bool = False
    report_usage: bool = True
    model_name: str = "recording-model"
    stop_after_calls: int | None = None

    @property
    def _llm_type(self) -> str:
        return "recording-chat-model"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if (
            messages
            and isinstance(messages[0], SystemMessage)
            and messages[0].text == CONDENSER_BRIEF
        ):
            self.summary_calls.append({"kwargs": kwargs, "prompt": messages[-1].text})
            if self.fail_summary:
                raise RuntimeError("summarizer is down")
            msg = AIMessage(DIGEST_REPLY)
            return ChatResult(generations=[ChatGeneration(message=msg)])
        size = request_tokens(messages)
        self.sizes.append(size)
        if size > self.window:
            raise AssertionError(f"request of {size} tokens exceeds the window {self.window}")
        self.calls += 1
        since_user = 0
        for m in reversed(messages):
            if isinstance(m, HumanMessage):
                break
            if isinstance(m, ToolMessage):
                since_user += 1
        usage = {"input_tokens": size, "output_tokens": 20, "total_tokens": size + 20}
        meta = {"model_name": self.model_name}
        more = (
            self.calls < self.stop_after_calls
            if self.stop_after_calls is not None
            else since_user < self.tool_rounds
        )
        if more:
            msg = AIMessage(
                "calling the tool " + "p" * 40,
                tool_calls=[
                    {
                        "name": "lookup",
                        "args": {"q": f"call-{self.calls}"},
                        "id": f"call-{self.calls}",
                        "type": "tool_call",
                    }
                ],
                usage_metadata=usage if self.report_usage else None,
                response_metadata=meta,
            )
        else:
            msg = AIMessage(
                "final answer " + "a" * self.reply_chars,
                usage_metadata=usage if self.report_usage else None,
                response_metadata=meta,
            )
        return ChatResult(generations=[ChatGeneration(message=msg)])


def reload(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """What a checkpointer or a store hands back every turn: equal messages, new objects."""
    from langchain_core.messages import messages_from_dict, messages_to_dict

    return messages_from_dict(messages_to_dict(list(messages)))


def checkpointed_agent(turns: int, window: int) -> tuple[Any, Any, dict[str, Any]]:
    """``(agent, middleware, config)``: ``create_agent`` with the middleware over an
    ``InMemorySaver`` thread of ``tool_loop(turns)``, a model that never calls a tool."""
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_window_budget import WindowBudgetMiddleware

    model = RecordingChatModel(sizes=[], summary_calls=[])
    model.window = window
    model.tool_rounds = 0
    middleware = WindowBudgetMiddleware(model=model, context_window=window)
    agent = create_agent(model, tools=[], middleware=[middleware], checkpointer=InMemorySaver())
    config: dict[str, Any] = {"configurable": {"thread_id": "t"}}
    agent.update_state(config, {"messages": tool_loop(turns)})
    return agent, middleware, config


@pytest.fixture
def converted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts conversions to core messages (fresh process-wide conversion caches)."""
    from langchain_window_budget import _convert
    from window_budget import bridge
    from window_budget.budget import ContentCache

    count = [0]
    real = _convert.to_core

    def counted(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(_convert, "to_core", counted)
    monkeypatch.setattr(bridge.codec, "CONVERSIONS", ContentCache())
    monkeypatch.setattr(bridge, "RECOGNISED", bridge.codec.Recognised())
    return count


@pytest.fixture
def recording_model() -> RecordingChatModel:
    return RecordingChatModel(sizes=[], summary_calls=[])


def digest_model(reply: str = DIGEST_REPLY) -> BaseChatModel:
    """LangChain's own fake model, answering every summary call with ``reply``."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    return GenericFakeChatModel(messages=itertools.cycle([AIMessage(reply)]))


def tool_loop(
    turns: int, *, result_chars: int = 800, start: int = 0, human: bool = True
) -> list[BaseMessage]:
    """``turns`` rounds of [human?, AI with one tool call, tool result, AI answer]."""
    out: list[BaseMessage] = []
    for i in range(start, start + turns):
        if human:
            out.append(HumanMessage(f"question {i}: " + "q" * 300, id=f"h{i}"))
        out.append(
            AIMessage(
                "",
                id=f"a{i}",
                tool_calls=[
                    {"name": "lookup", "args": {"i": i}, "id": f"c{i}", "type": "tool_call"}
                ],
            )
        )
        out.append(
            ToolMessage(f"result {i}: " + "r" * result_chars, tool_call_id=f"c{i}", id=f"t{i}")
        )
        out.append(AIMessage(f"answer {i}: " + "s" * 200, id=f"s{i}"))
    return out


def in_order(expected: Sequence[Any], found: Sequence[Any]) -> bool:
    """``expected`` is a subsequence of ``found``: all of it, in its order, gaps allowed."""
    rest = iter(found)
    return all(any(k == f for f in rest) for k in expected)


def provider_valid(messages: Sequence[BaseMessage]) -> bool:
    """Every ToolMessage follows an AIMessage (in the same list) that made its call."""
    called: set[str] = set()
    for m in messages:
        if isinstance(m, AIMessage):
            called.update(str(c["id"]) for c in m.tool_calls)
            called.update(str(c.get("id")) for c in m.invalid_tool_calls)
        elif isinstance(m, ToolMessage) and m.tool_call_id not in called:
            return False
    return True


def snapshot(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    return [m.model_dump() for m in messages]


def cycle_iter(items: Sequence[Any]) -> Iterator[Any]:
    return itertools.cycle(items)
