"""Shared by the ports of ``SummarizationMiddleware``'s tests: models, counters, helpers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LangSmithParams, ModelProfile
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime

from langchain_window_budget import digest_record
from langchain_window_budget._convert import to_core

SKIP_PRIVATE = "tests a private helper window-budget does not have"

#: What the fake models reply: a digest that keeps the transcript's key facts, so the
#: audit of model-written digests keeps it (a reply without them is replaced, see DIFFERS).
SUMMARY = "# Objective\nthe user's request: {first}\n# Status\nShipped: Generated summary"


def _rt() -> Runtime[Any]:
    return Runtime()


def _digest(update: dict[str, Any] | None) -> HumanMessage:
    assert update is not None
    assert isinstance(update["messages"][0], RemoveMessage)
    assert update["messages"][0].id == REMOVE_ALL_MESSAGES
    digest = update["messages"][1]
    assert isinstance(digest, HumanMessage)
    assert digest_record(digest) is not None
    return digest


def _preserved(update: dict[str, Any] | None) -> list[Any]:
    _digest(update)
    assert update is not None
    return [
        m.id.removeprefix("n") if m.id and m.id.startswith("n") else m.content
        for m in update["messages"][2:]
    ]


def _numbered(n: int, start: int = 0) -> list[AnyMessage]:
    """Turns of a realistic size (the peer's are "1", "2", ...), numbered by their id."""
    return [HumanMessage(f"{i}: " + _SENTENCE * 6, id=f"n{i}") for i in range(start, start + n)]


_SENTENCE = "the user asks about the deployment schedule and the failing migration. "


class MockChatModel(BaseChatModel):
    """Replies a digest that names the first message (the peer's says "Generated summary")."""

    @property
    def _llm_type(self) -> str:
        return "mock"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        first = messages[-1].text.split("» you: ", 1)[-1].split("\n", 1)[0]
        reply = AIMessage(SUMMARY.format(first=first))
        return ChatResult(generations=[ChatGeneration(message=reply)])


class ProfileChatModel(MockChatModel):
    """The peer's model with ``max_input_tokens=1000``."""

    profile: ModelProfile | None = ModelProfile(max_input_tokens=1000)


class ProfileProviderChatModel(ProfileChatModel):
    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        return LangSmithParams(ls_provider="mock", ls_model_type="chat")


def _const(value: int) -> Any:
    def counter(messages: Iterable[Any]) -> int:
        return value

    return counter


def _per_message(tokens: int) -> Any:
    def counter(messages: Iterable[Any]) -> int:
        return len(list(messages)) * tokens

    return counter


def _core(messages: list[AnyMessage]) -> list[Any]:
    return [to_core(m) for m in messages]
