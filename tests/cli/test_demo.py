from __future__ import annotations

from window_budget import estimate_tokens
from window_budget.cli.demo import DEMO_MODEL, build_demo_transcript, run_demo
from window_budget.pipeline import DEFAULT_POLICY, budget_limit


def test_demo_transcript_is_well_over_a_32k_window() -> None:
    msgs = build_demo_transcript()
    assert estimate_tokens(msgs) > 1.4 * DEMO_MODEL.context_window
    assert build_demo_transcript() == msgs  # deterministic


def test_demo_prints_gate_cut_counts_and_digest() -> None:
    lines: list[str] = []
    run_demo(lines.append)
    text = "\n".join(lines)
    assert "over budget: yes" in text
    assert "gate fires at" in text
    # Growing one message at a time, the default policy masks old outputs: no summary call.
    assert "masking passes" in text
    assert "digests written 0" in text
    assert "no summary call" in text
    assert "[output masked by window-budget: read_file" in text
    assert "dropped" in text
    assert "kept verbatim" in text
    assert "[session digest — older turns condensed]" in text
    assert "# Objective" in text
    assert "Traceback" not in text
    limit = budget_limit(DEMO_MODEL, DEFAULT_POLICY)
    assert f"{limit:,.0f}" in text
