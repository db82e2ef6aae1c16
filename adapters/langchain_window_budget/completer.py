"""Any LangChain chat model as the core's completer, and its token counter.

>>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
>>> complete, complete_sync = make_completers(FakeListChatModel(responses=["# Objective"]))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from langchain_window_budget._convert import _usage, usage_is_stale
from langchain_window_budget.counting import messages_counter
from window_budget import bridge
from window_budget.contract import (
    CompleteFn,
    CompleteOptions,
    Context,
    Model,
    SyncCompleteFn,
    TokenCounter,
)
from window_budget.messages import AssistantMessage, TextBlock, message_text
from window_budget.pipeline.summarize import SUMMARY_TAGS

__all__ = ["NOSTREAM_TAG", "make_completers", "model_token_counter", "summary_config"]

NOSTREAM_TAG = "nostream"
"""LangGraph's tag for a model call whose tokens must not reach ``stream_mode="messages"``."""

# Keyword names chat-model integrations use for the output cap, in order of preference.
_MAX_TOKEN_FIELDS = ("max_tokens", "max_output_tokens", "max_completion_tokens", "num_predict")


def summary_config() -> RunnableConfig:
    """The config of every summary call: tagged, marked internal, kept out of streams.

    ``nostream`` keeps the call out of LangGraph's message stream; the ``lc_internal_call``
    metadata (LangChain v1's ``internal_call_metadata``) keeps it out of an agent's
    ``run.messages``; ``SUMMARY_TAGS`` let callbacks and tracers pick it out.
    """
    metadata: dict[str, Any] = {"lc_source": "window_budget"}
    try:
        from langchain.agents.middleware.internal_call_transformer import (
            internal_call_metadata,
        )
    except ImportError:  # langchain-core alone: the tags still do the job
        pass
    else:
        metadata.update(internal_call_metadata())
    return {
        "tags": [*SUMMARY_TAGS, NOSTREAM_TAG],
        "metadata": metadata,
        "run_name": "window_budget_summary",
    }


def _max_tokens_kwargs(
    chat_model: BaseChatModel,
    options: CompleteOptions | None,
) -> dict[str, Any]:
    if options is None or options.max_tokens is None:
        return {}
    fields = getattr(type(chat_model), "model_fields", {})
    for name in _MAX_TOKEN_FIELDS:
        if name in fields:
            return {name: options.max_tokens}
    # A model without such a field would forward an unknown keyword to its provider.
    return {}


class _ChatModelCalls:
    """A LangChain chat model's summary calls, for :func:`window_budget.bridge.make_completers`."""

    def __init__(self, chat_model: BaseChatModel) -> None:
        self.chat_model = chat_model

    def prompt(self, context: Context) -> list[BaseMessage]:
        text = "\n\n".join(message_text(m) for m in context.messages)
        return [SystemMessage(content=context.system_prompt), HumanMessage(content=text)]

    def call(self, prompt: list[BaseMessage], options: CompleteOptions | None) -> BaseMessage:
        cap = _max_tokens_kwargs(self.chat_model, options)
        return self.chat_model.invoke(prompt, config=summary_config(), **cap)

    async def acall(
        self, prompt: list[BaseMessage], options: CompleteOptions | None
    ) -> BaseMessage:
        cap = _max_tokens_kwargs(self.chat_model, options)
        return await self.chat_model.ainvoke(prompt, config=summary_config(), **cap)

    def reply(self, reply: BaseMessage, model: Model) -> AssistantMessage:
        text: Any = reply.text
        if not isinstance(text, str):  # langchain-core < 1.0 exposed .text() as a method
            text = text()
        trusted = isinstance(reply, AIMessage) and not usage_is_stale(reply)
        usage = _usage(reply) if isinstance(reply, AIMessage) and trusted else None
        return AssistantMessage((TextBlock(str(text)),), usage=usage, model=model.id)


def make_completers(chat_model: BaseChatModel) -> tuple[CompleteFn, SyncCompleteFn]:
    """Turn a LangChain chat model into the core's ``(complete, complete_sync)`` pair.

    The async completer calls ``ainvoke`` and the sync one ``invoke``, with the config of
    :func:`summary_config`; ``max_tokens`` is passed under the name the model declares
    (``max_tokens``, ``max_output_tokens``, ...) and dropped for a model that declares none.
    The reply's text is read with ``.text``, whatever the shape of its content.
    """
    return bridge.make_completers(_ChatModelCalls(chat_model))


def model_token_counter(chat_model: BaseChatModel) -> TokenCounter:
    """A counter backed by ``chat_model.get_num_tokens_from_messages``.

    Each text is counted as one human message, so the model's own per-message framing is
    included (a small, safe overcount). Use it when the model counts exactly and cheaply.
    """
    count: Callable[[list[BaseMessage]], int] = chat_model.get_num_tokens_from_messages
    name = getattr(chat_model, "_llm_type", type(chat_model).__name__)
    return messages_counter(count, name=f"langchain:{name}")
