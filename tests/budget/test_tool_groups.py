"""One tool-group computation: the slice, the ledger, masking and trimming pair results alike.

The reference below pairs ids the slow, obvious way (for each result, walk back to the
nearest call with its id); every site that groups tool calls must agree with it.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import StrangeMessage, transcripts
from window_budget import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    CustomMessage,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
)
from window_budget.budget import TokenLedger, estimate_tokens
from window_budget.budget import _ledger as ledger_module
from window_budget.budget._groups import ToolGroups
from window_budget.errors import BudgetError
from window_budget.pipeline import (
    MessageCategory,
    blocked_cuts,
    classify_message,
    mask_tool_outputs,
    trim_by_category,
)
from window_budget.pipeline._trim import _units as category_units

# ------------------------------------------------------------------ the reference


def reference_pairs(msgs: list[AgentMessage]) -> dict[int, tuple[int, ToolCallBlock]]:
    """Per result index: the nearest earlier assistant with a call of that id, and the call."""
    out: dict[int, tuple[int, ToolCallBlock]] = {}
    for j, m in enumerate(msgs):
        if not isinstance(m, ToolResultMessage):
            continue
        for a in range(j - 1, -1, -1):
            owner = msgs[a]
            if isinstance(owner, AssistantMessage):
                same = [c for c in owner.tool_calls if c.id == m.tool_call_id]
                if same:
                    out[j] = (a, same[-1])
                    break
    return out


def reference_blocked(msgs: list[AgentMessage]) -> list[bool]:
    """Per cut position 0..n: at a result, or strictly inside a call's span to its result."""
    pairs = reference_pairs(msgs)
    return [
        (i < len(msgs) and isinstance(msgs[i], ToolResultMessage))
        or any(a < i <= r for r, (a, _) in pairs.items())
        for i in range(len(msgs) + 1)
    ]


def reference_units(msgs: list[AgentMessage]) -> list[list[int]]:
    pairs = reference_pairs(msgs)
    units: dict[int, list[int]] = {}
    for j in range(len(msgs)):
        units.setdefault(pairs[j][0] if j in pairs else j, []).append(j)
    return [units[k] for k in sorted(units)]


# ------------------------------------------------------------------ transcripts

_IDS = ("a", "b", "c")  # few ids: duplicates, orphans and interleaving are common


@st.composite
def tangled(draw: st.DrawFn) -> list[AgentMessage]:
    """Parallel calls, reused ids, results out of order or missing, notes in between."""
    msgs: list[AgentMessage] = []
    for step in range(draw(st.integers(0, 30))):
        kind = draw(st.integers(0, 6))
        if kind <= 1:
            ids = draw(st.lists(st.sampled_from(_IDS), min_size=1, max_size=3))
            calls = [
                ToolCallBlock(i, "lookup", {"q": f"{i}@{step}.{k}"}) for k, i in enumerate(ids)
            ]
            msgs.append(AssistantMessage([TextBlock("go"), *calls]))
        elif kind <= 3:
            msgs.append(ToolResultMessage(draw(st.sampled_from(_IDS)), "lookup", "x" * 50))
        elif kind == 4:
            msgs.append(UserMessage(f"u{step}"))
        elif kind == 5:
            note = draw(st.sampled_from(["system", "note"]))
            msgs.append(CustomMessage(note, f"n{step}"))
        else:
            msgs.append(
                draw(
                    st.sampled_from(
                        [BashExecutionMessage("ls", "x"), StrangeMessage("systemNote", step)]
                    )
                )
            )
    return msgs


any_transcript = st.one_of(tangled(), transcripts())


# ------------------------------------------------------------------ the property


@given(any_transcript, st.data())
def test_every_site_groups_tool_calls_like_the_reference(
    msgs: list[AgentMessage], data: st.DataObject
) -> None:
    pairs = reference_pairs(msgs)
    groups = ToolGroups(msgs)
    assert {j: groups.owner(j) for j in range(len(msgs)) if groups.owner(j) is not None} == {
        j: a for j, (a, _) in pairs.items()
    }
    assert {j: groups.call(j) for j in pairs} == {j: c for j, (_, c) in pairs.items()}
    for a in {a for a, _ in pairs.values()}:
        assert groups.results(a) == tuple(sorted(j for j, (o, _) in pairs.items() if o == a))

    # The slice, and no legal cut separates a call from its result.
    blocked = blocked_cuts(msgs)
    assert blocked == reference_blocked(msgs)
    for cut in (i for i in range(len(msgs) + 1) if not blocked[i]):
        assert not any(a < cut <= r for r, (a, _) in pairs.items())

    # The ledger, fed the same transcript in appended chunks (and once after a change).
    ledger = TokenLedger()
    history: list[AgentMessage] = []
    for chunk in data.draw(st.lists(st.integers(1, 6), max_size=12)):
        history.extend(msgs[len(history) : len(history) + chunk])
        assert ledger.blocked(history) == reference_blocked(history)[: len(history)]
    assert ledger.blocked(msgs) == blocked[: len(msgs)]
    if msgs:
        edited = [UserMessage("replaced"), *msgs[1:]]
        assert ledger.blocked(edited) == reference_blocked(edited)[: len(edited)]

    # Category trimming: SYSTEM messages take no part in any unit.
    cats = [classify_message(m) for m in msgs]
    kept = [j for j in range(len(msgs)) if cats[j] is not MessageCategory.SYSTEM]
    expected = [[kept[k] for k in u] for u in reference_units([msgs[j] for j in kept])]
    assert category_units(msgs, cats) == expected

    # Trimming drops a call and its results together, or keeps both.
    budget = data.draw(st.integers(0, max(estimate_tokens(msgs), 1)))
    try:
        trimmed = trim_by_category(msgs, budget)
    except BudgetError:  # the SYSTEM notes alone exceed the budget
        pass
    else:
        dropped = {id(m) for m in trimmed.dropped}
        for r, (a, _) in pairs.items():
            assert (id(msgs[a]) in dropped) == (id(msgs[r]) in dropped)

    # Masking names the call each result answers (a lookup's placeholder shows its arguments).
    out, replaced = mask_tool_outputs(msgs, end=len(msgs), keep_last=0, min_chars=0)
    for j in replaced:
        if j in pairs and pairs[j][1].name == "lookup":
            target = json.dumps(dict(pairs[j][1].arguments), sort_keys=True)
            assert target in str(out[j].content)  # type: ignore[union-attr]


