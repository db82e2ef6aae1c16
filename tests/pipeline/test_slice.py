from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import transcripts
from window_budget import (
    AssistantMessage,
    BudgetPolicy,
    DigestMessage,
    Model,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    create_condenser,
    plan_slice,
)
from window_budget.budget import estimate_message_tokens, prefix_tokens
from window_budget.digest import SESSION_HEADER, is_digest
from window_budget.pipeline import blocked_cuts, plan_force_slice


def _call(i: str) -> AssistantMessage:
    return AssistantMessage([TextBlock("run"), ToolCallBlock(i, "bash", {"command": "ls"})])


def _legal(msgs: list, i: int) -> bool:
    """Reference legality: no tool result at i and no call before i answered at or after i."""
    if isinstance(msgs[i], ToolResultMessage):
        return False
    called = {c.id for m in msgs[:i] if isinstance(m, AssistantMessage) for c in m.tool_calls}
    answered_later = {m.tool_call_id for m in msgs[i:] if isinstance(m, ToolResultMessage)}
    return not (called & answered_later)


def _reference_cut(msgs: list, keep: int) -> int:
    """Brute force: smallest i whose tail fits, snapped to a legal cut (back if none ahead)."""
    n = len(msgs)
    sizes = [estimate_message_tokens(m) for m in msgs]
    if sum(sizes) <= keep or n == 0:
        return 0
    start = next(i for i in range(n + 1) if sum(sizes[i:]) <= keep)
    for i in range(start, n):
        if _legal(msgs, i):
            return i
    for i in range(min(start, n) - 1, 0, -1):
        if _legal(msgs, i):
            return i
    return 0


def test_seed_example_cut() -> None:
    msgs = [UserMessage("x" * 60) for _ in range(10)]  # 17 + 4 framing = 21 tokens each
    plan = plan_slice(msgs, BudgetPolicy(keep_recent=64))
    assert plan.cut == 7
    assert list(plan.kept) == msgs[7:]
    assert list(plan.dropped) == msgs[:7]


def test_whole_transcript_within_keep_recent_is_not_condensable() -> None:
    msgs = [UserMessage("short")] * 5
    assert plan_slice(msgs, BudgetPolicy(keep_recent=6000)).cut == 0
    assert plan_slice([], BudgetPolicy()).cut == 0


def test_cut_snaps_past_leading_tool_results_and_parallel_groups() -> None:
    big = "y" * 3600
    msgs = [
        UserMessage(big),
        _call("a"),
        AssistantMessage([ToolCallBlock("p1", "x", {}), ToolCallBlock("p2", "x", {})]),
        ToolResultMessage("a", "bash", big),
        ToolResultMessage("p1", "x", big),
        ToolResultMessage("p2", "x", big),
        UserMessage("now"),
    ]
    blocked = blocked_cuts(msgs)
    assert blocked[2:6] == [True, True, True, True]
    plan = plan_slice(msgs, BudgetPolicy(keep_recent=1500))
    assert plan.cut == 6
    assert isinstance(plan.kept[0], UserMessage)


def test_orphans_and_aborted_calls_are_tolerated() -> None:
    msgs = [
        ToolResultMessage("ghost", "bash", "x" * 2000),
        _call("never-answered"),
        UserMessage("y" * 2000),
        UserMessage("z" * 100),
    ]
    plan = plan_slice(msgs, BudgetPolicy(keep_recent=100))
    assert plan.cut in (2, 3)
    assert not isinstance(plan.kept[0], ToolResultMessage)


def test_last_group_larger_than_the_tail_is_kept_not_folded() -> None:
    msgs = [UserMessage("old " * 500), _call("c"), ToolResultMessage("c", "bash", "z" * 50_000)]
    plan = plan_slice(msgs, BudgetPolicy(keep_recent=1000))
    assert plan.cut == 1
    assert plan.kept[0] is msgs[1]


def test_turn_policy_keeps_the_last_n_turns_whole() -> None:
    # A turn is a user message and everything answering it: turns(2) keeps two user turns,
    # whatever number of replies, tool calls and results they hold.
    msgs = [UserMessage(f"u{i}") for i in range(10)] + [
        AssistantMessage("a"),
        _call("c"),
        ToolResultMessage("c", "bash", "ok"),
        AssistantMessage("done"),
        UserMessage("last"),
        AssistantMessage("reply"),
    ]
    plan = plan_slice(msgs, BudgetPolicy.turns(2))
    assert plan.cut == 9
    assert sum(isinstance(m, UserMessage) for m in plan.kept) == 2
    assert plan_slice(msgs, BudgetPolicy.turns(1)).cut == 14
    assert plan_slice(msgs, BudgetPolicy.turns(11)).cut == 0  # fewer turns than asked: all


