"""Cutting text with a visible marker: the one helper, and the one marker, every cut uses.

The finishing fit, the summary prompt's clamps, the digest's budget, prompt assembly and the
LlamaIndex adapter's bounded tools all shorten text the same way: a head (and, by default, a
tail) kept verbatim, and where the rest was, ``[… N chars removed by window-budget …]``, so a
model and a reader can tell the text is not whole and how much is missing.
"""

from __future__ import annotations

from typing import Final

from window_budget.budget import count_text
from window_budget.contract import TokenCounter

__all__ = ["SHORTENED_MARKER", "cut_text", "cut_to_tokens"]

SHORTENED_MARKER: Final = "[… {n} chars removed by window-budget …]"
"""The visible marker left where text was cut; ``{n}`` becomes the number of characters cut."""


def cut_text(
    text: str, keep: int, *, keep_tail: bool = True, marker: str = SHORTENED_MARKER
) -> str:
    """``text`` with all but ``keep`` of its characters cut, the marker where they were.

    With ``keep_tail`` the first two thirds of what is kept come from the head and the rest
    from the end (an error's last line, a file's closing part); without, only the head is
    kept. ``{n}`` in ``marker`` becomes the count of characters cut. Returns ``text`` itself
    when it is no longer than ``keep``.

    >>> cut_text("a" * 50 + "b" * 50, 30)
    'aaaaaaaaaaaaaaaaaaaa[… 70 chars removed by window-budget …]bbbbbbbbbb'
    >>> cut_text("0123456789", 4, keep_tail=False, marker=" [cut {n}]")
    '0123 [cut 6]'

    """
    if len(text) <= keep:
        return text
    keep = max(keep, 0)
    head = keep * 2 // 3 if keep_tail else keep
    tail = keep - head
    shown = marker.replace("{n}", f"{len(text) - keep:,}")
    return text[:head] + shown + (text[len(text) - tail :] if tail else "")


def cut_to_tokens(
    text: str,
    max_tokens: int,
    counter: TokenCounter | None = None,
    *,
    keep_tail: bool = False,
    marker: str | None = None,
) -> str:
    """``text`` itself when it fits ``max_tokens``, else cut (see :func:`cut_text`) to fit.

    Counts with ``counter`` (the core's estimate when None), so the result fits in the
    caller's own units. Without ``keep_tail`` the head is kept and the marker ends the text
    on its own line. ``marker`` replaces the library's marker (``{n}`` is filled in when
    present). Returns ``""`` when not even a few characters and the marker fit.
    """
    size = count_text(text, counter)
    if size <= max_tokens:
        return text
    if marker is None:
        marker = SHORTENED_MARKER if keep_tail else "\n" + SHORTENED_MARKER
    # Start from the share of characters the token budget suggests, then tighten: the
    # char/token ratio is uneven across a text.
    keep = min(len(text) - 1, int(len(text) * max_tokens / max(size, 1)))
    while keep > 0:
        candidate = cut_text(text, keep, keep_tail=keep_tail, marker=marker)
        if count_text(candidate, counter) <= max_tokens:
            return candidate
        keep = int(keep * 0.85)
    return ""
