"""The LlamaIndex pages' examples print what their comments say, and the guide's run alone.

Each ``print(...)  # value`` line is checked against what it prints, so a figure on the
page cannot go stale: the printed text must be the comment, or the start of it before an
explanation (``": "``, ``" ("``, ``", "``); a comment with ``...`` or ``…`` gives
fragments the printed text must hold. A reader copies one block of the guide, not the
page: each of ``docs/llama_index-guide.md``'s blocks runs in a fresh namespace;
``docs/llama_index.md`` builds on its earlier blocks, as the page says.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
PRINTED = re.compile(r"^([ \t]*)print\((.*)\)  # (.*)$", re.MULTILINE)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def blocks(page: str) -> list[str]:
    return BLOCK.findall((DOCS / page).read_text(encoding="utf-8"))


def matches(printed: str, comment: str) -> bool:
    """True when ``printed`` is what ``comment`` says it is."""
    if "..." in comment or "…" in comment:
        parts = [p.strip(" ()") for p in re.split(r"\.\.\.|…", comment)]
        return all(p in printed for p in parts if p)
    return printed == comment or any(
        comment.startswith(printed + sep) for sep in (": ", " (", ", ")
    )


def checked(code: str) -> str:
    """``code`` with each commented print replaced by a call that checks what it prints."""

    def check(match: re.Match[str]) -> str:
        indent, args, comment = match.groups()
        return f"{indent}__check__({comment!r}, {args})"

    return PRINTED.sub(check, code.replace("\r", ""))


def run(code: str, name: str, namespace: dict[str, object], seen: list[str]) -> None:
    def __check__(comment: str, *args: object) -> None:
        printed = " ".join(str(a) for a in args)
        assert matches(printed, comment), f"{name}: printed {printed!r}, the page says {comment!r}"
        seen.append(comment)

    namespace["__check__"] = __check__
    exec(compile(checked(code), name, "exec"), namespace)


def test_the_comment_rule() -> None:
    assert matches("200", "200: nothing was lost")
    assert matches("1500 3860", "1500 3860 (3,900 minus num_output)")
    assert not matches("25", "26 facts")
    assert matches("x: the saved memory used y", "... the saved memory used ...")
    assert not matches("x", "... the saved memory used ...")


@pytest.mark.parametrize("index", range(len(blocks("llama_index-guide.md"))))
def test_each_guide_block_runs_alone_and_prints_its_comments(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    seen: list[str] = []
    code = blocks("llama_index-guide.md")[index]
    run(code, f"llama_index-guide.md[block {index}]", {"__name__": "__guide__"}, seen)
    assert seen, "every example shows what it does"
    assert len(seen) == len(PRINTED.findall(code))


def test_the_conventions_page_prints_its_comments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    seen: list[str] = []
    namespace: dict[str, object] = {"__name__": "__conventions__"}
    for index, code in enumerate(blocks("llama_index.md")):
        run(code, f"llama_index.md[block {index}]", namespace, seen)
    assert len(seen) >= 15
