"""mkdocs hooks: render the ``>>>`` examples of docstrings as Python console code blocks.

Docstrings here write examples as bare doctest lines (so pytest runs them), not under an
``Examples:`` section; Markdown would otherwise read ``['hello']`` as a reference link.
"""

from __future__ import annotations

from typing import Any

from markdown import Extension, Markdown
from markdown.preprocessors import Preprocessor


class _DoctestFences(Preprocessor):
    """Wrap each run of ``>>>`` lines and their output in a ``pycon`` fence."""

    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        in_fence = in_doctest = False
        for line in lines:
            stripped = line.lstrip()
            if stripped.startswith("```"):
                in_fence = not in_fence
            if not in_fence and not in_doctest and stripped.startswith(">>>"):
                indent = line[: len(line) - len(stripped)]
                out += ["", f"{indent}```pycon"]
                in_doctest = True
            elif in_doctest and not stripped:
                out += [f"{indent}```", ""]
                in_doctest = False
            out.append(line)
        if in_doctest:
            out.append(f"{indent}```")
        return out


class _DoctestExtension(Extension):
    def extendMarkdown(self, md: Markdown) -> None:
        md.preprocessors.register(_DoctestFences(md), "window_budget_doctest", 30)


def on_config(config: Any) -> Any:
    """Add the doctest fences to the Markdown extensions the docstrings are rendered with."""
    config.markdown_extensions.append(_DoctestExtension())
    return config
