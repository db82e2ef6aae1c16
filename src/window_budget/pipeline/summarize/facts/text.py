"""Text helpers the fact ledger shares: one line, cut at a word, a verbatim value, paths.

The two patterns here are shared too: sentence breaks (extraction, rendering) and plan items
(extraction, reading a digest's text).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from window_budget.budget import count_text
from window_budget.contract import TokenCounter

__all__ = ["code", "cut_to_room", "cut_words", "one_line", "workspace_root"]

_PLAN_LINE_RE = re.compile(r"^\s*(?:\d+[.)]|[-*•]|- \[ \])\s+(.+)$")
_SENTENCE_RE = re.compile(r"(?<=[.!?;])\s+|\n+")


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (every line break included) as one space."""
    return " ".join(text.split())


def cut_words(text: str, limit: int) -> str:
    """``text`` within about ``limit`` characters, cut at a word boundary with ``…``.

    A word (a path, a URL) is never cut in the middle unless it alone is longer than
    twice the limit.
    """
    if limit <= 0 or len(text) <= limit:
        return text
    space = text.rfind(" ", 0, limit)
    if space > limit // 3:
        return text[:space].rstrip(" ,;:") + " …"
    end = text.find(" ", limit)
    if end == -1:
        end = len(text)
    if end <= 4 * limit:  # keep the word whole: it may be a path
        return text[:end] + (" …" if end < len(text) else "")
    return text[: 4 * limit] + "…"  # one "word" that long is not a path


def cut_to_room(text: str, room: int, counter: TokenCounter | None = None) -> str:
    """``text`` cut at a word boundary (:func:`cut_words`) to about ``room`` tokens."""
    size = count_text(text, counter)
    chars = len(text) * room // max(size, 1)
    while size > room and chars > 40:
        cut = cut_words(text, chars)
        if count_text(cut, counter) <= room:
            return cut
        chars = chars * 7 // 8
    return text if size <= room else cut_words(text, 40)


def code(text: str) -> str:
    """A verbatim value for the digest: in backticks, or quoted when it holds one."""
    return f"`{text}`" if "`" not in text else repr(text)


def workspace_root(paths: Iterable[str]) -> str | None:
    """The deepest directory every absolute path shares (at least two levels deep)."""
    absolute = sorted({p for p in paths if p.startswith("/")})
    if not absolute:
        return None
    parts = [p.split("/")[1:-1] for p in absolute]  # directories only
    common: list[str] = []
    for level in zip(*parts, strict=False):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    # The project, not the deepest shared folder: stop before a source-tree folder, so
    # every path keeps the part that tells it apart (``src/billing/x.py``).
    for i, part in enumerate(common):
        if part in _TREE_DIRS and i >= 2:
            common = common[:i]
            break
    if len(common) < 2:
        return None
    return "/" + "/".join(common)


_TREE_DIRS: Final = frozenset(
    {
        "src",
        "lib",
        "tests",
        "test",
        "app",
        "apps",
        "pkg",
        "packages",
        "docs",
        "cmd",
        "internal",
        "migrations",
        "scripts",
        "include",
    }
)


def _relative(path: str, root: str | None) -> str:
    if root and path.startswith(root + "/"):
        return path[len(root) + 1 :]
    return path


def _norm_key(text: str) -> str:
    return one_line(text).lower().rstrip(".!;: ")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_RE.split(text) if s and s.strip()]
