"""Any LlamaIndex LLM as the core's summarizer: the async and sync completer pair."""

from __future__ import annotations

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.llms.llm import LLM

from llama_index.memory.window_budget.instrumentation import summary_call
from window_budget import bridge
from window_budget.contract import (
    CompleteFn,
    CompleteOptions,
    Context,
    Model,
    SyncCompleteFn,
)
from window_budget.messages import AssistantMessage, TextBlock, UserMessage, content_text

__all__ = ["completers_from_llm", "context_to_chat_messages"]


def context_to_chat_messages(context: Context) -> list[ChatMessage]:
    """The summary request as LlamaIndex messages: the system brief, then the prompt."""
    out = [ChatMessage(role=MessageRole.SYSTEM, content=context.system_prompt)]
    for m in context.messages:
        text = content_text(m.content) if isinstance(m, UserMessage) else str(m)
        out.append(ChatMessage(role=MessageRole.USER, content=text))
    return out


class _LLMCalls:
    """A LlamaIndex LLM's summary calls, for :func:`window_budget.bridge.make_completers`."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    def prompt(self, context: Context) -> list[ChatMessage]:
        return context_to_chat_messages(context)

    def call(self, prompt: list[ChatMessage], options: CompleteOptions | None) -> ChatResponse:
        with summary_call():  # the LLM's events carry the summary tag
            return self.llm.chat(prompt)

    async def acall(
        self, prompt: list[ChatMessage], options: CompleteOptions | None
    ) -> ChatResponse:
        with summary_call():
            return await self.llm.achat(prompt)

    def reply(self, reply: ChatResponse, model: Model) -> AssistantMessage:
        return AssistantMessage((TextBlock(reply.message.content or ""),), model=model.id)


def completers_from_llm(
    llm: LLM, *, summary_timeout: float | None = None
) -> tuple[CompleteFn, SyncCompleteFn]:
    """``(complete, complete_sync)`` calling ``await llm.achat`` and ``llm.chat``.

    Each call runs under the instrument tag ``{"window_budget": "summary"}`` so its
    LLM events can be told from the application's. A transient failure (rate limit,
    timeout, 5xx) is retried with a bounded wait within ``summary_timeout``, a context
    overflow with a smaller request (:mod:`window_budget.bridge.retry`). The output cap is
    not forwarded: LlamaIndex LLMs take it at construction, not per call; the core shortens
    an over-long digest itself.
    """
    return bridge.make_completers(_LLMCalls(llm), timeout=summary_timeout)
