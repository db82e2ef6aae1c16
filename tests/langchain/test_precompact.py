"""Ahead-of-time compaction through ``create_agent``: no compacting turn waits for a summary.

A real agent graph (``create_agent`` + ``InMemorySaver``) driven with ``ainvoke``; the agent's
model is scripted and the summarizer is an async function that waits on an ``asyncio.Event``
the test sets, so nothing depends on timing. Every digest names its call (``digest-N``) and
the turns it saw (``turn-K``), so a test can tell which call wrote the digest a compacting
turn used and which head it covered.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver

from langchain_window_budget import WindowBudgetMiddleware
from window_budget import BudgetPolicy
from window_budget.pipeline import AheadCompactor

from .precompact_support import (
    MARK,
    GatedSummarizer,
    ask,
    assert_written_on_the_turn,
    digest_of,
)

WINDOW = 8_000


class ScriptedAgentModel(BaseChatModel):
    """The agent's model: answers every request with a short reply naming the turn."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted-agent"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls += 1
        return ChatResult(generations=[ChatGeneration(message=AIMessage(f"ok {self.calls}"))])


def build(summarizer: Any, **options: Any) -> tuple[Any, WindowBudgetMiddleware]:
    policy = BudgetPolicy.for_window(WINDOW)
    middleware = WindowBudgetMiddleware(
        model=ScriptedAgentModel(),
        context_window=WINDOW,
        summarizer=summarizer,
        policy=policy,
        memory=None,
        **{"precompact": 0.5, **options},
    )
    agent = create_agent(
        ScriptedAgentModel(), tools=[], middleware=[middleware], checkpointer=InMemorySaver()
    )
    return agent, middleware


def config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


async def running(
    **options: Any,
) -> tuple[GatedSummarizer, Any, WindowBudgetMiddleware, AheadCompactor, int]:
    """An agent on thread "t" whose first background digest is running, held at its gate;
    the summarizer, the agent, its middleware, the compactor and the next turn's index."""
    summarizer = GatedSummarizer(**options)
    summarizer.gate(0)
    agent, middleware = build(summarizer)
    ahead = middleware.engine.ahead
    assert ahead is not None
    k = await turns_until(agent, middleware, "t", 0, state="running")
    return summarizer, agent, middleware, ahead, k


async def turns_until(
    agent: Any, middleware: WindowBudgetMiddleware, thread: str, start: int, *, state: str
) -> int:
    """Run turns of ``thread`` from ``start`` until its background digest is in ``state``."""
    ahead = middleware.engine.ahead
    assert ahead is not None
    for k in range(start, start + 60):
        before = middleware.compactions
        await agent.ainvoke({"messages": [ask(k)]}, config(thread))
        assert middleware.compactions == before, "compacted before the background digest"
        if ahead.state(thread) == state:
            return k + 1
    raise AssertionError(f"no background digest in state {state!r}")


async def compacting_turn(
    agent: Any, middleware: WindowBudgetMiddleware, thread: str, start: int
) -> tuple[int, list[BaseMessage]]:
    """Run turns of ``thread`` from ``start`` until one compacts; the next turn, the state."""
    for k in range(start, start + 60):
        before = middleware.compactions
        await agent.ainvoke({"messages": [ask(k)]}, config(thread))
        if middleware.compactions > before:
            state = await agent.aget_state(config(thread))
            return k + 1, list(state.values["messages"])
    raise AssertionError("no turn compacted")


async def test_the_compacting_turn_uses_the_ready_digest_of_the_head_it_folds() -> None:
    summarizer, agent, middleware, ahead, k = await running()
    summarizer.gates[0].set()
    assert await ahead.wait("t") == "ready"
    _, messages = await compacting_turn(agent, middleware, "t", k)
    assert len(summarizer.seen) == 1  # the compacting turn made no summary call
    text, named, kept = digest_of(messages)
    assert "digest-0" in text
    # The digest covers exactly the head folded: every turn is in it or kept, never both.
    assert named == summarizer.seen[0]
    assert not named & kept
    assert named | kept == set(range(max(kept) + 1))
    await middleware.aclose()


async def test_a_head_changed_on_the_compacting_turn_takes_the_synchronous_path() -> None:
    summarizer, agent, middleware, ahead, k = await running()
    summarizer.gates[0].set()
    assert await ahead.wait("t") == "ready"
    state = await agent.aget_state(config("t"))
    first = state.values["messages"][0]
    # The same turn rewrites the head (same id: replaced in place) and crosses the trigger.
    changed = HumanMessage("turn-0: CHANGED " + "other " * 110, id=first.id)
    for step in range(k, k + 60):
        before = middleware.compactions
        await agent.ainvoke({"messages": [changed, ask(step)]}, config("t"))
        if middleware.compactions > before:
            break
        assert ahead.state("t") == "ready", "an under-budget turn replaced the digest"
    messages = (await agent.aget_state(config("t"))).values["messages"]
    text = assert_written_on_the_turn(summarizer, 1, messages)  # the stale one was not used
    assert "CHANGED" in summarizer.prompts[1]
    assert "digest-0" not in text


