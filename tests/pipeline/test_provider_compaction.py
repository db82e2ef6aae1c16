"""A provider's own compaction block: kept, counted, never folded again, and a boundary."""

from __future__ import annotations

import asyncio
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies import transcripts
from window_budget import (
    AgentMessage,
    AssistantMessage,
    BudgetError,
    BudgetPolicy,
    Model,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    create_condenser,
    estimate_tokens,
    is_over_budget,
)
from window_budget.messages import ProviderCompactionBlock, message_from_dict, message_to_dict
from window_budget.pipeline import AheadCompactor, estimate_context, trim_by_category
from window_budget.pipeline._boundary import provider_boundary

ANTHROPIC_BLOCK = {
    "type": "compaction",
    "content": "The user asked to fix tests/test_io.py; pytest failed twice on a path.",
    "signature": "c2lnbmF0dXJl",
    "tool_changes": None,
}
OPENAI_ITEM = {"type": "compaction", "id": "cmp_01", "encrypted_content": "gAAAAAB" + "x" * 900}
WINDOW = Model("m", context_window=8_000)
POLICY = BudgetPolicy(keep_recent=600, reserve_tokens=0)


def anthropic_reply(text: str = "Continuing.") -> AssistantMessage:
    block = ProviderCompactionBlock.from_provider(ANTHROPIC_BLOCK)
    assert block is not None
    return AssistantMessage([block, TextBlock(text)])


def chatter(n: int, size: int = 800, tag: str = "old") -> list[AgentMessage]:
    out: list[AgentMessage] = []
    for i in range(n):
        out.append(UserMessage(f"{tag} question {i} " + "q" * size))
        out.append(AssistantMessage(f"{tag} answer {i} " + "a" * size))
    return out


def test_from_provider_reads_both_shapes_and_langchain_v1_wrapper() -> None:
    a = ProviderCompactionBlock.from_provider(ANTHROPIC_BLOCK)
    o = ProviderCompactionBlock.from_provider(OPENAI_ITEM)
    wrapped = ProviderCompactionBlock.from_provider({"type": "non_standard", "value": OPENAI_ITEM})
    assert a is not None
    assert a.provider == "anthropic"
    assert a.summary == ANTHROPIC_BLOCK["content"]
    assert o is not None
    assert o.provider == "openai"
    assert o.summary is None
    assert wrapped == o
    assert a.payload == ANTHROPIC_BLOCK
    assert o.payload == OPENAI_ITEM
    assert ProviderCompactionBlock.from_provider({"type": "text", "text": "x"}) is None


def test_it_is_counted_from_its_summary_or_its_opaque_payload() -> None:
    a = ProviderCompactionBlock.from_provider(ANTHROPIC_BLOCK)
    o = ProviderCompactionBlock.from_provider(OPENAI_ITEM)
    assert a is not None
    assert o is not None
    assert a.text == ANTHROPIC_BLOCK["content"]
    assert o.text == OPENAI_ITEM["encrypted_content"]
    empty = estimate_tokens([AssistantMessage([TextBlock("")])])
    # ~901 characters of ciphertext at 3.6 characters a token, on top of the framing.
    assert estimate_tokens([AssistantMessage([o])]) - empty >= 900 // 4
    assert estimate_tokens([AssistantMessage([a])]) > empty


def test_it_round_trips_through_the_dict_form_verbatim() -> None:
    for raw in (ANTHROPIC_BLOCK, OPENAI_ITEM):
        block = ProviderCompactionBlock.from_provider(raw)
        assert block is not None
        msg = AssistantMessage([block, TextBlock("next")])
        back = message_from_dict(json.loads(json.dumps(message_to_dict(msg))))
        assert back == msg
        assert isinstance(back, AssistantMessage)
        assert not isinstance(back.content, str)
        assert back.content[0].payload == raw  # type: ignore[union-attr]


def test_boundary_covers_the_tool_results_of_the_compacting_reply() -> None:
    block = ProviderCompactionBlock.from_provider(ANTHROPIC_BLOCK)
    assert block is not None
    msgs: list[AgentMessage] = [
        UserMessage("a"),
        AssistantMessage([block, ToolCallBlock("t1", "bash", {"cmd": "ls"})]),
        ToolResultMessage("t1", "bash", "a.txt"),
        UserMessage("b"),
    ]
    assert provider_boundary(msgs) == (1, 3)
    assert provider_boundary(msgs[:1]) is None


