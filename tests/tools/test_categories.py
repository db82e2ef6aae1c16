from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import transcripts
from window_budget import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BudgetError,
    BudgetPolicy,
    CompactionSummaryMessage,
    ConfigError,
    CustomMessage,
    DigestMessage,
    ImageBlock,
    Model,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    create_condenser,
    estimate_tokens,
)
from window_budget.budget import TiktokenCounter, estimate_message_tokens
from window_budget.digest import SESSION_HEADER
from window_budget.pipeline import (
    DEFAULT_SHARES,
    MessageCategory,
    allocate_budgets,
    classify_message,
    replace_old_images,
    resolve_shares,
    trim_by_category,
    trim_messages_by_category,
)
from window_budget.testing import ScriptedCompleter

C = MessageCategory


@dataclass(frozen=True)
class Foreign:
    role: str
    text: str


def _system(text: str = "You are terse.") -> CustomMessage:
    return CustomMessage("system", text)


def _call(i: str, text: str = "running") -> AssistantMessage:
    return AssistantMessage([TextBlock(text), ToolCallBlock(i, "bash", {"command": "ls"})])


def _img(tag: str) -> ImageBlock:
    return ImageBlock(tag * 40, "image/png")


# ------------------------------------------------------------------ classify


@pytest.mark.parametrize(
    ("message", "category"),
    [
        (_system(), C.SYSTEM),
        (CustomMessage("cw_clamp_notice", "note"), C.SYSTEM),
        (Foreign("system", "x"), C.SYSTEM),
        (CustomMessage("file", "README contents"), C.CONTEXT),
        (DigestMessage(SESSION_HEADER + "\n\n# Objective\nship"), C.CONTEXT),
        (CompactionSummaryMessage("old digest"), C.CONTEXT),
        (UserMessage("hi"), C.DIALOG),
        (AssistantMessage("hello"), C.DIALOG),
        (Foreign("narrator", "x"), C.DIALOG),
        (ToolResultMessage("c1", "bash", "ok"), C.SYSTEM_OUTPUT),
        (BashExecutionMessage("ls", "a b", exit_code=0), C.SYSTEM_OUTPUT),
        (ToolResultMessage("c1", "bash", "no such file", is_error=True), C.ERROR),
        (ToolResultMessage("c1", "py", "Traceback (most recent call last):\n  x"), C.ERROR),
        (BashExecutionMessage("make", "fail", exit_code=2), C.ERROR),
        (AssistantMessage("", stop_reason="error"), C.ERROR),
    ],
)
def test_classify(message: AgentMessage, category: MessageCategory) -> None:
    assert classify_message(message) is category


# ------------------------------------------------------------------ shares


def test_default_shares_add_up_to_105_percent() -> None:
    assert {c.name: v for c, v in DEFAULT_SHARES.items()} == {
        "SYSTEM": 0.10,
        "CONTEXT": 0.35,
        "DIALOG": 0.50,
        "SYSTEM_OUTPUT": 0.05,
        "ERROR": 0.05,
    }


def test_shares_by_name_and_validation() -> None:
    assert resolve_shares({"dialog": 0.7})[C.DIALOG] == 0.7
    with pytest.raises(ConfigError, match="unknown category"):
        resolve_shares({"chat": 1.0})
    with pytest.raises(ConfigError, match="ERROR"):
        resolve_shares({C.ERROR: -1})
    with pytest.raises(ConfigError, match="all 0"):
        resolve_shares({"context": 0, "dialog": 0, "system_output": 0, "error": 0})


def test_allocation_lends_unused_shares() -> None:
    needs = {C.SYSTEM: 50, C.CONTEXT: 100, C.DIALOG: 5000, C.SYSTEM_OUTPUT: 900, C.ERROR: 0}
    alloc = allocate_budgets(1050, needs)
    assert alloc[C.SYSTEM] == 50
    assert alloc[C.CONTEXT] == 100
    assert alloc[C.ERROR] == 0
    # 900 left for DIALOG and SYSTEM_OUTPUT, split 50:5.
    assert alloc[C.SYSTEM_OUTPUT] == 81
    assert alloc[C.DIALOG] == 818
    assert sum(alloc.values()) <= 1050


@given(st.integers(0, 10_000), st.dictionaries(st.sampled_from(list(C)), st.integers(0, 5000)))
def test_allocation_never_exceeds_budget(budget: int, needs: dict[MessageCategory, int]) -> None:
    alloc = allocate_budgets(budget, needs)
    system = needs.get(C.SYSTEM, 0)
    assert alloc[C.SYSTEM] == system
    assert sum(v for c, v in alloc.items() if c is not C.SYSTEM) <= max(0, budget - system)
    for c in C:
        assert alloc[c] >= 0


# ------------------------------------------------------------------ images


