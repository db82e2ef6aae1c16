"""Masking old tool outputs before summarizing: pairs intact, originals archived."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import transcripts
from window_budget import (
    AssistantMessage,
    BudgetPolicy,
    Model,
    ToolCallBlock,
    ToolResultMessage,
    Usage,
    UserMessage,
    create_condenser,
    estimate_tokens,
)
from window_budget.digest import is_digest
from window_budget.memory import InProcessMemoryStore
from window_budget.pipeline import MASK_MARKER, blocked_cuts, is_masked, mask_tool_outputs
from window_budget.pipeline.summarize import build_local_digest, extract_facts, resolve_ledger
from window_budget.testing import ScriptedCompleter

BIG = "line of build output\n" * 400  # ~8,400 characters


def agent_run(steps: int, output: str = BIG) -> list:
    msgs: list = [UserMessage("Fix the flaky invoice export.")]
    for i in range(steps):
        msgs += [
            AssistantMessage(
                (ToolCallBlock(f"c{i}", "bash", {"command": f"make step{i}"}),),
                usage=Usage(1000 + i, 10),
            ),
            ToolResultMessage(f"c{i}", "bash", output, is_error=i == 1),
        ]
    return msgs


def test_placeholders_keep_call_id_pairing_and_name_the_outcome() -> None:
    msgs = agent_run(6)
    out, replaced = mask_tool_outputs(msgs, end=len(msgs), keep_last=2, min_chars=1000)
    assert replaced == [2, 4, 6, 8]  # the two most recent results stay whole
    for i in replaced:
        original, placeholder = msgs[i], out[i]
        assert isinstance(placeholder, ToolResultMessage)
        assert placeholder.tool_call_id == original.tool_call_id
        assert placeholder.tool_name == original.tool_name
        assert placeholder.is_error == original.is_error
        assert is_masked(placeholder)
        assert "\n" not in placeholder.content
    assert out[2].content.startswith(f"{MASK_MARKER}: bash make step0 — ok; 401 lines")
    assert "— failed: " in str(out[4].content)
    assert out[10] is msgs[10]
    assert out[12] is msgs[12]
    assert blocked_cuts(out) == blocked_cuts(msgs)


def test_small_outputs_placeholders_and_the_tail_are_left_alone() -> None:
    msgs = agent_run(4, output="ok")
    assert mask_tool_outputs(msgs, end=len(msgs), keep_last=0, min_chars=100)[1] == []
    big = agent_run(4)
    once, replaced = mask_tool_outputs(big, end=5, keep_last=0, min_chars=100)
    assert replaced == [2, 4]  # nothing at or after ``end``
    again, replaced_again = mask_tool_outputs(once, end=len(once), keep_last=0, min_chars=10)
    assert replaced_again == [6, 8]  # placeholders are never masked again
    assert again[2] is once[2]


@given(transcripts(), st.integers(0, 5), st.integers(0, 500))
def test_masking_never_changes_the_shape(msgs: list, keep: int, min_chars: int) -> None:
    snapshot = list(msgs)
    out, replaced = mask_tool_outputs(msgs, end=len(msgs), keep_last=keep, min_chars=min_chars)
    assert msgs == snapshot
    assert len(out) == len(msgs)
    assert [getattr(m, "role", None) for m in out] == [getattr(m, "role", None) for m in msgs]
    assert all(out[i] is msgs[i] for i in range(len(msgs)) if i not in replaced)
    assert blocked_cuts(out) == blocked_cuts(msgs)


def _condenser(**policy: object) -> tuple:
    fake = ScriptedCompleter(["# Objective\nfix the export"] * 4)
    condenser = create_condenser(
        model=Model("m", 40_000),
        complete_sync=fake.sync,
        policy=BudgetPolicy(keep_recent=3000, mask_keep_outputs=2, mask_min_chars=1000, **policy),
    )
    return condenser, fake


def test_masking_alone_avoids_the_summary_call_and_archives_the_originals() -> None:
    msgs = agent_run(14)  # ~34k tokens against a limit of ~28.5k
    snapshot = list(msgs)
    condenser, fake = _condenser()
    result = condenser.run_sync(msgs)
    assert result.reason == "masked"
    assert result.changed
    assert fake.calls == []
    assert result.tokens_after < result.limit
    assert msgs == snapshot
    masked = [m for m in result.messages if is_masked(m)]
    assert len(masked) == len(result.plan.dropped) > 0
    assert {m.tool_call_id for m in masked} == {m.tool_call_id for m in result.plan.dropped}
    assert all(m in snapshot for m in result.plan.dropped)  # the originals, untouched
    assert len(result.plan.kept) + len(result.plan.dropped) == len(msgs)
    # Stale usage is not left to anchor the next estimate on the longer transcript.
    assert all(m.usage is None for m in result.messages if isinstance(m, AssistantMessage))


def test_not_enough_masking_summarizes_from_the_originals() -> None:
    msgs = agent_run(14, output="x" * 900)  # outputs below mask_min_chars: nothing to mask
    condenser, fake = _condenser()
    result = condenser.run_sync([*msgs, UserMessage("filler " * 40_000)])
    assert result.reason == "condensed"
    assert len(fake.calls) == 1
    assert not any(is_masked(m) for m in result.messages)


def test_masking_is_on_by_default_and_none_turns_it_off() -> None:
    assert BudgetPolicy().mask_keep_outputs == 3
    condenser = create_condenser(model=Model("m", 40_000), policy=BudgetPolicy(keep_recent=3000))
    result = condenser.run_sync(agent_run(14))
    assert result.reason == "masked"
    assert result.summary is None
    assert len(result.masked) == len(result.plan.dropped) == 11  # 14 outputs, the last 3 kept
    assert result.tokens_freed == result.tokens_before - result.tokens_after > 0
    off = create_condenser(
        model=Model("m", 40_000), policy=BudgetPolicy(keep_recent=3000, mask_keep_outputs=None)
    )
    assert off.run_sync(agent_run(14)).reason == "condensed"


def test_masking_counts_in_the_providers_units_when_usage_says_more() -> None:
    # The provider reported twice what the heuristic sees: masking that looks enough by the
    # heuristic alone must be measured in the provider's units, else the result overflows.
    msgs = agent_run(14)
    heuristic = estimate_tokens(msgs)
    msgs[-2] = replace(msgs[-2], usage=Usage(2 * heuristic, 10))
    model = Model("m", 40_000)
    result = create_condenser(model=model, policy=BudgetPolicy(keep_recent=3000)).run_sync(msgs)
    assert result.tokens_before > 2 * heuristic
    assert result.tokens_after <= result.limit
    if result.reason == "masked":
        assert result.tokens_after >= estimate_tokens(result.messages)


def _grow_with_masking(steps: int) -> tuple[list, list, list[str], object]:
    """A session growing one step at a time; the archive is every run's non-digest dropped."""
    condenser = create_condenser(model=Model("m", 40_000), policy=BudgetPolicy(keep_recent=3000))
    history: list = [UserMessage("Build every part. Never skip the tests.")]
    archive: list = []
    reasons: list[str] = []
    for i in range(steps):
        output = "line of build output\n" * 300 if i % 3 == 0 else f"part {i} ok " + "y" * 1500
        history += [
            AssistantMessage((ToolCallBlock(f"c{i}", "bash", {"command": f"make part{i}"}),)),
            ToolResultMessage(f"c{i}", "bash", output),
            UserMessage(f"next {i}"),
        ]
        result = condenser.run_sync(history)
        reasons.append(result.reason)
        archive += [m for m in result.plan.dropped if not is_digest(m)]
        history = list(result.messages)
    return history, archive, reasons, condenser


