"""The ledger rendered as the six-heading digest body within a token budget.

It compresses level by level (collapse uninformative commands, group files, shorten prose)
before it evicts, then puts back the best evicted facts while they fit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from window_budget.budget import count_text
from window_budget.contract import TokenCounter
from window_budget.pipeline.summarize.facts.lines import (
    _bare,
    _command_line,
    _error_text,
    _file_line,
    _grouped_files,
    error_key,
)
from window_budget.pipeline.summarize.facts.model import (
    _P,
    Fact,
    FactLedger,
    _eviction_order,
    _priority,
)
from window_budget.pipeline.summarize.facts.text import (
    _norm_key,
    _relative,
    _sentences,
    code,
    cut_to_room,
    cut_words,
)

__all__ = ["DIGEST_SECTIONS", "render_ledger"]

DIGEST_SECTIONS: Final = (
    "objective",
    "asks",
    "guardrails",
    "shipped",
    "active",
    "stuck",
    "rationale",
    "plan",
    "carryover",
)
"""The rendered digest's sections, in order."""
_KIND_LABEL: Final = {
    "ask": "asks",
    "constraint": "constraints",
    "file": "files",
    "command": "commands",
    "error": "errors",
    "decision": "decisions",
    "identifier": "identifiers",
    "plan": "plan items",
    "note": "notes",
    "step": "steps",
}


@dataclass(slots=True)
class _Line:
    section: str
    text: str
    facts: tuple[Fact, ...]
    order: tuple[int, str] = (0, "")


def _prose_lines(
    facts: Sequence[Fact], root: str | None, level: int, prose: int, add: Callable[..., None]
) -> None:
    """The lines told in prose: asks, guardrails, the last step, errors, decisions, plans, notes."""
    short = level >= 2
    for f in facts:
        if f.kind == "ask":
            add("asks", cut_words(_unquote(f.text) if level >= 4 else f.text, prose), f)
        elif f.kind == "constraint":
            add("guardrails", cut_words(f.text, 400), f)
        elif f.kind == "step":
            step = f.text.replace(root + "/", "") if root and level >= 1 else f.text
            add("active", f"last step: {step}", f)
        elif f.kind == "error" and not (level >= 4 and f.status == "resolved"):
            add("stuck", _error_text(f, short=short, level=level), f)
        elif f.kind == "decision":
            add("rationale", _decision_text(f.text, prose, level), f)
        elif f.kind == "plan":
            add("plan", cut_words(f.text, prose), f)
        elif f.kind == "note":
            add("carryover", cut_words(f.text, prose), f)


def _packed_lines(
    packed: Sequence[Fact],
    level: int,
    folded: Mapping[str, Sequence[Fact]],
    entry: Callable[[Fact, str], str],
    add: Callable[..., None],
) -> None:
    """The passing commands packed onto shared lines (compressed levels only)."""
    if packed and level >= 4:  # tightest: grouped by program, the rest of each verbatim
        groups = _by_program(packed)
        for head, group in groups:
            add(
                "carryover",
                f"ran, passing, `{head} …` ({len(group)} commands): "
                + ", ".join(entry(f, _bare(cut_words(f.text[len(head) + 1 :], 90))) for f in group),
                *group,
                *(e for f in group for e in folded.get(f.text, ())),
            )
        singles = [f for f in packed if not any(f in g for _, g in groups)]
        if singles:
            add(
                "carryover",
                "ran, passing: "
                + ", ".join(entry(f, code(cut_words(f.text, 90))) for f in singles),
                *singles,
                *(e for f in singles for e in folded.get(f.text, ())),
            )
    elif packed:  # tighter: the passing commands on one line, verbatim
        add(
            "carryover",
            "ran, passing: "
            + ", ".join(
                code(cut_words(f.text, 90)) + (f" ×{f.count}" if f.count > 1 else "")
                for f in packed
            ),
            *packed,
        )


def _noise_tally(noise: Sequence[Fact]) -> str:
    """Looking-around commands as one tally, the most run first: ``ls`` ×4, ``git status``."""
    runs: dict[str, int] = {}
    for f in sorted(noise, key=lambda f: f.first):
        words = f.text.split()
        name = " ".join(words[:2] if words[0] == "git" else words[:1])
        runs[name] = runs.get(name, 0) + f.count
    return ", ".join(
        f"{code(name)} ×{n}" if n > 1 else code(name)
        for name, n in sorted(runs.items(), key=lambda kv: -kv[1])
    )