def test_every_image_but_the_newest_becomes_a_placeholder() -> None:
    msgs: list[AgentMessage] = [
        UserMessage([TextBlock("first"), _img("a")]),
        ToolResultMessage("c1", "screenshot", [_img("b"), TextBlock("shot")]),
        UserMessage("no image"),
        UserMessage([_img("c")]),
    ]
    out, records = replace_old_images(msgs)
    assert [(r.index, r.block) for r in records] == [(0, 1), (1, 0)]
    assert out[2] is msgs[2]
    assert out[3] is msgs[3]
    first = out[0].content  # type: ignore[union-attr]
    assert first[0] == TextBlock("first")
    assert "image/png" in first[1].text
    assert records[0].sha256 in first[1].text
    assert "40 data chars" in records[1].placeholder
    assert isinstance(out[3].content[0], ImageBlock)  # type: ignore[union-attr]
    assert isinstance(msgs[0].content[1], ImageBlock)  # type: ignore[union-attr]  # input intact


def test_one_image_or_none_changes_nothing() -> None:
    msgs: list[AgentMessage] = [UserMessage([_img("a")]), UserMessage("x")]
    out, records = replace_old_images(msgs)
    assert records == ()
    assert all(a is b for a, b in zip(out, msgs, strict=True))


def test_image_pass_alone_can_make_it_fit() -> None:
    msgs: list[AgentMessage] = [
        UserMessage([_img("a")]),
        UserMessage([_img("b")]),
        UserMessage("what changed?"),
    ]
    budget = estimate_tokens(msgs) - 500
    result = trim_by_category(msgs, budget)
    assert result.dropped == ()
    assert len(result.images) == 1
    assert result.images[0].index == 0
    assert result.kept[1] is msgs[1]
    assert result.kept[2] is msgs[2]
    assert result.tokens_after <= budget


# ------------------------------------------------------------------ trimming


def test_under_budget_returns_the_same_objects() -> None:
    msgs: list[AgentMessage] = [UserMessage([_img("a")]), UserMessage([_img("b")])]
    kept, dropped = trim_messages_by_category(msgs, 10_000)
    assert dropped == []
    assert all(a is b for a, b in zip(kept, msgs, strict=True))


def test_system_is_never_trimmed_and_oldest_dialog_goes_first() -> None:
    msgs: list[AgentMessage] = [_system("rules " * 50)] + [
        UserMessage(f"turn {i} " + "x" * 200) for i in range(10)
    ]
    budget = estimate_message_tokens(msgs[0]) + 4 * estimate_message_tokens(msgs[1])
    kept, dropped = trim_messages_by_category(msgs, budget)
    assert kept[0] is msgs[0]
    assert kept[1:] == msgs[-(len(kept) - 1) :]
    assert dropped == msgs[1 : len(dropped) + 1]
    assert estimate_tokens(kept) <= budget


def test_system_larger_than_budget_raises() -> None:
    msgs: list[AgentMessage] = [_system("rules " * 500), UserMessage("hi")]
    with pytest.raises(BudgetError, match="SYSTEM messages need"):
        trim_by_category(msgs, 100)


def test_small_share_categories_are_trimmed_before_dialog() -> None:
    outputs = [ToolResultMessage(f"c{i}", "bash", "o" * 400) for i in range(4)]
    msgs: list[AgentMessage] = []
    for i, out in enumerate(outputs):
        msgs += [_call(f"c{i}"), out, UserMessage(f"thanks {i}")]
    budget = int(estimate_tokens(msgs) * 0.6)
    result = trim_by_category(msgs, budget)
    # Tool outputs (5 % share) go first, each with the call that asked for it.
    assert not any(isinstance(m, UserMessage) for m in result.dropped)
    assert sum(isinstance(m, UserMessage) for m in result.kept) == 4
    gone_calls = {m.tool_calls[0].id for m in result.dropped if isinstance(m, AssistantMessage)}
    gone_results = {m.tool_call_id for m in result.dropped if isinstance(m, ToolResultMessage)}
    assert gone_calls == gone_results
    assert gone_calls
    assert all(isinstance(m, UserMessage) for m in result.kept[-1:])
    assert result.tokens_after <= budget


def test_custom_shares_protect_a_category() -> None:
    msgs: list[AgentMessage] = []
    for i in range(6):
        msgs += [CustomMessage("file", f"doc {i} " + "d" * 300), UserMessage(f"q{i} " + "u" * 300)]
    budget = estimate_tokens(msgs) // 2
    favour_context = trim_by_category(msgs, budget, shares={"context": 0.9, "dialog": 0.1})
    favour_dialog = trim_by_category(msgs, budget, shares={"context": 0.1, "dialog": 0.9})

    def count(result: object, kind: type) -> int:
        return sum(isinstance(m, kind) for m in result.kept)  # type: ignore[attr-defined]

    assert count(favour_context, CustomMessage) > count(favour_dialog, CustomMessage)
    assert count(favour_dialog, UserMessage) > count(favour_context, UserMessage)


