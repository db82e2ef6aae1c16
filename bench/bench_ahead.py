"""No turn waits for a summary: the latency compaction adds to a turn, ahead-of-time on vs off.

Run by hand:  python bench/bench_ahead.py [--turns 80] [--agent-seconds 1.0] [--precompact 0.5]
              python bench/bench_ahead.py --langchain   (through create_agent, see below)

A scripted agent session (each turn appends a user ask, a tool call and its output) runs in
real asyncio time. Each turn the compactor runs before the agent's call, which takes
``--agent-seconds`` (``asyncio.sleep``); the summarizer takes a fixed 2 s
(``asyncio.sleep(2)``). Measured: the wall time of ``AheadCompactor.run`` on the turns that
compact, p50 and p95, with ``BudgetPolicy(precompact_ratio=0.5)`` (on, ``--precompact``)
and without (off), on the same session. The target: ≤ 0.2 s at p95 when on.

``--langchain``: the same session through LangChain's ``create_agent`` (``InMemorySaver``,
``ainvoke`` per turn): the agent's model is a scripted chat model whose call takes
``--agent-seconds``, the summarizer an async function that takes 2 s, and the middleware is
``WindowBudgetMiddleware(precompact=...)`` (on) or without it (off). Measured: the wall time
of ``abefore_model`` on the turns where it rewrote the thread (the latency compaction adds).

``--lcel``: through ``prompt | condense_messages(..., precompact=...) | model`` with
``ainvoke`` (the caller keeps the history, config ``thread_id``); measured: the transformer's
``ainvoke`` on the turns it sent a new digest. ``--history``: through
``RunnableWithMessageHistory`` whose factory builds a ``CondensingChatMessageHistory(...,
precompact=...)`` per request; measured: ``aadd_messages`` on the writes that rewrote the
history. Same agent model, summarizer and window as ``--langchain``.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import time
import warnings
from dataclasses import replace
from typing import Any

from window_budget import (
    AssistantMessage,
    BudgetPolicy,
    Model,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    create_condenser,
)
from window_budget.contract import CompleteOptions, Context
from window_budget.messages import AgentMessage
from window_budget.pipeline import AheadCompactor

SUMMARY_SECONDS = 2.0


async def summarizer(
    model: Model, context: Context, options: CompleteOptions | None = None
) -> AssistantMessage:
    await asyncio.sleep(SUMMARY_SECONDS)
    seen = re.findall(r"src/mod_\d+\.py", repr(context.messages))
    files = ", ".join(dict.fromkeys(seen))
    text = f"# Objective\nFix the modules under src/, one per task: {files}.\n# Plan\nGo on."
    return AssistantMessage((TextBlock(text),), model=model.id)


def turn(i: int) -> list[AgentMessage]:
    return [
        UserMessage(f"task {i}: fix src/mod_{i}.py " + "detail " * 80),
        AssistantMessage((ToolCallBlock(f"c{i}", "read", {"path": f"src/mod_{i}.py"}),)),
        ToolResultMessage(f"c{i}", "read", "x = 1\n" * 200),
    ]


async def session(turns: int, agent_seconds: float, early: float | None) -> list[float]:
    policy = BudgetPolicy(precompact_ratio=early, mask_keep_outputs=None)
    condenser = create_condenser(model=Model("m", 32_000), policy=policy, complete=summarizer)
    ahead = AheadCompactor(condenser)
    msgs: list[AgentMessage] = []
    added: list[float] = []
    for i in range(turns):
        msgs.extend(turn(i))
        start = time.perf_counter()
        result = await ahead.run(msgs)
        took = time.perf_counter() - start
        if result.reason == "condensed":
            added.append(took)
            msgs = list(result.messages)
        await asyncio.sleep(agent_seconds)  # the agent's own model call
        msgs.append(AssistantMessage(f"done {i}"))
    await ahead.aclose()
    return added


def p95(values: list[float]) -> float:
    return (
        statistics.quantiles(values, n=20, method="inclusive")[-1] if len(values) > 1 else values[0]
    )


def langchain_parts(agent_seconds: float) -> tuple[Any, Any]:
    """The agent's chat model (a call takes ``agent_seconds``) and the 2 s summarizer."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class Agent(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "bench-agent"

        def _generate(self, messages: list[BaseMessage], *a: object, **k: object) -> ChatResult:
            raise NotImplementedError("async only")

        async def _agenerate(
            self, messages: list[BaseMessage], *a: object, **k: object
        ) -> ChatResult:
            await asyncio.sleep(agent_seconds)  # the agent's own model call
            return ChatResult(generations=[ChatGeneration(message=AIMessage("done"))])

    async def summarize(request: list[BaseMessage]) -> str:
        await asyncio.sleep(SUMMARY_SECONDS)
        files = ", ".join(dict.fromkeys(re.findall(r"src/mod_\d+\.py", repr(request))))
        return f"# Objective\nFix the modules under src/, one per task: {files}.\n# Plan\nGo on."

    return Agent, summarize


def ask(i: int) -> str:
    return f"task {i}: fix src/mod_{i}.py " + "detail " * 80 + "\n" + "x = 1\n" * 200


WINDOW = 32_000


def bench_policy() -> BudgetPolicy:
    return replace(BudgetPolicy.for_window(WINDOW), mask_keep_outputs=None)


