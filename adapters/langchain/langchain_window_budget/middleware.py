"""Agent middleware for LangChain v1's ``create_agent``.

``before_model`` (and ``abefore_model``) gate the agent's messages plus its system prompt
and, when over budget, rewrite the state *persistently*: remove-all, then the digest,
then the kept tail — the same update LangChain's own ``SummarizationMiddleware`` returns,
so checkpointers store the condensed thread. ``wrap_model_call`` learns the real system
prompt from each request and, as a safety net, condenses the request itself (for that
call only) when the state was gated before the system prompt's size was known. The reply
to such a request is marked (``response_metadata["window_budget"]["stale_usage"]``) so its
usage figure, which measured the condensed request, never anchors a later gate.

The gate runs once per model call: ``wrap_model_call`` skips it when ``before_model``
already gated the same messages with the same system prompt. What the middleware learns
(the system prompt's size, the last gate) is kept per thread — the ``thread_id`` of the
run's config — so one middleware instance serves many conversations.

With a memory store (by default the agent's own, ``create_agent(..., store=...)``), each
digest's full fact ledger and the messages it folded go to the store under the thread id,
digest records are sealed with the store's key, and ``recall=True`` gives the agent a
``recall`` tool over that archive (see ``_agent_memory``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

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

from langchain_window_budget._agent_memory import AgentMemory, MemorySpec
from langchain_window_budget._agent_memory import thread_id_of as _thread_id
from langchain_window_budget._convert import mark_usage_stale
from langchain_window_budget._digest import register_node_name
from langchain_window_budget._mapping import akeep_originals, keep_originals
from langchain_window_budget.completer import Summarizer, check_summarizer
from langchain_window_budget.condense import (
    CounterSpec,
    LangChainCondenser,
    LangChainResult,
    OnSummarizerError,
)
from langchain_window_budget.sizes import ContextSize, TriggerSpec
from window_budget.contract import BudgetPolicy
from window_budget.errors import ConfigError
from window_budget.memory import MemoryStore

__all__ = ["WindowBudgetMiddleware"]

MAX_THREADS: Final = 4096
"""Threads whose state one middleware remembers; the least recently used is forgotten."""


@dataclass(slots=True)
class _ThreadState:
    """What the middleware knows about one conversation thread."""

    system_key: str | None = None
    system_tokens: int = 0
    gated: tuple[int, object, str | None, int] | None = None
    """``(count, last message, its id, system tokens)`` of the last list ``before_model``
    found fitting (or wrote), so ``wrap_model_call`` need not gate it again."""
    last_result: LangChainResult | None = None


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
            ["max_input_tokens"]``, then the window of the model it names in window-budget's
            table, else a ``ConfigError`` asks for it.
        policy: thresholds and tail size (``BudgetPolicy.for_window(context_window)`` when
            None).
        counter: ``None`` (heuristic), ``"tiktoken"``, ``"model"``, a counter, or one of
            LangChain's message counters (``count_tokens_approximately``).
        trigger: when to condense, in ``SummarizationMiddleware``'s forms and meaning:
            ``("tokens", 4000)``, ``("fraction", 0.8)``, ``("messages", 50)``, a dict of
            them (all must hold) or a list (any may hold). It only decides *when*; given,
            it replaces the default guard, leaving the window itself (window minus
            ``reserve_tokens``); ``[]`` leaves only that. Counted sizes need no window.
        keep: what stays verbatim: ``("messages", 20)``, ``("tokens", 3000)`` or
            ``("fraction", 0.3)``; the cut moves back so a tool call keeps its results.
        on_summarizer_error: ``"raise"`` to raise when the summary call fails (after
            retries of transient failures), as ``SummarizationMiddleware`` does: the
            provider's exception, also a ``SummarizerError``; the default ``"fallback"``
            writes the network-free digest and logs a warning.
        summarizer: what writes the digests instead of ``model``, as
            ``SummarizationMiddleware`` takes it: a chat model or a ``"provider:model"``
            string, a ``Runnable``, or a sync or async function; the last two get the
            request (brief and scrollback as a system and a human message) and return the
            digest's text. Anything else is refused at construction.
        system_prompt: the agent's system prompt. Pass the same one you give
            ``create_agent``: ``before_model`` runs before any model request exists, so
            without it the *first* gate cannot count the prompt (a middleware is not told
            the agent's prompt). Later gates use the prompt seen in each request anyway,
            and the first request is still condensed for that call if it does not fit.
        archive: called with every message a state rewrite removes (the dropped head) or
            replaces by a shortened copy (the originals), before the state changes, so
            nothing is lost. ``last_result`` holds the same account.
        memory: where each digest's full fact ledger and folded messages go, keyed by the
            run's ``thread_id``: ``"runtime"`` (the default) uses the store the agent was
            compiled with (``create_agent(..., store=InMemoryStore())``), else the
            middleware's own in-process store (the last 256 threads, 20,000 folded
            messages at most; gone with the process); a LangGraph ``BaseStore`` or a
            window-budget ``MemoryStore`` is used for every run; None, or a run without a
            ``thread_id``, keeps only the digest's bounded record. Without ``policy``, runs
            with a store get the default's prompt ceiling and runs without one 75 % of the
            window (``BudgetPolicy.for_window``).
            With a store, digest records are sealed with the store's key and verified
            strictly: a record a client forged or edited is an ordinary message.
        recall: offer the agent a ``recall`` tool over the thread's archive (search by
            words, list the facts of a kind, fetch a message by its ``#N`` pointer).
        precompact: ahead-of-time compaction (``BudgetPolicy.precompact_ratio``; given, it
            overrides the policy's): once a thread's prompt passes this fraction of the
            usable window, below the trigger, ``abefore_model`` starts the summary of the
            head the gate would fold in the background, and the turn that crosses the
            trigger folds that head with the ready digest instead of waiting for a summary
            call. A digest not ready, failed, cancelled or stale (the head changed) is not
            used: that turn takes the synchronous path. Per thread (the run's
            ``thread_id``); only on the async path (``ainvoke``/``astream``), ``invoke``
            stays synchronous; runs with ``keep=`` take the synchronous path. ``aclose()``
            cancels what still runs.

    Use: ``create_agent(model, tools, middleware=[WindowBudgetMiddleware(model=model)])``.

    """

    transformers = _TRANSFORMERS
    """Keeps the digest call's tokens out of ``run.messages`` (LangChain's own mechanism)."""

    def __init__(
        self,
        model: BaseChatModel | str,
        *,
        context_window: int | None = None,
        policy: BudgetPolicy | None = None,
        counter: CounterSpec = None,
        summarizer: Summarizer | str | None = None,
        system_prompt: str | SystemMessage | None = None,
        archive: Callable[[list[BaseMessage]], object] | None = None,
        trigger: TriggerSpec | None = None,
        keep: ContextSize | None = None,
        on_summarizer_error: OnSummarizerError | None = None,
        memory: MemorySpec = "runtime",
        recall: bool = False,
        precompact: float | None = None,
    ) -> None:
        super().__init__()
        register_node_name(self.name)  # so is_digest knows its stream output
        model = _chat_model(model, "model")
        if isinstance(summarizer, str):
            summarizer = _chat_model(summarizer, "summarizer")
        elif summarizer is not None:
            check_summarizer(summarizer)
        chat_model = model

        def make_engine(store: MemoryStore | None) -> LangChainCondenser:
            return LangChainCondenser(
                chat_model,
                context_window=context_window,
                policy=policy,
                counter=counter,
                summarizer=summarizer,
                trigger=trigger,
                keep=keep,
                on_summarizer_error=on_summarizer_error,
                memory=store,
                recall=recall,
                precompact=precompact,
            )

        self.memory = AgentMemory(memory, make_engine)
        """Which memory store each run uses, and the engine of each store."""
        self.engine = self.memory.default_engine
        """The condenser doing the work (exposes the window, policy and counter): the one of
        the store given, else the one of runs without a store (``memory.engine_for`` names
        the one a run uses)."""
        self.tools = [self.memory.recall_tool(counter=self.engine.counter)] if recall else []
        """The ``recall`` tool when asked for (``create_agent`` adds it to the agent's)."""
        self._default = _ThreadState()
        if system_prompt is not None:
            self._learn(
                self._default,
                system_prompt
                if isinstance(system_prompt, SystemMessage)
                else SystemMessage(content=system_prompt),
            )
        self._threads: OrderedDict[Any, _ThreadState] = OrderedDict()
        self._threads_lock = threading.Lock()
        self.gates = 0
        """How many times the gate ran (once per model call when nothing changed between
        ``before_model`` and the request)."""
        self.compactions = 0
        """How many times this middleware rewrote a thread's state."""
        self.archive = archive
        """Receives what each state rewrite removes or shortens (see the class docstring)."""
        self.last_result: LangChainResult | None = None
        """The last state gate's account, any thread (``thread_state(id).last_result`` for
        one thread; ``dropped`` and ``replaced`` hold the originals)."""

    def thread_state(self, thread_id: Any) -> _ThreadState:
        """What this middleware knows about thread ``thread_id`` (created on first use)."""
        with self._threads_lock:
            state = self._threads.get(thread_id)
            if state is None:
                # A new thread starts from what the constructor was told (its system prompt).
                state = self._threads[thread_id] = replace(
                    self._default, gated=None, last_result=None
                )
                while len(self._threads) > MAX_THREADS:
                    self._threads.popitem(last=False)
            else:
                self._threads.move_to_end(thread_id)
            return state

    def _learn(self, state: _ThreadState, system: SystemMessage | None) -> int:
        if system is None:
            return state.system_tokens
        key = system.text
        if key != state.system_key:
            state.system_key = key
            state.system_tokens = self.engine.count_messages([system])
        return state.system_tokens

    def _update(
        self,
        state: _ThreadState,
        result: LangChainResult,
        tokens: int,
        given: Sequence[BaseMessage],
    ) -> dict[str, Any] | None:
        self.last_result = state.last_result = result
        state.gated = _mark(result.messages if result.changed else given, tokens)
        if not result.changed:
            return None
        if self.archive is not None and (result.dropped or result.replaced):
            self.archive([*result.dropped, *result.replaced])
        self.compactions += 1
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *result.messages]}

    def before_model(
        self,
        state: AgentState[Any],
        runtime: Runtime[Any],
    ) -> dict[str, Any] | None:
        """Condense the thread before the model sees it; ``None`` when under budget."""
        tid = _thread_id(runtime)
        thread = self.thread_state(tid)
        tokens = thread.system_tokens
        self.gates += 1
        engine = self.memory.engine_for(getattr(runtime, "store", None), tid)
        conversation = _conversation(tid)
        result = engine.run(
            state["messages"],
            extra_pinned_tokens=tokens,
            own_objects=False,
            conversation=conversation,
        )
        # The thread keeps a shortened copy: the original goes to the memory store.
        keep_originals(engine.memory, engine.store_name(conversation), result.replaced)
        return self._update(thread, result, tokens, state["messages"])

    async def abefore_model(
        self,
        state: AgentState[Any],
        runtime: Runtime[Any],
    ) -> dict[str, Any] | None:
        """The async twin of :meth:`before_model` (the digest call uses ``ainvoke``)."""
        tid = _thread_id(runtime)
        thread = self.thread_state(tid)
        tokens = thread.system_tokens
        self.gates += 1
        engine = self.memory.engine_for(getattr(runtime, "store", None), tid)
        conversation = _conversation(tid)
        result = await engine.arun(
            state["messages"],
            extra_pinned_tokens=tokens,
            own_objects=False,
            conversation=conversation,
            system_prompt=thread.system_key or "",
        )
        await akeep_originals(engine.memory, engine.store_name(conversation), result.replaced)
        return self._update(thread, result, tokens, state["messages"])

    async def aclose(self) -> None:
        """Cancel the background digests still running (``precompact``) and wait for them."""
        for engine in self.memory.engines():
            if engine.ahead is not None:
                await engine.ahead.aclose()

    def _already_gated(
        self, request: ModelRequest[Any]
    ) -> tuple[_ThreadState, int, Any, LangChainCondenser, bool]:
        tid = _thread_id(request.runtime)
        thread = self.thread_state(tid)
        tokens = self._learn(thread, request.system_message)
        return (
            thread,
            tokens,
            _conversation(tid),
            self.memory.engine_for(getattr(request.runtime, "store", None), tid),
            thread.gated is not None and _mark(request.messages, tokens) == thread.gated,
        )

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Learn the system prompt's size; condense this request if it still does not fit."""
        thread, tokens, conversation, engine, done = self._already_gated(request)
        if done:
            return handler(request)
        self.gates += 1
        result = engine.run(request.messages, extra_pinned_tokens=tokens, conversation=conversation)
        if not result.changed:
            thread.gated = _mark(request.messages, tokens)
            return handler(request)
        request = request.override(messages=list(result.messages))  # type: ignore[arg-type]
        return _mark_reply(handler(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """The async twin of :meth:`wrap_model_call`."""
        thread, tokens, conversation, engine, done = self._already_gated(request)
        if done:
            return await handler(request)
        self.gates += 1
        result = await engine.arun(
            request.messages,
            extra_pinned_tokens=tokens,
            conversation=conversation,
            system_prompt=thread.system_key or "",
        )
        if not result.changed:
            thread.gated = _mark(request.messages, tokens)
            return await handler(request)
        request = request.override(messages=list(result.messages))  # type: ignore[arg-type]
        return _mark_reply(await handler(request))


def _chat_model(model: BaseChatModel | str, what: str) -> BaseChatModel:
    """``model`` itself, or the chat model its ``"provider:model"`` string names.

    Raises:
        ConfigError: the string names no chat model LangChain can build here.

    """
    if not isinstance(model, str):
        return model
    from langchain.chat_models import init_chat_model

    try:
        return init_chat_model(model)
    except (ImportError, ValueError) as exc:
        raise ConfigError(
            f"{what}={model!r:.80} names no chat model LangChain can build here ({exc}); "
            "pass a chat model object or a 'provider:model' string of an installed provider"
        ) from exc


def _conversation(thread_id: Any) -> str | None:
    """The engine's name for a thread's conversation, and its name in a memory store.

    None outside a graph run (the engine then guesses the conversation from its messages).
    """
    return None if thread_id is None else str(thread_id)


def _mark(
    messages: Sequence[BaseMessage],
    tokens: int,
) -> tuple[int, object, str | None, int] | None:
    """What identifies a gated list cheaply: its length and its last message."""
    if not messages:
        return None
    last = messages[-1]
    return (len(messages), last if last.id is None else None, last.id, tokens)


def _mark_reply(response: ModelResponse[Any]) -> ModelResponse[Any]:
    # The reply's usage measured the request condensed for this call only, not the state
    # it is appended to: mark it so the next ``before_model`` does not anchor on it.
    return replace(response, result=[mark_usage_stale(m) for m in response.result])
