"""What the command line prints for people cannot drive the terminal or forge a line.

Transcript text (a digest's objective, a model name) and file names carry OSC 52 (write
the clipboard), OSC 0 (set the window title), CSI 2J (clear the screen) in its 7-bit and
C1 spellings, bidi overrides and rich-style markup. Every human-readable line shows them
escaped, one line per line; ``--json`` keeps the exact text. Run with ``color=True``:
without it click strips CSI sequences from output that is not a terminal, which would
hide the very sequences a terminal receives.
"""

from __future__ import annotations

import json
import shutil
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from window_budget import AssistantMessage, Model, UserMessage, create_condenser
from window_budget.cli import main
from window_budget.readers import read_transcript, write_transcript
from window_budget.tools.report import carried_digest

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"

HOSTILE = (
    "[bold red]Port[/bold red] \x1b]52;c;cHduZWQ=\x07 \x1b]0;pwned\x07 \x1b[2J \x9b2J "
    "\u202egnp.exe\u202c \u2066x\u2069"
)
"""A user's ask: clipboard write, window title, clear screen (ESC [ and C1), bidi, markup."""
MODEL = "gpt\x1b]0;title\x07\nFORGED model"
NAME = "s\x1b]0;pwned\x07\u202e\x9b2J\nFORGED [bold red]x.json"
"""A file name with escapes, a bidi override, a newline and markup (no ``/``: a path)."""


def run(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], color=True, catch_exceptions=False)


def _raw_controls(text: str) -> list[str]:
    """Characters a terminal would act on or hide, other than the line ends."""
    return [
        c
        for c in text
        if c != "\n" and unicodedata.category(c) in {"Cc", "Cf", "Co", "Cs", "Zl", "Zp"}
    ]


def _clean(result: Result) -> None:
    assert _raw_controls(result.output) == [], result.output
    assert not any(line.startswith("FORGED") for line in result.output.splitlines())
    assert "Traceback" not in result.output
    assert "Error: unexpected" not in result.output


def _compacted(tmp_path: Path) -> Path:
    """A transcript carrying a digest whose objective is the hostile ask."""
    messages = [UserMessage(f"{HOSTILE}\nFORGED line")]
    for _ in range(30):
        messages += [AssistantMessage("ok " * 200, model=MODEL), UserMessage("more " * 100)]
    # A window whose record holds the whole objective (a 4k window's record cuts it short).
    condenser = create_condenser(model=Model("m", 40_000))
    result = condenser.run_sync(messages, force=True)
    path = tmp_path / "compacted.json"
    write_transcript(result.messages, path, format="json")
    return path


def test_inspect_escapes_the_objective_and_the_model_and_json_keeps_them(tmp_path: Path) -> None:
    path = _compacted(tmp_path)
    result = run("inspect", path, "--window", "4000")
    assert result.exit_code == 0, result.output
    _clean(result)
    (objective,) = [line for line in result.output.splitlines() if "objective:" in line]
    assert "\\x1b]52;c;" in objective
    assert "\\x1b]0;pwned\\x07" in objective
    assert "\\x1b[2J" in objective
    assert "\\x9b2J" in objective
    assert "\\u202egnp.exe\\u202c" in objective
    assert "[bold red]Port[/bold red]" in objective  # markup is printed, not read
    assert "gpt\\x1b]0;title\\x07\\nFORGED model" in result.output

    # --json keeps the exact text: JSON's own escaping is safe.
    result = run("inspect", path, "--window", "4000", "--json")
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.stdout)
    transcript = read_transcript(path)
    expected = carried_digest(transcript.messages, transcript.archive)
    assert expected is not None
    assert report["digest"]["objective"] == expected["objective"]
    assert "\x1b]52;c;" in report["digest"]["objective"]
    assert report["model"] == MODEL


def test_a_file_name_in_a_directory_cannot_forge_a_skipped_line(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "openai_chat.json", tmp_path / "good.json")
    (tmp_path / NAME).write_text('{"name": "x", "version": "1.0.0"}', encoding="utf-8")
    result = run("inspect", tmp_path)
    assert result.exit_code == 0, result.output
    _clean(result)
    skipped = [line for line in result.stderr.splitlines() if line.startswith("skipped ")]
    (line,) = skipped
    assert "s\\x1b]0;pwned\\x07\\u202e\\x9b2J\\nFORGED [bold red]x.json" in line
    assert "good.json" in result.stdout

    as_json = run("inspect", tmp_path, "--json")
    entries = json.loads(as_json.stdout)
    assert [e["file"] for e in entries if isinstance(e["skipped"], str)] == [str(tmp_path / NAME)]


@pytest.mark.parametrize(
    "command",
    ["inspect", "compact --dry-run", "compact -o", "plot", "inspect a bad file"],
)
def test_a_file_name_is_escaped_in_every_command(command: str, tmp_path: Path) -> None:
    path = tmp_path / NAME
    if command == "inspect a bad file":
        path.write_text('[{"role": "user", "content": 5}]', encoding="utf-8")
    else:
        shutil.copy(FIXTURES / "openai_chat.json", path)
    args: list[object] = {
        "inspect": ["inspect", path],
        "compact --dry-run": ["compact", path, "--dry-run", "--force"],
        "compact -o": ["compact", path, "--force", "-o", tmp_path / "out.json"],
        "plot": ["plot", path, "-o", tmp_path / "out.png"],
        "inspect a bad file": ["inspect", path],
    }[command]
    if command == "plot":
        pytest.importorskip("matplotlib")
    result = run(*args, "--window", "4000", "--keep-recent", "300")
    assert result.exit_code == (1 if command == "inspect a bad file" else 0), result.output
    _clean(result)
    assert "[bold red]x.json" in result.output
    assert "\\x1b]0;pwned\\x07\\u202e\\x9b2J\\n" in result.output


def test_a_plot_title_is_not_mathtext(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "cost$\\frac$.json"
    shutil.copy(FIXTURES / "openai_chat.json", path)
    result = run("plot", path, "-o", tmp_path / "out.png", "--window", "4000")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out.png").stat().st_size > 0
