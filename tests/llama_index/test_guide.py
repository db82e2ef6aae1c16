"""The LlamaIndex guide's examples: each runs on its own, and prints what its comments say.

A reader copies one block, not the page: every ```python block of
``docs/llama_index-guide.md`` runs in a fresh namespace. Each ``print(...)  # value``
comment is the figure a run prints (up to the first ``": "`` or ``" ("``, which start an
explanation), so a figure on the page cannot go stale.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "llama_index-guide.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
PRINTED = re.compile(r"^\s*print\(.*\)  # (.*)$")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

BLOCKS = BLOCK.findall(GUIDE.read_text(encoding="utf-8"))


def expected_lines(code: str) -> list[str]:
    out = []
    for line in code.splitlines():
        match = PRINTED.match(line)
        if match:
            out.append(re.split(r": | \(", match.group(1), maxsplit=1)[0].strip())
    return out


def test_the_guide_has_its_examples() -> None:
    assert len(BLOCKS) >= 4
    assert all(expected_lines(code) for code in BLOCKS)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_each_block_runs_alone_and_prints_its_comments(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code = BLOCKS[index]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, f"{GUIDE.name}[block {index}]", "exec"), {"__name__": "__guide__"})
    assert printed.getvalue().splitlines() == expected_lines(code)
