"""Every ```python block of the READMEs (the project's, each integration's) and of each page
under docs/ runs, in order, offline.

Each document runs in one namespace of its own, so a page may build on its earlier blocks.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "adapters").glob("*/README.md")),
    *sorted((ROOT / "docs").glob("*.md")),
]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


# LlamaIndex's agent workflows use pydantic APIs deprecated upstream; that is theirs to fix.
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_snippets_run(doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = BLOCK.findall(doc.read_text(encoding="utf-8"))
    if not blocks:
        pytest.skip(f"{doc.name} has no python snippets")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__readme__"}
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"{doc.name}[block {i}]", "exec"), namespace)
        except ModuleNotFoundError as exc:
            pytest.skip(f"{doc.name} block {i} needs {exc.name}")


def test_the_readme_stays_a_short_first_page() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move reference text to docs/"


def test_ci_runs_the_readmes_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    fresh = re.search(
        r"^python3 -m venv \.venv && .*&& \.venv/bin/(python -m pytest.*)$", readme, re.MULTILINE
    )
    assert fresh is not None, "the README's fresh-machine test command is gone"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert fresh.group(1) in ci


def test_every_docs_page_is_in_the_site_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    listed = set(re.findall(r"^\s+- (?:[^:\n]+: )?([\w.-]+\.md)$", nav, re.MULTILINE))
    assert pages == listed