def test_a_digest_is_not_a_turn() -> None:
    msgs = [DigestMessage(f"{SESSION_HEADER}\nold"), UserMessage("q"), AssistantMessage("a")]
    assert plan_slice(msgs, BudgetPolicy.turns(1)).cut == 1
    assert plan_slice(msgs, BudgetPolicy.turns(2)).cut == 0


def test_message_policy_keeps_the_last_n_messages_with_pair_safety() -> None:
    msgs = [UserMessage(f"u{i}") for i in range(10)] + [
        _call("c"),
        ToolResultMessage("c", "bash", "ok"),
    ]
    policy = BudgetPolicy(keep_unit="messages", keep_recent=1)
    assert plan_slice(msgs, policy).cut == 10  # never start on the result
    assert plan_slice(msgs, BudgetPolicy(keep_unit="messages", keep_recent=8)).cut == 4


def test_force_slice_folds_everything_before_the_last_user_turn() -> None:
    msgs = [
        UserMessage("a"),
        AssistantMessage("b"),
        UserMessage("c"),
        _call("x"),
        ToolResultMessage("x", "bash", "d"),
    ]
    plan = plan_force_slice(msgs)
    assert plan.cut == 2
    assert plan_force_slice([UserMessage("only")]).cut == 0
    digest_then_turn = [DigestMessage(f"{SESSION_HEADER}\nold"), AssistantMessage("x")]
    assert plan_force_slice(digest_then_turn).cut == 0


@given(transcripts(), st.integers(0, 8000))
def test_plan_matches_brute_force_and_partitions_the_input(msgs: list, keep: int) -> None:
    policy = BudgetPolicy(keep_recent=keep)
    plan = plan_slice(msgs, policy)
    assert plan.cut == _reference_cut(msgs, keep)
    assert list(plan.dropped) + list(plan.kept) == msgs
    assert all(a is b for a, b in zip(plan.kept, msgs[plan.cut :], strict=True))
    if plan.cut:
        assert _legal(msgs, plan.cut)
        assert not isinstance(plan.kept[0], ToolResultMessage)
    # prefix sums given from outside give the same plan
    assert plan_slice(msgs, policy, prefix=prefix_tokens(msgs)) == plan


@given(transcripts(), st.integers(0, 30), st.sampled_from(["turns", "messages"]))
def test_turn_plans_never_split_a_pair(msgs: list, keep: int, unit: str) -> None:
    plan = plan_slice(msgs, BudgetPolicy(keep_recent=keep, keep_unit=unit))  # type: ignore[arg-type]
    assert list(plan.dropped) + list(plan.kept) == msgs
    if plan.cut:
        assert _legal(msgs, plan.cut)


@given(transcripts(), st.integers(1, 12))
def test_turn_plans_keep_at_least_the_last_n_user_turns(msgs: list, keep: int) -> None:
    plan = plan_slice(msgs, BudgetPolicy.turns(keep))
    users = [i for i, m in enumerate(msgs) if isinstance(m, UserMessage) and not is_digest(m)]
    kept_users = sum(1 for i in users if i >= plan.cut)
    assert kept_users >= min(keep, len(users))
    if plan.cut and not blocked_cuts(msgs)[users[-keep]] and len(users) >= keep:
        assert plan.cut == users[-keep]  # the cut falls exactly on the turn's user message


def _agent_run(steps: int) -> list:
    msgs: list = [UserMessage("Migrate the billing service to the new ledger API.")]
    for i in range(steps):
        msgs += [_call(f"c{i}"), ToolResultMessage(f"c{i}", "bash", f"step {i} " * 60)]
    return msgs


def test_force_slice_folds_before_the_kept_tail_with_one_user_prompt() -> None:
    msgs = _agent_run(150)
    assert plan_force_slice(msgs).cut == 0  # the last user turn is the first message
    plan = plan_force_slice(msgs, policy=BudgetPolicy(keep_recent=2000))
    assert plan.cut > 250  # nearly everything folds; only ~2,000 tokens stay
    assert isinstance(plan.kept[0], AssistantMessage)  # a whole tool group starts the tail
    assert list(plan.dropped) + list(plan.kept) == msgs


def test_force_slice_within_the_tail_still_folds_before_the_last_user_turn() -> None:
    msgs = [UserMessage("a"), AssistantMessage("b"), UserMessage("c"), AssistantMessage("d")]
    assert plan_force_slice(msgs, policy=BudgetPolicy(keep_recent=6000)).cut == 2


def test_forced_condense_of_an_agent_run_is_not_a_noop() -> None:
    condenser = create_condenser(model=Model("m", 128_000), policy=BudgetPolicy(keep_recent=2000))
    result = condenser.run_sync(_agent_run(150), force=True)
    assert result.reason == "forced"
    assert result.plan.cut > 250
    assert result.summary is not None
    assert "Migrate the billing service" in result.summary.text
