"""A summary another tool or the agent's own model wrote, carried into the next digest.

Such a summary reads back as notes: lines of prose that a short digest cuts to their head or
leaves out first. The names in them are what that summary chose to keep, so they must outlive
the prose.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from window_budget import AssistantMessage, UserMessage
from window_budget.budget import count_text
from window_budget.messages import CompactionSummaryMessage
from window_budget.pipeline.summarize import extract_facts, render_ledger

NAMES = [f"Apply{w}Difficulty" for w in ("Wave", "Lane", "Hazard", "Timer", "Score", "River")]


def carried(names: list[str]) -> CompactionSummaryMessage:
    lines = [
        "This session is being continued from a previous conversation that ran out of context.",
        "Summary:",
        "1. Primary Request and Intent:",
    ]
    for i, name in enumerate(names):
        lines.append(
            f"   - The team reviewed the wave tuning at length, argued over several options "
            f"and in the end wired `{name}` into the game mode (step {i})"
        )
    lines.append("   - Files: Source/Game/Private/Core/GameMode.cpp and Docs/plan.md")
    return CompactionSummaryMessage("\n".join(lines))


def session(names: list[str]) -> list:
    return [
        carried(names),
        UserMessage("Carry on with the sprint."),
        AssistantMessage("The build passes; next I look at the HUD."),
    ]


def test_names_of_a_carried_summary_outlive_its_prose() -> None:
    ledger = extract_facts(session(NAMES))
    text = render_ledger(ledger, max_tokens=220)
    assert count_text(text) <= 220
    kept = [n for n in NAMES if n in text]
    assert kept == NAMES, text
    assert "Source/Game/Private/Core/GameMode.cpp" in text


def test_names_of_a_carried_summary_are_identifiers_the_summary_stated() -> None:
    ledger = extract_facts(session(NAMES[:2]))
    idents = {f.text: f for f in ledger.of_kind("identifier")}
    assert NAMES[0] in idents
    assert idents[NAMES[0]].by == "digest"
    assert idents[NAMES[0]].source is None  # no archived message states it


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.from_regex(r"[A-Z][a-z]{2,6}[A-Z][a-z]{2,6}", fullmatch=True),
        min_size=1,
        max_size=12,
        unique=True,
    ),
    st.integers(min_value=150, max_value=900),
)
def test_a_carried_summary_never_overruns_the_budget(names: list[str], budget: int) -> None:
    text = render_ledger(extract_facts(session(names)), max_tokens=budget)
    assert count_text(text) <= budget