def _identifier_lines(
    facts: Sequence[Fact],
    root: str | None,
    level: int,
    out: Sequence[_Line],
    add: Callable[..., None],
) -> None:
    """The names no other line states yet (``out`` holds the lines so far)."""
    shown = {f.text for f in facts if f.kind in ("file", "command")}
    shown |= {_relative(f.text, root) for f in facts if f.kind == "file"}
    if level >= 4:  # tightest: a name another line already states is not listed again
        told_text = "\n".join(line.text for line in out)
        shown |= {f.text for f in facts if f.kind == "identifier" and f.text in told_text}
    idents = [f for f in facts if f.kind == "identifier" and f.text not in shown]
    if not idents:
        return
    ordered = sorted(idents, key=lambda f: (f.status != "user", f.first, f.key))
    if level == 0:
        for f in ordered:
            add("carryover", code(f.text), f)
    else:
        add("carryover", "names: " + ", ".join(_name(f.text, level) for f in ordered), *ordered)


def _folded_errors(
    facts: Sequence[Fact], commands: Sequence[Fact], level: int
) -> dict[str, list[Fact]]:
    """Tightest level: errors a later passing run of the same command fixed, by command."""
    passing = {f.text: f for f in commands if f.status == "ok"} if level >= 4 else {}
    folded: dict[str, list[Fact]] = {}
    for f in facts:
        if f.kind == "error" and f.status == "resolved" and f.detail in passing:
            folded.setdefault(f.detail, []).append(f)
    return folded


def _lines(facts: Sequence[Fact], root: str | None, level: int) -> list[_Line]:
    """The digest's bullet lines; ``level`` 1 collapses and groups, 2 also shortens prose."""
    short = level >= 2
    out: list[_Line] = []
    prose = (64 if level >= 4 else 80 if level >= 3 else 200) if short else 600

    def add(section: str, text: str, *of: Fact) -> None:
        first = min((f.first for f in of), default=0)
        out.append(_Line(section, text, of, (first, text)))

    _prose_lines(facts, root, level, prose, add)
    commands = [f for f in facts if f.kind == "command"]
    folded = _folded_errors(facts, commands, level)
    fixed = [
        f
        for f in facts
        if f.kind == "error" and f.status == "resolved" and level >= 4 and f.detail not in folded
    ]
    if fixed:  # tightest: the other errors already fixed share one line, each with its step
        add(
            "stuck",
            "resolved along the way: "
            + "; ".join(
                _error_text(f, short=True, level=level).removesuffix(" — resolved") for f in fixed
            ),
            *fixed,
        )
    files = [f for f in facts if f.kind == "file" and f.status != "read"]
    reads = [f for f in facts if f.kind == "file" and f.status == "read"]
    if level == 0:
        for f in files:
            add("shipped", _file_line(f, root), f)
    else:
        _grouped_files(files, root, add, level=level)
    noise = [f for f in commands if level >= 1 and _priority(f) == _P["command:noise"]]
    # Compressed, a command whose failure is listed under Stuck is not listed again.
    told = (
        {f.detail for f in facts if f.kind == "error" and f.detail not in folded}
        if level >= 1
        else set()
    )
    packed = [
        f
        for f in commands
        if level >= 3 and f not in noise and f.text not in told and f.status == "ok"
    ]
    if level >= 4:  # tightest: `git rm x.py` says no more than "x.py deleted" under Shipped
        listed = {_relative(f.text, root) for f in files} | {f.text for f in files}
        told |= {f.text for f in packed if _restates_files(f.text, listed)}
        packed = [f for f in packed if f.text not in told]

    def entry(f: Fact, text: str) -> str:
        runs = f" ×{f.count}" if f.count > 1 else ""
        fails = "; ".join(
            error_key(e.text.partition(" failed: ")[2] or e.text) for e in folded.get(f.text, ())
        )
        return f"{text}{runs}" + (f" (failed first: {fails})" if fails else "")

    _packed_lines(packed, level, folded, entry, add)
    for f in commands:
        if f in packed:
            continue
        if f not in noise and f.text not in told:
            add("carryover", _command_line(f, short=short), f)
        elif f.text in told:
            out.append(_Line("stuck", "", (f,), (f.first, "")))  # counted with its error
    if noise:
        add("carryover", f"also ran (looking around): {_noise_tally(noise)}", *noise)
    _identifier_lines(facts, root, level, out, add)
    if reads:
        if level == 0:
            for f in reads:
                add("carryover", f"read {code(_relative(f.text, root))}", f)
        else:
            _grouped_files(reads, root, add, verb="read", level=level)
    return out