async def test_a_cancelled_digest_is_not_used() -> None:
    summarizer, agent, middleware, ahead, k = await running()
    assert ahead.cancel("t")
    assert await ahead.wait("t") == "cancelled"
    assert summarizer.cancelled == [0]
    _, messages = await compacting_turn(agent, middleware, "t", k)
    assert_written_on_the_turn(summarizer, 1, messages)


async def test_a_failed_background_digest_is_written_again_on_the_compacting_turn() -> None:
    summarizer, agent, middleware, ahead, k = await running(fail={0})
    summarizer.gates[0].set()
    assert await ahead.wait("t") == "failed"
    _, messages = await compacting_turn(agent, middleware, "t", k)
    assert_written_on_the_turn(summarizer, 1, messages)


async def test_a_summarizer_that_always_fails_leaves_the_network_free_digest() -> None:
    summarizer = GatedSummarizer(fail_all=True)
    agent, middleware = build(summarizer)
    ahead = middleware.engine.ahead
    assert ahead is not None
    k = await turns_until(agent, middleware, "t", 0, state="failed")
    _, messages = await compacting_turn(agent, middleware, "t", k)
    text, _, _ = digest_of(messages)
    assert "digest-" not in text
    assert len(summarizer.seen) >= 2  # the background call, then the turn's own
    result = middleware.last_result
    assert result is not None
    assert result.core.summary is not None
    assert result.core.summary.fallback


async def test_two_threads_each_use_their_own_background_digest() -> None:
    # Thread "a" asks turns 0, 1, ...; thread "b" turns 1000, 1001, ... (same sizes).
    summarizer = GatedSummarizer()
    agent, middleware = build(summarizer)
    ahead = middleware.engine.ahead
    assert ahead is not None
    offset = {"a": 0, "b": 1000}
    k = 0
    while ahead.state("a") == "none" or ahead.state("b") == "none":
        assert k < 60, "no background digest"
        for thread in ("a", "b"):  # interleaved: each runs while the other's digest is kept
            await agent.ainvoke({"messages": [ask(offset[thread] + k)]}, config(thread))
        k += 1
    assert await ahead.wait("a") == "ready"
    assert await ahead.wait("b") == "ready"
    assert len(summarizer.seen) == 2
    done: dict[str, list[BaseMessage]] = {}
    while len(done) < 2:
        assert k < 120, "no compaction"
        for thread in sorted(set(offset) - set(done)):
            before = middleware.compactions
            await agent.ainvoke({"messages": [ask(offset[thread] + k)]}, config(thread))
            if middleware.compactions > before:
                done[thread] = (await agent.aget_state(config(thread))).values["messages"]
        k += 1
    assert len(summarizer.seen) == 2  # neither compacting turn waited for a summary
    for thread, messages in done.items():
        text, named, kept = digest_of(messages)
        call = int(re.findall(r"digest-(\d+)", text)[0])
        assert named == summarizer.seen[call]  # the digest written for this head
        mine = range(offset[thread], offset[thread] + 1000)
        assert named
        assert all(n in mine for n in named | kept)
        assert not named & kept


def test_invoke_stays_synchronous_and_starts_nothing() -> None:
    calls: list[int] = []

    def summarizer(request: list[BaseMessage]) -> str:
        calls.append(1)
        marks = sorted({int(k) for m in request for k in MARK.findall(str(m.content))})
        files = ", ".join(f"src/mod_{k}.py" for k in marks)
        return f"# Objective\nFix the modules under src/: {files}.\n# Plan\nGo on."

    agent, middleware = build(summarizer)  # type: ignore[arg-type]
    ahead = middleware.engine.ahead
    assert ahead is not None
    for k in range(60):
        before = middleware.compactions
        agent.invoke({"messages": [ask(k)]}, config("s"))
        if middleware.compactions > before:
            break
    else:
        raise AssertionError("no turn compacted")
    assert ahead.state("s") == "none"
    assert calls  # written on the compacting turn itself
    result = middleware.last_result
    assert result is not None
    assert result.core.summary is not None
    assert not result.core.summary.fallback


def test_precompact_must_sit_below_the_trigger() -> None:
    with pytest.raises(ValueError, match="precompact_ratio"):
        WindowBudgetMiddleware(model=ScriptedAgentModel(), context_window=WINDOW, precompact=0.9)
