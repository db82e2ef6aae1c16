"""The ledger written and read back: the JSON a digest carries, and a digest's plain text."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from window_budget.pipeline.summarize.facts.model import (
    FACT_KINDS,
    LEDGER_FORMAT,
    Fact,
    FactKind,
    FactLedger,
    Provenance,
    _Builder,
)
from window_budget.pipeline.summarize.facts.text import _PLAN_LINE_RE, _norm_key

__all__ = ["ledger_from_json", "ledger_from_text", "ledger_to_json"]

_FIELDS: Final = (
    "kind",
    "key",
    "text",
    "first",
    "last",
    "count",
    "source",
    "status",
    "detail",
    "resolved_by",
    "by",
)
_PROVENANCE: Final = frozenset({"user", "assistant", "tool", "digest", ""})
_FORMATS: Final = {LEDGER_FORMAT: len(_FIELDS), "window-budget/facts/1": len(_FIELDS) - 1}


def ledger_to_json(ledger: FactLedger) -> dict[str, Any]:
    """The ledger as a JSON-safe mapping (what :attr:`DigestMessage.facts` holds)."""
    return {
        "format": LEDGER_FORMAT,
        "archived": ledger.archived,
        "generations": ledger.generations,
        **({"masked_kept": ledger.masked_kept} if ledger.masked_kept else {}),
        "facts": [[getattr(f, name) for name in _FIELDS] for f in ledger.facts],
    }


def ledger_from_json(raw: object) -> FactLedger:
    """The inverse of :func:`ledger_to_json`.

    Raises:
        ValueError: ``raw`` is not a ledger this library wrote; the message says which part.

    """
    width = _FORMATS.get(raw.get("format")) if isinstance(raw, Mapping) else None  # type: ignore[arg-type]
    if width is None:
        raise ValueError(f"digest facts: not a {LEDGER_FORMAT} ledger")
    assert isinstance(raw, Mapping)
    rows = raw.get("facts")
    if not isinstance(rows, list):
        raise ValueError("digest facts: 'facts' must be a list")
    facts: list[Fact] = []
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != width:
            raise ValueError(f"digest facts: fact {i} must be a list of {width} values")
        kind, key, text, first, last, count, source, status, detail, resolved_by = row[:10]
        by: Provenance = row[10] if width > 10 else ""
        if by not in _PROVENANCE:
            raise ValueError(f"digest facts: fact {i} has an unknown provenance {by!r:.20}")
        ints = (first, last, count)
        if (
            kind not in FACT_KINDS
            or not all(isinstance(s, str) for s in (key, text, status, detail))
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in ints)
            or not all(
                n is None or (isinstance(n, int) and not isinstance(n, bool))
                for n in (source, resolved_by)
            )
        ):
            raise ValueError(f"digest facts: fact {i} has a field of the wrong type")
        facts.append(
            Fact(kind, key, text, first, last, count, source, status, detail, resolved_by, by)
        )
    archived, generations = raw.get("archived", 0), raw.get("generations", 0)
    masked_kept = raw.get("masked_kept", 0)
    if not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0
        for n in (archived, generations, masked_kept)
    ):
        raise ValueError(
            "digest facts: 'archived', 'generations' and 'masked_kept' must be "
            "non-negative integers"
        )
    return FactLedger(tuple(facts), archived, generations, masked_kept)


_HEADING_KIND: Final[dict[str, FactKind]] = {
    "objective": "objective",
    "latest asks": "ask",
    "guardrails": "constraint",
    "shipped": "note",
    "active": "step",
    "stuck": "error",
    "rationale": "decision",
    "plan": "plan",
    "carryover": "note",
    "pinned facts": "note",
}
_FILE_LINE_RE = re.compile(r"^(created|edited|deleted) (?:`([^`]+)`|([^\s`]+))")


def ledger_from_text(text: str) -> FactLedger:
    """The facts a digest's plain text states, for a digest that lost its ledger.

    Headings map to kinds (``# Guardrails`` items become constraints, ...); lines outside
    the template are kept as notes, so a prose summary from another tool is not lost.
    """
    b = _Builder()
    kind: FactKind = "note"
    objective: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("[… "):
            continue
        heading = re.match(r"^#{1,4}\s+(.+?)\s*:?$", line)
        if heading or line.lower().rstrip(":") == "latest asks":
            name = (heading.group(1) if heading else line).strip().lower().rstrip(":")
            kind = _HEADING_KIND.get(name, kind if name == "status" else "note")
            continue
        if line.startswith("_") and line.endswith("_") and "digest" in line.lower():
            continue  # the previous network-free digest's own note line
        step = _PLAN_LINE_RE.match(line)
        item = (step.group(1) if step else line).removeprefix("\\").strip()
        if not item or item.lower() in ("none", "none recorded", "n/a", "-"):
            continue
        if kind == "objective" and not step:
            objective.append(item)
            continue
        this: FactKind = "ask" if kind == "objective" else kind
        file_line = _FILE_LINE_RE.match(item)
        if file_line:
            path = file_line.group(2) or file_line.group(3)
            b.put("file", path, path, status=file_line.group(1))
        elif this == "error":
            b.put(
                "error", _norm_key(item), item, status="resolved" if "resolved" in item else "open"
            )
        else:
            b.put(this, _norm_key(item), item)
    if objective:
        b.set(Fact("objective", "objective", " ".join(objective), -1, -1, 1, None, by="digest"))
    # Only the digest's text says these: it may hold what a tool or a model wrote.
    facts = [replace(f, first=-1, last=-1, source=None, by="digest") for f in b.facts.values()]
    facts.sort(key=lambda f: f.kind != "objective")
    return FactLedger(tuple(facts), 0, 1)