_REASON_RE = re.compile(r",? (?:because|since|so that|so the|as the|given that|to avoid)\b")


def _decision_text(text: str, limit: int, level: int) -> str:
    """A decision; at the tightest level the decision itself, its reason left to the ledger."""
    if level >= 4:
        text = _unquote(text)
        reason = _REASON_RE.search(text)
        if reason is not None and reason.start() >= 20:
            return cut_words(text[: reason.start()], 80)  # a whole clause: no "…" needed
        return cut_words(text, 80)
    return cut_words(text, limit)


_QUOTED_WORD_RE = re.compile(r"`([\w.:/@#+-]+)`")


def _unquote(text: str) -> str:
    """Prose with its backticks dropped around single words (they cost, they add nothing)."""
    return _QUOTED_WORD_RE.sub(r"\1", text)


_FILE_OP_RE = re.compile(r"^(?:git (?:rm|add|mv)|rm|mv|cp|touch|mkdir|chmod)(?:\s+-\S+)*\s+")


def _restates_files(command: str, listed: set[str]) -> bool:
    """True for a file operation (``git rm``, ``mv`` ...) on files the digest lists anyway."""
    op = _FILE_OP_RE.match(command)
    if op is None:
        return False
    paths = command[op.end() :].split()
    return bool(paths) and all(p.removeprefix("./") in listed for p in paths)


def _by_program(commands: Sequence[Fact]) -> list[tuple[str, list[Fact]]]:
    """Commands that share their first words (``alembic upgrade``, ``pytest``).

    Two or more to a group, keyed by the longest word prefix they all share (up to four).
    """
    by_first: dict[str, list[Fact]] = {}
    for f in commands:
        words = f.text.split()
        if len(words) >= 2:
            by_first.setdefault(words[0], []).append(f)
    out: list[tuple[str, list[Fact]]] = []
    for first, group in by_first.items():
        if len(group) < 2:
            continue
        head = [first]
        split = [f.text.split() for f in group]
        while (
            len(head) < 4
            and all(len(w) > len(head) + 1 for w in split)
            and len({w[len(head)] for w in split}) == 1
        ):
            head.append(split[0][len(head)])
        out.append((" ".join(head), group))
    return out


def _name(text: str, level: int) -> str:
    """An identifier in a packed ``names:`` line: bare at the tightest level when it can be."""
    return _bare(text) if level >= 4 else code(cut_words(text, 100))


def _archived_line(evicted: Mapping[str, Mapping[str, int]], recall: bool) -> str:
    """The digest's last line: what it left out, and how the model reaches it."""
    totals: dict[str, int] = {}
    for kinds in evicted.values():
        for kind, n in kinds.items():
            totals[kind] = totals.get(kind, 0) + n
    parts = [f"{n} {_KIND_LABEL.get(k, k)}" for k, n in sorted(totals.items())]
    listed = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    if recall:
        return f"_{listed} more are archived — call `recall` (words, a kind, or a #pointer)._"
    return f"_{listed} more were left out of this digest._"


def _render(
    objective: str,
    lines: Sequence[_Line],
    note: str | None,
    evicted: Mapping[str, Mapping[str, int]],
    recall: bool = False,
) -> str:
    by: dict[str, list[str]] = {s: [] for s in DIGEST_SECTIONS}
    for line in sorted(lines, key=lambda ln: ln.order[0]):  # stable: ties keep their order
        if line.text:
            by[line.section].append(line.text)
    for section, kinds in evicted.items():
        if kinds:
            more = ", ".join(f"{n} {_KIND_LABEL.get(k, k)}" for k, n in sorted(kinds.items()))
            by[section].append(f"+{more} more")

    def bullets(section: str) -> str:
        return "\n".join(f"- {x}" for x in by[section]) if by[section] else "none"

    head = objective or "none recorded"
    if head.startswith("#"):  # a user's markdown title must not read as a digest heading
        head = "\\" + head
    if by["asks"]:
        head += "\nLatest asks:\n" + bullets("asks")
    parts = [note] if note else []
    parts += [
        f"# Objective\n{head}",
        f"# Guardrails\n{bullets('guardrails')}",
        f"# Status\n## Shipped\n{bullets('shipped')}\n## Active\n{bullets('active')}"
        f"\n## Stuck\n{bullets('stuck')}",
        f"# Rationale\n{bullets('rationale')}",
        f"# Plan\n{bullets('plan')}",
        f"# Carryover\n{bullets('carryover')}",
    ]
    if any(evicted.values()):
        parts.append(_archived_line(evicted, recall))
    return "\n\n".join(parts)


