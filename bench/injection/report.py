"""The markdown tables: escapes per source, the fields that leaked, forged records."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from injection.checks import KINDS, Cell


def escape_counts(cells: Sequence[Cell]) -> dict[str, int]:
    return {k: sum(1 for c in cells if k in c.escapes) for k in KINDS}


def summary_table(cells: Sequence[Cell]) -> list[str]:
    lines = [
        "| source | cells | reached a compaction | shown by inspect | " + " | ".join(KINDS) + " |",
        "| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in KINDS) + " |",
    ]
    sources = sorted({c.source for c in cells}, key=lambda s: (s.startswith("reader"), s))
    for source in sources:
        group = [c for c in cells if c.source == source]
        counts = escape_counts(group)
        reached, shown = sum(c.reached for c in group), sum(c.shown for c in group)
        lines.append(
            f"| {source} | {len(group)} | {reached} | {shown} | "
            + " | ".join(str(counts[k]) for k in KINDS)
            + " |"
        )
    total = escape_counts(cells)
    lines.append(
        f"| **all** | {len(cells)} | {sum(c.reached for c in cells)} | "
        f"{sum(c.shown for c in cells)} | " + " | ".join(f"**{total[k]}**" for k in KINDS) + " |"
    )
    return lines


def leak_table(cells: Sequence[Cell], variants: Sequence[str]) -> list[str]:
    """One row per field × source that leaked: how many variants escaped, per kind."""
    rows: dict[tuple[str, str], list[Cell]] = {}
    for c in cells:
        if c.escapes:
            rows.setdefault((c.source, c.field), []).append(c)
    lines = [
        "| field | source | " + " | ".join(KINDS) + " | example |",
        "| --- | --- | " + " | ".join("---" for _ in KINDS) + " | --- |",
    ]
    for (source, name), group in sorted(rows.items()):
        tally = Counter(k for c in group for k in c.escapes)
        example = next(v[0] for c in group for v in c.escapes.values())
        cols = " | ".join(f"{tally[k]}/{len(variants)}" if tally[k] else "" for k in KINDS)
        safe = example.replace("|", "\\|")[:90]
        lines.append(f"| {name} | {source} | {cols} | {safe} |")
    return lines


def forged_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    lines = [
        "| forged record in | WINDOW_BUDGET_SECRET | honoured | note |",
        "| --- | --- | --- | --- |",
    ]
    for r in rows:
        verdict = "; ".join(r["honoured"]) or "no (an ordinary message)"
        if r["honoured"] and not r["secret"]:
            verdict += " — by design without a secret"
        elif r["honoured"]:
            verdict = "**ESCAPE**: " + verdict
        lines.append(
            f"| {r['where']} | {'set' if r['secret'] else 'unset'} | {verdict} | {r['note']} |"
        )
    return lines
