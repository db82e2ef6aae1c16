"""Names: the identifiers the ledger reads from prose, and from a summary carried in as text.

A name is a path, a URL, a span the writer marked as code, a CamelCase or snake_case name, an
environment variable, a ticket id, a version or a commit sha. The user's names rank above the
agent's; a name said again and again above one said once (see ``model._eviction_order``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Final

from window_budget.pipeline.summarize.facts.model import FactLedger, _Builder
from window_budget.pipeline.summarize.facts.text import one_line

__all__: list[str] = []

_IDENT_RES: Final = (
    re.compile(r"https?://[^\s)>\]\"'`]+[^\s)>\]\"'`.,;:]"),  # URLs
    re.compile(r"`([^`\n]{2,120})`"),  # spans the writer already marked as code
    re.compile(r"(?<![\w/.-])/?(?:[\w.-]+/)+[\w-]+\.\w{1,8}\b"),  # relative and absolute paths
    re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d{1,6}\b"),  # ticket ids
    re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]{2,}\b"),  # env vars and constants
    re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b"),  # CamelCase names
    re.compile(r"\b[a-z_][a-z0-9]*(?:_[a-z0-9]+)+\(\)"),  # snake_case() function names
    re.compile(r"(?<![\w/.-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w/(-]|\.\w)"),  # snake_case names
    re.compile(r"\bv?\d+\.\d+\.\d+(?:[-.][\w.]+)?\b"),  # versions
    re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"),  # commit shas
)


def _add_idents(b: _Builder, text: str, *, by_user: bool) -> None:
    for pattern in _IDENT_RES:
        for match in pattern.finditer(text):
            value = one_line(match.group(1) if pattern.groups else match.group(0))
            if len(value) < 3 or value.lower() in ("none", "n/a"):
                continue
            old = b.get("identifier", value)
            status = "user" if by_user or (old is not None and old.status == "user") else "agent"
            b.put("identifier", value, value, status=status, by="user" if by_user else "assistant")


def _with_names(ledger: FactLedger) -> FactLedger:
    """A summary's ledger read from its text, with the names its lines state as identifiers.

    A summary another tool (or the agent's own model) wrote reads back as notes; they are cut
    to a line's head or left out first when the digest is short of room, and the names in
    them (the functions, paths and settings that summary chose to keep) with them. As
    identifiers they are listed on the compact ``names:`` line instead, ranked by how often
    they were named.
    """
    b = _Builder({f"{f.kind}\x00{f.key}": f for f in ledger.facts}, -1)
    for fact in ledger.facts:
        if fact.kind not in ("identifier", "file"):
            _add_idents(b, fact.text, by_user=False)
    facts = [
        f if f.kind != "identifier" else replace(f, source=None, by="digest")
        for f in b.facts.values()
    ]
    return replace(ledger, facts=tuple(facts))
