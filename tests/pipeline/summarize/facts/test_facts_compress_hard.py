"""The tightest rendering of the ledger: compress hard before evicting, spend tokens on facts."""

from __future__ import annotations

from window_budget import AssistantMessage, ToolCallBlock, ToolResultMessage, UserMessage
from window_budget.budget import count_text
from window_budget.pipeline.summarize import extract_facts, ledger_from_text, render_ledger
from window_budget.pipeline.summarize.facts.lines import error_key

ROOT = "/home/dev/work/acme/services/ledgerly"
SERVICES = ("billing", "accounts", "notify", "search", "export", "tax")


def call(cid: str, name: str, **args: object) -> AssistantMessage:
    return AssistantMessage((ToolCallBlock(cid, name, dict(args)),))


def step(cid: str, name: str, output: str, *, error: bool = False, **args: object) -> list:
    return [call(cid, name, **args), ToolResultMessage(cid, name, output, is_error=error)]


def services() -> list:
    msgs: list = [UserMessage("Port every service to the ledger API. Never push to main.")]
    for s in SERVICES:
        msgs += [
            *step(f"w{s}", "Write", "ok", file_path=f"{ROOT}/src/ledgerly/{s}/client.py"),
            *step(f"e{s}", "Edit", "ok", file_path=f"{ROOT}/src/ledgerly/{s}/reconcile.py"),
            *step(
                f"x{s}",
                "Edit",
                "ok",
                file_path=f"{ROOT}/src/ledgerly/{s}/exporters/csv_exporter.py",
            ),
            *step(f"r{s}", "Bash", "removed", command=f"git rm src/ledgerly/{s}/legacy.py"),
            *step(f"d{s}", "Delete", "ok", file_path=f"{ROOT}/src/ledgerly/{s}/legacy.py"),
            *step(
                f"a{s}",
                "Bash",
                "INFO  [alembic] running\n"
                * 30
                + f'sqlalchemy.exc.ProgrammingError: relation "{s}_entries" does not exist\n'
                "1 failed",
                error=True,
                command=f"alembic upgrade 00_{s}_entries",
            ),
            *step(f"b{s}", "Bash", "ok", command=f"alembic upgrade 00_{s}_entries"),
            *step(f"t{s}", "Bash", "3 passed", command=f"pytest tests/{s} -q"),
            AssistantMessage(
                f"Switched to the table-rewrite migration for {s} because the "
                "in-place ALTER locks the table for minutes."
            ),
            AssistantMessage(f"The client class is {s.capitalize()}LedgerClient."),
        ]
    return msgs


def tightest() -> str:
    """The body at the largest budget that needs the tightest rendering, nothing evicted."""
    ledger = extract_facts(services())
    budget = count_text(render_ledger(ledger, max_tokens=100_000))
    while budget > 200:
        body = render_ledger(ledger, max_tokens=budget)
        if "failed first:" in body:
            return body
        budget -= 20
    raise AssertionError("the tightest rendering never came")


def test_error_key_keeps_the_type_the_message_head_and_the_place() -> None:
    assert error_key(
        'E   sqlalchemy.exc.ProgrammingError: relation "x" does not exist (1 failed, 3 passed)'
    ) == ('sqlalchemy.exc.ProgrammingError: relation "x" does not exist')
    long = "ValueError: bad row " + "very " * 60 + "long at src/app/rows.py:42"
    key = error_key(long)
    assert key.startswith("ValueError: bad row very")
    assert key.endswith("at src/app/rows.py:42")  # where it happened survives the cut
    assert len(key) < 160
    assert error_key("make: *** [all] Error 2") == "make: *** [all] Error 2"


def test_nothing_is_evicted_while_the_tightest_rendering_fits() -> None:
    body = tightest()
    assert "more (kept in the digest's ledger)" not in body
    for s in SERVICES:
        assert f"{s.capitalize()}LedgerClient" in body
        assert f"table-rewrite migration for {s}" in body


def test_a_fixed_error_is_told_with_the_command_that_fixed_it() -> None:
    body = tightest()
    line = next(ln for ln in body.splitlines() if "`alembic upgrade …`" in ln)
    for s in SERVICES:  # each run once: the error and its command on one line, no repeat
        assert (
            f"00_{s}_entries ×2 (failed first: sqlalchemy.exc.ProgrammingError: relation "
            f'"{s}_entries" does not exist)' in line
        )
        assert body.count(f"00_{s}_entries") == 1
    ledger = extract_facts(services())
    error = next(f for f in ledger.of_kind("error") if "billing_entries" in f.text)
    assert error.text.endswith("(1 failed)")  # the ledger keeps the verbatim line
    assert error.source is not None
    assert error.resolved_by is not None
    original = services()[error.source + 1]  # the pointer reaches the original output
    assert isinstance(original, ToolResultMessage)
    assert original.is_error


def test_commands_are_grouped_by_program_and_file_operations_are_not_repeated() -> None:
    body = tightest()
    assert "ran, passing, `pytest …` (6 commands): `tests/billing -q`" in body
    assert "git rm" not in body  # "legacy.py deleted" under Shipped says it already
    ledger = extract_facts(services())
    assert any(
        f.text == "git rm src/ledgerly/billing/legacy.py" for f in ledger.of_kind("command")
    )  # still in the ledger


def test_a_lone_file_joins_the_folder_above_it_and_paths_stay_whole() -> None:
    body = tightest()
    assert (
        "src/ledgerly/billing/ (4 files): client.py created, reconcile.py, "
        "legacy.py deleted, exporters/csv_exporter.py"
    ) in body
    assert "elided" not in body


def test_a_costly_line_leaves_before_cheap_names_of_about_the_same_priority() -> None:
    msgs: list = [UserMessage("Port every service. Never push to main.")]
    for i in range(40):
        long = f"tool{i} --input data/exports/2026/archive/{'segment_' * 6}{i}.parquet --fast"
        msgs += [
            *step(f"c{i}", "Bash", "ok", command=long),
            AssistantMessage(f"The client class is Name{i}Client."),
        ]
    body = render_ledger(extract_facts(msgs), max_tokens=700)
    assert count_text(body) <= 700
    names = sum(f"Name{i}Client" in body for i in range(40))
    commands = sum(f"tool{i} --input" in body for i in range(40))
    # A passing command outranks a name, but one long command costs the room of six names.
    assert names > commands


def test_a_fixed_edit_error_reads_back_as_resolved_from_the_text_alone() -> None:
    msgs = [
        *services(),
        *step(
            "q1",
            "Edit",
            "old_string not found in file",
            error=True,
            file_path=f"{ROOT}/src/ledgerly/billing/reconcile.py",
        ),
        *step("q2", "Edit", "ok", file_path=f"{ROOT}/src/ledgerly/billing/reconcile.py"),
    ]
    ledger = extract_facts(msgs)
    budget = count_text(render_ledger(ledger, max_tokens=100_000))
    body = ""
    while "old_string not found" not in body.split("## Stuck")[-1] or "failed first" not in body:
        budget -= 20
        body = render_ledger(ledger, max_tokens=budget)
        assert budget > 200, "the tightest rendering never came"
    errors = ledger_from_text(body).of_kind("error")
    assert errors
    assert all(e.status == "resolved" for e in errors)