def test_over_budget_history_before_the_compaction_is_not_counted() -> None:
    # 40 long turns before the provider compacted: far over the window if counted.
    before = chatter(20, size=900)
    msgs = [*before, UserMessage("go on"), anthropic_reply(), UserMessage("thanks")]
    assert estimate_tokens(msgs) > WINDOW.context_window
    condenser = create_condenser(model=WINDOW, policy=POLICY)
    assert condenser.sync(msgs) is msgs  # the window starts at the compaction: under budget
    # The gate's own functions measure the same window when called directly.
    assert not is_over_budget(msgs, WINDOW, POLICY)
    assert is_over_budget(before, WINDOW, POLICY)
    seen = estimate_context(msgs, WINDOW)
    assert seen.context_tokens == estimate_tokens(msgs[-2:]) < WINDOW.context_window


def test_a_later_digest_goes_after_the_compaction_and_folds_only_what_followed() -> None:
    before = chatter(5, size=900)
    reply = anthropic_reply()
    after = chatter(12, size=900, tag="new")
    msgs = [*before, UserMessage("go on"), reply, *after]
    result = create_condenser(model=WINDOW, policy=POLICY).run_sync(msgs)
    assert result.summary is not None
    head = len(before) + 2
    out = list(result.messages)
    assert out[:head] == msgs[:head]
    assert all(a is b for a, b in zip(out, msgs[:head], strict=False))
    assert out[head] is result.summary.message
    assert all(m in after for m in result.plan.dropped)
    assert result.plan.dropped == tuple(msgs[head : result.plan.cut])
    assert tuple(out[head + 1 :]) == result.plan.kept


def test_the_ahead_compactor_keeps_the_boundary_too() -> None:
    msgs = [*chatter(3), UserMessage("go on"), anthropic_reply(), *chatter(12, 900, "new")]
    ahead = AheadCompactor(create_condenser(model=WINDOW, policy=POLICY))
    result = asyncio.run(ahead.run(msgs))
    assert result.summary is not None
    assert list(result.messages[:8]) == msgs[:8]
    assert result.messages[8] is result.summary.message


@st.composite
def with_compaction(draw: st.DrawFn) -> tuple[list[AgentMessage], int]:
    msgs = draw(transcripts(max_groups=12))
    # Only between groups: never between a call and its result.
    n = len(msgs)
    starts = [i for i in range(n + 1) if i == n or not isinstance(msgs[i], ToolResultMessage)]
    at = draw(st.sampled_from(starts))
    raw = draw(st.sampled_from([ANTHROPIC_BLOCK, OPENAI_ITEM]))
    block = ProviderCompactionBlock.from_provider(raw)
    assert block is not None
    return [*msgs[:at], AssistantMessage([block, TextBlock("resumed")]), *msgs[at:]], at


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=with_compaction(), window=st.integers(3_000, 20_000), force=st.booleans())
def test_condensing_never_touches_the_compaction_or_what_came_before(
    case: tuple[list[AgentMessage], int], window: int, force: bool
) -> None:
    msgs, at = case
    model = Model("m", context_window=window)
    condenser = create_condenser(model=model, policy=BudgetPolicy(keep_recent=800))
    try:
        result = condenser.run_sync(msgs, force=force)
    except BudgetError:  # the documented outcome when nothing fits
        return
    out = list(result.messages)
    # The compaction message and everything before it: the same objects, in place.
    assert len(out) > at
    assert all(a is b for a, b in zip(out[: at + 1], msgs[: at + 1], strict=False))
    # Nothing at or before it was folded into a digest or counted as dropped.
    assert not any(m is x for m in result.plan.dropped for x in msgs[: at + 1])
    # It appears once, unchanged.
    assert sum(1 for m in out if m is msgs[at]) == 1


def test_trimming_by_category_keeps_the_compaction_and_what_came_before() -> None:
    before = chatter(10, size=900, tag="old")
    reply = anthropic_reply()
    after = chatter(10, size=900, tag="new")
    msgs = [*before, UserMessage("go on"), reply, *after]
    budget = estimate_tokens([reply, *after]) // 3
    result = trim_by_category(msgs, budget)
    kept_ids = {id(m) for m in result.kept}
    assert all(id(m) in kept_ids for m in [*before, msgs[len(before)], reply])
    assert result.dropped
    assert all(any(m is a for a in after) for m in result.dropped)
    assert result.tokens_after <= budget
