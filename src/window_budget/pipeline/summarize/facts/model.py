"""The fact ledger's values: :class:`Fact`, :class:`FactLedger`, and which fact matters most.

How much each fact matters (:func:`pin_priority`) and the order in which facts leave when room
is short live here with the values, since a ledger keeps at most :data:`MAX_FACTS` facts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Final, Literal, TypeAlias, get_args

from window_budget._shown import Shown
from window_budget.pipeline.summarize.facts.text import one_line, workspace_root

__all__ = [
    "FACT_KINDS",
    "LEDGER_FORMAT",
    "MAX_FACTS",
    "Fact",
    "FactKind",
    "FactLedger",
    "Provenance",
    "is_floor_fact",
    "pin_priority",
]

FactKind: TypeAlias = Literal[
    "objective",
    "ask",
    "constraint",
    "file",
    "command",
    "error",
    "decision",
    "identifier",
    "plan",
    "step",
    "note",
]
"""What a fact records; ``note`` is a line of a carried digest that had no ledger."""
FACT_KINDS: Final[tuple[FactKind, ...]] = get_args(FactKind)
"""Every kind, in the order the ledger lists them."""
LEDGER_FORMAT: Final = "window-budget/facts/2"
"""The ``format`` value inside a serialized ledger (``/1``, without provenance, is read too)."""
Provenance: TypeAlias = Literal["user", "assistant", "tool", "digest", ""]
"""Who stated a fact: the user typed it, the assistant wrote or did it, a tool's output
said it, or only a carried digest's text does (``""``: an older ledger that did not say)."""
_BY_KIND: Final[dict[str, Provenance]] = {
    "objective": "user",
    "ask": "user",
    "constraint": "user",
    "error": "tool",
    "note": "digest",
}
MAX_FACTS: Final = 5000
"""A ledger keeps at most this many facts (lowest priority, oldest first leave). The digest's
record is bounded apart; this bounds the whole ledger a memory store keeps per version."""


@dataclass(frozen=True, slots=True)
class Fact:
    """One typed fact the session established.

    ``source`` indexes the archive: the messages the condenser dropped, digests left
    out, in order across every compaction (the first compaction's ``plan.dropped`` are
    positions 0…, the next compaction's continue after them). ``first`` and ``last`` are
    positions in the same numbering.
    """

    kind: FactKind
    """What the fact records."""
    key: str
    """Stable identity for dedupe and merge (a path, a command, a normalised sentence)."""
    text: str
    """The value verbatim: the ask, the path, the command, the error line, the decision."""
    first: int = -1
    """Archive position where it was first seen (-1: known only from a digest's text)."""
    last: int = -1
    """Archive position where it was last seen."""
    count: int = 1
    """How often it was seen (edits of a file, runs of a command, failures of a step)."""
    source: int | None = None
    """Archive position of the message that states it (the latest one), when known."""
    status: str = ""
    """``file``: created / edited / deleted / read; ``command``: ok / failed / exit N;
    ``error``: open / resolved; ``identifier``: user (named by the user) or agent."""
    detail: str = ""
    """``error``: the step that failed; ``command``: how many runs failed; ``file``: a note."""
    resolved_by: int | None = None
    """``error``: archive position of the later step that succeeded, when one did."""
    by: Provenance = ""
    """Who stated it. Only the user's own text is an objective, an ask or a constraint; an
    error's line is a tool's output, quoted wherever it is shown."""


@dataclass(frozen=True, slots=True)
class FactLedger(Shown):
    """The facts of a session so far, in first-seen order."""

    facts: tuple[Fact, ...] = ()
    """The facts."""
    archived: int = 0
    """How many messages the archive holds so far: the next one folded gets this position."""
    generations: int = 0
    """How many compactions fed the ledger."""
    masked_kept: int = 0
    """Placeholders of masked tool outputs in the tail kept with the digest: their originals
    are archived already, so the next compaction does not count them again."""

    def of_kind(self, kind: FactKind) -> tuple[Fact, ...]:
        """The facts of one kind, in first-seen order."""
        return tuple(f for f in self.facts if f.kind == kind)

    @property
    def root(self) -> str | None:
        """The workspace root the absolute file paths share, when they reveal one."""
        return workspace_root(f.text for f in self.facts if f.kind == "file")


