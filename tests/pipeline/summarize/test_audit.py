"""The audit of a model-written digest: omitted key facts are pinned, within the budget."""

from __future__ import annotations

from window_budget import (
    AssistantMessage,
    BudgetPolicy,
    Model,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    create_condenser,
)
from window_budget.budget import count_text
from window_budget.contract import SummarizeDeps
from window_budget.memory import InProcessMemoryStore
from window_budget.pipeline.summarize import (
    PINNED_HEADING,
    audit_digest,
    extract_facts,
    mentions,
    resolve_ledger,
    summarize_sync,
)
from window_budget.testing import ScriptedCompleter
from window_budget.tools.report import analyze, format_report

ROOT = "/srv/app"


def head() -> list:
    return [
        UserMessage("Move billing to the ledger API. Never push to main."),
        AssistantMessage((ToolCallBlock("e1", "Edit", {"file_path": f"{ROOT}/src/billing.py"}),)),
        ToolResultMessage("e1", "Edit", "ok"),
        AssistantMessage((ToolCallBlock("b1", "Bash", {"command": "alembic upgrade head"}),)),
        ToolResultMessage("b1", "Bash", 'relation "entries" does not exist', is_error=True),
        AssistantMessage("Switched to the table-rewrite migration because ALTER locks tables."),
    ]


def deps(reply: str, **kw: object) -> SummarizeDeps:
    fake = ScriptedCompleter([reply])
    return SummarizeDeps(complete_sync=fake.sync, model=Model("m", 64_000), **kw)  # type: ignore[arg-type]


def test_omitted_key_facts_are_pinned_and_counted() -> None:
    store = InProcessMemoryStore()
    reply = "# Objective\nMove billing to the ledger API."
    summary = summarize_sync(head(), deps(reply, memory=store))
    audit = summary.audit
    assert audit is not None
    ledger = resolve_ledger(summary.message, store)
    assert ledger is not None
    assert audit.in_ledger == len(ledger.facts)
    assert audit.found >= 1  # the objective is there
    assert audit.appended == audit.checked - audit.found > 0
    pinned = summary.text.split(f"{PINNED_HEADING}\n", 1)[1]
    assert "Never push to main." in pinned
    assert "`src/billing.py`" in pinned
    assert "alembic upgrade head" in pinned
    assert "table-rewrite migration" in pinned
    assert "Move billing" not in pinned  # found in the model's text: not pinned again


def test_a_complete_digest_gets_no_pins() -> None:
    reply = (
        "# Objective\nMove billing to the ledger API.\n# Guardrails\nNever push to main.\n"
        "# Status\nedited src/billing.py; `alembic upgrade head` failed: relation "
        '"entries" does not exist (open)\n# Rationale\nSwitched to the table-rewrite '
        "migration because ALTER locks tables."
    )
    summary = summarize_sync(head(), deps(reply))
    assert summary.audit is not None
    assert summary.audit.appended == 0
    assert summary.audit.found == summary.audit.checked
    assert PINNED_HEADING not in summary.text


def test_pins_stay_within_the_budget_and_the_model_text_gives_way() -> None:
    long_reply = "# Objective\nMove billing to the ledger API.\n" + "words at length. " * 400
    summary = summarize_sync(head(), deps(long_reply, max_tokens=300))
    assert count_text(summary.text) <= 300
    assert summary.audit is not None
    assert summary.audit.appended > 0
    assert "Never push to main." in summary.text


def test_the_network_free_digest_has_no_audit() -> None:
    summary = summarize_sync(head())
    assert summary.fallback
    assert summary.audit is None


def test_the_next_prompt_carries_the_ledger_the_model_dropped() -> None:
    fake = ScriptedCompleter(["# Objective\nMove billing to the ledger API."] * 2)
    condenser = create_condenser(
        model=Model("m", 200_000), complete_sync=fake.sync, policy=BudgetPolicy(keep_recent=20)
    )
    first = condenser.run_sync([*head(), UserMessage("next")], force=True)
    assert first.audit is not None
    assert first.audit.appended > 0
    condenser.run_sync(
        [*first.messages, UserMessage("more"), AssistantMessage("ok"), UserMessage("again")],
        force=True,
    )
    carried = fake.calls[1].prompt.split("<carried-digest>\n", 1)[1].split("</carried-digest>")[0]
    assert "Never push to main." in carried
    assert "alembic upgrade head" in carried


def test_the_usage_report_shows_the_audit() -> None:
    fake = ScriptedCompleter(["# Objective\nMove billing to the ledger API."])
    condenser = create_condenser(
        model=Model("m", 200_000), complete_sync=fake.sync, policy=BudgetPolicy(keep_recent=20)
    )
    result = condenser.run_sync([*head(), UserMessage("next")], force=True)
    report = analyze(result.messages, Model("m", 200_000), audit=result.audit)
    text = format_report(report)
    assert result.audit is not None
    assert f"digest ledger: {report.ledger_facts} facts carried" in text
    assert f"digest audit: {result.audit}" in text
    assert f"{result.audit.appended} pinned" in text
    assert report.as_dict()["audit"]["appended"] == result.audit.appended


def test_mentions_matches_paths_relative_to_the_root_and_prose_by_words() -> None:
    ledger = extract_facts(head())
    files = ledger.of_kind("file")
    assert mentions("we edited `src/billing.py`", files[0], ROOT)
    assert not mentions("we edited billing", files[0], ROOT)
    decision = ledger.of_kind("decision")[0]
    assert mentions("switched to the table-rewrite migration since ALTER locks tables", decision)
    text, audit = audit_digest("nothing useful", ledger, max_tokens=2000)
    assert audit.appended == audit.checked
    assert text.startswith("nothing useful\n\n# Pinned facts\n")