def test_single_oversized_newest_message_is_shortened_not_lost() -> None:
    msgs: list[AgentMessage] = [UserMessage("old"), UserMessage("new " * 2000)]
    result = trim_by_category(msgs, 200)
    assert result.tokens_after <= 200
    assert result.dropped == (msgs[0],)
    assert result.shortened == (0,)
    assert "removed by window-budget" in result.kept[0].content  # type: ignore[union-attr]


def test_budget_validation() -> None:
    with pytest.raises(ConfigError):
        trim_by_category([], -1)


@given(transcripts(max_groups=14), st.integers(0, 3000))
def test_trim_fits_keeps_order_and_tool_pairs(msgs: list[AgentMessage], budget: int) -> None:
    try:
        result = trim_by_category(msgs, budget)
    except BudgetError:
        system = sum(estimate_message_tokens(m) for m in msgs if classify_message(m) is C.SYSTEM)
        assert system > budget
        return
    kept = list(result.kept)
    assert estimate_tokens(kept) == result.tokens_after <= budget
    # Order kept; untouched messages are the input objects; dropped are the input objects.
    ids = [id(m) for m in msgs]
    positions = [ids.index(id(m)) for m in kept if id(m) in ids]
    assert positions == sorted(positions)
    copies = {k for k, m in enumerate(kept) if not any(m is x for x in msgs)}
    assert set(result.shortened) <= copies
    assert len(kept) + len(result.dropped) == len(msgs)
    assert all(any(d is m for m in msgs) for d in result.dropped)
    # A call and its result are kept or dropped together.
    kept_calls = {c.id for m in kept if isinstance(m, AssistantMessage) for c in m.tool_calls}
    all_calls = {c.id for m in msgs if isinstance(m, AssistantMessage) for c in m.tool_calls}
    for m in kept:
        if isinstance(m, ToolResultMessage) and m.tool_call_id in all_calls:
            assert m.tool_call_id in kept_calls
    for m in result.dropped:
        if isinstance(m, ToolResultMessage):
            assert m.tool_call_id not in kept_calls
    assert all(any(k is m for k in kept) for m in msgs if classify_message(m) is C.SYSTEM)


# ------------------------------------------------------- condenser strategy


def _long_chat(n: int) -> list[AgentMessage]:
    msgs: list[AgentMessage] = []
    for i in range(n):
        msgs += [
            UserMessage(f"question {i}: " + "why " * 60),
            _call(f"t{i}"),
            ToolResultMessage(f"t{i}", "bash", "output " * 80),
            AssistantMessage(f"answer {i}: " + "because " * 40),
        ]
    return msgs


def test_condenser_trim_strategy_end_to_end() -> None:
    completer = ScriptedCompleter()  # no replies: any model call would fail loudly
    condenser = create_condenser(
        model=Model("local", 4000),
        complete=completer,
        complete_sync=completer.sync,
        policy=BudgetPolicy(strategy="trim", reserve_tokens=500),
    )
    short = _long_chat(1)
    assert condenser.run_sync(short).messages is short

    msgs = _long_chat(30)
    result = condenser.run_sync(msgs, pinned_tokens=300)
    assert result.reason == "trimmed"
    assert result.summary is None
    assert result.tokens_after <= result.limit
    assert estimate_tokens(result.messages) + 300 <= result.limit
    assert result.messages[-1] is msgs[-1]
    assert len(result.messages) + len(result.plan.dropped) == len(msgs)
    assert completer.calls == []


async def test_condenser_trim_strategy_async() -> None:
    condenser = create_condenser(model=Model("local", 4000), policy=BudgetPolicy(strategy="trim"))
    msgs = _long_chat(30)
    out = await condenser(msgs)
    assert out is not msgs
    assert estimate_tokens(out) <= (4000 - 2048) * 0.75
    assert await condenser(out) is out  # already fits: identity no-op


_TIKTOKEN = TiktokenCounter()


@given(transcripts(max_groups=12), st.integers(300, 6000), st.booleans())
def test_condenser_trim_always_fits_or_is_identity(
    msgs: list[AgentMessage], window: int, exact: bool
) -> None:
    counter = _TIKTOKEN if exact else None
    condenser = create_condenser(
        model=Model("m", window),
        counter=counter,
        policy=BudgetPolicy(strategy="trim", reserve_tokens=0),
    )
    result = condenser.run_sync(msgs)
    if result.messages is msgs:
        assert result.reason in ("under-budget", "nothing-condensable")
        return
    assert result.reason == "trimmed"
    assert estimate_tokens(result.messages, counter) <= result.limit
    assert len(result.messages) + len(result.plan.dropped) == len(msgs)
