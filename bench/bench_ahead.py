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
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import time
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


async def agent_session(turns: int, agent_seconds: float, early: float | None) -> list[float]:
    """The session through ``create_agent``: ``abefore_model``'s time on compacting turns."""
    from langchain.agents import create_agent
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_window_budget import WindowBudgetMiddleware

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

    added: list[float] = []

    class Timed(WindowBudgetMiddleware):
        async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            start = time.perf_counter()
            update = await super().abefore_model(state, runtime)
            if update is not None:
                added.append(time.perf_counter() - start)
            return update

    window = 32_000
    policy = BudgetPolicy.for_window(window)
    middleware = Timed(
        Agent(),
        context_window=window,
        policy=replace(policy, mask_keep_outputs=None),
        summarizer=summarize,
        memory=None,
        precompact=early,
    )
    agent = create_agent(Agent(), tools=[], middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "bench"}}
    for i in range(turns):
        ask = f"task {i}: fix src/mod_{i}.py " + "detail " * 80 + "\n" + "x = 1\n" * 200
        await agent.ainvoke({"messages": [HumanMessage(ask)]}, config)
    await middleware.aclose()
    return added


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=80)
    parser.add_argument("--agent-seconds", type=float, default=1.0)
    parser.add_argument("--precompact", type=float, default=0.5)
    parser.add_argument("--langchain", action="store_true", help="through create_agent")
    args = parser.parse_args()
    run = agent_session if args.langchain else session
    for name, early in (("off", None), ("on", args.precompact)):
        added = asyncio.run(run(args.turns, args.agent_seconds, early))
        print(
            f"ahead {name:3s}: {len(added)} compacting turns, added latency p50 "
            f"{statistics.median(added):.3f} s, p95 {p95(added):.3f} s, max {max(added):.3f} s"
        )


if __name__ == "__main__":
    main()