def _big_head(files: int = 36, errors: int = 6) -> list:
    msgs: list = [
        UserMessage(
            "Port the settings service to TOML. Never touch migrations/. "
            "Keep the public API of loader.py unchanged."
        )
    ]
    for i in range(files):
        path = f"{ROOT}/services/settings/src/{('core', 'io', 'cli')[i % 3]}/module_{i}.py"
        msgs += [
            AssistantMessage((ToolCallBlock(f"e{i}", "Edit", {"file_path": path}),)),
            ToolResultMessage(f"e{i}", "Edit", "ok"),
        ]
    for i in range(errors):
        msgs += [
            AssistantMessage(
                (ToolCallBlock(f"t{i}", "Bash", {"command": f"pytest tests/test_part{i}.py"}),)
            ),
            ToolResultMessage(
                f"t{i}", "Bash", f"E   KeyError: 'setting_{i}'\n1 failed", is_error=True
            ),
        ]
    for i in range(40):  # lower-priority facts competing for the same room
        msgs += [
            AssistantMessage(f"Decided to keep option {i} because the callers read it."),
            AssistantMessage((ToolCallBlock(f"r{i}", "Bash", {"command": f"make target{i}"}),)),
            ToolResultMessage(f"r{i}", "Bash", "done"),
        ]
    return msgs


def _holds_file(text: str, path: str, root: str) -> bool:
    """The path verbatim (relative to the root), or its folder and its name on one line."""
    rel = path[len(root) + 1 :]
    folder, _, name = rel.rpartition("/")
    return rel in text or any(
        f"{folder}/" in line and f"`{name}`" in line for line in text.splitlines()
    )


def test_floor_facts_are_pinned_first_compressed_within_the_budget() -> None:
    ledger = extract_facts(_big_head())
    forgetful = "# Objective\nSomething about settings.\n# Carryover\n" + "- musing\n" * 400
    budget = 800
    out, audit = audit_digest(forgetful, ledger, max_tokens=budget)
    assert count_text(out) <= budget
    # The model's head stays, its objective replaced by the user's (it did not state it).
    assert out.startswith("# Objective\nPort the settings service to TOML.")
    assert "- musing" in out
    files = [f for f in ledger.facts if f.kind == "file"]
    assert len(files) == 36
    assert ledger.root == f"{ROOT}/services/settings"
    assert all(_holds_file(out, f.text, ledger.root) for f in files)
    for f in ledger.facts:
        if f.kind in ("objective", "constraint"):
            assert mentions(out, f, ROOT), f.text
        if f.kind == "error":
            assert f.status == "open"
            assert f.text.split(" failed", 1)[0].strip("`") in out
            assert f.text.rsplit("KeyError: ", 1)[1].split()[0] in out
    assert audit.appended > 0
    assert audit.left_out > 0  # the decisions and commands did not all fit: they come after


def test_a_tiny_budget_keeps_the_objective_and_constraints_before_files() -> None:
    ledger = extract_facts(_big_head())
    out, audit = audit_digest("# Objective\n?", ledger, max_tokens=120)
    assert count_text(out) <= 120
    for f in ledger.facts:
        if f.kind in ("objective", "constraint"):
            assert mentions(out, f, ROOT), f.text
    assert audit.left_out > 0


def test_a_fact_the_model_wrote_at_its_end_is_pinned_when_room_cuts_that_end() -> None:
    """The model's newest material comes last; making room for pins cuts it from the end."""
    ledger = extract_facts(_big_head(files=12, errors=0))
    files = sorted((f for f in ledger.facts if f.kind == "file"), key=lambda f: f.text)
    last = files[-1]
    rel = last.text[len(ledger.root or "") + 1 :]
    # Every floor fact but one is omitted, so pins are needed; the one the model did write
    # sits after a long carryover, in the part the pins push out.
    model_text = (
        "# Objective\nPort settings.\n# Carryover\n" + "- musing\n" * 600 + f"- edited {rel}\n"
    )
    assert mentions(model_text, last, ledger.root)
    out, audit = audit_digest(model_text, ledger, max_tokens=800)
    assert count_text(out) <= 800
    assert f"edited {rel}" not in out  # the model's line was cut ...
    assert all(_holds_file(out, f.text, ledger.root or ROOT) for f in files)  # ... and pinned
    assert audit.appended > 0


def test_an_error_is_stated_only_by_words_on_one_line() -> None:
    ledger = extract_facts(_big_head(files=1, errors=2))
    first, second = sorted(ledger.of_kind("error"), key=lambda f: f.text)
    command = first.text.split(" failed", 1)[0]
    other = second.text.split("failed: ", 1)[1]
    # The first error's command on one line, the second error's wording on another: the
    # text never says which key was missing for the first.
    scattered = f"- ran {command} - failed\n- {other}\n"
    assert not mentions(scattered, first, ROOT)
    assert mentions(f"- {first.text}\n", first, ROOT)


def test_a_constraint_is_stated_only_by_words_on_one_line() -> None:
    ledger = extract_facts(head())
    rule = ledger.of_kind("constraint")[0]  # "Never push to main."
    assert mentions("- constraint: never push to main.", rule)
    assert not mentions("- never edit the lockfile\n- push to main. Then review.\n", rule)
