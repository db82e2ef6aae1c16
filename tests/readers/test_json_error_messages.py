"""A JSON file that does not parse, or is not a transcript, is refused in one sentence that
says where and how to go on."""

from __future__ import annotations

from pathlib import Path

import pytest

from window_budget.readers import ReadError, read_transcript


def test_a_json_syntax_error_says_where(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[\n  {"role": "user", "content": "hi"},\n  {"role": oops}\n]\n')
    with pytest.raises(
        ReadError,
        match=r"broken\.json, line 3, column 12: not valid JSON "
        r"\(Expecting value\)",
    ) as info:
        read_transcript(path)
    assert "cannot tell" not in str(info.value)


def test_a_json_file_of_another_kind_still_cannot_be_told(tmp_path: Path) -> None:
    path = tmp_path / "package.json"
    path.write_text('{"name": "x", "version": "1.0.0"}\n')
    with pytest.raises(ReadError, match="cannot tell which transcript format"):
        read_transcript(path)


def test_bad_record_hint_uses_both_spellings(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"role": "user", "content": "hi"}\nnot json\n{"role": "user", "content": "again"}\n'
    )
    with pytest.raises(ReadError) as info:
        read_transcript(path, format="openai-jsonl")
    assert "skip_bad=True" in str(info.value)
    assert "--skip-bad on the command line" in str(info.value)
    assert "pass skip_bad=True (--skip-bad)" not in str(info.value)
