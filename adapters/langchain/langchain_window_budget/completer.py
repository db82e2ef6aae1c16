"""Any LangChain chat model as the core's completer, and its token counter.

>>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
>>> complete, complete_sync = make_completers(FakeListChatModel(responses=["# Objective"]))
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.base import coerce_to_runnable

from langchain_window_budget._usage import usage as _usage
from langchain_window_budget._usage import usage_is_stale
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
from window_budget.errors import ConfigError
from window_budget.messages import AssistantMessage, TextBlock, message_text
from window_budget.pipeline.summarize import SUMMARY_TAGS

__all__ = [
    "NOSTREAM_TAG",
    "Summarizer",
    "check_summarizer",
    "make_completers",
    "model_token_counter",
    "summary_config",
]

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
    # LangChain's own mark of a summary call, so code that filters those filters ours too.
    metadata: dict[str, Any] = {"lc_source": "summarization", "window_budget": True}
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


class _SummaryCalls:
    """Summary calls to a chat model, a ``Runnable`` or a function.

    The request is the brief as a ``SystemMessage`` and the escaped scrollback as a
    ``HumanMessage``; the retries are the bridge's (:mod:`window_budget.bridge.retry`).
    """

    def __init__(self, writer: Summarizer) -> None:
        self.writer = writer
        self._runnable: Runnable[Any, Any] | None = None
        self._async_only = False
        if not isinstance(writer, BaseChatModel):
            self._runnable = coerce_to_runnable(writer)
            self._async_only = inspect.iscoroutinefunction(writer)

    def prompt(self, context: Context) -> list[BaseMessage]:
        text = "\n\n".join(message_text(m) for m in context.messages)
        return [SystemMessage(content=context.system_prompt), HumanMessage(content=text)]

    def call(self, prompt: list[BaseMessage], options: CompleteOptions | None) -> Any:
        if self._runnable is None:
            chat = cast(BaseChatModel, self.writer)
            return chat.invoke(prompt, config=summary_config(), **_max_tokens_kwargs(chat, options))
        if self._async_only:  # an async function called from sync code: its own loop
            runnable = self._runnable
            with ThreadPoolExecutor(1) as pool:
                return pool.submit(
                    asyncio.run, runnable.ainvoke(prompt, config=summary_config())
                ).result()
        return self._runnable.invoke(prompt, config=summary_config())

    async def acall(self, prompt: list[BaseMessage], options: CompleteOptions | None) -> Any:
        if self._runnable is None:
            chat = cast(BaseChatModel, self.writer)
            cap = _max_tokens_kwargs(chat, options)
            return await chat.ainvoke(prompt, config=summary_config(), **cap)
        return await self._runnable.ainvoke(prompt, config=summary_config())

    def reply(self, reply: Any, model: Model) -> AssistantMessage:
        if isinstance(reply, str):
            return AssistantMessage((TextBlock(reply),), model=model.id)
        if not isinstance(reply, BaseMessage):
            raise TypeError(
                f"the summarizer must return a str or a message, got {type(reply).__name__}"
            )
        text: Any = reply.text
        if not isinstance(text, str):  # langchain-core < 1.0 exposed .text() as a method
            text = text()
        trusted = isinstance(reply, AIMessage) and not usage_is_stale(reply)
        usage = _usage(reply) if isinstance(reply, AIMessage) and trusted else None
        return AssistantMessage((TextBlock(str(text)),), usage=usage, model=model.id)


Summarizer = BaseChatModel | Runnable[Any, Any] | Callable[[list[BaseMessage]], Any]
"""What writes the digests: a chat model, a ``Runnable`` or a (sync or async) function that
takes the request's messages and returns the digest's text (a str or a message)."""


def check_summarizer(summarizer: object) -> None:
    """Refuse, in one sentence, a ``summarizer`` that is none of :data:`Summarizer`'s kinds.

    Raises:
        ConfigError: it is not a chat model, a ``Runnable`` or a callable.

    """
    if not (isinstance(summarizer, BaseChatModel | Runnable) or callable(summarizer)):
        raise ConfigError(
            "summarizer must be a chat model, a 'provider:model' string, a Runnable or a "
            f"function taking the request's messages and returning text, not "
            f"{type(summarizer).__name__}"
        )


def make_completers(
    chat_model: Summarizer, *, summary_timeout: float | None = None
) -> tuple[CompleteFn, SyncCompleteFn]:
    """Turn a chat model (or a ``Runnable`` or a function) into the core's completer pair.

    The async completer calls ``ainvoke`` and the sync one ``invoke``, with the config of
    :func:`summary_config`; ``max_tokens`` is passed to a chat model under the name it
    declares (``max_tokens``, ``max_output_tokens``, ...) and dropped for one that declares
    none. A transient failure (rate limit, timeout, 5xx) is retried with a bounded wait
    within ``summary_timeout``; a context overflow is retried with a smaller request.
    """
    check_summarizer(chat_model)
    return bridge.make_completers(_SummaryCalls(chat_model), timeout=summary_timeout)


def model_token_counter(chat_model: BaseChatModel) -> TokenCounter:
    """A counter backed by ``chat_model.get_num_tokens_from_messages``.

    Each text is counted as one human message, so the model's own per-message framing is
    included (a small, safe overcount). Use it when the model counts exactly and cheaply.
    """
    count: Callable[[list[BaseMessage]], int] = chat_model.get_num_tokens_from_messages
    name = getattr(chat_model, "_llm_type", type(chat_model).__name__)
    return messages_counter(count, name=f"langchain:{name}")
