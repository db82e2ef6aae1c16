"""Habits CI relies on: slow tests marked but run, a coverage floor, pre-commit, a changelog."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_slow_tests_are_marked_and_a_plain_run_still_runs_them() -> None:
    options = PYPROJECT["tool"]["pytest"]["ini_options"]
    assert any(m.startswith("slow:") for m in options["markers"])
    assert "--strict-markers" in options["addopts"]
    assert not re.search(r"(^|\s)-m\b", options["addopts"]), "a plain pytest must run slow tests"
    marked = [
        p
        for p in (ROOT / "tests").rglob("test_*.py")
        if "@pytest.mark.slow" in p.read_text(encoding="utf-8")
    ]
    assert len(marked) >= 5


def test_coverage_has_a_floor_over_the_core_and_the_adapters() -> None:
    coverage = PYPROJECT["tool"]["coverage"]
    assert coverage["report"]["fail_under"] >= 90
    assert "window_budget" in coverage["run"]["source_pkgs"]


def test_pre_commit_runs_ruff_format_and_mypy() -> None:
    config = (ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8")
    for hook in (
        "ruff check",
        "ruff format",
        "entry: mypy",
        "end-of-file-fixer",
        "trailing-whitespace",
    ):
        assert hook in config, hook


def test_the_changelog_has_an_unreleased_section_first() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## \[([^\]]+)\]", text, re.MULTILINE)
    assert versions[:1] == ["Unreleased"]
