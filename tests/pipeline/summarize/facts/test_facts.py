"""The fact ledger: extraction per kind, pointers, merge determinism, budget use, eviction."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import transcripts
from window_budget import (
    AssistantMessage,
    BashExecutionMessage,
    BudgetPolicy,
    DigestMessage,
    Model,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    create_condenser,
)
from window_budget.budget import count_text
from window_budget.digest import is_digest
from window_budget.messages import message_from_dict, message_to_dict
from window_budget.pipeline.summarize import (
    FactLedger,
    extract_facts,
    ledger_from_json,
    ledger_from_text,
    ledger_of,
    ledger_to_json,
    merge_ledgers,
    render_ledger,
)
from window_budget.readers.native import read_native, write_native

ROOT = "/home/dev/work/acme/services/ledgerly"


def heuristic(text: str) -> int:
    return count_text(text)  # the estimate the digest is budgeted with


def call(cid: str, name: str, **args: object) -> AssistantMessage:
    return AssistantMessage((ToolCallBlock(cid, name, dict(args)),))


def run(cid: str, command: str, output: str, *, error: bool = False) -> list:
    return [
        call(cid, "Bash", command=command),
        ToolResultMessage(cid, "Bash", output, is_error=error),
    ]


def session() -> list:
    return [
        UserMessage(
            "Move billing onto the ledger API. Never push to main. Keep amounts in integer cents."
        ),
        UserMessage("[Request interrupted by user for tool use]"),
        UserMessage("<task-notification><task-id>t1</task-id></task-notification>"),
        UserMessage("<command-name>/cost</command-name>"),
        AssistantMessage("Let me look at the billing module first."),
        call("w1", "Write", file_path=f"{ROOT}/src/billing/ledger_client.py", content="x"),
        ToolResultMessage("w1", "Write", "ok"),
        call("e1", "Edit", file_path=f"{ROOT}/src/billing/reconcile.py"),
        ToolResultMessage("e1", "Edit", "ok"),
        call("e2", "Edit", file_path=f"{ROOT}/src/billing/reconcile.py"),
        ToolResultMessage("e2", "Edit", "ok"),
        call("d1", "Delete", file_path=f"{ROOT}/src/billing/legacy_rates.py"),
        ToolResultMessage("d1", "Delete", "ok"),
        *run("b1", "git status", "clean"),
        *run(
            "b2",
            "pytest tests/billing -q",
            "E   AssertionError: 1999 != 2000\n1 failed",
            error=True,
        ),
        AssistantMessage(
            "Switched to the table-rewrite migration because ALTER locks the "
            "table. Renamed `calc_tax` to `compute_line_tax`."
        ),
        *run("b3", "pytest tests/billing -q", "12 passed"),
        BashExecutionMessage(
            "alembic upgrade head", 'relation "entries" does not exist', exit_code=1
        ),
        UserMessage("Also handle ticket LED-42 and read LEDGER_API_URL from the environment."),
        AssistantMessage("Plan:\n1. wire reconcile to compute_line_tax\n2. backfill staging"),
    ]


def by_kind(ledger: FactLedger, kind: str) -> dict[str, object]:
    return {f.text: f for f in ledger.of_kind(kind)}  # type: ignore[arg-type]


# ------------------------------------------------------------------ extraction


def test_objective_asks_and_constraints_skip_injected_turns() -> None:
    ledger = extract_facts(session())
    assert [f.text for f in ledger.of_kind("objective")] == [
        "Move billing onto the ledger API. Never push to main. Keep amounts in integer cents."
    ]
    assert [f.text for f in ledger.of_kind("ask")] == [
        "Also handle ticket LED-42 and read LEDGER_API_URL from the environment."
    ]
    assert {f.text for f in ledger.of_kind("constraint")} == {
        "Never push to main.",
        "Keep amounts in integer cents.",
    }


def test_a_teammates_report_relayed_as_a_user_turn_is_not_the_users() -> None:
    # Claude Code's agent teams relay each teammate's report as a user turn: its names are
    # facts (as the agents' prose is), but it is no objective, ask or rule of the user's.
    report = (
        '<teammate-message teammate_id="devops" summary="done">\n'
        "Scaffolding complete. Never run the migration by hand. "
        "Wired `ApplyWaveDifficulty` into `Source/Game/Waves.cpp`.\n</teammate-message>"
    )
    ledger = extract_facts([UserMessage(report), *session()])
    assert [f.text for f in ledger.of_kind("objective")] == [
        "Move billing onto the ledger API. Never push to main. Keep amounts in integer cents."
    ]
    assert all("migration" not in f.text for f in ledger.of_kind("constraint"))
    assert all("teammate" not in f.text for f in ledger.of_kind("ask"))
    names = {f.text: f for f in ledger.of_kind("identifier")}
    assert names["ApplyWaveDifficulty"].by != "user"


def test_files_created_edited_deleted_with_counts() -> None:
    files = {f.text: f for f in extract_facts(session()).of_kind("file")}
    assert files[f"{ROOT}/src/billing/ledger_client.py"].status == "created"
    assert files[f"{ROOT}/src/billing/reconcile.py"].status == "edited"
    assert files[f"{ROOT}/src/billing/reconcile.py"].count == 2
    assert files[f"{ROOT}/src/billing/legacy_rates.py"].status == "deleted"


def test_commands_errors_and_their_resolution() -> None:
    ledger = extract_facts(session())
    commands = {f.text: f for f in ledger.of_kind("command")}
    assert commands["pytest tests/billing -q"].status == "ok"
    assert commands["pytest tests/billing -q"].count == 2
    assert commands["alembic upgrade head"].status == "exit 1"
    errors = {f.detail: f for f in ledger.of_kind("error")}
    pytest_error = errors["pytest tests/billing -q"]
    assert "AssertionError: 1999 != 2000" in pytest_error.text
    assert pytest_error.status == "resolved"
    assert pytest_error.resolved_by is not None
    assert session()[pytest_error.resolved_by].content[0].arguments == {  # type: ignore[union-attr]
        "command": "pytest tests/billing -q"
    }
    assert errors["alembic upgrade head"].status == "open"


def test_decisions_identifiers_and_plan_but_not_musings() -> None:
    ledger = extract_facts(session())
    decisions = [f.text for f in ledger.of_kind("decision")]
    assert any("table-rewrite migration because" in d for d in decisions)
    assert any("Renamed `calc_tax` to `compute_line_tax`" in d for d in decisions)
    assert not any("Let me look" in d for d in decisions)
    idents = {f.text: f.status for f in ledger.of_kind("identifier")}
    assert idents["LED-42"] == "user"
    assert idents["LEDGER_API_URL"] == "user"
    assert "compute_line_tax" in idents
    assert [f.text for f in ledger.of_kind("plan")] == [
        "wire reconcile to compute_line_tax",
        "backfill staging",
    ]


def test_a_todo_list_replaces_the_plan_and_drops_done_items() -> None:
    todos = [
        {"content": "port exporter", "status": "completed"},
        {"content": "add rounding test", "status": "in_progress"},
    ]
    msgs = [
        UserMessage("go"),
        call("t", "TodoWrite", todos=todos),
        ToolResultMessage("t", "TodoWrite", "ok"),
    ]
    assert [f.text for f in extract_facts(msgs).of_kind("plan")] == ["add rounding test"]


def test_every_fact_points_at_its_source_message() -> None:
    msgs = session()
    for fact in extract_facts(msgs).facts:
        assert fact.source is not None
        assert 0 <= fact.first <= fact.last == fact.source < len(msgs)


def test_pointers_index_the_archive_across_compactions() -> None:
    condenser = create_condenser(model=Model("m", 200_000), policy=BudgetPolicy(keep_recent=50))
    archive: list = []
    history: list = []
    for round_ in range(3):
        history = [
            *history,
            UserMessage(f"Round {round_}: fix ticket LED-{round_}00."),
            *run(f"c{round_}", f"make check-{round_}", "ok"),
        ]
        result = condenser.run_sync(history, force=True)
        archive += [m for m in result.plan.dropped if not is_digest(m)]
        history = list(result.messages)
    ledger = ledger_of(history[0])
    assert ledger is not None
    assert ledger.archived == len(archive)
    for fact in ledger.facts:
        if fact.source is not None and fact.kind in ("ask", "objective", "command"):
            text = str(
                archive[fact.source].content
                if hasattr(archive[fact.source], "content")
                else archive[fact.source]
            )
            key = fact.text.split()[-1] if fact.kind != "command" else fact.text
            assert key.rstrip(".") in text


# ------------------------------------------------------------------ rendering


def test_paths_are_relative_to_the_root_and_never_cut() -> None:
    body = render_ledger(extract_facts(session()), max_tokens=2000)
    assert f"_Paths are relative to `{ROOT}`._" in body
    assert "created `src/billing/ledger_client.py`" in body
    assert "edited `src/billing/reconcile.py` (2 edits)" in body
    assert "elided" not in body


def _many_facts(n: int) -> list:
    # Files only read: a file the session changed is the digest's floor, which leaves after
    # every fact here (see test_digest_floor.py).
    msgs: list = [UserMessage("Port every service. Never push to main.")]
    for i in range(n):
        msgs += [
            call(f"w{i}", "Read", file_path=f"{ROOT}/src/svc_{i % 7}/module_{i}.py"),
            ToolResultMessage(f"w{i}", "Read", "ok"),
            *run(f"t{i}", f"pytest tests/svc_{i}/test_module_{i}.py -q", "ok"),
            *run(f"g{i}", "git status", "clean"),
            AssistantMessage(
                f"Renamed `helper_{i}` to `compute_{i}` because the old name "
                "clashed with the ledger module."
            ),
            UserMessage(f"Next, ticket LED-{i} please."),
        ]
    return msgs


def test_the_digest_fills_its_budget_while_facts_remain_and_stays_small_otherwise() -> None:
    big = render_ledger(extract_facts(_many_facts(120)), max_tokens=2000)
    assert 1800 <= heuristic(big) <= 2000
    small = render_ledger(extract_facts(session()), max_tokens=2000)
    assert heuristic(small) < 700


def test_compress_before_evict_and_no_kind_disappears() -> None:
    ledger = extract_facts(_many_facts(120))
    body = render_ledger(ledger, max_tokens=1200)
    assert heuristic(body) <= 1200
    assert "Port every service." in body  # the objective is never evicted
    assert "Never push to main." in body  # nor a constraint
    assert "`git status` ×120" in body  # noise collapsed into one line, not 120
    assert "(7 files)" not in body or "`src/svc_0/`" in body
    # The newest of every kind stays (passing commands may be grouped by program).
    for needle in (
        "module_119.py",
        "tests/svc_119/test_module_119.py -q",
        "compute_119",
        "LED-119",
    ):
        assert needle in body, needle
    assert "pytest tests/svc_119" in body or "`pytest …`" in body
    assert "more were left out of this digest._" in body.splitlines()[-1]  # no store: no recall


def test_eviction_takes_low_priority_and_old_facts_first() -> None:
    ledger = extract_facts(_many_facts(120))
    body = render_ledger(ledger, max_tokens=900)
    assert "module_119.py" in body
    assert "module_0.py" not in body  # an old file leaves before a new one
    assert "Never push to main." in body


@given(transcripts(), st.integers(64, 2500))
def test_rendering_never_exceeds_the_budget(msgs: list, max_tokens: int) -> None:
    assert heuristic(render_ledger(extract_facts(msgs), max_tokens=max_tokens)) <= max_tokens


# ------------------------------------------------------------------ merge and carry


@pytest.mark.slow
@given(transcripts(), transcripts())
def test_merge_is_deterministic(a: list, b: list) -> None:
    first = extract_facts(b, prior=extract_facts(a))
    again = extract_facts(list(b), prior=extract_facts(list(a)))
    assert ledger_to_json(first) == ledger_to_json(again)
    assert ledger_from_json(ledger_to_json(first)) == first


def test_merge_keeps_the_old_objective_adds_counts_and_keeps_resolutions() -> None:
    old = extract_facts(session())
    new = extract_facts(
        [UserMessage("A different goal."), *run("x", "pytest tests/billing -q", "ok")]
    )
    merged = merge_ledgers(old, new)
    assert next(f.text for f in merged.of_kind("objective")).startswith("Move billing")
    commands = {f.text: f for f in merged.of_kind("command")}
    assert commands["pytest tests/billing -q"].count == 3
    assert merge_ledgers(old, new) == merged


def test_the_ledger_rides_the_digest_and_survives_the_native_format() -> None:
    result = create_condenser(
        model=Model("m", 200_000), policy=BudgetPolicy(keep_recent=50)
    ).run_sync(session(), force=True)
    digest = result.messages[0]
    assert isinstance(digest, DigestMessage)
    assert digest.facts is not None
    assert digest.facts["format"] == "window-budget/facts/2"
    assert message_from_dict(message_to_dict(digest)) == digest
    buffer = io.StringIO()
    write_native(result.messages, buffer)
    back = read_native(io.StringIO(buffer.getvalue())).messages[0]
    assert isinstance(back, DigestMessage)
    assert back.facts == digest.facts
    assert ledger_of(back) == ledger_from_json(digest.facts)


def test_a_digest_without_its_ledger_is_read_from_its_text() -> None:
    result = create_condenser(
        model=Model("m", 200_000), policy=BudgetPolicy(keep_recent=50)
    ).run_sync(session(), force=True)
    digest = result.messages[0]
    assert isinstance(digest, DigestMessage)
    text_only = DigestMessage(digest.content)
    ledger = ledger_of(text_only)
    assert ledger is not None
    assert next(f.text for f in ledger.of_kind("objective")).startswith("Move billing")
    assert "Never push to main." in {f.text for f in ledger.of_kind("constraint")}
    assert any(f.text.endswith("reconcile.py") for f in ledger.of_kind("file"))


@pytest.mark.parametrize(
    "bad",
    [
        None,
        [],
        {"format": "other"},
        {"format": "window-budget/facts/2"},
        {"format": "window-budget/facts/2", "facts": [["objective"]]},
        {
            "format": "window-budget/facts/2",
            "facts": [["bogus", "k", "t", 0, 0, 1, None, "", "", None]],
        },
        {
            "format": "window-budget/facts/2",
            "facts": [["file", "k", 3, 0, 0, 1, None, "", "", None]],
        },
    ],
)
def test_a_damaged_ledger_is_a_clear_error_and_the_text_still_counts(bad: object) -> None:
    with pytest.raises(ValueError, match="digest facts"):
        ledger_from_json(bad)
    digest = DigestMessage(
        "[session digest — older turns condensed]\n\n# Objective\nship it",
        facts=bad if isinstance(bad, dict) else None,
    )
    ledger = ledger_of(digest)
    assert ledger is not None
    assert [f.text for f in ledger.of_kind("objective")] == ["ship it"]


def test_prose_from_another_tool_is_kept_as_notes() -> None:
    ledger = ledger_from_text("We renamed Foo to Bar and shipped v2.")
    assert [f.text for f in ledger.of_kind("note")] == ["We renamed Foo to Bar and shipped v2."]


def test_text_blocks_and_strings_read_alike() -> None:
    a = extract_facts([AssistantMessage("Decided to use tomllib because it ships with 3.11.")])
    b = extract_facts(
        [AssistantMessage((TextBlock("Decided to use tomllib because it ships with 3.11."),))]
    )
    assert ledger_to_json(a) == ledger_to_json(b)


def test_digest_facts_must_be_a_mapping() -> None:
    from window_budget.errors import MessageError

    with pytest.raises(MessageError, match=r"DigestMessage\.facts must be a dict"):
        DigestMessage("x", facts=["not", "a", "ledger"])  # type: ignore[arg-type]


def test_a_reused_call_id_takes_the_result_that_answered_it() -> None:
    # Some providers number calls per reply (call_0 on every turn): each call's outcome is
    # the result that followed it, not the last result that happens to share its id.
    def shell(command: str) -> AssistantMessage:
        return AssistantMessage([ToolCallBlock("call_0", "bash", {"command": command})])

    msgs = [
        UserMessage("Get the build green."),
        shell("pytest tests/billing -q"),
        ToolResultMessage("call_0", "bash", "12 passed"),
        shell("make build"),
        ToolResultMessage("call_0", "bash", "make: *** [build] Error 2", is_error=True),
    ]
    commands = {f.text: f.status for f in extract_facts(msgs).of_kind("command")}
    assert commands == {"pytest tests/billing -q": "ok", "make build": "failed"}
    errors = {f.detail for f in extract_facts(msgs).of_kind("error")}
    assert errors == {"make build"}


def test_a_sentence_labelled_as_the_decision_is_one() -> None:
    msgs = [
        UserMessage("Move invoice rendering into the API process."),
        AssistantMessage(
            "Decision: render through WeasyPrint in-process; the legacy worker stays as "
            "fallback. Decision pending."
        ),
        AssistantMessage("Decisions are hard to make in this codebase, it seems to me."),
        AssistantMessage("Resolution: 1920x1080 on the staging screenshots, as configured."),
    ]
    decisions = [f.text for f in extract_facts(msgs).of_kind("decision")]
    assert decisions == ["Decision: render through WeasyPrint in-process;"]  # its clause