def render_ledger(
    ledger: FactLedger,
    *,
    max_tokens: int = 2000,
    counter: TokenCounter | None = None,
    note: str | None = None,
    recall: bool = False,
) -> str:
    """The ledger as the six-heading digest body, within ``max_tokens``.

    Uses the room while facts remain and stays small when few exist. Under pressure it
    compresses (collapse uninformative commands, group files by directory, shorten prose at
    word boundaries) before it evicts, and says how many facts of each kind it left out —
    with ``recall``, that they are archived and how to reach them.
    """
    facts = list(ledger.facts)
    root = ledger.root
    objective_facts = [f for f in facts if f.kind == "objective"]
    objective = objective_facts[0].text if objective_facts else ""
    if root is not None:
        note = (f"{note}\n" if note else "") + f"_Paths are relative to {code(root)}._"
    rest = [f for f in facts if f.kind != "objective"]
    listed = {f.key for f in rest if f.kind == "constraint"}
    said = [x for x in _sentences(objective) if _norm_key(x) not in listed]
    if said and len(said) < len(_sentences(objective)):
        objective = " ".join(said) + " (constraints under Guardrails)"
    for level in (0, 1, 2, 3, 4):
        text = _render(objective, _lines(rest, root, level), note, {})
        if count_text(text, counter) <= max_tokens:
            return text
    # Before any fact leaves, a long objective (a pasted log) yields room, down to a third.
    lines = _lines(rest, root, 4)
    room = max_tokens - count_text(_render("", lines, note, {}), counter)
    objective = cut_to_room(objective, max(max_tokens // 3, room), counter)
    if count_text(text := _render(objective, lines, note, {}), counter) <= max_tokens:
        return text
    # Evict: estimate each fact's share of its line, drop until the estimate fits, check.
    share: dict[int, float] = {}
    for line in lines:
        cost = count_text(f"- {line.text}\n", counter)
        for f in line.facts:
            share[id(f)] = cost / len(line.facts)
    order = _eviction_order(rest, share)
    alive = {id(f) for f in rest}
    over = count_text(_render(objective, lines, note, {}), counter) - max_tokens
    pos = 0
    text = ""
    while pos < len(order):
        dropped = 0.0
        while pos < len(order) and dropped < over + 8:
            f = order[pos]
            pos += 1
            alive.discard(id(f))
            dropped += share.get(id(f), 1.0)
        kept = [f for f in rest if id(f) in alive]
        evicted = _evicted_counts(rest, alive)
        text = _render(objective, _lines(kept, root, 4), note, evicted, recall)
        over = count_text(text, counter) - max_tokens
        if over <= 0:
            return _refill(
                objective, rest, order[:pos], alive, root, note, text, max_tokens, counter, recall
            )
    # Only the objective, the constraints and the skeleton are left, and still too long.
    from window_budget.pipeline.summarize._prompt import cut_to_tokens

    return cut_to_tokens(
        text or _render(cut_words(objective, 200), [], note, {}), max_tokens, counter
    )


def _refill(
    objective: str,
    rest: Sequence[Fact],
    evicted: Sequence[Fact],
    alive: set[int],
    root: str | None,
    note: str | None,
    text: str,
    max_tokens: int,
    counter: TokenCounter | None,
    recall: bool = False,
) -> str:
    """Evicting in batches overshoots: put back the best evicted facts while they fit."""
    misses = 0
    for f in reversed(evicted):
        if misses >= 40:
            break
        alive.add(id(f))
        kept = [x for x in rest if id(x) in alive]
        candidate = _render(
            objective, _lines(kept, root, 4), note, _evicted_counts(rest, alive), recall
        )
        if count_text(candidate, counter) <= max_tokens:
            text = candidate
            misses = 0
        else:
            alive.discard(id(f))
            misses += 1
    return text


def _evicted_counts(facts: Sequence[Fact], alive: set[int]) -> dict[str, dict[str, int]]:
    section_of = {
        "ask": "asks",
        "file": "shipped",
        "error": "stuck",
        "decision": "rationale",
        "plan": "plan",
        "step": "active",
    }
    out: dict[str, dict[str, int]] = {}
    for f in facts:
        if id(f) not in alive:
            section = section_of.get(f.kind, "carryover")
            if section == "asks":
                section = "carryover"  # the asks sit inside the objective's paragraph
            kinds = out.setdefault(section, {})
            kinds[f.kind] = kinds.get(f.kind, 0) + 1
    return out
