"""The digest's floor (the objective, the user's rules, changed files, open errors) leaves last."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from window_budget import (
    AssistantMessage,
    BudgetPolicy,
    Model,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    create_condenser,
)
from window_budget.digest import digest_body
from window_budget.memory import InProcessMemoryStore
from window_budget.pipeline.summarize import (
    Fact,
    extract_facts,
    ledger_from_json,
    render_ledger,
)
from window_budget.pipeline.summarize._memory import bounded_ledger
from window_budget.pipeline.summarize.facts import is_floor_fact
from window_budget.pipeline.summarize.facts.model import _eviction_order

ROOT = "/home/dev/work/acme"
_STATUS = {
    "file": ("created", "edited", "deleted", "read"),
    "error": ("open", "resolved"),
    "command": ("ok", "failed", "exit 1"),
    "identifier": ("user", "agent"),
    "plan": ("open", "earlier"),
}


@st.composite
def facts(draw: st.DrawFn) -> list[Fact]:
    kinds = ("constraint", "ask", "file", "command", "error", "decision", "identifier", "plan")
    out = [Fact("objective", "objective", "Port it.", 0, 0)]
    for i in range(draw(st.integers(0, 60))):
        kind = draw(st.sampled_from(kinds))
        status = draw(st.sampled_from(_STATUS.get(kind, ("",))))
        last = draw(st.integers(0, 500))
        out.append(Fact(kind, f"k{i}", f"text {i}", min(last, i), last, status=status))  # type: ignore[arg-type]
    return out


@given(facts(), st.booleans())
def test_no_floor_fact_leaves_before_any_other(ledger: list[Fact], costed: bool) -> None:
    cost = {id(f): float(1 + (i * 7) % 40) for i, f in enumerate(ledger)} if costed else None
    order = _eviction_order(ledger, cost)
    floor = [is_floor_fact(f) for f in order]
    assert floor == sorted(floor)  # every other fact first, then the floor
    assert all(f.kind != "objective" for f in order)
    others = [f for f in ledger if not is_floor_fact(f)]
    assert {id(f) for f in order if not is_floor_fact(f)} == {id(f) for f in others}


def call(cid: str, name: str, **args: object) -> AssistantMessage:
    return AssistantMessage((ToolCallBlock(cid, name, dict(args)),))


def floor_then_chatter(asks: int) -> list:
    """The floor early (an edited file, failures never fixed, a rule), then many long asks."""
    msgs: list = [UserMessage("Port the exporters to the ledger API. Never push to main.")]
    for i in range(12):
        msgs += [
            call(f"e{i}", "Edit", file_path=f"{ROOT}/src/exporters/format_{i:02d}.py"),
            ToolResultMessage(f"e{i}", "Edit", "ok"),
            call(f"t{i}", "Bash", command=f"pytest tests/test_format_{i:02d}.py -q"),
            ToolResultMessage(
                f"t{i}", "Bash", f"E   KeyError: 'column_{i:02d}'\n1 failed", is_error=True
            ),
        ]
    for i in range(asks):
        msgs.append(
            UserMessage(
                f"Next, can you look at ticket LED-{1000 + i} about the invoice totals in the "
                "monthly statement export, the numbers drift by a cent now and then?"
            )
        )
    return msgs


def floor_lines() -> list[str]:
    return [
        *(f"format_{i:02d}.py" for i in range(12)),
        *(f"KeyError: 'column_{i:02d}'" for i in range(12)),
        "Never push to main.",
    ]


def test_a_digest_short_of_room_keeps_its_floor_and_drops_the_rest() -> None:
    # Before, newer facts of a high priority (asks) outranked old edited files and open
    # errors, which left first.
    ledger = extract_facts(floor_then_chatter(200))
    body = render_ledger(ledger, max_tokens=900)
    missing = [line for line in floor_lines() if line not in body]
    assert not missing, missing
    assert "LED-1000" not in body  # the old asks left
    assert "asks" in body.splitlines()[-1]  # and the digest says so


def test_the_bounded_record_keeps_the_floor_first() -> None:
    # An invariant (the priorities gave it before): without a store, the next compaction
    # starts from this record, so a floor fact left out of it is gone from later digests.
    ledger = extract_facts(floor_then_chatter(200))
    record = ledger_from_json(bounded_ledger(ledger, 3000))
    kept = {(f.kind, f.key) for f in record.facts}
    floor = [f for f in ledger.facts if is_floor_fact(f)]
    assert all((f.kind, f.key) in kept for f in floor)
    assert len(record.facts) < len(ledger.facts)


def test_the_floor_survives_five_compactions_with_new_material_between() -> None:
    store = InProcessMemoryStore()
    condenser = create_condenser(
        model=Model("m", 200_000),
        memory=store,
        policy=BudgetPolicy(digest_max_tokens=1500, keep_recent=200),
    )
    history: list = floor_then_chatter(0)
    for generation in range(5):
        history += [
            UserMessage(
                f"Next, can you look at ticket LED-{generation}{i:03d}, the monthly export "
                "drifts by a cent now and then?"
            )
            for i in range(60)
        ]
        history += [call(f"r{generation}", "Bash", command="git status")]
        history += [ToolResultMessage(f"r{generation}", "Bash", "clean")]
        history += [UserMessage("Let's stop here.")]
        history = list(condenser.run_sync(history, force=True).messages)
    body = digest_body(history[0]) or ""
    missing = [line for line in floor_lines() if line not in body]
    assert not missing, missing
