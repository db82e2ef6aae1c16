"""Paths and identifiers a model wrote that the transcript never names.

A small model writes near misses of real paths (``annotation.exs`` for ``annotation.ex``).
:func:`invented_names` lists the names in the model's own lines (see
:func:`~window_budget.pipeline.summarize._reply.own_prose`) that occur nowhere it could
have read them, :func:`mark_invented` notes them at the end of their lines, and
:func:`mask_names` blanks them so a near miss does not read as stating the real name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Final

from window_budget.pipeline.summarize._reply import own_prose

__all__ = ["INVENTED_NOTE", "invented_names", "mark_invented", "mask_names", "names_in"]

INVENTED_NOTE: Final = "not in the transcript"
"""The note :func:`mark_invented` appends: ``(not in the transcript: `name`)``."""

_TICKED_RE = re.compile(r"`([^`\n]{1,200})`")
_SPLIT_RE = re.compile(r"[\s,;()\[\]{}<>\"'*|=`]+")
_DOTTED_RE = re.compile(r"[A-Za-z_][\w-]+(?:\.[A-Za-z][\w-]*)+")
_SNAKE_RE = re.compile(r"_*[A-Za-z0-9]+(?:_+[A-Za-z0-9]+)+_*")
_LINE_NO_RE = re.compile(r"(?::\d+){1,2}$")


def _name(token: str, ticked: bool) -> str | None:
    """``token`` as a path or identifier worth checking, or None for a word of prose.

    Paths (``src/app.py``, ``/etc/x``, ``a/b/c``), file and dotted names (``config.toml``,
    ``os.path``), snake_case names, ``A::b`` and URLs count anywhere; in backticks also
    camelCase names and any single backticked word. ``and/or``, ``e.g.``, versions do not.
    """
    token = _LINE_NO_RE.sub("", token.strip(".:!?"))
    if len(token) > 2 and token[0] == token[-1] == "_" and token[1] != "_":
        token = token[1:-1].strip(".:!?")  # _italics_
    token = token.removeprefix("./")
    if len(token) < 3 or not any(c.isalpha() for c in token):
        return None
    if "://" in token or "::" in token or _SNAKE_RE.fullmatch(token):
        return token
    if "/" in token:
        tail = token.rstrip("/").rsplit("/", 1)[-1]
        pathish = token.startswith(("/", "~/", "../")) or token.count("/") >= 2
        return token if ticked or pathish or _DOTTED_RE.fullmatch(tail) else None
    if _DOTTED_RE.fullmatch(token):
        return token
    if ticked and re.search(r"[a-z][A-Z]", token):
        return token
    return None


def _names(line: str) -> list[str]:
    found: list[str] = []
    spans = _TICKED_RE.findall(line)
    for span in spans:
        tokens = _SPLIT_RE.split(span.strip())
        for token in tokens:
            name = _name(token, ticked=True)
            if name is None and len(tokens) == 1 and len(token) >= 3 and token.isalnum():
                name = token  # a backticked word is a name by the writer's own mark
            if name is not None:
                found.append(name)
    for token in _SPLIT_RE.split(_TICKED_RE.sub(" ", line)):
        name = _name(token, ticked=False)
        if name is not None:
            found.append(name)
    return found


def names_in(line: str) -> list[str]:
    """The paths and identifiers ``line`` names (backticked or path-shaped), in order."""
    return _names(line)


def _whole(name: str, text: str) -> Iterator[int]:
    """Where ``name`` stands in ``text`` as a whole name.

    ``app.py`` stands in ``src/app.py``; ``annotation.ex`` does not in ``annotation.exs``.
    """
    start = text.find(name)
    while start != -1:
        before = text[start - 1] if start else " "
        after = text[start + len(name) : start + len(name) + 1] or " "
        if not (before.isalnum() or before in "_.-") and not (after.isalnum() or after in "_-"):
            yield start
        start = text.find(name, start + 1)


def _occurs(name: str, text: str) -> bool:
    return next(_whole(name, text), None) is not None


def invented_names(text: str, sources: str, *, carried: str = "") -> tuple[str, ...]:
    """The paths and identifiers of the model's own lines that ``sources`` never names.

    ``sources`` is what the model could have read: the folded turns, the carried digest, the
    ledger. The names come in order of appearance. Matching is exact and by whole name:
    ``annotation.exs`` is not ``annotation.ex``, and a path written relative to the workspace
    (``src/app.py``) matches the absolute one.
    """
    out: dict[str, None] = {}
    for line in own_prose(text, carried).split("\n"):
        if INVENTED_NOTE in line:
            continue  # a note this module wrote
        for name in _names(line):
            if name not in out and not _occurs(name, sources):
                out[name] = None
    return tuple(out)


def mark_invented(text: str, names: Iterable[str], *, carried: str = "") -> str:
    """``text`` with a note at the end of each own line naming the invented ``names`` on it.

    The line stays as the model wrote it: a reader (the agent) sees the claim and that the
    transcript does not back it, and the audit pins the real fact the claim displaced.
    """
    wanted = tuple(names)
    if not wanted:
        return text
    own = own_prose(text, carried).split("\n")
    out: list[str] = []
    for line, mine in zip(text.split("\n"), own, strict=True):
        hits = [n for n in wanted if mine and _occurs(n, mine)] if INVENTED_NOTE not in line else []
        if hits:
            line += f" ({INVENTED_NOTE}: {', '.join(f'`{n}`' for n in hits)})"
        out.append(line)
    return "\n".join(out)


def mask_names(text: str, names: Iterable[str]) -> str:
    """``text`` with each whole occurrence of ``names`` blanked.

    So a near miss of a real path (``annotation.exs``) does not read as stating it (the real
    ``annotation.ex`` is a prefix of it).
    """
    for name in sorted(set(names), key=len, reverse=True):
        parts: list[str] = []
        pos = 0
        for start in _whole(name, text):
            if start >= pos:
                parts.append(text[pos:start] + "\u2205")
                pos = start + len(name)
        text = "".join(parts) + text[pos:]
    return text
