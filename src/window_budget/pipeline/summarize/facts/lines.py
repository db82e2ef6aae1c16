"""One fact as a digest line: files, commands and errors, and files grouped by directory."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from window_budget.pipeline.summarize.facts.model import Fact
from window_budget.pipeline.summarize.facts.text import (
    _relative,
    _sentences,
    code,
    cut_words,
    one_line,
)

__all__ = ["error_key", "fact_line", "pin_lines"]


def _file_line(fact: Fact, root: str | None, quote: Any = None) -> str:
    edits = f" ({fact.count} edits)" if fact.status == "edited" and fact.count > 1 else ""
    note = f", {fact.detail}" if fact.detail else ""
    return f"{fact.status} {(quote or code)(_relative(fact.text, root))}{edits}{note}"


def _command_line(fact: Fact, *, short: bool) -> str:
    cmd = cut_words(fact.text, 90 if short else 240)
    fails = int(fact.detail) if fact.detail.isdigit() else 0
    runs = f" ({fact.count} runs)" if fact.count > 1 else ""
    if fact.status == "ok":
        how = f"passed{runs}" if not fails else f"failed {fails}x, then passed{runs}"
    elif fact.status == "no result":
        how = "no result recorded"
    else:
        how = f"{fact.status}{runs}"
    return f"ran {code(cmd)} — {how}"


_TALLY_RE = re.compile(r" \([^()]*\b\d+ (?:failed|passed|errors?)\b[^()]*\)$")
_EXCEPTION_RE = re.compile(
    r"^(?:E\s+)?(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Fault|Failure|Exit|Interrupt)\w*)"
    r"\s*:\s*(?P<message>.*)$"
)
_WHERE_RE = re.compile(r"[\w./-]+\.\w{1,8}:\d+")


def error_key(line: str) -> str:
    r"""The part of an error line that tells it apart: type, message head, ``file:line``.

    The verbatim line stays in the ledger (:attr:`Fact.text`) and the archive (its
    ``source``); this is what the tightest digest shows.

    >>> error_key("E   sqlalchemy.exc.ProgrammingError: relation \"x\" does not exist (1 failed)")
    'sqlalchemy.exc.ProgrammingError: relation "x" does not exist'
    """
    line = _TALLY_RE.sub("", one_line(line)).removeprefix("E ").strip()
    match = _EXCEPTION_RE.match(line)
    if match is None:
        return cut_words(line, 120)
    head = f"{match['type']}: {cut_words(match['message'], 110)}"
    where = _WHERE_RE.search(match["message"])
    if where is not None and where.group(0) not in head:
        head += f" at {where.group(0)}"
    return head


_CD_RE = re.compile(r"^cd (?:\"[^\"]*\"|'[^']*'|\S+)\s*(?:&&|;)\s*")


def _step_label(label: str) -> str:
    """A failed command's label at the tightest level, within 80 characters.

    Without its leading ``cd <dir> &&`` (the ledger keeps the whole command); any other
    step's label as it is.
    """
    match = re.fullmatch(r"`([^`]+)`(.*)", label)
    if match is None:
        return label
    return code(cut_words(_CD_RE.sub("", match.group(1)), 80)) + match.group(2)


def _error_text(fact: Fact, *, short: bool, level: int = 0) -> str:
    if level >= 4:  # tightest: the step, the error's distinguishing part, one line
        label, sep, line = fact.text.partition(" failed: ")
        if sep:
            label = _step_label(label)
            times = f" {fact.count}x" if fact.count > 1 else ""
            if fact.status == "resolved":
                return f"{label}: {error_key(line)} — resolved"
            return f"{label} failed{times}: {error_key(line)}"
    text = fact.text
    if short:  # under pressure the tally and pytest's "E" prefix say least
        text = _TALLY_RE.sub("", text).replace("failed: E ", "failed: ", 1)
    text = cut_words(
        text, (110 if level >= 3 and fact.status == "resolved" else 160) if short else 400
    )
    if fact.count > 1:
        text = text.replace(" failed: ", f" failed {fact.count}x: ", 1)
    if fact.status == "resolved":
        return (
            f"{text} — resolved: a later run passed"
            if len(text) > 0 and level < 3
            else f"{text} — resolved"
        )
    return text


def fact_line(fact: Fact, root: str | None = None) -> str:
    """One fact as a single digest line (what the audit pins), paths relative to ``root``."""
    if fact.kind == "file":
        return (
            f"read {code(_relative(fact.text, root))}"
            if fact.status == "read"
            else _file_line(fact, root)
        )
    if fact.kind == "command":
        return _command_line(fact, short=True)
    if fact.kind == "error":
        text = _error_text(fact, short=True)
        if fact.by == "tool":  # a tool's words, pinned as quoted data under its step
            step, sep, said = text.partition(" failed: ")
            if sep:
                return f'{step} failed, its output said: "{said}"'
        return text
    if fact.kind == "identifier":
        return code(fact.text)
    label = {
        "objective": "objective",
        "ask": "asked",
        "constraint": "constraint",
        "decision": "decided",
        "plan": "next",
        "step": "last step",
    }.get(fact.kind)
    limit = 300 if fact.kind in ("objective", "constraint") else 160
    return f"{label}: {cut_words(fact.text, limit)}" if label else cut_words(fact.text, limit)


def pin_lines(facts: Sequence[Fact], root: str | None = None, level: int = 0) -> list[str]:
    """``facts`` as digest lines, compressed the way the network-free digest compresses.

    Level 0 gives one :func:`fact_line` each; from level 1 files share a line per directory
    (at 4 a lone file joins the folder above and names go bare) and errors lose their tally
    (at 4 they keep their distinguishing part only). Prose facts keep one labelled line.
    """
    constraints = {f.text for f in facts if f.kind == "constraint"}

    def line(f: Fact) -> str:
        if f.kind == "objective" and constraints:  # its constraints have lines of their own
            rest = [x for x in _sentences(f.text) if x not in constraints]
            if rest:
                return fact_line(replace(f, text=" ".join(rest)), root)
        return fact_line(f, root)

    if level == 0:
        return [line(f) for f in facts]
    out: list[str] = []
    for f in facts:
        if f.kind == "error":
            out.append(_error_text(f, short=True, level=level))
        elif f.kind != "file" or f.status == "read":
            out.append(line(f))
    files = [f for f in facts if f.kind == "file" and f.status != "read"]
    _grouped_files(files, root, lambda _section, text, *_of: out.append(text), level=level)
    return out


def _grouped_files(
    files: Sequence[Fact], root: str | None, add: Any, verb: str = "", level: int = 1
) -> None:
    """Files grouped by directory, one line per directory with two or more.

    At the tightest level a lone file joins the group of a folder above it
    (``src/billing/ (4 files): …, exporters/csv.py``) and names go bare.
    """
    tight = level >= 4
    quote = _bare if tight else code
    by_dir: dict[str, list[Fact]] = {}
    for f in files:
        rel = _relative(f.text, root)
        by_dir.setdefault(posixpath.dirname(rel), []).append(f)
    if tight:
        for directory in [d for d, group in by_dir.items() if len(group) == 1 and d]:
            if len(by_dir.get(directory, ())) != 1:
                continue  # it has gathered files from below meanwhile
            parent = posixpath.dirname(directory)
            while parent and len(by_dir.get(parent, ())) < 2:
                up = posixpath.dirname(parent)
                parent = "" if up == parent else up  # "/" is its own dirname
            if parent:
                by_dir[parent].extend(by_dir.pop(directory))
    for directory, group in by_dir.items():
        if len(group) == 1 or not directory:
            for f in group:
                rel = quote(_relative(f.text, root))
                add(
                    "shipped" if not verb else "carryover",
                    f"{verb} {rel}" if verb else _file_line(f, root, quote),
                    f,
                )
            continue
        names = []
        for f in group:
            base = _relative(f.text, root)[len(directory) + 1 :]
            if verb:
                names.append(quote(base))
                continue
            what = "" if f.status == "edited" else f" {f.status}"
            edits = f" ×{f.count}" if f.status == "edited" and f.count > 1 else ""
            names.append(f"{quote(base)}{what}{edits}")
        label = f"{verb} " if verb else ""
        add(
            "shipped" if not verb else "carryover",
            f"{label}{quote(directory + '/')} ({len(group)} files): " + ", ".join(names),
            *group,
        )


def _bare(text: str) -> str:
    """A path or name without backticks when nothing in it can run into its neighbours."""
    if re.fullmatch(r"[\w.:/@#+-]+", text) and not text.endswith((".", ":")):
        return text
    return code(text)