def test_pointers_skip_the_masked_originals_handed_back_before_a_fold() -> None:
    history, archive, reasons, condenser = _grow_with_masking(200)
    assert reasons.count("masked") >= 3
    assert reasons.count("condensed") >= 2
    ledger = condenser.ledger(history[0])  # type: ignore[attr-defined]
    assert ledger is not None
    commands = [f for f in ledger.facts if f.kind == "command" and f.source is not None]
    assert len(commands) > 50
    for fact in commands:  # each points at the call that ran it, masked originals between
        call = archive[fact.source]
        assert isinstance(call, AssistantMessage)
        assert call.tool_calls[0].arguments["command"] == fact.text


def test_placeholders_kept_with_a_digest_are_not_counted_twice() -> None:
    model = Model("m", 40_000)
    store = InProcessMemoryStore()  # one store across the three condensers, as one session has
    msgs = agent_run(14)
    masked = create_condenser(
        model=model, policy=BudgetPolicy(keep_recent=3000), memory=store
    ).run_sync(msgs)
    assert masked.reason == "masked"
    archive = list(masked.plan.dropped)  # the originals, handed back first
    # A manual compaction keeping a long tail: some placeholders stay with the digest.
    first = create_condenser(
        model=model, policy=BudgetPolicy(keep_recent=7600), memory=store
    ).run_sync(list(masked.messages), force=True)
    ledger = resolve_ledger(first.messages[0], store)
    assert ledger is not None
    assert ledger.masked_kept == sum(map(is_masked, first.plan.kept)) > 0
    archive += [m for m in first.plan.dropped if not is_digest(m)]
    more = [
        m
        for i in range(14, 20)
        for m in (
            AssistantMessage((ToolCallBlock(f"c{i}", "bash", {"command": f"make step{i}"}),)),
            ToolResultMessage(f"c{i}", "bash", "ok"),
        )
    ]
    second = create_condenser(
        model=model, policy=BudgetPolicy(keep_recent=100), memory=store
    ).run_sync([*first.messages, *more, UserMessage("go on")], force=True)
    archive += [m for m in second.plan.dropped if not is_digest(m)]
    ledger = resolve_ledger(second.messages[0], store)
    assert ledger is not None
    commands = [f for f in ledger.facts if f.kind == "command"]
    assert len(commands) >= 15  # the newest steps stay verbatim
    for fact in commands:
        assert fact.source is not None
        assert archive[fact.source].tool_calls[0].arguments["command"] == fact.text


