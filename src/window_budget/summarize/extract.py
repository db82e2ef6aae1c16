"""The network-free digest: the six headings filled from the transcript's own facts.

Used whenever no model is bound, the model call fails, or it replies with nothing. It
reads what the dropped messages themselves record — the user's asks and constraints,
the files the agent wrote, the commands it ran and how they ended, the key line of
each error, the last plan it stated, identifiers worth keeping — and merges the
digest carried in from the previous compaction instead of nesting it.

Every fact becomes one item with a priority. When the digest would exceed its token
budget, the lowest-priority items are shortened and then dropped first (oldest first
within a priority), so what survives a tight budget is the objective, the guardrails
and the open errors. Same input, same digest: nothing here depends on time, hashing
order or the environment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from window_budget.budget.estimate import count_text
from window_budget.contract import TokenCounter
from window_budget.digest import DIGEST_HEADERS, digest_body, is_digest
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    content_text,
)
from window_budget.summarize.prompt import clamp_text, cut_to_tokens

__all__ = ["build_local_digest", "classify_tool_call", "key_error_line"]

PATH_KEYS: Final = ("file_path", "path", "filePath", "filename", "file", "target_file",
                    "notebook_path", "target", "destination")
"""Tool-call argument names that hold a file path."""
COMMAND_KEYS: Final = ("command", "cmd", "script")
"""Tool-call argument names that hold a shell command."""

_WRITE_RE = re.compile(r"write|edit|create|patch|replace|insert|update|delete|remove|rename"
                       r"|move|apply|save|append|str_replace", re.IGNORECASE)
_READ_RE = re.compile(r"read|view|cat|open|glob|grep|search|list|\bls\b|find|fetch|show|head"
                      r"|tail|inspect", re.IGNORECASE)
_SHELL_RE = re.compile(r"bash|shell|terminal|exec|run|^sh$|^cmd$|powershell|console",
                       re.IGNORECASE)
_FILE_SUBCOMMANDS: Final = {"view": "read", "create": "write", "str_replace": "write",
                            "insert": "write", "undo_edit": "write", "write": "write"}

_CONSTRAINT_RE = re.compile(
    r"\b(must|never|don'?t|do not|doesn'?t|shouldn'?t|should not|can'?t|cannot|only|always"
    r"|avoid|without|keep|make sure|ensure|no more than|at most|at least|forbidden|not allowed)\b",
    re.IGNORECASE)
_RATIONALE_RE = re.compile(
    r"\b(because|since|so that|instead of|rather than|decided|chose|prefer|trade-?off"
    r"|the reason|which means|not the)\b", re.IGNORECASE)
_PLAN_RE = re.compile(
    r"\b(next|then|plan|i'?ll|i will|let me|going to|step|first|after that|todo|afterwards"
    r"|finally)\b", re.IGNORECASE)
_STEP_RE = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+(.+)$")
_SENTENCE_RE = re.compile(r"(?<=[.!?;])\s+|\n+")
_ERROR_LINE_RE = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception|Failure|Fault)\b|\bFAILED\b|\bFATAL\b|\bfatal:|\berror(?:\[\w+\])?:"
    r"|\bERROR\b|\bpanic(?:ked)?\b|\bSegmentation fault\b|\bcommand not found\b"
    r"|\bNo such file or directory\b|\bPermission denied\b"
    r"|^(?:[A-Za-z_]\w*\.)*[A-Z][A-Za-z0-9]+: \S")  # a Python exception line, whatever its name
_ERROR_TALLY_RE = re.compile(r"\b\d+ (?:failed|errors?)\b")
_TALLY_SUFFIX_RE = re.compile(r" \([^()]*\b\d+ (?:failed|errors?)\b[^()]*\)$")

_IDENT_RES: Final = (
    re.compile(r"https?://[^\s)>\]\"'`]+[^\s)>\]\"'`.,;:]"),  # URLs
    re.compile(r"`([^`\n]{2,80})`"),  # spans the writer already marked as code
    re.compile(r"(?<![\w/.-])(?:[\w.-]+/)+[\w-]+\.\w{1,8}\b"),  # relative and absolute paths
    re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d{1,6}\b"),  # ticket ids
    re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]{2,}\b"),  # env vars and constants
    re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b"),  # CamelCase names
    re.compile(r"\bv?\d+\.\d+\.\d+(?:[-.][\w.]+)?\b"),  # versions
    re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"),  # commit shas
)

# Item priorities: what survives a tight budget longest.
_P_NOTE = 56  # the reason is also on Summary.fallback_reason: guardrails matter more
_P_OBJECTIVE = 200
_P_GUARDRAIL = 90
_P_STUCK = 85
_P_LATEST_ASK = 84
_P_PLAN = 80
_P_EDITED = 75
_P_ACTIVE = 70
_P_COMMAND = 60
_P_IDENT = 55
_P_RATIONALE = 50
_P_RESOLVED = 45
_P_READ = 30
_P_PRIOR_PENALTY = 6  # carried-in items yield to fresh ones of the same kind

_SECTIONS: Final = ("note", "objective", "asks", "guardrails", "shipped", "active", "stuck",
                    "rationale", "plan", "carryover")
_HEADING_TO_SECTION: Final = {
    "objective": "objective", "latest asks": "asks", "guardrails": "guardrails",
    "shipped": "shipped", "active": "active", "stuck": "stuck", "rationale": "rationale",
    "plan": "plan", "carryover": "carryover",
}
_SECTION_PRIORITY: Final = {
    "objective": _P_OBJECTIVE, "asks": _P_LATEST_ASK, "guardrails": _P_GUARDRAIL,
    "shipped": _P_EDITED, "active": _P_ACTIVE, "stuck": _P_STUCK, "rationale": _P_RATIONALE,
    "plan": _P_PLAN, "carryover": _P_IDENT,
}
_EMPTY_MARKERS: Final = {"none", "none recorded", "none.", "n/a", "-"}
_SHORT_ITEM_CHARS = 110


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _code(text: str) -> str:
    """Render a verbatim value; a value holding a backtick is quoted instead."""
    return f"`{text}`" if "`" not in text else repr(text)


def _arg_str(args: Mapping[str, object], keys: Iterable[str]) -> str | None:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def classify_tool_call(name: str, arguments: Mapping[str, object]) -> tuple[str, str | None]:
    """What a tool call did to the workspace, from its name and arguments.

    Returns ``("write" | "read" | "touch", path)``, ``("shell", command)`` or
    ``("other", None)``. Works on the tool names agents commonly use (``Write``,
    ``Edit``, ``edit_file``, ``bash``, ``read_file``, ``str_replace_based_edit_tool``
    with its ``command`` sub-op, ...).

    >>> classify_tool_call("Edit", {"file_path": "src/app.py"})
    ('write', 'src/app.py')
    >>> classify_tool_call("bash", {"command": "pytest -q"})
    ('shell', 'pytest -q')
    """
    path = _arg_str(arguments, PATH_KEYS)
    command = _arg_str(arguments, COMMAND_KEYS)
    if path is not None:
        sub = command.lower() if command else ""
        if sub in _FILE_SUBCOMMANDS:  # an editor tool's sub-operation, not a shell command
            return _FILE_SUBCOMMANDS[sub], path
        if _WRITE_RE.search(name):
            return "write", path
        if _READ_RE.search(name):
            return "read", path
        if command is None or not _SHELL_RE.search(name):
            return "touch", path
    if command is not None:
        return "shell", command
    return "other", None


def key_error_line(text: str, *, limit: int = 240) -> str:
    r"""The line of a failed tool's output that says what went wrong, verbatim and shortened.

    Prefers the last line naming an error (a traceback ends with it, pytest's short
    summary lists it last) and appends the failure tally (``1 failed, 3 passed``) when
    the output has one.

    >>> key_error_line("Traceback (most recent call last):\n  File 'a.py'\nKeyError: 'port'")
    "KeyError: 'port'"
    """
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return "(no output)"
    key: str | None = None
    tally: str | None = None
    for line in lines:
        if _ERROR_LINE_RE.search(line) and not line.startswith(("Traceback", "File ")):
            key = line
        if _ERROR_TALLY_RE.search(line):
            tally = line.strip("= ")
    if key is None:
        # Nothing names the error: the first line says what ran, the last how it ended.
        key = lines[0] if len(lines) == 1 else f"{lines[0]} … {lines[-1]}"
    out = key if tally is None or tally in key else f"{key} ({tally})"
    return clamp_text(out, limit)


@dataclass(slots=True)
class _Item:
    section: str
    priority: int
    seq: int
    text: str
    key: str
    short: str | None = None
    """What the item shrinks to under pressure; default: head and tail of ``text``."""


@dataclass(slots=True)
class _Facts:
    asks: list[str] = field(default_factory=list)
    constraints: dict[str, str] = field(default_factory=dict)
    edited: dict[str, list[int]] = field(default_factory=dict)  # path -> [edits, failed]
    read: dict[str, int] = field(default_factory=dict)
    commands: dict[str, list[str]] = field(default_factory=dict)  # cmd -> statuses
    failures: dict[str, list[tuple[int, str, str]]] = field(default_factory=dict)
    """target -> (message index, label, key error line) per failed run."""
    rationale: dict[str, str] = field(default_factory=dict)
    plan: str | None = None
    last_action: str | None = None
    idents: dict[str, list[int]] = field(default_factory=dict)  # ident -> [from_user, count]
    tool_calls: int = 0
    failed_calls: int = 0
    carried: list[str] = field(default_factory=list)


def _add_idents(facts: _Facts, text: str, *, from_user: bool) -> None:
    for pattern in _IDENT_RES:
        for match in pattern.finditer(text):
            value = (match.group(1) if pattern.groups else match.group(0)).strip()
            if len(value) < 3 or value.lower() in _EMPTY_MARKERS:
                continue
            entry = facts.idents.setdefault(value, [0, 0])
            entry[0] |= int(from_user)
            entry[1] += 1


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_RE.split(text) if s and s.strip()]


def _collect(messages: Sequence[AgentMessage]) -> _Facts:
    facts = _Facts()
    results: dict[str, ToolResultMessage] = {}
    for msg in messages:
        if isinstance(msg, ToolResultMessage):
            results[msg.tool_call_id] = msg
    for index, msg in enumerate(messages):
        if is_digest(msg) or isinstance(msg, BranchSummaryMessage):
            body = digest_body(msg)
            if body:
                facts.carried.append(body)
            continue
        if isinstance(msg, UserMessage):
            text = content_text(msg.content).strip()
            if not text:
                continue
            facts.asks.append(_one_line(text))
            for sentence in _sentences(text):
                if _CONSTRAINT_RE.search(sentence):
                    line = clamp_text(_one_line(sentence), 240)
                    facts.constraints.setdefault(line.lower(), line)
            _add_idents(facts, text, from_user=True)
        elif isinstance(msg, AssistantMessage):
            _collect_assistant(facts, msg, results, index)
        elif isinstance(msg, BashExecutionMessage):
            command = msg.command.strip()
            if not command:
                continue
            failed = msg.cancelled or msg.exit_code not in (0, None)
            status = "cancelled" if msg.cancelled else (
                f"exit {msg.exit_code}" if failed else "ok")
            facts.commands.setdefault(command, []).append(status)
            facts.last_action = f"user ran {_code(clamp_text(command, 160))} ({status})"
            if failed and not msg.cancelled:
                facts.failures.setdefault(command, []).append(
                    (index, f"{_code(clamp_text(command, 160))} ({status})",
                     key_error_line(msg.output)))
    return facts


def _collect_assistant(facts: _Facts, msg: AssistantMessage,
                       results: Mapping[str, ToolResultMessage], index: int) -> None:
    blocks = (TextBlock(msg.content),) if isinstance(msg.content, str) else msg.content
    for block in blocks:
        if isinstance(block, TextBlock | ThinkingBlock):
            text = block.text if isinstance(block, TextBlock) else block.thinking
            text = text.strip()
            if not text:
                continue
            stated = _PLAN_RE.search(text) or any(_STEP_RE.match(ln) for ln in text.splitlines())
            if stated or (isinstance(block, TextBlock) and facts.plan is None):
                facts.plan = text
            for sentence in _sentences(text):
                if _RATIONALE_RE.search(sentence):
                    line = clamp_text(_one_line(sentence), 240)
                    facts.rationale.pop(line.lower(), None)  # re-insert: most recent last
                    facts.rationale[line.lower()] = line
            if isinstance(block, TextBlock):
                _add_idents(facts, text, from_user=False)
        elif isinstance(block, ToolCallBlock):
            _collect_call(facts, block, results.get(block.id), index)


def _collect_call(facts: _Facts, call: ToolCallBlock, result: ToolResultMessage | None,
                  index: int) -> None:
    facts.tool_calls += 1
    kind, value = classify_tool_call(call.name, call.arguments)
    failed = result is not None and result.is_error
    facts.failed_calls += int(failed)
    status = "no result" if result is None else ("failed" if failed else "ok")
    if kind in ("write", "touch") and value is not None:
        if kind == "write" or value in facts.edited:
            entry = facts.edited.setdefault(value, [0, 0])
            entry[0] += 1
            entry[1] = int(failed)
        else:
            facts.read[value] = facts.read.get(value, 0) + 1
    elif kind == "read" and value is not None:
        facts.read[value] = facts.read.get(value, 0) + 1
    elif kind == "shell" and value is not None:
        facts.commands.setdefault(value, []).append(status)
    target = value if value is not None else _one_line(
        json.dumps(dict(call.arguments), ensure_ascii=False, sort_keys=True, default=repr)
    ) if call.arguments else ""
    described = f"{call.name} {_code(clamp_text(target, 160))}" if target else call.name
    facts.last_action = f"{described} ({status})"
    if failed and result is not None:
        line = key_error_line(content_text(result.content))
        shell = kind == "shell" and value is not None
        label = _code(clamp_text(target, 160)) if shell else described
        facts.failures.setdefault(target if shell else f"{call.name}\x00{target}", []).append(
            (index, label, line))


def _short_failure(label: str, line: str) -> str:
    """A failure in few characters: the error line matters more than the command."""
    line = _TALLY_SUFFIX_RE.sub("", line)
    return f"{clamp_text(label, 40)}: {clamp_text(line, 120)}"


def _command_status(statuses: Sequence[str]) -> str:
    last = statuses[-1]
    fails = sum(1 for s in statuses if s not in ("ok", "no result"))
    runs = f" ({len(statuses)} runs)" if len(statuses) > 1 else ""
    if last == "ok":
        return f"passed{runs}" if not fails else f"failed {fails}x, then passed{runs}"
    if last == "no result":
        return "no result recorded"
    return f"{'failed' if last == 'failed' else last}{runs}"


def _parse_prior(text: str) -> dict[str, list[str]]:
    """The items of a carried digest, by section; text outside the template goes to carryover."""
    out: dict[str, list[str]] = {s: [] for s in _SECTIONS}
    section: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line in DIGEST_HEADERS.values():
            continue
        heading = re.match(r"^#{1,4}\s+(.+?)\s*:?$", line)
        if heading:
            section = _HEADING_TO_SECTION.get(heading.group(1).strip().lower())
            if heading.group(1).strip().lower() == "status":
                section = None
            continue
        if line.lower().rstrip(":") == "latest asks":
            section = "asks"
            continue
        if line.startswith("_") and line.endswith("_") and "digest" in line.lower():
            continue  # the previous network-free digest's own note line
        line = line.removeprefix("\\")
        step = _STEP_RE.match(line)
        item = step.group(1).strip() if step else line
        if item.lower() in _EMPTY_MARKERS or not item:
            continue
        if item.startswith("[… ") and item.endswith("…]"):
            continue  # a shortening marker, not a fact
        out[section or "carryover"].append(clamp_text(item, 400))
    return out


def _item_key(text: str) -> str:
    match = re.search(r"`([^`]+)`", text)
    return (match.group(1) if match else _one_line(text)).lower()


def _build_items(facts: _Facts, prior: dict[str, list[str]] | None) -> list[_Item]:
    items: list[_Item] = []
    seq = 0

    def add(section: str, priority: int, text: str, key: str | None = None,
            short: str | None = None) -> None:
        nonlocal seq
        seq += 1
        items.append(_Item(section, priority, seq, text, key or _item_key(text), short))

    asks = facts.asks
    prior_objective = prior["objective"] if prior else []
    if prior_objective:
        add("objective", _P_OBJECTIVE, " ".join(prior_objective))
        new_asks = asks
    else:
        if asks:
            add("objective", _P_OBJECTIVE, clamp_text(asks[0], 600))
        new_asks = asks[1:]
    if prior:
        for section in _SECTIONS[2:]:
            for text in prior[section]:
                add(section, _SECTION_PRIORITY[section] - _P_PRIOR_PENALTY, text)
    seen_asks: set[str] = set()
    recent = [a for a in reversed(new_asks) if not (a in seen_asks or seen_asks.add(a))][:4]  # type: ignore[func-returns-value]
    for ask in reversed(recent):
        add("asks", _P_LATEST_ASK, clamp_text(ask, 300), ask.lower())
    for line in facts.constraints.values():
        add("guardrails", _P_GUARDRAIL, line)
    for path, (edits, failed) in facts.edited.items():
        times = f" ({edits} edits)" if edits > 1 else ""
        note = ", last edit failed" if failed else ""
        add("shipped", _P_EDITED, f"edited {_code(path)}{times}{note}", path.lower())
    if facts.last_action:
        add("active", _P_ACTIVE, f"last step: {facts.last_action}", "\x00last-step")
    resolved_cmds = {cmd for cmd, sts in facts.commands.items() if sts[-1] == "ok"}
    for target, runs in sorted(facts.failures.items(), key=lambda kv: kv[1][-1][0]):
        _index, label, line = runs[-1]
        resolved = target in resolved_cmds
        times = f" {len(runs)}x" if len(runs) > 1 else ""
        shape = re.sub(r"\d+", "#", line)  # the same error at another line number is no news
        earlier = [old for _i, _l, old in runs[:-1] if re.sub(r"\d+", "#", old) != shape]
        for old in list(dict.fromkeys(earlier))[-2:]:  # different, earlier errors: history
                add("stuck", _P_RESOLVED - 2, f"earlier, {label} failed: {old}",
                    f"\x00fail\x00{target}\x00{old}", _short_failure(label, old))
        add("stuck", _P_RESOLVED if resolved else _P_STUCK,
            f"{label} failed{times}: {line}" + (" — resolved: a later run passed"
                                                  if resolved else ""),
            f"\x00fail\x00{target}", _short_failure(label, line))
    for line in list(facts.rationale.values())[-8:]:
        add("rationale", _P_RATIONALE, line)
    if facts.plan:
        steps = [m.group(1) for ln in facts.plan.splitlines() if (m := _STEP_RE.match(ln))]
        if len(steps) >= 2:
            for step in steps[:10]:
                add("plan", _P_PLAN, clamp_text(_one_line(step), 240))
        else:
            add("plan", _P_PLAN, clamp_text(_one_line(facts.plan), 500), "\x00plan")
    for cmd, statuses in facts.commands.items():
        add("carryover", _P_COMMAND,
            f"ran {_code(clamp_text(_one_line(cmd), 200))} — {_command_status(statuses)}",
            cmd.lower())
    shown = {p.lower() for p in facts.edited} | {c.lower() for c in facts.commands}
    idents = [(v, meta) for v, meta in facts.idents.items() if v.lower() not in shown]
    # Names the user wrote first, then the agent's most repeated; ties keep first appearance.
    order = sorted(range(len(idents)), key=lambda i: (-idents[i][1][0], -idents[i][1][1], i))
    for i in sorted(order[:40]):
        value, meta = idents[i]
        add("carryover", _P_IDENT + meta[0], _code(value), value.lower())
    for path, _n in facts.read.items():
        if path.lower() not in shown:
            add("carryover", _P_READ, f"read {_code(path)}", path.lower())
    return _dedupe(items)


def _dedupe(items: list[_Item]) -> list[_Item]:
    """One item per (section, key): a fresh item replaces the carried one it repeats."""
    best: dict[tuple[str, str], _Item] = {}
    for item in items:
        slot = (item.section, item.key)
        if slot not in best or item.priority >= best[slot].priority:
            best[slot] = item
    winners = {id(v) for v in best.values()}
    return [i for i in items if id(i) in winners]


def _render(items: Sequence[_Item]) -> str:
    by: dict[str, list[str]] = {s: [] for s in _SECTIONS}
    for item in sorted(items, key=lambda i: i.seq):
        by[item.section].append(item.text)

    def bullets(section: str) -> str:
        lines = by[section]
        return "\n".join(f"- {x}" for x in lines) if lines else "none"

    objective = " ".join(by["objective"]) or "none recorded"
    if objective.startswith("#"):  # a user's markdown title must not read as a digest heading
        objective = "\\" + objective
    if by["asks"]:
        objective += "\nLatest asks:\n" + bullets("asks")
    parts = [
        *by["note"],
        f"# Objective\n{objective}",
        f"# Guardrails\n{bullets('guardrails')}",
        f"# Status\n## Shipped\n{bullets('shipped')}\n## Active\n{bullets('active')}"
        f"\n## Stuck\n{bullets('stuck')}",
        f"# Rationale\n{bullets('rationale')}",
        f"# Plan\n{bullets('plan')}",
        f"# Carryover\n{bullets('carryover')}",
    ]
    return "\n\n".join(parts)


def _fit(items: list[_Item], max_tokens: int, counter: TokenCounter | None) -> str:
    """Render within ``max_tokens``: shorten long items, then drop items, lowest priority first.

    Shortening every long item before dropping any keeps more facts: a shortened item
    keeps its head and tail, where paths and error names sit.
    """
    cost = {id(i): count_text(f"- {i.text}\n", counter) for i in items}
    total = count_text(_render([]), counter) + sum(cost.values())
    alive = list(items)
    by_priority = sorted(items, key=lambda i: (i.priority, i.seq))
    steps = [("shorten", i) for i in by_priority
             if len(i.short or i.text) < len(i.text) or len(i.text) > _SHORT_ITEM_CHARS]
    steps += [("drop", i) for i in by_priority if i.section != "objective"]
    pos = 0
    while True:
        while total > max_tokens and pos < len(steps):
            action, item = steps[pos]
            pos += 1
            if action == "shorten":
                short = item.short if item.short is not None else item.text
                item.text = min(short, clamp_text(short, _SHORT_ITEM_CHARS), key=len)
                new_cost = count_text(f"- {item.text}\n", counter)
                total += new_cost - cost[id(item)]
                cost[id(item)] = new_cost
            else:
                alive.remove(item)
                total -= cost[id(item)]
        text = _render(alive)
        actual = count_text(text, counter)
        if actual <= max_tokens:
            return text
        if pos >= len(steps):
            break
        total = actual  # the per-item sum underestimated: keep going from here
    # Only the skeleton and the objective are left and they still do not fit: shorten the
    # objective further, and only then cut into the headings.
    for item in alive:
        if item.section == "objective":
            item.text = clamp_text(item.text, 40)
    text = _render(alive)
    return cut_to_tokens(text, max_tokens, counter)


def build_local_digest(messages: Sequence[AgentMessage], *, prior_digest: str | None = None,
                       reason: str = "no model bound", max_tokens: int = 2000,
                       counter: TokenCounter | None = None) -> str:
    r"""Fill the digest template from ``messages`` without a model; returns the body text.

    The header is not included (the caller stamps it). ``prior_digest`` (and any digest
    found among ``messages``) is parsed by heading and merged item by item, so digests
    never nest and a chain of compactions stays within ``max_tokens``. The result never
    exceeds ``max_tokens`` as measured by ``counter`` (or the 3.6-characters heuristic).

    >>> from window_budget.messages import UserMessage
    >>> body = build_local_digest([UserMessage("Port it to TOML. Never touch migrations/.")])
    >>> "# Guardrails\n- Never touch migrations/." in body
    True
    """
    facts = _collect(messages)
    carried = [prior_digest.strip()] if prior_digest and prior_digest.strip() else []
    carried.extend(facts.carried)
    prior: dict[str, list[str]] | None = None
    if carried:
        prior = {s: [] for s in _SECTIONS}
        for body in carried:
            for section, lines in _parse_prior(body).items():
                prior[section].extend(lines)
        if len(carried) > 1:  # two carried objectives: the oldest is the session's
            prior["objective"] = prior["objective"][:1]
    failed = f", {facts.failed_calls} failed" if facts.failed_calls else ""
    note = (f"_Network-free digest ({clamp_text(_one_line(reason), 100)}): "
            f"{len(messages)} messages condensed, {facts.tool_calls} tool calls{failed}._")
    items = [_Item("note", _P_NOTE, 0, note, "\x00note"), *_build_items(facts, prior)]
    return _fit(items, max_tokens, counter)
