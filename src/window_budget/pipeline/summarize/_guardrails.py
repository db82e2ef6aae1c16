"""Guardrails the user never gave: rules a model wrote under ``# Guardrails`` on its own.

A rule in the digest binds every turn after it. Qwen2.5-Coder 1.5B, summarizing real
sessions, wrote rules the user never stated: "The user must fix the TOML fixture for errors
to ensure that integers are quoted correctly" (three generations running; the agent had said
the fixture *quotes* integers), "The user must follow the instructions provided in the
`reproduce_bug.py` file exactly" (a SWE-agent run). :func:`unsupported_rules` lists the
model's own lines under ``# Guardrails`` that no rule the user typed backs (the ledger's
constraints and its objective: only the user's text is either); :func:`drop_rules` removes
them. The user's real constraints are then the audit's to check, and to pin when missing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from window_budget.pipeline._cut import SHORTENED_MARKER
from window_budget.pipeline.summarize._invented import names_in
from window_budget.pipeline.summarize._reply import own_prose
from window_budget.pipeline.summarize.facts import Fact, FactLedger

__all__ = ["drop_rules", "unsupported_rules"]

_SUPPORT_SHARE: Final = 0.6
"""A line is backed when this share of its significant words is in one rule the user typed."""
_STATES_SHARE: Final = 0.7
"""Or when it holds this share of one constraint's significant words (the audit's share)."""
_GUARDRAILS_RE = re.compile(r"^\s{0,3}#{1,6}\s*guardrails\b", re.IGNORECASE)
_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s")
_LIST_MARK_RE = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_WORD_RE = re.compile(r"[a-z0-9_][a-z0-9_./'-]{3,}")
_RULE_RE = re.compile(
    r"\b(?:must|never|always|only|should|shall|don'?t|do not|avoid|make sure|ensure|required?)\b",
    re.IGNORECASE,
)
_MARKER_RE = re.compile(re.escape(SHORTENED_MARKER).replace(re.escape("{n}"), r"[\d,]+"))
_NONE_RE = re.compile(r"^(?:none|no\b|nothing|n/a)", re.IGNORECASE)
# Words every rule shares ("the user must ensure that ..."): they back nothing.
_FILLER: Final = frozenset(
    {"user", "users", "agent", "assistant", "must", "never", "always", "only", "should"}
    | {"shall", "ensure", "make", "sure", "avoid", "don't", "that", "this", "these", "those"}
    | {"with", "from", "into", "onto", "they", "them", "their", "will", "would", "when"}
    | {"which", "what", "have", "been", "does", "done", "there", "here", "before", "after"}
    | {"every", "each", "keep", "follow", "also", "then"}
)


def _norm(text: str) -> str:
    return " ".join(text.replace("`", " ").replace("*", " ").lower().split())


def _words(line: str) -> set[str]:
    words = {w.strip(".'/-") for w in _WORD_RE.findall(_norm(line))}
    return {w for w in words if len(w) >= 4} - _FILLER


def _guardrail_lines(text: str) -> list[int]:
    """Indices of the content lines of the ``# Guardrails`` section(s) of ``text``."""
    out: list[int] = []
    inside = False
    for i, line in enumerate(text.split("\n")):
        if _GUARDRAILS_RE.match(line):
            inside = True
        elif _HEADING_RE.match(line):
            inside = False
        elif inside and line.strip():
            out.append(i)
    return out


def _backed(line: str, rules: Sequence[Fact]) -> bool:
    """True when ``line`` states one of ``rules`` or one of them holds most of its words.

    A path or identifier the line names must be in one of them: "follow the instructions in
    `reproduce_bug.py` exactly" is no rule of the user's however generic its other words.
    """
    said = _norm(line)
    typed = "\n".join(f.text for f in rules).casefold()
    if any(name.casefold() not in typed for name in names_in(line)):
        return False
    for fact in rules:
        theirs = _words(fact.text) if fact.kind == "constraint" else set()
        if theirs and sum(w in said for w in theirs) >= _STATES_SHARE * len(theirs):
            return True  # the user's rule, reworded: "never push anything to main"
    words = _words(line)
    if not words:
        # Nothing but "must" and "never": a rule with no object restates nothing the user said.
        return _RULE_RE.search(line) is None
    need = _SUPPORT_SHARE * len(words)
    return any(sum(w in _norm(f.text) for w in words) >= need for f in rules)


def unsupported_rules(text: str, ledger: FactLedger, *, carried: str = "") -> tuple[str, ...]:
    """The model's own ``# Guardrails`` lines that no rule the user typed backs.

    A line is backed when it holds 70 % of the significant words of one of the ledger's
    constraints (it states that rule, reworded), or when 60 % of its
    significant words (not "user", "must", "ensure" ...) occur in one of the constraints or
    in the objective — and never when it names a path or identifier none of them names.
    Lines copied from the
    carried digest (``carried``) are not the model's and are not checked, nor are lines that
    say there are none, nor the digest's own cut marker and the line it cut short. Returned
    as written, in order.
    """
    rules = [f for f in ledger.facts if f.kind in ("constraint", "objective")]
    lines = text.split("\n")
    own = own_prose(text, carried).split("\n")
    out: list[str] = []
    checked = _guardrail_lines(text)
    for n, i in enumerate(checked):
        if _MARKER_RE.search(lines[i]) or (
            n + 1 < len(checked) and _MARKER_RE.search(lines[checked[n + 1]])
        ):
            continue  # the digest's cut, and the line it cut short: the marker must stay
        said = _LIST_MARK_RE.sub("", own[i]).strip()
        if said and not _NONE_RE.match(said) and not _backed(said, rules):
            out.append(lines[i])
    return tuple(out)


def drop_rules(text: str, rules: Sequence[str]) -> str:
    """``text`` without the ``# Guardrails`` lines in ``rules`` (each dropped where it stands)."""
    if not rules:
        return text
    lines = text.split("\n")
    unwanted = set(rules)
    dropped = {i for i in _guardrail_lines(text) if lines[i] in unwanted}
    return "\n".join(line for i, line in enumerate(lines) if i not in dropped)
