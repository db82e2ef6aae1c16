"""How ``bench_real_model.py`` scores a digest the real model wrote, and its table.

Per generation: the ledger's objective, constraints, edited files and open errors in the
digest's text (the audit's rule, ``mentions``, or a verbatim / grouped probe), and the shapes
the library should have caught in a kept digest (template lines, a second ``Pinned facts``,
tags, made-up paths left unflagged, an objective not the user's, loops, guardrails the user
never typed, constraints in no line, cut pins), each said in one line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from window_budget import AgentMessage
from window_budget.pipeline.summarize._audit import mentions
from window_budget.pipeline.summarize._prompt import DIGEST_TEMPLATE, flatten_message

KINDS = ("objective", "constraint", "file", "error")
PINS = "# Pinned facts"


def _norm(text: str) -> str:
    return " ".join(text.replace("`", " ").lower().split())


def source_text(messages: Sequence[AgentMessage]) -> str:
    """Everything the session says, tool arguments and whole outputs included."""
    return "\n".join(e for m in messages for e in flatten_message(m, tool_output_chars=10**9))


def four_kinds(ledger: Any) -> dict[str, list[Any]]:
    by: dict[str, list[Any]] = {k: [] for k in KINDS}
    for fact in ledger.facts:
        if fact.kind == "objective" or fact.kind == "constraint":
            by[fact.kind].append(fact)
        elif fact.kind == "file" and fact.status in ("created", "edited", "deleted"):
            by["file"].append(fact)
        elif fact.kind == "error" and fact.status == "open":
            by["error"].append(fact)
    return by


def verbatim(fact: Any, text: str, root: str | None) -> bool:
    """The fact's own words in the text: the objective's first sentence, the rule, the
    path (or relative to the root, or a directory and the rest on one line), the error's
    key line."""
    hay = _norm(text)
    said = fact.text
    if fact.kind == "objective":
        said = re.split(r"(?<=[.!?])\s+", said, maxsplit=1)[0]
    if _norm(said) in hay:
        return True
    if fact.kind != "file":
        return False
    rel = said[len(root) + 1 :] if root and said.startswith(root + "/") else said
    if _norm(rel) in hay:
        return True
    parts = rel.split("/")
    return any(
        _norm("/".join(parts[:i]) + "/") in _norm(line)
        and _norm("/".join(parts[i:])) in _norm(line)
        for line in text.splitlines()
        for i in range(1, len(parts))
    )


def coverage(ledger: Any, text: str) -> dict[str, dict[str, Any]]:
    """Per kind: facts, how many the text states (the audit's rule, ``mentions``, or the
    verbatim / grouped probe), and by each rule alone."""
    root = ledger.root
    out: dict[str, dict[str, Any]] = {}
    for kind, facts in four_kinds(ledger).items():
        rule = [mentions(text, f, root) for f in facts]
        probe = [verbatim(f, text, root) for f in facts]
        out[kind] = {
            "facts": len(facts),
            "stated": sum(a or b for a, b in zip(rule, probe, strict=True)),
            "audit_rule": sum(rule),
            "verbatim": sum(probe),
            "missing": [
                f.text[:120] for f, a, b in zip(facts, rule, probe, strict=True) if not (a or b)
            ],
        }
    return out


_TEMPLATE_LINES = [
    line.strip()
    for line in DIGEST_TEMPLATE.splitlines()
    if line.strip() and not line.lstrip().startswith("#")
]
_TAG_RE = re.compile(r"<\s*/?\s*(scrollback|carried-digest|think|thinking)\b|<\|im_", re.I)
_PATH_RE = re.compile(
    r"(?<![\w/.~-])(?:~?/)?(?:[\w.-]+/)+[\w.-]*\w|(?<![\w/.-])[\w-]+\.[a-z]{1,5}\b"
)
_NOTE = "not in the transcript"


def model_part(body: str) -> str:
    return body.split(PINS, 1)[0]


_RULE_RE = re.compile(r"\b(must|never|only|always|don'?t|do not|avoid|make sure)\b", re.I)
_WORD_RE = re.compile(r"[a-z][a-z0-9_.'/-]{3,}")
_FILLER = frozenset(
    {
        "user",
        "must",
        "never",
        "only",
        "always",
        "avoid",
        "make",
        "sure",
        "ensure",
        "that",
        "this",
        "with",
        "from",
        "into",
        "they",
        "their",
        "should",
        "will",
        "when",
        "which",
        "what",
        "have",
        "been",
        "does",
        "don't",
        "there",
    }
)
_MARK_RE = re.compile(r"\[… [\d,]+ chars removed by window-budget …\]")


def _section(text: str, heading: str) -> str | None:
    found = re.search(rf"^# {heading}\n(.*?)(?=^# |\Z)", text, re.S | re.M)
    return found.group(1) if found else None


def repeats(own: str) -> list[str]:
    """A degenerate loop: a line three times or more, or a phrase repeated back to back."""
    out: list[str] = []
    counts: dict[str, int] = {}
    for line in own.splitlines():
        key = _norm(line).lstrip("-* ")
        if len(key) > 20:
            counts[key] = counts.get(key, 0) + 1
    out += [f"line kept {n}x: {k[:70]!r}" for k, n in counts.items() if n >= 3]
    loop = re.search(r"(.{30,300}?)(?:\s*\1){2,}", _norm(own))
    if loop and not out:
        times = len(re.findall(re.escape(loop.group(1)), _norm(own)))
        out.append(f"phrase kept {times}x: {loop.group(1)[:70]!r}")
    return out


def uncaught(body: str, audit: Any, source: str, ledger: Any, users: str) -> list[str]:
    """Shapes the library should have caught in a kept digest, each said in one line.

    ``users`` is what the user typed (a guardrail should come from it)."""
    return _markup(body, audit, source) + _claims(body, ledger, users)


def _markup(body: str, audit: Any, source: str) -> list[str]:
    """Template text, a second pins section, tags, a made-up path left unflagged."""
    problems: list[str] = []
    own = model_part(body)
    for line in _TEMPLATE_LINES:
        if _norm(line) in _norm(body):
            problems.append(f"template line kept: {line!r}")
    pins = len(re.findall(r"pinned facts", body, re.I))
    if pins > 1:
        problems.append(f"{pins} 'Pinned facts' headings")
    for match in _TAG_RE.finditer(body):
        problems.append(f"tag kept: {match.group(0)!r}")
    flagged = set(audit.invented) if audit is not None else set()
    for line in own.splitlines():
        if _NOTE in line:
            continue
        for match in _PATH_RE.finditer(line):
            name = match.group(0).rstrip(".")
            if len(name) < 4 or name in flagged or re.fullmatch(r"[\d.]+\w?", name):
                continue
            if name not in source and name.lstrip("/") not in source:
                problems.append(f"path not in the transcript, not flagged: {name!r}")
    return problems


def _claims(body: str, ledger: Any, users: str) -> list[str]:
    """The objective, loops, rules the user never stated, constraints lost, the pins."""
    problems: list[str] = []
    root = ledger.root
    own = model_part(body)
    goal = next((f for f in ledger.facts if f.kind == "objective"), None)
    head = _section(body, "Objective")
    if goal is not None and head is None:
        problems.append("no '# Objective' section")
    elif goal is not None and head is not None and not mentions(head, goal, root):
        problems.append(f"objective section is the model's: {head.strip()[:100]!r}")
    problems += repeats(own)
    for line in (_section(own, "Guardrails") or "").splitlines():
        said = line.strip().lstrip("-* ")
        words = {w.strip(".'/-") for w in _WORD_RE.findall(_norm(said))} - _FILLER
        if _RULE_RE.search(said) and words:
            share = sum(w in _norm(users) for w in words) / len(words)
            if share < 0.6:
                problems.append(f"guardrail the user never stated ({share:.0%}): {said[:90]!r}")
    rules = ledger.of_kind("constraint")
    missing = [f for f in rules if not mentions(body, f, root) and not verbatim(f, body, root)]
    if missing:
        problems.append(f"{len(missing)} of {len(rules)} user constraints in no line of the digest")
    pinned = body.split(PINS + "\n", 1)[1] if PINS + "\n" in body else ""
    if _MARK_RE.search(pinned):
        problems.append("the pins section is cut by a marker")
    return problems


def false_flags(audit: Any, reply: str, source: str) -> list[str]:
    """Invented-name flags on a name the reply wrote whole and the transcript holds: the
    flagged form is the name cut short by the digest's own cut marker."""
    out = []
    for name in audit.invented if audit is not None else ():
        whole = re.search(re.escape(name) + r"[\w.-]+", reply)
        if whole and whole.group(0) in source:
            out.append(f"`{name}` flagged, but the reply wrote `{whole.group(0)}` (cut short)")
    return out


