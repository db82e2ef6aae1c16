"""The command line against hostile files and outputs, through click's test runner.

Every case: the exit code, exactly one clear line, never a traceback or an "unexpected"
error, and the input file byte-for-byte as it was. ``compact -o`` writes atomically,
never outside the folder named, and never over an input.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tests.hostile.test_reader_bad_files import BAD_TEXT, MISMATCHED, _deadline
from window_budget.cli import main
from window_budget.readers import read_transcript

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
LONG = Path(__file__).parents[2] / "examples" / "long_session.jsonl"
SMALL = ["--window", "4000", "--keep-recent", "300"]


def run(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _one_line(result: Result) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert "Traceback" not in result.output
    assert "unexpected" not in result.output
    assert "Error: None" not in result.output
    return lines[0]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


# ------------------------------------------------------------------ the bad-file matrix


@pytest.mark.parametrize("case", list(BAD_TEXT), ids=str)
@pytest.mark.parametrize("command", ["inspect", "compact"])
def test_bad_file_matrix(case: str, command: str, tmp_path: Path) -> None:
    name, text, mentions = BAD_TEXT[case]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    before = path.read_bytes()
    result = run(command, path, *SMALL)
    assert result.exit_code == 1
    line = _one_line(result)
    assert line.startswith(f"Error: {path}")
    assert mentions in line
    assert "--from" not in line
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("path", "forced", "real"), MISMATCHED, ids=[f"{f}-on-{r}" for _, f, r in MISMATCHED]
)
def test_a_forced_format_that_does_not_fit_is_one_line(
    path: Path, forced: str, real: str, tmp_path: Path
) -> None:
    out = tmp_path / "out.json"
    before = path.read_bytes()
    result = run("compact", path, "--from", forced, "-o", out, "--force", *SMALL)
    assert result.exit_code == 1
    line = _one_line(result)
    assert f"--from {real}" in line
    assert not out.exists()
    assert path.read_bytes() == before


def test_a_fifo_input_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    with _deadline(10):
        result = run("inspect", fifo)
    assert result.exit_code == 1
    assert "not a regular file" in _one_line(result)


def test_a_device_input_is_refused() -> None:
    result = run("inspect", "/dev/null", "--from", "openai")
    assert result.exit_code == 1
    assert "not a regular file" in _one_line(result)


def test_a_byte_order_mark_file_is_inspected(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + (FIXTURES / "claude_code_session.jsonl").read_bytes())
    result = run("inspect", path, "--json")
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.stdout)
    assert report["format"] == "claude-code"
    assert report["messages"] > 0


def test_skip_bad_skips_one_bad_file_in_a_directory(tmp_path: Path) -> None:
    # Two files no reader can open at all, one with a bad line, one good.
    for case in ("nesting-json", "huge-int-json", "huge-int-jsonl"):
        name, text, _ = BAD_TEXT[case]
        (tmp_path / name).write_text(text)
    shutil.copy(FIXTURES / "openai_chat.json", tmp_path / "good.json")
    before = _snapshot(tmp_path)
    out = tmp_path / "out"
    result = run("compact", tmp_path, "-o", out, "--skip-bad", "--force", *SMALL)
    assert result.exit_code == 0, result.output
    skipped = [line for line in result.stderr.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == 2
    assert any("deep.json: nested too deeply" in line for line in skipped)
    assert any("huge.json: holds an integer with more than" in line for line in skipped)
    assert "Traceback" not in result.output
    assert "unexpected" not in result.output
    assert sorted(p.name for p in out.iterdir()) == ["good.compacted.json", "huge.compacted.jsonl"]
    assert {k: v for k, v in _snapshot(tmp_path).items() if not k.startswith("out")} == before

    inspected = run("inspect", tmp_path, "--skip-bad", "--json")
    assert inspected.exit_code == 0
    reports = json.loads(inspected.stdout)
    assert sorted(isinstance(r["skipped"], str) for r in reports) == [False, False, True, True]
    without = run("inspect", tmp_path)
    assert without.exit_code == 1
    (error,) = [line for line in without.output.splitlines() if line.startswith("Error")]
    # A file whose format cannot be told is skipped in a directory anyway; the first
    # bad line of a readable one stops the run without --skip-bad.
    assert "huge.jsonl, line 2: holds an integer" in error
    assert "Traceback" not in without.output


def test_skip_bad_skips_a_file_the_reader_fails_on_and_reports_the_rest(tmp_path: Path) -> None:
    # A SWE-agent run whose replay_config string is JSON nested past the recursion limit:
    # whatever the reader raises for it, the batch goes on without it.
    shutil.copy(FIXTURES / "openai_chat.json", tmp_path / "good.json")
    doc = json.loads((FIXTURES / "swe_agent_run.traj").read_text(encoding="utf-8"))
    doc["replay_config"] = "[" * 100_000
    (tmp_path / "deep.traj").write_text(json.dumps(doc), encoding="utf-8")
    before = _snapshot(tmp_path)

    result = run("inspect", tmp_path, "--skip-bad")
    assert result.exit_code == 0, result.output
    (skipped,) = [line for line in result.stderr.splitlines() if line.startswith("skipped ")]
    assert f"{tmp_path / 'deep.traj'}: " in skipped
    assert "good.json  (openai" in result.stdout
    assert "unexpected" not in result.output
    assert "Traceback" not in result.output

    reports = json.loads(run("inspect", tmp_path, "--skip-bad", "--json").stdout)
    assert sorted("skipped" in r and isinstance(r["skipped"], str) for r in reports) == [
        False,
        True,
    ]
    out = tmp_path / "out"
    compacted = run("compact", tmp_path, "-o", out, "--skip-bad", "--force", *SMALL)
    assert compacted.exit_code == 0, compacted.output
    assert [p.name for p in out.iterdir()] == ["good.compacted.json"]
    assert {k: v for k, v in _snapshot(tmp_path).items() if not k.startswith("out")} == before

    alone = run("inspect", tmp_path / "deep.traj")
    assert alone.exit_code == 1
    assert _one_line(alone).startswith(f"Error: {tmp_path / 'deep.traj'}: ")


# --------------------------------------------------------------------- writing outputs


def test_compact_in_place_is_safe(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    shutil.copy(LONG, path)
    original = read_transcript(path)
    result = run("compact", path, "--window", "32768", "-o", path)
    assert result.exit_code == 0, result.output
    back = read_transcript(path)
    assert len(back.messages) < len(original.messages)
    assert back.messages[-1] == original.messages[-1]
    assert [p.name for p in tmp_path.iterdir()] == ["session.jsonl"]  # no temp file left


def test_a_failed_write_leaves_the_input_whole_and_prints_no_success(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "session.jsonl"
    shutil.copy(LONG, path)
    before = path.read_bytes()

    import window_budget.readers as readers

    real = readers.FORMATS["claude-code"]

    def torn(messages: object, stream: object, **kw: object) -> None:
        stream.write('{"type": "user", "message": {"role": "us')  # type: ignore[attr-defined]
        raise OSError(28, "No space left on device")

    monkeypatch.setitem(readers.FORMATS, "claude-code", (real[0], torn))  # type: ignore[index]
    result = run("compact", path, "--window", "32768", "-o", path)
    assert result.exit_code == 1
    line = _one_line(result)
    assert "No space left on device" in line
    assert "condensed" not in result.output
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["session.jsonl"]


def test_same_file_name_in_two_folders_is_refused(tmp_path: Path) -> None:
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        shutil.copy(FIXTURES / "openai_chat.json", tmp_path / sub / "run.json")
    out = tmp_path / "out"
    result = run(
        "compact",
        tmp_path / "a" / "run.json",
        tmp_path / "b" / "run.json",
        "-o",
        out,
        "--force",
        *SMALL,
    )
    assert result.exit_code == 1
    line = _one_line(result)
    assert str(tmp_path / "a" / "run.json") in line
    assert str(tmp_path / "b" / "run.json") in line
    assert not out.exists() or not any(out.iterdir())


def test_an_output_that_is_an_input_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(FIXTURES / "openai_chat.json", src / "x.json")
    shutil.copy(FIXTURES / "openai_chat.json", src / "x.compacted.json")
    before = _snapshot(src)
    result = run("compact", src, "-o", src, "--force", *SMALL)
    assert result.exit_code == 1
    assert "x.compacted.json" in _one_line(result)
    assert _snapshot(src) == before


def test_compact_never_writes_through_a_symlink_in_the_output_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    src = tmp_path / "in"
    src.mkdir()
    for name in ("one.json", "two.json"):
        shutil.copy(FIXTURES / "openai_chat.json", src / name)
    out = tmp_path / "out"
    out.mkdir()
    (out / "one.compacted.json").symlink_to(outside)
    result = run("compact", src, "-o", out, "--force", *SMALL)
    assert result.exit_code == 0, result.output
    assert outside.read_text() == "precious\n"
    written = out / "one.compacted.json"
    assert not written.is_symlink()
    assert read_transcript(written).format == "openai"


def test_compact_a_single_file_onto_a_symlink_replaces_the_link(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "bashrc"
    outside.parent.mkdir()
    outside.write_text("precious\n")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    link = out_dir / "result.json"
    link.symlink_to(outside)
    result = run("compact", FIXTURES / "openai_chat.json", "-o", link, "--force", *SMALL)
    assert result.exit_code == 0, result.output
    assert outside.read_text() == "precious\n"
    assert not link.is_symlink()


def test_compact_a_directory_onto_an_existing_file(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(FIXTURES / "openai_chat.json", src / "x.json")
    target = tmp_path / "existing.json"
    target.write_text("keep me\n")
    result = run("compact", src, "-o", target, "--force", *SMALL)
    assert result.exit_code == 1
    line = _one_line(result)
    assert str(target) in line
    assert "not a directory" in line
    assert target.read_text() == "keep me\n"


@pytest.mark.parametrize(
    "command", [["compact", str(LONG), "--window", "32768"], ["inspect", str(LONG), "--json"]]
)
def test_output_to_a_closed_pipe_exits_quietly(command: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with subprocess.Popen(
        [sys.executable, "-m", "window_budget", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as proc:
        assert proc.stdout is not None
        assert proc.stderr is not None
        proc.stdout.close()  # the reader went away (`| head -0`)
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 141
    assert "Error" not in err
    assert "Traceback" not in err
    assert "Broken pipe" not in err
