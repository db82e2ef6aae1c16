"""Agent middleware for LangChain v1's ``create_agent``.

``before_model`` (and ``abefore_model``) gate the agent's messages plus its system prompt
and, when over budget, rewrite the state *persistently*: remove-all, then the digest,
then the kept tail — the same update LangChain's own ``SummarizationMiddleware`` returns,
so checkpointers store the condensed thread. ``wrap_model_call`` learns the real system
prompt from each request and, as a safety net, condenses the request itself (for that
call only) when the state was gated before the system prompt's size was known. The reply
to such a request is marked (``response_metadata["window_budget"]["stale_usage"]``) so its
usage figure, which measured the condensed request, never anchors a later gate.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, RemoveMessage, SystemMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime

from langchain_window_budget._convert import mark_usage_stale
from langchain_window_budget.condense import CounterSpec, LangChainCondenser, LangChainResult
from window_budget.contract import BudgetPolicy

__all__ = ["WindowBudgetMiddleware"]

try:  # LangChain >= 1.3 filters tagged internal calls out of ``run.messages``
    from langchain.agents.middleware.internal_call_transformer import InternalCallTransformer

    _TRANSFORMERS: tuple[Any, ...] = (InternalCallTransformer,)
except ImportError:  # pragma: no cover - older LangChain v1
    _TRANSFORMERS = ()


class WindowBudgetMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Keep an agent's conversation inside its model's window: gate → slice → summarize.

    Args:
        model: the agent's chat model (or a ``"provider:model"`` string); its window is
            guarded and it writes the digests unless ``summarizer`` is given.
        context_window: tokens the model accepts; defaults to ``model.profile
            ["max_input_tokens"]``, else a ``ConfigError`` asks for it.
        policy: thresholds and tail size (``BudgetPolicy()`` when None).
        counter: ``None`` (heuristic), ``"tiktoken"``, ``"model"`` or a counter.
        summarizer: a different (cheaper) chat model for the digests.
        system_prompt: the agent's system prompt. Pass the same one you give
            ``create_agent``: ``before_model`` runs before any model request exists, so
            without it the *first* gate cannot count the prompt (a middleware is not told
            the agent's prompt). Later gates use the prompt seen in each request anyway,
            and the first request is still condensed for that call if it does not fit.
        archive: called with every message a state rewrite removes (the dropped head) or
            replaces by a shortened copy (the originals), before the state changes, so
            nothing is lost. ``last_result`` holds the same account.

    >>> # agent = create_agent(model, tools, middleware=[WindowBudgetMiddleware(model=model)])

    """

    transformers = _TRANSFORMERS
    """Keeps the digest call's tokens out of ``run.messages`` (LangChain's own mechanism)."""

    def __init__(self, model: BaseChatModel | str, *, context_window: int | None = None,
                 policy: BudgetPolicy | None = None, counter: CounterSpec = None,
                 summarizer: BaseChatModel | str | None = None,
                 system_prompt: str | SystemMessage | None = None,
                 archive: Callable[[list[BaseMessage]], object] | None = None) -> None:
        super().__init__()
        if isinstance(model, str):
            from langchain.chat_models import init_chat_model

            model = init_chat_model(model)
        if isinstance(summarizer, str):
            from langchain.chat_models import init_chat_model

            summarizer = init_chat_model(summarizer)
        self.engine = LangChainCondenser(model, context_window=context_window, policy=policy,
                                         counter=counter, summarizer=summarizer)
        """The condenser doing the work (exposes the window, policy and counter)."""
        self._system_key: str | None = None
        self._system_tokens = 0
        if system_prompt is not None:
            self._learn(system_prompt if isinstance(system_prompt, SystemMessage)
                        else SystemMessage(content=system_prompt))
        self.compactions = 0
        """How many times this middleware rewrote a thread's state."""
        self.archive = archive
        """Receives what each state rewrite removes or shortens (see the class docstring)."""
        self.last_result: LangChainResult | None = None
        """The last state gate's account (``dropped`` and ``replaced`` hold the originals)."""

    def _learn(self, system: SystemMessage | None) -> int:
        if system is None:
            return self._system_tokens
        key = system.text
        if key != self._system_key:
            self._system_key = key
            self._system_tokens = self.engine.count_messages([system])
        return self._system_tokens

    def _update(self, result: LangChainResult) -> dict[str, Any] | None:
        self.last_result = result
        if not result.changed:
            return None
        if self.archive is not None and (result.dropped or result.replaced):
            self.archive([*result.dropped, *result.replaced])
        self.compactions += 1
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *result.messages]}

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any],
                     ) -> dict[str, Any] | None:
        """Condense the thread before the model sees it; ``None`` when under budget."""
        result = self.engine.run(state["messages"], extra_pinned_tokens=self._system_tokens)
        return self._update(result)

    async def abefore_model(self, state: AgentState[Any], runtime: Runtime[Any],
                            ) -> dict[str, Any] | None:
        """The async twin of :meth:`before_model` (the digest call uses ``ainvoke``)."""
        result = await self.engine.arun(state["messages"],
                                        extra_pinned_tokens=self._system_tokens)
        return self._update(result)

    def wrap_model_call(self, request: ModelRequest[Any],
                        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
                        ) -> ModelResponse[Any]:
        """Learn the system prompt's size; condense this request if it still does not fit."""
        tokens = self._learn(request.system_message)
        result = self.engine.run(request.messages, extra_pinned_tokens=tokens)
        if not result.changed:
            return handler(request)
        request = request.override(messages=list(result.messages))  # type: ignore[arg-type]
        return _mark_reply(handler(request))

    async def awrap_model_call(
        self, request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """The async twin of :meth:`wrap_model_call`."""
        tokens = self._learn(request.system_message)
        result = await self.engine.arun(request.messages, extra_pinned_tokens=tokens)
        if not result.changed:
            return await handler(request)
        request = request.override(messages=list(result.messages))  # type: ignore[arg-type]
        return _mark_reply(await handler(request))


def _mark_reply(response: ModelResponse[Any]) -> ModelResponse[Any]:
    # The reply's usage measured the request condensed for this call only, not the state
    # it is appended to: mark it so the next ``before_model`` does not anchor on it.
    return replace(response, result=[mark_usage_stale(m) for m in response.result])
