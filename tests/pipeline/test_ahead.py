"""Ahead-of-time compaction: a background digest is used only for the head it covers.

Real asyncio; the completer waits on an ``asyncio.Event`` instead of sleeping, so nothing
here depends on timing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
from window_budget.contract import CompleteOptions, CondenseResult, Context
from window_budget.memory import InProcessMemoryStore
from window_budget.messages import AgentMessage, message_to_dict
from window_budget.pipeline import AheadCompactor
from window_budget.pipeline._ahead import head_hash
from window_budget.pipeline.summarize import resolve_ledger

MODEL = Model("m", 16_000)
POLICY = BudgetPolicy(precompact_ratio=0.5, summary_request="prefix", mask_keep_outputs=None)


def turn(i: int) -> list[AgentMessage]:
    return [
        UserMessage(f"step {i}: edit src/mod_{i}.py " + "lorem ipsum " * 60),
        AssistantMessage((ToolCallBlock(f"c{i}", "read", {"path": f"src/mod_{i}.py"}),)),
        ToolResultMessage(f"c{i}", "read", "x = 1\n" * 150),
        AssistantMessage(f"done {i}"),
    ]


@dataclass
class GatedCompleter:
    """Async completer: call ``n`` waits for ``gates[n]`` (when given), then replies.

    Each reply names its call (``digest-N``); ``heads[N]`` is the hash of the messages it saw.
    """

    gates: dict[int, asyncio.Event] = field(default_factory=dict)
    fail: set[int] = field(default_factory=set)
    heads: list[str] = field(default_factory=list)
    contexts: list[Context] = field(default_factory=list)
    main: asyncio.Task[None] | None = None
    hold: asyncio.Event | None = None

    async def __call__(
        self, model: Model, context: Context, options: CompleteOptions | None = None
    ) -> AssistantMessage:
        n = len(self.heads)
        self.heads.append(head_hash(context.messages[:-1]))
        self.contexts.append(context)
        if n in self.gates:
            await self.gates[n].wait()
        hold = self.hold
        if hold is not None and asyncio.current_task() is not self.main:
            await hold.wait()  # a background call
        if n in self.fail:
            raise ConnectionError("provider down")
        text = (
            "# Objective\nThe user edits src/mod_0.py and the next modules.\n"
            f"# Plan\nKeep going with the next module (digest-{n})."
        )
        return AssistantMessage((TextBlock(text),), model=model.id)


def used_call(text: str) -> int:
    return int(text.split("(digest-")[1].split(")")[0])


def build(complete: GatedCompleter, **kw: object) -> AheadCompactor:
    condenser = create_condenser(model=MODEL, policy=POLICY, complete=complete)
    return AheadCompactor(condenser, **kw)  # type: ignore[arg-type]


async def grow_until(
    ahead: AheadCompactor, msgs: list[AgentMessage], start: int, stop: Callable[[], bool]
) -> int:
    """Append turns (running the compactor after each) until ``stop()``; the next turn index."""
    i = start
    while not stop():
        msgs.extend(turn(i))
        i += 1
        result = await ahead.run(msgs, system_prompt="You are an agent.")
        assert result.reason == "under-budget"
    return i


async def started(fake: GatedCompleter, calls: int) -> None:
    """Let the loop run until the completer has been called ``calls`` times."""
    while len(fake.heads) < calls:
        await asyncio.sleep(0)


async def cross_trigger(ahead: AheadCompactor, msgs: list[AgentMessage], i: int):  # type: ignore[no-untyped-def]
    while True:
        msgs.extend(turn(i))
        i += 1
        result = await ahead.run(msgs, system_prompt="You are an agent.")
        if result.reason != "under-budget":
            return result


async def test_a_ready_digest_is_used_and_no_call_waits() -> None:
    fake = GatedCompleter(gates={0: asyncio.Event()})
    ahead = build(fake)
    msgs: list[AgentMessage] = []
    i = await grow_until(ahead, msgs, 0, lambda: ahead.state() != "none")
    assert ahead.state() == "running"
    fake.gates[0].set()
    assert await ahead.wait() == "ready"
    result = await cross_trigger(ahead, msgs, i)
    assert result.reason == "condensed"
    assert len(fake.heads) == 1  # the compacting turn made no model call
    assert used_call(result.summary.text) == 0
    assert head_hash(result.plan.dropped) == fake.heads[0]
    assert result.summary.covered_count == result.plan.cut
    assert result.tokens_after <= result.limit


async def test_not_ready_falls_back_to_the_synchronous_path() -> None:
    fake = GatedCompleter(gates={0: asyncio.Event()})  # never set: the background call hangs
    ahead = build(fake)
    msgs: list[AgentMessage] = []
    i = await grow_until(ahead, msgs, 0, lambda: ahead.state() != "none")
    await started(fake, 1)
    job = ahead._jobs["default"]
    result = await cross_trigger(ahead, msgs, i)
    assert result.reason == "condensed"
    assert used_call(result.summary.text) == 1
    assert head_hash(result.plan.dropped) == fake.heads[1]
    await asyncio.wait({job.task})
    assert job.task.cancelled()  # the background call was stopped, not left running


async def test_a_stale_digest_is_not_used() -> None:
    fake = GatedCompleter()
    ahead = build(fake)
    msgs: list[AgentMessage] = []
    i = await grow_until(ahead, msgs, 0, lambda: ahead.state() != "none")
    assert await ahead.wait() == "ready"
    for j in range(i, i + 4):  # four turns at once: the next run is over the trigger
        msgs.extend(turn(j))
    msgs[0] = UserMessage("step 0: edit src/mod_0.py, the rewritten ask")  # the head changed
    result = await ahead.run(msgs, system_prompt="You are an agent.")
    assert result.reason == "condensed"
    assert used_call(result.summary.text) != 0
    assert head_hash(result.plan.dropped) == fake.heads[used_call(result.summary.text)]


async def test_a_cancelled_digest_is_not_used() -> None:
    fake = GatedCompleter(gates={0: asyncio.Event()})
    ahead = build(fake)
    msgs: list[AgentMessage] = []
    i = await grow_until(ahead, msgs, 0, lambda: ahead.state() != "none")
    await started(fake, 1)
    assert ahead.cancel()
    assert await ahead.wait() == "cancelled"
    result = await cross_trigger(ahead, msgs, i)
    assert used_call(result.summary.text) == 1
    assert len(fake.heads) == 2  # cancelled means no new background call for that head


async def test_a_failed_digest_is_retried_on_the_synchronous_path() -> None:
    fake = GatedCompleter(fail={0})
    ahead = build(fake)
    msgs: list[AgentMessage] = []
    i = await grow_until(ahead, msgs, 0, lambda: ahead.state() != "none")
    assert await ahead.wait() == "failed"
    result = await cross_trigger(ahead, msgs, i)
    assert not result.summary.fallback
    assert used_call(result.summary.text) == 1


async def test_a_background_digest_past_its_timeout_counts_as_failed() -> None:
    fake = GatedCompleter(gates={0: asyncio.Event()})  # never set
    ahead = build(fake, timeout=0.01)
    msgs: list[AgentMessage] = []
    i = await grow_until(ahead, msgs, 0, lambda: ahead.state() != "none")
    await started(fake, 1)
    assert await ahead.wait() == "failed"
    assert isinstance(ahead._jobs["default"].task.exception(), TimeoutError)
    result = await cross_trigger(ahead, msgs, i)
    assert used_call(result.summary.text) == 1


async def test_a_discarded_digest_leaves_the_store_untouched_and_a_used_one_resolves() -> None:
    store = InProcessMemoryStore()
    fake = GatedCompleter()
    condenser = create_condenser(model=MODEL, policy=POLICY, complete=fake, memory=store)
    ahead = AheadCompactor(condenser)
    msgs: list[AgentMessage] = []
    i = await grow_until(ahead, msgs, 0, lambda: ahead.state() != "none")
    assert await ahead.wait() == "ready"
    assert store.archived("default") == 0  # held until used
    assert store.ledger("default") is None
    result = await cross_trigger(ahead, msgs, i)
    assert used_call(result.summary.text) == 0
    assert store.archived("default") == result.plan.cut
    assert resolve_ledger(result.summary.message, store, "default") is not None
    first = json.dumps(message_to_dict(msgs[0]), sort_keys=True)
    assert json.dumps(dict(store.original("default", 0) or {}), sort_keys=True) == first


async def test_aclose_cancels_what_runs() -> None:
    fake = GatedCompleter(gates={0: asyncio.Event()})
    ahead = build(fake)
    msgs: list[AgentMessage] = []
    await grow_until(ahead, msgs, 0, lambda: ahead.state() != "none")
    job = ahead._jobs["default"]
    await ahead.aclose()
    assert job.task.cancelled()
    assert ahead.state() == "none"


def test_a_digest_of_a_closed_event_loop_gives_way_to_a_new_one() -> None:
    # A web server running each request under asyncio.run: the first loop's task was
    # cancelled when that loop closed; the next request starts the digest again on its own
    # loop and its compacting turn uses that one.
    fake = GatedCompleter(gates={0: asyncio.Event()})  # the first call never returns
    ahead = build(fake)
    msgs: list[AgentMessage] = []

    async def first() -> int:
        at = await grow_until(ahead, msgs, 0, lambda: ahead.state() != "none")
        # The call has begun (and waits on its gate) before the loop closes: a task the loop
        # never started would make the next loop's call the gated first one.
        await started(fake, 1)
        return at

    i = asyncio.run(first())

    async def second() -> CondenseResult:
        await ahead.run(msgs, system_prompt="You are an agent.")
        assert ahead.state() == "running"  # a new task, on this loop
        assert await ahead.wait() == "ready"
        result = await cross_trigger(ahead, msgs, i)
        await ahead.aclose()
        return result

    result = asyncio.run(second())
    assert len(fake.heads) == 2
    assert used_call(result.summary.text) == 1
    assert head_hash(result.plan.dropped) == fake.heads[1]


def test_precompact_ratio_must_sit_below_the_trigger() -> None:
    with pytest.raises(ValueError, match="precompact_ratio"):
        BudgetPolicy(trigger_ratio=0.6, precompact_ratio=0.7)
    with pytest.raises(ValueError, match="summary_request"):
        BudgetPolicy(summary_request="flat")  # type: ignore[arg-type]


# Each step: append a turn, rewrite an early message, let the background call finish, cancel.
STEPS = st.lists(
    st.sampled_from(["turn", "turn", "turn", "burst", "rewrite", "settle", "cancel"]), max_size=30
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS, gated=st.booleans())
def test_the_digest_used_always_covers_exactly_the_head_folded(
    steps: list[str], gated: bool
) -> None:
    async def scenario() -> None:
        fake = GatedCompleter()
        fake.main = asyncio.current_task()
        fake.hold = asyncio.Event() if gated else None  # background calls wait for "settle"
        ahead = build(fake)
        msgs: list[AgentMessage] = []
        i = 0
        for step in [*steps, *["turn"] * 12]:
            if step == "rewrite" and msgs:
                msgs[0] = UserMessage(f"step 0: edit src/mod_0.py (rewritten at {i})")
            elif step == "settle":
                if fake.hold is not None:
                    fake.hold.set()
                await ahead.wait()
                fake.hold = asyncio.Event() if gated else None
            elif step == "cancel":
                ahead.cancel()
            else:
                for _ in range(3 if step == "burst" else 1):
                    msgs.extend(turn(i))
                    i += 1
                result = await ahead.run(msgs, system_prompt="You are an agent.")
                if result.reason == "condensed":
                    n = used_call(result.summary.text)
                    assert fake.heads[n] == head_hash(result.plan.dropped)
                    assert result.summary.covered_count == result.plan.cut
                    msgs = list(result.messages)
        await ahead.aclose()

    asyncio.run(scenario())