# ------------------------------------------------------------------ priority

# What a command tells: checks that pass or fail say more than looking around.
_INFORMATIVE_CMD_RE = re.compile(
    r"\b(test|tests|pytest|jest|vitest|mocha|tox|nox|unittest|cargo|go (?:test|build|vet)"
    r"|make|build|compile|tsc|mypy|pyright|ruff|eslint|lint|flake8|black|prettier|migrat\w*"
    r"|alembic|manage\.py|rake|install|pip|uv|poetry|npm|yarn|pnpm|bundle|docker|kubectl"
    r"|deploy|terraform|git (?:commit|push|merge|rebase|checkout|switch|tag|revert|reset"
    r"|cherry-pick|stash|apply)|curl|psql|mix|gradle|mvn|dotnet|bazel|cmake)\b",
    re.IGNORECASE,
)
_NOISE_CMD_RE = re.compile(
    r"^\s*(?:cd \S+\s*&&\s*)?(?:ls|ll|la|cat|pwd|echo|head|tail|less|more|wc|tree|which|whoami"
    r"|find|grep|rg|ag|fd|sed -n|awk|sort|uniq|stat|file|du|df|env|printenv|date|clear"
    r"|git (?:status|diff|log|show|branch|remote|blame)|history)\b",
    re.IGNORECASE,
)

_P: Final[dict[str, int]] = {
    "objective": 1000,
    "constraint": 900,
    "error:open": 95,
    "file": 88,
    "ask": 84,
    "plan": 78,
    "decision": 72,
    "command:failed": 66,
    "command": 60,
    "identifier:user": 58,
    "step": 52,
    "identifier": 50,
    "error:resolved": 45,
    "plan:earlier": 42,
    "note": 40,
    "file:read": 25,
    "command:noise": 15,
}
_NEVER_EVICTED: Final = frozenset({"objective", "constraint"})  # constraints: see the end
_FLOOR = 2  # the newest facts of each kind leave last of their kind
_RULES_KEPT = 5  # the user's newest rules never leave a digest
_FLOOR_TIER: Final = {"created": 0, "edited": 1, "deleted": 1}  # then open errors, rules


def is_floor_fact(fact: Fact) -> bool:
    """True for the digest's floor, the facts it must always hold.

    The floor: the objective, the user's constraints, the files created, edited or deleted,
    and the errors still open. They are the last to leave a rendered digest or a bounded
    record (every other fact is left out first) and the first the audit pins back.

    >>> is_floor_fact(Fact("error", "k", "`make` failed: boom", status="open"))
    True
    >>> is_floor_fact(Fact("file", "/w/a.py", "/w/a.py", status="read"))
    False
    """
    return (
        fact.kind in ("objective", "constraint")
        or (fact.kind == "file" and fact.status != "read")
        or (fact.kind == "error" and fact.status != "resolved")
    )


def _priority(fact: Fact) -> int:
    if fact.kind == "error":
        return _P["error:resolved" if fact.status == "resolved" else "error:open"]
    if fact.kind == "file" and fact.status == "read":
        return _P["file:read"]
    if fact.kind == "command":
        if fact.status not in ("ok", "no result"):
            return _P["command:failed"]
        return _P["command:noise"] if _is_noise(fact.text) else _P["command"]
    if fact.kind == "identifier" and fact.status == "user":
        return _P["identifier:user"]
    if fact.kind == "plan" and fact.status == "earlier":
        return _P["plan:earlier"]
    return _P[fact.kind]


def pin_priority(fact: Fact) -> int:
    """How much a fact matters when room is short (the objective most, noise least)."""
    return _priority(fact)


def _is_noise(command: str) -> bool:
    return bool(_NOISE_CMD_RE.match(command)) and not _INFORMATIVE_CMD_RE.search(command)


