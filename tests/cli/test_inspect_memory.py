"""``inspect`` shows the carried digest: its ledger per kind, the objective, the audit of its
text and the pointer back to an archived source — over files the real writers wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from window_budget import BudgetPolicy, Model, create_condenser
from window_budget.cli import main
from window_budget.readers import read_transcript, write_transcript
from window_budget.testing import ScriptedCompleter

LONG = Path(__file__).parents[2] / "examples" / "long_session.jsonl"
WINDOW = "32768"


def inspect(path: Path) -> tuple[dict, str]:
    runner = CliRunner()
    info = json.loads(
        runner.invoke(main, ["inspect", str(path), "--window", WINDOW, "--json"]).stdout
    )[0]
    return info, runner.invoke(main, ["inspect", str(path), "--window", WINDOW]).stdout


def compacted(tmp_path: Path, fmt: str) -> Path:
    out = tmp_path / f"out.{'jsonl' if fmt in ('claude-code', 'pi') else 'json'}"
    result = CliRunner().invoke(
        main, ["compact", str(LONG), "--window", WINDOW, "--no-mask", "--to", fmt, "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize("fmt", ["claude-code", "pi", "json", "langchain", "llama-index"])
def test_inspect_shows_the_ledger_the_audit_and_the_pointer(tmp_path: Path, fmt: str) -> None:
    info, text = inspect(compacted(tmp_path, fmt))
    digest = info["digest"]
    assert digest is not None
    assert digest["written_by"] == "window-budget"
    # The record is bounded (1 % of the window, at least 200 tokens): the floor facts first.
    assert digest["facts"] == sum(digest["by_kind"].values()) >= 2
    assert digest["by_kind"]["objective"] == 1
    assert digest["by_kind"]["constraint"] >= 1
    assert digest["objective"].startswith("We're porting the settings service")
    assert digest["compactions"] == 1
    audit = digest["audit"]
    assert 0 < audit["found"] <= audit["checked"] <= audit["in_ledger"] == digest["facts"]
    assert audit["pinned"] == 0  # the network-free digest is the rendered ledger
    pointer = digest["pointer"]
    assert pointer["kind"] in ("error", "constraint")
    assert isinstance(pointer["source"], int)
    # A session log keeps what it folded ahead of its boundary: the pointer resolves there.
    assert pointer["archived"] is (fmt in ("claude-code", "pi"))
    if pointer["archived"]:
        assert pointer["fact"] in pointer["text"]
    assert f"{digest['facts']} facts after 1 compaction" in text
    assert "audit: " in text
    assert f"-> source {pointer['source']} = " in text


def test_a_model_written_digest_shows_what_the_audit_pinned(tmp_path: Path) -> None:
    transcript = read_transcript(LONG)
    forgetful = ScriptedCompleter(
        ["# Objective\nWe're porting the settings service from YAML to TOML."]
    )
    result = create_condenser(
        model=Model("m", int(WINDOW)),
        complete_sync=forgetful.sync,
        policy=BudgetPolicy(mask_keep_outputs=None),
    ).run_sync(list(transcript.messages))
    assert result.audit is not None
    out = tmp_path / "model.json"
    write_transcript(result.messages, out, format="json")
    digest = inspect(out)[0]["digest"]
    assert digest["audit"]["pinned"] == result.audit.appended > 0
    assert digest["audit"]["found"] >= result.audit.found


def test_a_summary_another_tool_wrote_is_read_by_heading(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    lines = [
        {
            "type": "system",
            "subtype": "compact_boundary",
            "sessionId": "s",
            "compactMetadata": {"trigger": "auto", "preTokens": 150000},
        },
        {
            "type": "user",
            "isCompactSummary": True,
            "sessionId": "s",
            "message": {
                "role": "user",
                "content": "# Objective\nShip the exporter.\n\n# Status\n"
                "## Shipped\n- edited `src/export.py`\n",
            },
        },
        {"type": "user", "sessionId": "s", "message": {"role": "user", "content": "go on"}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    info, text = inspect(path)
    digest = info["digest"]
    assert digest["written_by"] == "read from its text"
    assert digest["objective"] == "Ship the exporter."
    assert digest["by_kind"]["file"] == 1
    assert "objective: Ship the exporter." in text


def test_a_transcript_without_a_digest_shows_none() -> None:
    info, text = inspect(LONG)
    assert info["digest"] is None
    assert "  digest  " not in text
