"""The audit of a model-written digest: which key ledger facts its text omits, pinned back.

A model rewrites the digest at every compaction, and each rewrite can drop a path, a
failing command or a user's constraint. After the model writes, :func:`audit_digest`
checks the ledger's high-priority facts against the text and appends the ones it
omits under ``# Pinned facts``, within the digest's token budget. The objective, the
constraints, the edited files and the open errors are pinned first, compressed as the
network-free digest compresses, and may take all but a quarter of the budget (all but an
eighth when they do not fit beside a quarter; the model's text gives way from its end);
other key facts fill at most half of it.

Only the model's own prose counts as found: lines it copied from the carried digest hold
facts (they are not pinned again) but are counted apart, and a path or name it invented (see
``_reply``) states nothing. The ``# Objective`` section says what the user asked for: where it
disagrees with the ledger's objective, the ledger's replaces it.

:func:`audit_reply` takes a model's reply from there: cut to the budget, rules the user never
gave dropped, made-up names marked, then audited.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Final

from window_budget.budget import count_text
from window_budget.contract import DigestAudit, TokenCounter
from window_budget.pipeline.summarize._guardrails import drop_rules, unsupported_rules
from window_budget.pipeline.summarize._invented import invented_names, mark_invented, mask_names
from window_budget.pipeline.summarize._prompt import cut_to_tokens
from window_budget.pipeline.summarize._reply import drop_pins_sections, own_prose
from window_budget.pipeline.summarize.facts import (
    Fact,
    FactLedger,
    fact_line,
    is_floor_fact,
    pin_lines,
    pin_priority,
)

__all__ = [
    "PINNED_HEADING",
    "audit_digest",
    "audit_reply",
    "check_digest",
    "is_floor_fact",
    "mentions",
]

logger = logging.getLogger("window_budget.pipeline.summarize")

PINNED_HEADING: Final = "# Pinned facts"
"""The heading the audit appends the omitted facts under."""
_AUDITED_MIN_PRIORITY: Final = 58  # identifiers the user named and everything above
_LATEST_ASKS: Final = 2
_WORD_RE = re.compile(r"[a-z0-9_][a-z0-9_./-]{3,}")


def _norm(text: str) -> str:
    return " ".join(text.replace("`", " ").lower().split())


def mentions(text: str, fact: Fact, root: str | None = None) -> bool:
    """True when ``text`` (normalised) states ``fact``.

    Paths, commands and names must appear verbatim (a path also relative to ``root``);
    prose facts (the objective, asks, decisions, plan items) count as stated when at least
    70 % of their significant words appear (for the objective, those of its first
    sentence); a constraint or an error, when they appear on one line — words scattered
    over other lines ("never" in one rule, "table" in another; an error's command on one
    line, another error's wording on the next) do not state it.
    """
    hay = _norm(text)
    if fact.kind == "file":
        rel = fact.text[len(root) + 1 :] if root and fact.text.startswith(root + "/") else None
        return _norm(fact.text) in hay or (rel is not None and _norm(rel) in hay)
    if fact.kind in ("command", "identifier"):
        return _norm(fact.text) in hay
    said = fact.text
    if said.endswith("…"):  # cut short in a bounded record: its last word may be cut too
        said = said.rstrip(" …").rsplit(" ", 1)[0] if " " in said.strip() else said
    if fact.kind == "objective":  # its later sentences are constraints, checked on their own
        said = re.split(r"(?<=[.!?])\s+", said, maxsplit=1)[0]
    words = set(_WORD_RE.findall(_norm(said)))
    if not words:
        return _norm(fact.text) in hay
    need = 0.7 * len(words)
    if fact.kind in ("constraint", "error"):
        return any(
            len(words & set(_WORD_RE.findall(_norm(line)))) >= need for line in text.splitlines()
        )
    return len(words & set(_WORD_RE.findall(hay))) >= need


def _key_facts(ledger: FactLedger) -> list[Fact]:
    asks = sorted(ledger.of_kind("ask"), key=lambda f: f.last)[-_LATEST_ASKS:]
    out = [
        f for f in ledger.facts if f.kind != "ask" and pin_priority(f) >= _AUDITED_MIN_PRIORITY
    ] + asks
    return sorted(out, key=lambda f: (-pin_priority(f), -f.last, f.key))


def _fit_lines(
    facts: list[Fact], root: str | None, room: int, counter: TokenCounter | None
) -> tuple[list[str], list[Fact]]:
    """The least compressed lines of ``facts`` within ``room`` tokens, and the facts they hold.

    Compressed level by level as the network-free digest is; when even the tightest level
    does not fit, the lowest-priority, oldest facts are left out, then the oldest
    constraints; the objective last. Pinning the newest rules that fit beats pinning none.
    """
    kept = list(facts)
    while True:
        for level in range(5):
            lines = [f"- {line}" for line in pin_lines(kept, root, level)]
            if not lines or count_text("\n".join(lines) + "\n", counter) <= room:
                return lines, kept
        evictable = [f for f in kept if f.kind not in ("objective", "constraint")]
        if not evictable:
            evictable = [f for f in kept if f.kind == "constraint"]
            if not evictable:
                return [], []
            kept.remove(min(evictable, key=lambda f: (f.last, f.key)))
            continue
        kept.remove(min(evictable, key=lambda f: (pin_priority(f), f.last, f.key)))


_OBJECTIVE_RE = re.compile(r"^\s{0,3}#{1,6}\s*objective\b", re.IGNORECASE)
_ANY_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s")


def _put_objective(
    text: str, ledger: FactLedger, view: Callable[[str], str]
) -> tuple[str, Fact | None]:
    """``text`` with an ``# Objective`` section that does not state the ledger's replaced by it.

    Returns the text and the objective when it was put back. The objective is the user's
    (only text the user typed is one): the model's rewording is kept while it still states it.
    """
    objective = next((f for f in ledger.facts if f.kind == "objective"), None)
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if _OBJECTIVE_RE.match(line)), None)
    if objective is None or start is None:
        return text, None
    end = next(
        (j for j in range(start + 1, len(lines)) if _ANY_HEADING_RE.match(lines[j])), len(lines)
    )
    if mentions(view("\n".join(lines[start + 1 : end])), objective, ledger.root):
        return text, None
    # Its constraints are not repeated: they are checked (and pinned) on their own.
    said = pin_lines([objective, *ledger.of_kind("constraint")], ledger.root)[0]
    said = said.removeprefix("objective: ")
    gap = [""] if end < len(lines) else []
    return "\n".join([*lines[: start + 1], said, *gap, *lines[end:]]), objective


def audit_digest(
    text: str,
    ledger: FactLedger,
    *,
    max_tokens: int,
    counter: TokenCounter | None = None,
    carried: str = "",
    invented: Sequence[str] = (),
    invented_rules: Sequence[str] = (),
) -> tuple[str, DigestAudit]:
    """Append the key facts ``text`` omits under ``# Pinned facts``, within ``max_tokens``.

    The floor facts (:func:`is_floor_fact`) are pinned first and may take the budget the
    model's text does not keep: the model's text keeps at least a quarter of the budget (an
    eighth when the floor facts do not fit beside a quarter; all of itself when shorter), and
    gives way from its end — the template's later sections first. Floor pins are compressed
    the way the network-free digest compresses (files grouped by directory, errors to their
    key part) before any is left out. Other key facts fill what the model left free, within
    half the budget.

    ``carried`` is the carried digest the model was shown: a fact stated only in lines
    copied from it is kept but not counted as found. ``invented`` are names the model made up
    (:func:`~window_budget.pipeline.summarize._reply.invented_names`): they state nothing, so
    ``annotation.exs`` does not state ``annotation.ex``. A ``Pinned facts`` section already
    in ``text`` is replaced by this audit's, so a digest has one. A ``# Objective`` section
    that does not state the ledger's objective is replaced by it. ``invented_rules`` are the
    guardrails the flow dropped as never given by the user; they are only reported.

    Returns the (possibly shortened) text with the pins, and the audit's figures.
    """
    root = ledger.root
    key = _key_facts(ledger)
    text = drop_pins_sections(text)[0]

    def view(part: str) -> str:
        return mask_names(part, invented)

    own = view(own_prose(text, carried))
    found = {id(f) for f in key if mentions(own, f, root)}
    held = {id(f) for f in key if mentions(view(text), f, root)}  # own or copied
    text, put = _put_objective(text, ledger, view)
    missing = [f for f in key if not mentions(view(text), f, root)]
    # What the ledger's objective brought (its constraints too) counts as pinned.
    put_back = len({id(f) for f in key} - {id(f) for f in missing} - held)

    def figures(appended: int, left_out: int) -> DigestAudit:
        return DigestAudit(
            len(ledger.facts),
            len(key),
            len(found),
            appended + put_back,
            left_out,
            copied=len(held - found),
            invented=tuple(invented),
            objective_replaced=put is not None,
            invented_rules=tuple(invented_rules),
        )

    if not missing:
        return cut_to_tokens(text, max_tokens, counter), figures(0, 0)
    out, appended, left_out = _with_pins(text, key, missing, root, max_tokens, counter, view)
    return out, figures(appended, left_out)


def _with_pins(
    text: str,
    key: Sequence[Fact],
    missing: list[Fact],
    root: str | None,
    max_tokens: int,
    counter: TokenCounter | None,
    view: Callable[[str], str],
) -> tuple[str, int, int]:
    """``text`` cut to make room, then the pins of ``missing``; facts pinned and left out.

    Making room for the pins cuts the model's text from its end, and a fact the model did
    write may sit in what is cut (its newest material comes last): such facts are pinned
    too, until what the kept text holds and what is pinned cover every key fact.
    """
    size = count_text(text, counter)
    while True:
        pins, appended = _pins(missing, root, size, max_tokens, counter)
        if not pins:
            return cut_to_tokens(text, max_tokens, counter), 0, len(missing)
        block = f"{PINNED_HEADING}\n" + "\n".join(pins)
        body_room = max_tokens - count_text("\n\n" + block, counter)
        body = cut_to_tokens(text, max(body_room, 1), counter)
        if body == text:
            break
        pending = {id(f) for f in missing}
        lost = [f for f in key if id(f) not in pending and not mentions(view(body), f, root)]
        if not lost:
            break
        pending.update(map(id, lost))
        missing = [f for f in key if id(f) in pending]
    out = f"{body}\n\n{block}" if body else block
    return cut_to_tokens(out, max_tokens, counter), appended, len(missing) - appended


def _pins(
    missing: list[Fact], root: str | None, own: int, max_tokens: int, counter: TokenCounter | None
) -> tuple[list[str], int]:
    """The lines pinning ``missing`` (floor facts first) and how many facts they hold.

    ``own`` is the model's text's size: it keeps at least a quarter of the budget, an eighth
    when the floor facts do not fit beside a quarter.
    """
    heading_cost = count_text(f"\n\n{PINNED_HEADING}\n", counter)
    floor = [f for f in missing if is_floor_fact(f)]
    model_keeps = min(own, max_tokens // 4)
    floor_lines, floor_kept = _fit_lines(
        floor, root, max_tokens - model_keeps - heading_cost - 8, counter
    )
    if len(floor_kept) < len(floor) and model_keeps > max_tokens // 8:
        # A floor fact left out beside a quarter of prose: the prose gives way to an eighth
        # (a SWE-agent run's 12 rules missed one at 500 tokens beside prose stating none).
        model_keeps = min(own, max_tokens // 8)
        floor_lines, floor_kept = _fit_lines(
            floor, root, max_tokens - model_keeps - heading_cost - 8, counter
        )
    used = heading_cost + (count_text("\n".join(floor_lines) + "\n", counter) if floor_lines else 0)
    # Other pins take what the model left free, at least a third and at most half of the
    # budget (floor pins included): a digest that grows to its cap every time makes the
    # next compaction come sooner.
    room = min(
        max(max_tokens - own - 8, max_tokens // 3), max_tokens // 2, max_tokens - model_keeps - 8
    )
    pins = list(floor_lines)
    appended = len(floor_kept)
    for fact in missing:
        if is_floor_fact(fact):
            continue
        line = f"- {fact_line(fact, root)}"
        cost = count_text(line + "\n", counter)
        if used + cost > room:
            continue  # a shorter fact further down may still fit
        pins.append(line)
        used += cost
        appended += 1
    return pins, appended


def check_digest(text: str, ledger: FactLedger) -> DigestAudit:
    """The audit figures of a digest already written: key facts its text holds, lines pinned.

    For a carried digest read back from a transcript (``window-budget inspect``): nothing is
    appended; ``appended`` counts the lines under ``# Pinned facts`` the digest already has.
    """
    root = ledger.root
    key = _key_facts(ledger)
    found = sum(mentions(text, f, root) for f in key)
    pinned = text.split(f"{PINNED_HEADING}\n", 1)[1] if f"{PINNED_HEADING}\n" in text else ""
    appended = sum(1 for line in pinned.splitlines() if line.startswith("- "))
    return DigestAudit(len(ledger.facts), len(key), found, appended, len(key) - found)


def audit_reply(
    digest: str,
    ledger: FactLedger,
    entries: Sequence[str],
    carried: str,
    body_tokens: int,
    counter: TokenCounter | None,
) -> tuple[str, DigestAudit]:
    """The model's digest cut to ``body_tokens``, made-up names marked and rules dropped, audited.

    ``entries`` are the folded turns as the prompt showed them, ``carried`` the digest that
    was carried in: a name none of them (nor the ledger) holds is marked as the model's own.
    """
    body = cut_to_tokens(digest, body_tokens, counter)
    body, rules = _without_invented_rules(body, ledger, carried)
    # Checked after the cut, so a runaway reply costs no more than a digest's worth of names.
    sources = "\n".join([*entries, carried, *(f.text for f in ledger.facts)])
    # A name the cut split ("tomllib.TOMLDecodeErro") is the model's whole name, not a new one.
    invented = tuple(
        name
        for name in invented_names(body, sources, carried=carried)
        if re.search(rf"(?<![\w./-]){re.escape(name)}(?![\w./-])", digest)
    )
    body = mark_invented(body, invented, carried=carried)
    return audit_digest(
        body,
        ledger,
        max_tokens=body_tokens,
        counter=counter,
        carried=carried,
        invented=invented,
        invented_rules=rules,
    )


def _without_invented_rules(
    body: str, ledger: FactLedger, carried: str
) -> tuple[str, tuple[str, ...]]:
    """``body`` without the guardrails the user never gave, and those lines.

    A rule binds every later turn: one the model made up must not read as the user's.
    """
    rules = unsupported_rules(body, ledger, carried=carried)
    if not rules:
        return body, rules
    logger.debug("window-budget: %d guardrail line(s) the user never gave were dropped", len(rules))
    return drop_rules(body, rules), rules