# ------------------------------------------------------------------ the rules, pinned


def _call(*ids: str) -> AssistantMessage:
    return AssistantMessage([ToolCallBlock(i, "lookup", {"q": f"{i}-{len(ids)}"}) for i in ids])


def _result(i: str) -> ToolResultMessage:
    return ToolResultMessage(i, "lookup", "out")


def test_a_reused_id_pairs_with_the_nearest_earlier_call() -> None:
    # Ids restarted per turn: the second result answers the second request, and the first
    # group ends at its own result instead of stretching to the second one.
    msgs = [_call("call_0"), _result("call_0"), UserMessage("again"), _call("call_0")]
    msgs.append(_result("call_0"))
    groups = ToolGroups(msgs)
    assert (groups.owner(1), groups.owner(4)) == (0, 3)
    assert blocked_cuts(msgs) == [False, True, False, False, True, False]
    assert TokenLedger().blocked(msgs) == blocked_cuts(msgs)[:5]
    cats = [MessageCategory.DIALOG] * len(msgs)
    assert category_units(msgs, cats) == [[0, 1], [2], [3, 4]]


def test_orphans_missing_results_and_retries() -> None:
    msgs = [_result("x"), _call("a", "b"), UserMessage("hm"), _result("b"), _result("b")]
    groups = ToolGroups(msgs)
    assert groups.owner(0) is None  # its call is not in the transcript
    assert groups.results(1) == (3, 4)  # "a" never answered; "b" answered twice
    assert groups.units() == [[0], [1, 3, 4], [2]]
    assert groups.blocked == [True, False, True, True, True]


def test_extending_matches_indexing_at_once() -> None:
    msgs = [_call("a", "b"), UserMessage("x"), _result("a"), _call("b"), _result("b")]
    grown = ToolGroups()
    for m in msgs:
        grown.extend([m])
    whole = ToolGroups(msgs)
    assert len(grown) == len(whole) == 5
    assert grown.blocked == whole.blocked
    assert grown.units() == whole.units()


# ------------------------------------------------------------------ linear work


def _parallel(n: int) -> list[AgentMessage]:
    calls = tuple(ToolCallBlock(f"c{i}", "lookup", {"q": i}) for i in range(n))
    return [
        UserMessage("go"),
        AssistantMessage(calls),
        *(ToolResultMessage(f"c{i}", "lookup", f"r{i}") for i in range(n)),
        UserMessage("next"),
    ]


def _overlapping(n: int) -> list[AgentMessage]:
    """n assistants with one call each, then all n results: every span overlaps the others."""
    return [
        *(AssistantMessage((ToolCallBlock(f"c{i}", "lookup", {}),)) for i in range(n)),
        *(ToolResultMessage(f"c{i}", "lookup", "r") for i in range(n)),
    ]


@pytest.mark.parametrize("shape", [_parallel, _overlapping])
def test_blocking_spans_is_linear(shape: object) -> None:
    msgs = shape(20_000)  # type: ignore[operator]
    groups = ToolGroups(msgs)
    assert groups.steps <= 3 * len(msgs)  # each position walked about once, not n * n / 2
    assert groups.blocked == blocked_cuts(msgs)[: len(msgs)]


@pytest.mark.parametrize("shape", [_parallel, _overlapping])
def test_the_ledger_blocks_each_cut_once(monkeypatch: pytest.MonkeyPatch, shape: object) -> None:
    made: list[ToolGroups] = []

    class Counted(ToolGroups):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    monkeypatch.setattr(ledger_module, "ToolGroups", Counted)
    msgs = shape(5_000)  # type: ignore[operator]
    ledger = TokenLedger()
    for end in range(0, len(msgs) + 1, 500):
        ledger.blocked(msgs[:end])
    assert ledger.blocked(msgs) == blocked_cuts(msgs)[: len(msgs)]
    assert len(made) == 1  # appended lists never rebuild the groups
    assert made[0].steps <= 3 * len(msgs)
