"""A digest's fact ledger, as plain lines and as HTML."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from window_budget.tools.display._html import PREVIEW_CHARS, box, safe_text, table

if TYPE_CHECKING:
    from window_budget.pipeline.summarize.facts import FactLedger

__all__ = ["ledger_html", "ledger_table", "ledger_text"]


LEDGER_ROWS = 12
"""Facts listed per kind; the rest are counted."""


def _fact_where(fact: Any) -> str:
    where = [] if fact.source is None else [f"archive #{fact.source}"]
    if fact.resolved_by is not None:
        where.append(f"resolved at #{fact.resolved_by}")
    if fact.count > 1:
        where.append(f"×{fact.count}")
    return ", ".join(where) or "from a carried digest's text"


def ledger_table(ledger: FactLedger) -> str:
    from window_budget.pipeline.summarize.facts import FACT_KINDS

    rows = []
    for kind in FACT_KINDS:
        facts = ledger.of_kind(kind)
        for i, fact in enumerate(facts[:LEDGER_ROWS]):
            head = (
                f'<b>{safe_text(kind)}</b> <span style="color:#888">{len(facts):,}</span>'
                if i == 0
                else ""
            )
            status = (
                f' <span style="color:#888">({safe_text(fact.status)})</span>'
                if fact.status
                else ""
            )
            rows.append(
                (head, safe_text(fact.text, PREVIEW_CHARS) + status, safe_text(_fact_where(fact)))
            )
        if len(facts) > LEDGER_ROWS:
            rows.append(
                ("", f"<i>{len(facts) - LEDGER_ROWS:,} more {safe_text(kind)} facts</i>", "")
            )
    return table(["kind", "fact", "where (archive position)"], rows)


def ledger_text(ledger: FactLedger) -> str:
    """A fact ledger in plain lines: counts by kind, then each fact with its pointer."""
    from window_budget.pipeline.summarize.facts import FACT_KINDS

    counts = [(k, len(ledger.of_kind(k))) for k in FACT_KINDS]
    lines = [
        f"fact ledger: {len(ledger.facts):,} facts after {ledger.generations} "
        f"compaction(s), {ledger.archived:,} messages archived",
        "by kind: " + (", ".join(f"{k} {n:,}" for k, n in counts if n) or "none"),
    ]
    for kind in FACT_KINDS:
        for fact in ledger.of_kind(kind)[:LEDGER_ROWS]:
            status = f" ({fact.status})" if fact.status else ""
            lines.append(f"  {kind:<10} {fact.text[:PREVIEW_CHARS]}{status} — {_fact_where(fact)}")
    return "\n".join(lines)


def ledger_html(ledger: FactLedger) -> str:
    """A fact ledger as HTML: a table by kind, each fact with a pointer into the archive.

    The archive is the messages the condensers dropped, in order across every
    compaction (``plan.dropped``, digests left out; the adapters keep it in their stores),
    so ``archive #N`` is where to read the original.
    """
    head = (
        f"<div>{len(ledger.facts):,} facts after {ledger.generations} compaction(s) · "
        f"{ledger.archived:,} messages archived</div>"
    )
    return box("window-budget · fact ledger", head + ledger_table(ledger))