async def agent_session(turns: int, agent_seconds: float, early: float | None) -> list[float]:
    """The session through ``create_agent``: ``abefore_model``'s time on compacting turns."""
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_window_budget import WindowBudgetMiddleware

    Agent, summarize = langchain_parts(agent_seconds)
    added: list[float] = []

    class Timed(WindowBudgetMiddleware):
        async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            start = time.perf_counter()
            update = await super().abefore_model(state, runtime)
            if update is not None:
                added.append(time.perf_counter() - start)
            return update

    middleware = Timed(
        Agent(),
        context_window=WINDOW,
        policy=bench_policy(),
        summarizer=summarize,
        memory=None,
        precompact=early,
    )
    agent = create_agent(Agent(), tools=[], middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "bench"}}
    for i in range(turns):
        await agent.ainvoke({"messages": [HumanMessage(ask(i))]}, config)
    await middleware.aclose()
    return added


PROMPT_MESSAGES = [("system", "You fix modules."), ("placeholder", "{history}"), ("human", "{ask}")]


async def lcel_session(turns: int, agent_seconds: float, early: float | None) -> list[float]:
    """The session through ``prompt | condense_messages(...) | model`` (``ainvoke``, the
    caller keeping the history): the transformer's time on the turns it wrote a new digest."""
    from langchain_core.messages import HumanMessage
    from langchain_core.prompt_values import PromptValue
    from langchain_core.prompts import ChatPromptTemplate

    from langchain_window_budget import WindowBudgetRunnable, is_digest

    Agent, summarize = langchain_parts(agent_seconds)
    added: list[float] = []
    last: list[str] = []

    class Timed(WindowBudgetRunnable):
        async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
            start = time.perf_counter()
            out = await super().ainvoke(input, config, **kwargs)
            took = time.perf_counter() - start
            sent = out.to_messages() if isinstance(out, PromptValue) else out
            digests = [str(m.content) for m in sent if is_digest(m)]
            if digests and digests[-1] not in last:  # a new digest: this turn compacted
                added.append(took)
                last[:] = digests[-1:]
            return out

    transformer = Timed(
        model=Agent(),
        context_window=WINDOW,
        policy=bench_policy(),
        summarizer=summarize,
        precompact=early,
    )
    chain = ChatPromptTemplate.from_messages(PROMPT_MESSAGES) | transformer | Agent()
    config = {"configurable": {"thread_id": "bench"}}
    history: list[Any] = []
    for i in range(turns):
        reply = await chain.ainvoke({"history": history, "ask": ask(i)}, config)
        history += [HumanMessage(ask(i)), reply]
    await transformer.aclose()
    return added


async def history_session(turns: int, agent_seconds: float, early: float | None) -> list[float]:
    """The session through ``RunnableWithMessageHistory`` over ``prompt | model``, its factory
    a ``CondensingChatMessageHistory`` per request: ``aadd_messages``' time on the writes
    that rewrote the history."""
    from langchain_core.chat_history import InMemoryChatMessageHistory
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables.history import RunnableWithMessageHistory

    from langchain_window_budget import CondensingChatMessageHistory

    # LangChain deprecated RunnableWithMessageHistory and the history classes.
    warnings.filterwarnings("ignore", message=".*deprecated.*", category=DeprecationWarning)
    Agent, summarize = langchain_parts(agent_seconds)
    added: list[float] = []
    model = Agent()
    policy = bench_policy()
    stores: dict[str, InMemoryChatMessageHistory] = {}

    class Timed(CondensingChatMessageHistory):
        async def aadd_messages(self, messages: Any) -> None:
            start = time.perf_counter()
            await super().aadd_messages(messages)
            if self.last_result is not None and self.last_result.changed:
                added.append(time.perf_counter() - start)

    def factory(session_id: str) -> CondensingChatMessageHistory:
        return Timed(
            stores.setdefault(session_id, InMemoryChatMessageHistory()),
            model=model,
            context_window=WINDOW,
            policy=policy,
            summarizer=summarize,
            precompact=early,
            session_id=session_id,
        )

    chain = RunnableWithMessageHistory(
        ChatPromptTemplate.from_messages(PROMPT_MESSAGES) | model,  # type: ignore[arg-type]
        factory,
        input_messages_key="ask",
        history_messages_key="history",
    )
    config = {"configurable": {"session_id": "bench"}}
    for i in range(turns):
        await chain.ainvoke({"ask": ask(i)}, config)
    await factory("bench").aclose()
    return added


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=80)
    parser.add_argument("--agent-seconds", type=float, default=1.0)
    parser.add_argument("--precompact", type=float, default=0.5)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--langchain", action="store_true", help="through create_agent")
    mode.add_argument("--lcel", action="store_true", help="through prompt | transformer | model")
    mode.add_argument("--history", action="store_true", help="through RunnableWithMessageHistory")
    args = parser.parse_args()
    run = (
        agent_session
        if args.langchain
        else lcel_session
        if args.lcel
        else history_session
        if args.history
        else session
    )
    for name, early in (("off", None), ("on", args.precompact)):
        added = asyncio.run(run(args.turns, args.agent_seconds, early))
        print(
            f"ahead {name:3s}: {len(added)} compacting turns, added latency p50 "
            f"{statistics.median(added):.3f} s, p95 {p95(added):.3f} s, max {max(added):.3f} s"
        )


if __name__ == "__main__":
    main()
