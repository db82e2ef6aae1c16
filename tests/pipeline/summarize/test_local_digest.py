"""The network-free digest: facts kept, budget honoured, carried digests merged, determinism."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import transcripts
from window_budget import (
    AssistantMessage,
    BashExecutionMessage,
    BudgetPolicy,
    CompactionSummaryMessage,
    Model,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    create_condenser,
)
from window_budget.budget import CallableCounter, count_text, resolve_counter
from window_budget.cli.demo import run_demo
from window_budget.digest import SESSION_HEADER
from window_budget.pipeline.summarize import build_local_digest, classify_tool_call, key_error_line
from window_budget.testing import ScriptedCompleter

HEADINGS = (
    "# Objective",
    "# Guardrails",
    "# Status",
    "## Shipped",
    "## Active",
    "## Stuck",
    "# Rationale",
    "# Plan",
    "# Carryover",
)

PYTEST_NOISE = (
    "FAILED tests/test_db.py::test_migrate - sqlite3.OperationalError: "
    "no such table: invoices\n" + "E   assert ...\n" * 30 + "1 failed, 11 passed in 0.42s"
)


def heuristic(text: str) -> int:
    # What the digest is fitted with when no counter is given: the library's heuristic.
    return count_text(text)


def call(cid: str, name: str, **args: object) -> AssistantMessage:
    return AssistantMessage((ToolCallBlock(cid, name, dict(args)),))


def session() -> list:
    return [
        UserMessage(
            "Port the settings loader to TOML. Never touch the migrations/ folder. "
            "Only use the standard library."
        ),
        AssistantMessage(
            (
                ThinkingBlock("Read it first."),
                TextBlock("I'll read settings/loader.py, then port it."),
                ToolCallBlock("r1", "read_file", {"path": "settings/loader.py"}),
            )
        ),
        ToolResultMessage("r1", "read_file", "import yaml\n" * 50),
        call("e1", "Edit", file_path="settings/loader.py", old_string="yaml", new_string="toml"),
        ToolResultMessage("e1", "Edit", "ok"),
        call("w1", "Write", file_path="docs/my notes/überblick.md", content="# notes"),
        ToolResultMessage("w1", "Write", "ok"),
        call("t1", "bash", command="pytest tests/test_db.py -q"),
        ToolResultMessage("t1", "bash", PYTEST_NOISE, is_error=True),
        BashExecutionMessage("make lint", "ruff: 3 errors\nerror: lint failed", exit_code=2),
        UserMessage(
            "Use the ticket PAY-4821 in the commit message, see "
            "https://runbooks.example.com/settings for context."
        ),
        AssistantMessage(
            "The fixture quotes integers, so I will fix the fixture rather than "
            "the parser. Plan:\n1. fix the fixture\n2. rerun pytest\n3. commit"
        ),
    ]


# ------------------------------------------------------------------ the facts


def test_all_six_headings_in_order() -> None:
    body = build_local_digest(session())
    positions = [body.index(h + "\n") for h in HEADINGS]
    assert positions == sorted(positions)
    assert body.startswith("_Network-free digest (no model bound): 12 messages condensed")


def test_first_and_latest_asks() -> None:
    body = build_local_digest(session())
    objective = body.split("# Objective\n", 1)[1].split("\n", 1)[0]
    assert objective.startswith("Port the settings loader to TOML.")
    assert "Latest asks:\n- Use the ticket PAY-4821" in body


def test_constraints_become_guardrails() -> None:
    guardrails = build_local_digest(session()).split("# Guardrails\n")[1].split("\n\n")[0]
    assert "- Never touch the migrations/ folder." in guardrails
    assert "- Only use the standard library." in guardrails


def test_written_files_and_read_files_are_told_apart() -> None:
    body = build_local_digest(session())
    shipped = body.split("## Shipped\n")[1].split("## Active")[0]
    assert "edited `settings/loader.py`" in shipped
    assert "created `docs/my notes/überblick.md`" in shipped
    carry = body.split("# Carryover\n")[1]
    assert "read `settings/loader.py`" not in carry  # edited later: listed once, as edited


def test_read_only_file_goes_to_carryover() -> None:
    msgs = [
        UserMessage("look"),
        call("r", "Read", file_path="src/app config.py"),
        ToolResultMessage("r", "Read", "x = 1"),
    ]
    assert "- read `src/app config.py`" in build_local_digest(msgs)


def test_commands_with_their_outcome() -> None:
    body = build_local_digest(session())
    assert "ran `pytest tests/test_db.py -q` — failed" in body
    assert "ran `make lint` — exit 2" in body


def test_failed_result_keeps_the_key_error_line_not_the_noise() -> None:
    body = build_local_digest(session())
    stuck = body.split("## Stuck\n")[1].split("# Rationale")[0]
    assert (
        "`pytest tests/test_db.py -q` failed: FAILED tests/test_db.py::test_migrate - "
        "sqlite3.OperationalError: no such table: invoices (1 failed, 11 passed in 0.42s)"
    ) in stuck
    assert "E   assert" not in body
    assert "`make lint` (exit 2) failed: error: lint failed (ruff: 3 errors)" in stuck


def test_rationale_plan_and_identifiers() -> None:
    body = build_local_digest(session())
    assert "so I will fix the fixture rather than the parser" in body.split("# Rationale")[1]
    plan = body.split("# Plan\n")[1].split("\n\n")[0]
    assert plan == "- fix the fixture\n- rerun pytest\n- commit"
    carry = body.split("# Carryover\n")[1]
    assert "`PAY-4821`" in carry
    assert "`https://runbooks.example.com/settings`" in carry


def test_resolved_failure_is_marked_and_yields_to_open_ones() -> None:
    msgs = [
        UserMessage("fix it"),
        call("a", "bash", command="pytest -q"),
        ToolResultMessage("a", "bash", "ValueError: boom", is_error=True),
        call("b", "bash", command="pytest -q"),
        ToolResultMessage("b", "bash", "3 passed"),
    ]
    body = build_local_digest(msgs)
    assert "`pytest -q` failed: ValueError: boom — resolved: a later run passed" in body
    assert "ran `pytest -q` — failed 1x, then passed (2 runs)" in body


def test_repeated_failures_of_one_command_are_one_item() -> None:
    msgs: list = [UserMessage("go")]
    for i in range(5):
        msgs += [
            call(f"c{i}", "bash", command="npm test"),
            ToolResultMessage(f"c{i}", "bash", f"Error: at line {i}", is_error=True),
        ]
    stuck = build_local_digest(msgs).split("## Stuck\n")[1].split("\n\n")[0]
    assert stuck == "- `npm test` failed 5x: Error: at line 4"


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("Write", {"file_path": "a.py"}, ("write", "a.py")),
        ("MultiEdit", {"file_path": "a.py"}, ("write", "a.py")),
        ("str_replace_based_edit_tool", {"command": "view", "path": "a.py"}, ("read", "a.py")),
        (
            "str_replace_based_edit_tool",
            {"command": "str_replace", "path": "a.py"},
            ("write", "a.py"),
        ),
        ("read_file", {"path": "a.py"}, ("read", "a.py")),
        ("Bash", {"command": "ls -la"}, ("shell", "ls -la")),
        ("search", {"query": "x"}, ("other", None)),
    ],
)
def test_classify_tool_call(name: str, args: dict, expected: tuple) -> None:
    assert classify_tool_call(name, args) == expected


def test_key_error_line_picks_the_traceback_tail() -> None:
    tb = (
        'Traceback (most recent call last):\n  File "a.py", line 3, in <module>\n'
        "    main()\nKeyError: 'port'\n"
    )
    assert key_error_line(tb) == "KeyError: 'port'"
    assert key_error_line("") == "(no output)"
    assert key_error_line("starting\nsomething odd\ndone") == "starting … done"
    assert len(key_error_line("ValueError: " + "x" * 5000)) <= 240


def test_unknown_roles_and_odd_messages_do_not_crash() -> None:
    class Odd:
        role = "telemetry"

    body = build_local_digest(
        [
            Odd(),
            UserMessage(()),
            AssistantMessage(""),  # type: ignore[list-item]
            call("x", "bash"),
            ToolResultMessage("nope", "t", "?"),
        ]
    )
    assert "# Objective\nnone recorded" in body


# -------------------------------------------------------------- carried digests


def test_carried_digest_is_merged_not_nested() -> None:
    first = build_local_digest(session())
    later = [
        UserMessage("Now the CLI. Don't print secrets."),
        call("e", "edit_file", path="settings/cli.py"),
        ToolResultMessage("e", "e", "ok"),
    ]
    body = build_local_digest(later, prior_digest=first)
    for heading in HEADINGS:
        assert body.count(heading + "\n") == 1
    assert SESSION_HEADER not in body
    assert body.count("_Network-free digest") == 1
    # the session's objective is the carried one; the new ask is a latest ask
    assert body.split("# Objective\n")[1].startswith("Port the settings loader to TOML.")
    assert "- Now the CLI. Don't print secrets." in body
    assert "Never touch the migrations/ folder." in body
    assert "edited `settings/loader.py`" in body
    assert "edited `settings/cli.py`" in body


def test_digest_message_inside_the_head_is_merged() -> None:
    prior = CompactionSummaryMessage("# Objective\nShip v2\n\n# Guardrails\n- never force-push")
    body = build_local_digest([prior, UserMessage("carry on")])
    assert body.split("# Objective\n")[1].startswith("Ship v2")
    assert "- never force-push" in body


def test_prose_digest_from_another_tool_lands_in_carryover() -> None:
    body = build_local_digest([UserMessage("go")], prior_digest="We renamed Foo to Bar.")
    assert "- We renamed Foo to Bar." in body.split("# Carryover\n")[1]


def test_many_compactions_stay_bounded() -> None:
    digest = None
    sizes = []
    for round_ in range(25):
        head = [
            UserMessage(f"Round {round_}: never break API_{round_}."),
            call(f"w{round_}", "Write", file_path=f"src/mod_{round_}.py"),
            ToolResultMessage(f"w{round_}", "Write", "ok"),
            call(f"t{round_}", "bash", command=f"pytest tests/test_{round_}.py"),
            ToolResultMessage(f"t{round_}", "bash", f"AssertionError: {round_}", is_error=True),
        ]
        digest = build_local_digest(head, prior_digest=digest, max_tokens=600)
        sizes.append(heuristic(digest))
        assert digest.count("# Objective") == 1
    assert max(sizes) <= 600
    assert digest is not None
    assert digest.split("# Objective\n")[1].startswith("Round 0")
    assert "Round 24" in digest  # fresh facts win over carried ones


# --------------------------------------------------------------------- budget


@given(transcripts(), st.integers(64, 3000))
def test_budget_is_never_exceeded(msgs: list, max_tokens: int) -> None:
    body = build_local_digest(msgs, max_tokens=max_tokens)
    assert heuristic(body) <= max_tokens


@given(transcripts(max_groups=12), st.integers(64, 1500))
def test_budget_holds_with_an_exact_counter(msgs: list, max_tokens: int) -> None:
    words = CallableCounter(lambda text: len(text.split()) + text.count("\n"), name="words")
    body = build_local_digest(msgs, max_tokens=max_tokens, counter=words)
    assert words.count(body) <= max_tokens


@given(transcripts())
def test_deterministic(msgs: list) -> None:
    assert build_local_digest(list(msgs)) == build_local_digest(list(msgs))


@given(st.lists(transcripts(max_groups=8), min_size=2, max_size=4), st.integers(64, 1200))
def test_chained_digests_never_nest_or_grow(rounds: list, max_tokens: int) -> None:
    digest = None
    for msgs in rounds:
        digest = build_local_digest(msgs, prior_digest=digest, max_tokens=max_tokens)
        assert heuristic(digest) <= max_tokens
        assert digest.count("# Objective\n") <= 1
        assert SESSION_HEADER not in digest
        assert digest.count("_Network-free digest") <= 1


def test_markdown_title_in_the_first_ask_is_not_a_heading() -> None:
    first = build_local_digest([UserMessage("# Billing\nSplit the service. Never use ORM.")])
    again = build_local_digest([UserMessage("next")], prior_digest=first)
    assert again.split("# Objective\n")[1].startswith("\\# Billing Split the service.")
    assert again.count("# Objective\n") == 1


def test_tight_budget_drops_low_priority_first() -> None:
    body = build_local_digest(session(), max_tokens=120)
    assert heuristic(body) <= 120
    assert "Port the settings loader" in body  # the objective survives
    assert "Never touch the migrations/ folder." in body  # and the guardrails


def test_budget_with_tiktoken() -> None:
    counter = resolve_counter("tiktoken")
    body = build_local_digest(session() * 20, max_tokens=300, counter=counter)
    assert counter.count(body) <= 300


def test_a_200k_token_head_fits_the_digest() -> None:
    # How fast this runs is measured in bench/bench_core.py, not asserted here (a busy
    # machine fails any wall-clock bound); test_linear_paths.py counts the work it does.
    msgs: list = []
    for i in range(400):  # ~500 tokens of tool output per turn, 400 turns: ~200k tokens
        msgs += [
            UserMessage(f"Step {i}: keep going, never skip tests."),
            call(f"r{i}", "read_file", path=f"src/pkg_{i % 40}/mod.py"),
            ToolResultMessage(f"r{i}", "read_file", f"def f_{i}(x):\n    return x\n" * 60),
            call(f"t{i}", "bash", command=f"pytest tests/test_{i % 40}.py"),
            ToolResultMessage(f"t{i}", "bash", PYTEST_NOISE, is_error=i % 7 == 0),
        ]
    assert heuristic("".join(str(m) for m in msgs)) > 200_000
    body = build_local_digest(msgs)
    assert heuristic(body) <= 2000
    assert "never skip tests" in body.lower()


# -------------------------------------------------------- through the condenser


def _over_budget() -> list:
    return session() + [UserMessage("filler " * 3000), AssistantMessage("ok " * 3000)] * 3


def test_condenser_without_model_uses_the_fact_digest() -> None:
    condenser = create_condenser(
        model=Model("m", context_window=16_384), policy=BudgetPolicy(keep_recent=2000)
    )
    result = condenser.run_sync(_over_budget())
    assert result.summary is not None
    assert result.summary.fallback
    assert result.summary.fallback_reason == "no model bound"
    assert "Never touch the migrations/ folder." in result.summary.text
    assert result.summary.text.startswith(SESSION_HEADER)


async def test_model_failure_falls_back_to_the_fact_digest() -> None:
    completer = ScriptedCompleter([RuntimeError("provider down")])
    condenser = create_condenser(
        model=Model("m", context_window=16_384),
        complete=completer,
        policy=BudgetPolicy(keep_recent=2000),
    )
    result = await condenser.run(_over_budget())
    assert result.summary is not None
    assert result.summary.fallback
    assert "provider down" in (result.summary.fallback_reason or "")
    assert "pytest tests/test_db.py -q" in result.summary.text


def test_demo_prints_an_actionable_digest() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        run_demo()
    text = out.getvalue()
    assert "## Stuck" in text
    assert "tomllib.TOMLDecodeError" in text
    assert "E   assert" not in text
    assert "never touch the migrations/ folder" in " ".join(text.split())