def _eviction_order(facts: list[Fact], cost: Mapping[int, float] | None = None) -> list[Fact]:
    """Which facts leave first: lowest priority, then oldest, the newest of each kind last.

    The floor (:func:`is_floor_fact`) leaves after every other fact, the user's newest rules
    never. With ``cost`` (tokens each fact's line takes, by ``id``), a costly fact counts a little
    less than a cheap one of about the same priority: a resolved error with its whole
    command line leaves before three identifiers that fit in the same room, an open error
    still outranks any command.
    """
    evictable = [f for f in facts if not is_floor_fact(f)]
    newest: dict[tuple[str, bool], list[Fact]] = {}
    for f in sorted(evictable, key=lambda f: (-f.last, f.key)):
        # Files only read and noise commands keep one, apart from their kind's floor.
        low = _priority(f) <= _P["file:read"]
        group = newest.setdefault((f.kind, low), [])
        if len(group) < (1 if low else _FLOOR):
            group.append(f)
    floor = {id(f) for group in newest.values() for f in group}

    latest = max((f.last for f in facts), default=0) or 1

    def rank(f: Fact) -> tuple[float, int, int, str]:
        # Priority first, but age counts: a fact from the latest stretch gains up to 12
        # points, so old plan steps leave before this stretch's commands do.
        score = _priority(f) + 12 * max(f.last, 0) / latest
        if f.kind == "identifier":  # a name said again and again outranks one said once
            score += min(_REPEAT_CAP, _REPEAT_WEIGHT * math.log2(max(f.count, 1)))
        if cost is not None:
            score -= _COST_WEIGHT * math.log2(1 + cost.get(id(f), 1.0))
        return (score, f.last, f.first, f.key)

    first = sorted((f for f in evictable if id(f) not in floor), key=rank)
    last = sorted((f for f in evictable if id(f) in floor), key=rank)
    # Then the floor, oldest first: files created, files edited or deleted (they existed
    # before the session), open errors, then the user's rules (a long list of them must not
    # cut the digest blind either); the store keeps them all for recall. The newest few
    # rules are never evicted.
    changed = [f for f in facts if f.kind in ("file", "error") and is_floor_fact(f)]
    changed.sort(key=lambda f: (_FLOOR_TIER.get(f.status, 2), f.last, f.key))
    rules = sorted((f for f in facts if f.kind == "constraint"), key=lambda f: (f.last, f.key))
    return first + last + changed + rules[:-_RULES_KEPT]


_COST_WEIGHT: Final = 4.0
"""Priority points a fact loses per doubling of the tokens its line takes."""
_REPEAT_WEIGHT: Final = 4.0
"""Priority points an identifier gains per doubling of how often it was named."""
_REPEAT_CAP: Final = 12.0
"""At most this many: a name said sixteen times still ranks below an open error."""


def _capped(ledger: FactLedger) -> FactLedger:
    if len(ledger.facts) <= MAX_FACTS:
        return ledger
    order = _eviction_order(list(ledger.facts))
    gone = {id(f) for f in order[: len(ledger.facts) - MAX_FACTS]}
    return replace(ledger, facts=tuple(f for f in ledger.facts if id(f) not in gone))


# ------------------------------------------------------------------ building


@dataclass(slots=True)
class _Builder:
    facts: dict[str, Fact] = field(default_factory=dict)
    pos: int = 0

    def put(
        self,
        kind: FactKind,
        key: str,
        text: str,
        *,
        status: str = "",
        detail: str = "",
        replace_text: bool = True,
        bump: int = 1,
        by: Provenance | None = None,
    ) -> Fact:
        # One line each: a line break inside a fact must not start a heading in the digest.
        text, key = one_line(text), " ".join(key.split())
        full = f"{kind}\x00{key}"
        old = self.facts.get(full)
        who = by or _BY_KIND.get(kind, "assistant")
        if old is None:
            fact = Fact(kind, key, text, self.pos, self.pos, bump, self.pos, status, detail, by=who)
        else:
            fact = replace(
                old,
                text=text if replace_text else old.text,
                last=self.pos,
                count=old.count + bump,
                source=self.pos,
                status=status or old.status,
                detail=detail or old.detail,
                by="user" if "user" in (who, old.by) else who,
            )
        self.facts[full] = fact
        return fact

    def get(self, kind: FactKind, key: str) -> Fact | None:
        return self.facts.get(f"{kind}\x00{key}")

    def set(self, fact: Fact) -> None:
        self.facts[f"{fact.kind}\x00{fact.key}"] = fact
