"""The pieces every display draws with: escaping, colours, bars, tables, the box.

Every string that came from a transcript goes through :func:`safe_text`: escaped (quotes
too, since some land in attributes), cut to a bounded length *before* escaping so an entity is
never split, and invisible or direction-changing characters shown as ``⟨U+202E⟩`` so text
cannot masquerade as something else.
"""

from __future__ import annotations

import html
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from window_budget.digest import is_digest
from window_budget.messages import AgentMessage, UserMessage

PREVIEW_CHARS = 160
"""How much of a message a table row shows."""
DIGEST_CHARS = 20_000
"""How much of a digest the collapsed section shows."""
MAX_SEGMENTS = 400
"""Slices in a transcript's strip; a longer transcript shares slices between messages."""
MAX_ROWS = 60
"""Messages listed in a transcript's table; the rest are counted, never dropped silently."""

# One colour per role, shared by every bar so a reader learns it once.
ROLE_COLOURS: Mapping[str, str] = {
    "user": "#4c78a8",
    "assistant": "#f58518",
    "toolResult": "#54a24b",
    "bashExecution": "#b279a2",
    "custom": "#9d755d",
    "branchSummary": "#72b7b2",
    "compactionSummary": "#72b7b2",
    "digest": "#e45756",
    "pinned": "#bab0ac",
}
OTHER = "#999999"
BOX = (
    "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;"
    "line-height:1.4;max-width:860px;border:1px solid #ddd;border-radius:6px;"
    "padding:10px 12px;margin:4px 0;color:#222;background:#fff"
)
BAR = "display:flex;height:18px;border-radius:3px;overflow:hidden;background:#f1f1f1"
TABLE = "border-collapse:collapse;font-size:12px;margin-top:6px"
CELL = "padding:2px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top"


def safe_text(value: object, limit: int | None = None) -> str:
    """``value`` as HTML text: cut to ``limit`` characters, invisibles shown, escaped.

    Safe inside an element and inside a double- or single-quoted attribute. Control and
    format characters (bidi overrides, zero-width joiners, ...) become a visible
    ``⟨U+XXXX⟩``; newlines and tabs are kept. Look-alike letters are left as they are
    (they are text, not markup) and nothing is normalized, so what is shown is what the
    transcript holds.
    """
    text = value if isinstance(value, str) else str(value)
    suffix = ""
    if limit is not None and len(text) > limit:
        suffix = f" … ({len(text) - limit:,} more characters)"
        text = text[:limit]
    shown = "".join(
        ch
        if ch in "\n\t" or unicodedata.category(ch) not in {"Cc", "Cf", "Co", "Cs", "Zl", "Zp"}
        else f"⟨U+{ord(ch):04X}⟩"
        for ch in text
    )
    return html.escape(shown, quote=True) + suffix


def role_of(message: AgentMessage) -> str:
    # Only the library's own digests: anyone can type the header into a user turn.
    if is_digest(message) and isinstance(message, UserMessage):
        return "digest"
    return str(getattr(message, "role", "unknown"))


def role_colour(role: str) -> str:
    return ROLE_COLOURS.get(role, OTHER)


def pct(part: float, whole: float) -> float:
    return max(0.0, min(100.0, part / whole * 100)) if whole > 0 else 0.0


def segments(parts: Iterable[tuple[str, float, str]], whole: float) -> str:
    """A flex bar: one coloured segment per (label, amount, colour), widths out of ``whole``."""
    cells = []
    for label, amount, colour in parts:
        width = pct(amount, whole)
        if width <= 0:
            continue
        title = safe_text(f"{label}: {amount:,.0f} tokens")
        cells.append(f'<div title="{title}" style="width:{width:.3f}%;background:{colour}"></div>')
    return "".join(cells)


def bar(
    parts: Iterable[tuple[str, float, str]],
    scale: float,
    marks: Sequence[tuple[float, str, str]] = (),
) -> str:
    """A bar of segments scaled to ``scale``, with vertical marks (position, label, colour)."""
    lines = "".join(
        f'<div title="{safe_text(label)}" style="position:absolute;top:-3px;bottom:-3px;'
        f'left:{pct(at, scale):.3f}%;border-left:2px solid {colour}"></div>'
        for at, label, colour in marks
    )
    return (
        f'<div style="position:relative;margin:6px 0 2px 0">'
        f'<div style="{BAR}">{segments(parts, scale)}</div>{lines}</div>'
    )


def legend(items: Iterable[tuple[str, str]]) -> str:
    return (
        '<div style="font-size:11px;color:#555">'
        + " ".join(
            f'<span style="white-space:nowrap;margin-right:10px"><span style="display:inline-block;'
            f'width:10px;height:10px;background:{colour};margin-right:3px"></span>'
            f"{safe_text(label)}</span>"
            for label, colour in items
        )
        + "</div>"
    )


def table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A table; cells are HTML already (callers escape what they put in)."""
    th = "".join(f'<th style="{CELL};color:#555">{h}</th>' for h in head)
    body = "".join(
        "<tr>" + "".join(f'<td style="{CELL}">{c}</td>' for c in row) + "</tr>" for row in rows
    )
    return f'<table style="{TABLE}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def box(title: str, body: str) -> str:
    return (
        f'<div class="window-budget" style="{BOX}">'
        f'<div style="font-weight:600;margin-bottom:4px">{title}</div>{body}</div>'
    )


def cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    return str(value)


@dataclass(frozen=True, slots=True)
class Table:
    """Rows of figures that show themselves as a table in a notebook (no pandas needed).

    Each row is a mapping from column name to value; the columns are those of the first
    row. Numbers get thousands separators; every value is escaped.

    >>> print(Table([{"policy": "default", "compactions": 3}]))
    policy   compactions
    default  3
    """

    rows: Sequence[Mapping[str, object]]
    """The rows, in order."""

    def _columns(self) -> list[str]:
        return list(self.rows[0]) if self.rows else []

    def __str__(self) -> str:
        """Return the rows as aligned plain text."""
        columns = self._columns()
        cells = [columns, *([cell(r.get(c, "")) for c in columns] for r in self.rows)]
        widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
        return "\n".join(
            "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
            for row in cells
        )

    def _repr_html_(self) -> str:
        columns = self._columns()
        rows = [[safe_text(cell(r.get(c, "")), PREVIEW_CHARS) for c in columns] for r in self.rows]
        return (
            f'<div class="window-budget" style="{BOX}">'
            + table([safe_text(c) for c in columns], rows)
            + "</div>"
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))
