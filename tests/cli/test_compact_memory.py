"""``compact`` shows the ledger the digest carries, and the ledger survives the written file."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from window_budget import DigestMessage
from window_budget.cli import main
from window_budget.readers import read_transcript

LONG = Path(__file__).parents[2] / "examples" / "long_session.jsonl"


def test_compact_reports_the_ledger_and_writes_it(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = CliRunner().invoke(
        main,
        [
            "compact",
            str(LONG),
            "--window",
            "8000",
            "--keep-recent",
            "1000",
            "--to",
            "json",
            "-o",
            str(out),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert "digest ledger: " in result.stderr
    assert "facts carried" in result.stderr
    digest = read_transcript(out).messages[0]
    assert isinstance(digest, DigestMessage)
    assert digest.facts is not None
    facts_line = next(ln for ln in result.stderr.splitlines() if "digest ledger" in ln)
    assert f"{len(digest.facts['facts']):,} facts carried" in facts_line
