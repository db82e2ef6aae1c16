"""The placeholder masking leaves in place of a tool output: written and read here alone.

Masking (``_mask``) writes it; reading a failure's error line (``summarize.facts.calls``) reads the
line it quotes back, so a failure folded after masking is the same open error as before.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MASK_MARKER", "masked_failure", "placeholder"]

MASK_MARKER: Final = "[output masked by window-budget"
"""How every placeholder starts; a placeholder is never masked again."""
_FAILED: Final = " — failed: "
_TAIL_RE: Final = re.compile(r"; [\d,]+ lines, [\d,]+ chars; the original is in the archive\]$")


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


def placeholder(tool: str, target: str, error_line: str | None, original: str) -> str:
    """The one-line placeholder for ``original``: the tool, its target, the outcome, the size.

    ``error_line`` is the failure's key line (None: the call succeeded).

    >>> print(placeholder("bash", "make", "Error: boom", "two lines," + chr(10) + "19 chars"))
    [output masked by window-budget: bash make — failed: Error: boom; 2 lines, 19 chars; the
    original is in the archive]
    """
    args = f" {_short(target, 100)}" if target else ""
    outcome = f"failed: {_short(error_line, 160)}" if error_line is not None else "ok"
    lines = original.count("\n") + 1
    return (
        f"{MASK_MARKER}: {_short(tool, 60)}{args} — {outcome}; "
        f"{lines:,} lines, {len(original):,} chars; the original is in the archive]"
    )


def masked_failure(text: str) -> str | None:
    """The error line a masked failure's placeholder quotes; None for any other text.

    >>> masked_failure(placeholder("bash", "make", "Error: boom", "x"))
    'Error: boom'
    >>> masked_failure("Error: boom") is None
    True
    """
    if not text.startswith(MASK_MARKER) or "\n" in text:
        return None
    tail = _TAIL_RE.search(text)
    at = text.find(_FAILED, len(MASK_MARKER), tail.start() if tail else 0)
    if tail is None or at < 0:
        return None
    return text[at + len(_FAILED) : tail.start()]
