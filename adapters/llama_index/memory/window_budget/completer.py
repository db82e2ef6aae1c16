"""Any LlamaIndex LLM as the core's summarizer: the async and sync completer pair."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.llms.llm import LLM

from llama_index.memory.window_budget.instrumentation import summary_call
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


def _reply(response: ChatResponse, model: Model) -> AssistantMessage:
    text = response.message.content or ""
    return AssistantMessage((TextBlock(text),), model=model.id)


def completers_from_llm(llm: LLM) -> tuple[CompleteFn, SyncCompleteFn]:
    """``(complete, complete_sync)`` calling ``await llm.achat`` and ``llm.chat``.

    Each call runs under the instrument tag ``{"window_budget": "summary"}`` so its
    LLM events can be told from the application's. The output cap is not forwarded:
    LlamaIndex LLMs take it at construction, not per call; the core shortens an
    over-long digest itself.
    """

    async def complete(
        model: Model, context: Context, options: CompleteOptions | None = None
    ) -> AssistantMessage:
        with summary_call():  # the LLM's events carry the summary tag
            response = await llm.achat(context_to_chat_messages(context))
        return _reply(response, model)

    def complete_sync(
        model: Model, context: Context, options: CompleteOptions | None = None
    ) -> AssistantMessage:
        with summary_call():
            response = llm.chat(context_to_chat_messages(context))
        return _reply(response, model)

    complete_any: Any = complete
    sync_any: Any = complete_sync
    return complete_any, sync_any
