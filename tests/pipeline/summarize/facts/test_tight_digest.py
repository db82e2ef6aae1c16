"""Room for the other facts in a tight digest: a pasted objective, open errors' labels."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from window_budget import AssistantMessage, ToolCallBlock, ToolResultMessage, UserMessage
from window_budget.budget import count_text
from window_budget.pipeline.summarize import extract_facts, render_ledger

PASTE = "Why does the runner fail? " + " ".join(
    f"[PASS] probe {i} on /Game/Maps/Main.Main:Level.Actor_{i} -> ok" for i in range(400)
)
NAMES = [f"Fix{w}Handler" for w in ("Hop", "Lane", "Timer", "Score", "Pause", "Menu")]


def session() -> list:
    return [
        UserMessage(PASTE),
        *(AssistantMessage(f"I changed {n} and rebuilt.") for n in NAMES),
    ]


def test_a_pasted_objective_leaves_room_for_the_other_facts() -> None:
    text = render_ledger(extract_facts(session()), max_tokens=900)
    assert count_text(text) <= 900
    assert "Why does the runner fail?" in text  # the objective's head stays
    assert all(n in text for n in NAMES), text


def test_a_short_objective_is_never_cut() -> None:
    ask = "Port the billing service to the ledger API and keep the CSV export working."
    msgs = [UserMessage(ask), *(AssistantMessage(f"Checked Part{i}Name.") for i in range(200))]
    text = render_ledger(extract_facts(msgs), max_tokens=300)
    assert ask in text


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=40, max_value=3000), st.integers(min_value=200, max_value=2000))
def test_the_objective_is_cut_only_when_it_would_not_fit(words: int, budget: int) -> None:
    objective = " ".join(f"word{i}" for i in range(words))
    msgs = [UserMessage(objective), *(AssistantMessage(f"Checked Part{i}Name.") for i in range(80))]
    text = render_ledger(extract_facts(msgs), max_tokens=budget)
    assert count_text(text) <= budget
    head = text.split("# Objective\n", 1)[1].split("\n\n# ", 1)[0]
    if head != objective:  # cut: whole, it would not have fitted
        assert count_text(text.replace(head, objective, 1)) > budget - 8


def failing_steps(n: int) -> list:
    out: list = []
    for i in range(n):
        cmd = (
            f"cd /home/dev/acme/services/billing && make release-{i} "
            "PROFILE=production-eu-west-1 VERBOSE=1 --keep-going --jobs=8 --output-sync=target"
        )
        out += [
            AssistantMessage((ToolCallBlock(f"c{i}", "Bash", {"command": cmd}),)),
            ToolResultMessage(f"c{i}", "Bash", f"Error: target release-{i} failed", is_error=True),
        ]
    return out


def test_open_errors_at_the_tightest_level_show_the_command_not_the_cd() -> None:
    msgs = [UserMessage("Ship the release."), *failing_steps(12)]
    msgs += [AssistantMessage(f"Looked at Part{i}Name.") for i in range(40)]
    text = render_ledger(extract_facts(msgs), max_tokens=700)
    assert count_text(text) <= 700
    stuck = text.split("## Stuck\n", 1)[1].split("\n\n", 1)[0]
    assert "make release-0" in stuck  # every open error stays
    assert "release-11" in stuck
    assert "cd /home/dev/acme" not in stuck  # the ledger keeps it; the line need not


@settings(max_examples=25, deadline=None)
@given(st.from_regex(r"/[a-z]{1,8}/[a-z]{1,8}\.[a-z]{2,4}", fullmatch=True))
def test_a_lone_absolute_path_at_the_tightest_level_renders(path: str) -> None:
    # It used to climb to "/" and stay there: "/" is its own directory.
    msgs = [
        UserMessage("Fix the hosts."),
        AssistantMessage((ToolCallBlock("c1", "Edit", {"file_path": path}),)),
        ToolResultMessage("c1", "Edit", "ok"),
        *(AssistantMessage(f"Looked at Part{i}Name.") for i in range(300)),
    ]
    text = render_ledger(extract_facts(msgs), max_tokens=300)
    assert count_text(text) <= 300
    assert path in text


def test_a_long_objective_is_kept_whole_while_the_rest_leaves_room() -> None:
    objective = "Implement the following plan: " + " ".join(
        f"step {i}: wire the lane {i} hazards." for i in range(50)
    )
    msgs = [UserMessage(objective)]
    for i in range(30):
        msgs += [
            AssistantMessage((ToolCallBlock(f"c{i}", "Bash", {"command": f"make lane-{i}"}),)),
            ToolResultMessage(f"c{i}", "Bash", "ok"),
        ]
    budget = count_text(objective) + 300
    text = render_ledger(extract_facts(msgs), max_tokens=budget)
    assert count_text(text) <= budget
    assert objective in text  # compressing the commands made room; cutting it was not needed