def test_keeping_more_outputs_than_there_are_keeps_them_all() -> None:
    # A keep count above the number of results once wrapped around to a negative slice
    # start and protected only the newest.
    msgs = [ToolResultMessage(f"c{i}", "bash", str(i) * 5000) for i in range(2)]
    for keep in (2, 3, 10):
        out, replaced = mask_tool_outputs(msgs, end=2, keep_last=keep, min_chars=100)
        assert replaced == []
        assert out == msgs
    _, replaced = mask_tool_outputs(msgs, end=2, keep_last=1, min_chars=100)
    assert replaced == [0]


def test_a_masked_failure_reads_as_the_same_open_error() -> None:
    # The error fact of a failure folded after masking once held the placeholder itself
    # ("[output masked by …"), which the tight digest cut before the error line.
    trace = "\n".join(f'  File "/w/svc/api_{k:02d}.py", line {k}, in step_{k}' for k in range(200))
    output = (
        f"collected 9 items\nTraceback (most recent call last):\n{trace}\n"
        "E   KeyError: 'cutoff'\n1 failed, 8 passed in 1.2s"
    )
    msgs = [
        UserMessage("Fix the cutoff handling."),
        AssistantMessage((ToolCallBlock("c1", "bash", {"command": "pytest tests/svc -q"}),)),
        ToolResultMessage("c1", "bash", output, is_error=True),
        AssistantMessage("Looking into it."),
    ]
    masked, replaced = mask_tool_outputs(msgs, end=3, keep_last=0, min_chars=100)
    assert replaced == [2]

    def errors(messages: list) -> list[tuple[str, str, str]]:
        ledger = extract_facts(messages)
        return [(f.key, f.text, f.status) for f in ledger.facts if f.kind == "error"]

    assert errors(masked) == errors(msgs)
    [(_key, text, status)] = errors(masked)
    assert status == "open"
    assert text.endswith("failed: E KeyError: 'cutoff' (1 failed, 8 passed in 1.2s)")
    assert "KeyError: 'cutoff'" in build_local_digest(masked, max_tokens=200)