def copied_share(own: str, carried: str) -> float:
    lines = [_norm(x).lstrip("-* ") for x in own.splitlines() if len(x.strip()) > 12]
    prior = {_norm(x).lstrip("-* ") for x in carried.splitlines()}
    return round(sum(x in prior for x in lines) / len(lines), 2) if lines else 0.0


def _pct(a: int, b: int) -> str:
    return f"{a}/{b}" if b else "–"


def _tokens(call: dict[str, Any], which: str) -> Any:
    """A call's prompt or reply tokens: the usage the completer passed on, else llama.cpp's."""
    timing = call["timings"].get("prompt_eval_tokens" if which == "prompt" else "eval_tokens")
    value = call[f"{which}_tokens"]
    return value if value is not None else (int(timing) if timing is not None else "?")


def table(rows: list[dict[str, Any]]) -> str:
    out = [
        "| session | gen | folded | prompt / reply tokens | s | reply | checked / found / copied"
        " / pinned | invented | obj. replaced | objective / constraints / edited files / open"
        " errors in digest | uncaught |",
        "| --- | ---: | ---: | --- | ---: | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        if r.get("accepted") is None:
            out.append(f"| {r['session']} | {r['generation']} | 0 | | | {r['reason']} | | | | | |")
            continue
        calls = r["calls"]
        tok = ", ".join(f"{_tokens(c, 'prompt')} / {_tokens(c, 'reply')}" for c in calls)
        secs = sum(c["wall_s"] for c in calls)
        reply = "accepted" if r["accepted"] else f"fallback: {r['fallback_reason'][:70]}"
        a = r["audit"]
        aud = f"{a['checked']} / {a['found']} / {a['copied']} / {a['pinned']}" if a else "–"
        inv = ", ".join(f"`{n}`" for n in a["invented"]) if a and a["invented"] else "0"
        rep = ("yes" if a["objective_replaced"] else "no") if a else "–"
        cov = " · ".join(_pct(r["coverage"][k]["stated"], r["coverage"][k]["facts"]) for k in KINDS)
        unc = len(r["uncaught"])
        out.append(
            f"| {r['session']} | {r['generation']} | {r['folded']} | {tok} | {secs:.0f} | {reply}"
            f" | {aud} | {inv} | {rep} | {cov} | {unc} |"
        )
    return "\n".join(out)
