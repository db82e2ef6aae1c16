"""The fact ledger: typed facts taken from the folded messages, carried from digest to digest.

A digest is prose for the model *and* a ledger. Each :class:`Fact` has a kind (the
objective, an ask, a constraint, a file, a command, an error, a decision, an
identifier, a plan item, the last step), a stable key, where it was first and last
seen, how often, and a pointer to its source message in the archive, so a user or a
tool can fetch the original.

The ledger rides with the digest (:attr:`DigestMessage.facts`, as :func:`ledger_to_json`)
and the next compaction merges it with the new facts: :func:`extract_facts` starts from
the carried ledger and folds the new messages into it. Rendering (:func:`render_ledger`)
fills the six headings within a token budget and compresses before it evicts: repeated
and uninformative commands collapse into one line, files are grouped by directory,
long prose is cut at a word boundary; only then are facts left out, lowest priority and
oldest first, never the objective or the user's constraints, and never the last few of
a kind, so no kind disappears wholesale. A path is never cut in the middle: it is
shortened by dropping the workspace root the transcript reveals, then by grouping.

Same input, same ledger, same text: nothing depends on time, hashing or the environment.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, TypeAlias, get_args

from window_budget.budget._estimate import count_text
from window_budget.budget._groups import ToolGroups
from window_budget.contract import TokenCounter
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    DigestMessage,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    content_text,
)

__all__ = [
    "FACT_KINDS",
    "LEDGER_FORMAT",
    "Fact",
    "FactKind",
    "FactLedger",
    "extract_facts",
    "fact_line",
    "ledger_from_json",
    "ledger_from_text",
    "ledger_of",
    "ledger_to_json",
    "merge_ledgers",
    "pin_lines",
    "pin_priority",
    "render_ledger",
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
LEDGER_FORMAT: Final = "window-budget/facts/1"
"""The ``format`` value inside a serialized ledger; a parser refuses any other."""
MAX_FACTS: Final = 800
"""A ledger keeps at most this many facts (lowest priority, oldest first leave)."""


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


@dataclass(frozen=True, slots=True)
class FactLedger:
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

    def _repr_html_(self) -> str:
        from window_budget.tools.display import ledger_html  # lazy: only notebooks need it

        return ledger_html(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        from window_budget.tools.display import ledger_text

        printer.text(ledger_text(self))


# ------------------------------------------------------------------ patterns

_CONSTRAINT_RE = re.compile(
    r"\b(must|never|don'?t|do not|doesn'?t|shouldn'?t|should not|can'?t|cannot|only|always"
    r"|avoid|without|keep|make sure|ensure|no more than|at most|at least|forbidden"
    r"|not allowed)\b",
    re.IGNORECASE,
)
_DECISION_RE = re.compile(
    r"\b(decided|decide to|chose|choosing|going with|went with|switched|switching to|renamed"
    r"|opted|settled on|replaced|instead of|rather than|because|so that|the reason|trade-?off"
    r"|in favou?r of|we'll use|i'll use|will use|moved \S+ to|extracted|kept \S+ as)\b",
    re.IGNORECASE,
)
_MUSING_RE = re.compile(
    r"^(let me|let's|now let me|now i|i'll (check|look|read|run|see|start|open|try)"
    r"|i need to|i should|hmm|ok(ay)?[,.]|great|perfect|good|wait|maybe|perhaps|i wonder"
    r"|looking at|first,? let)",
    re.IGNORECASE,
)
_PLAN_LINE_RE = re.compile(r"^\s*(?:\d+[.)]|[-*•]|- \[ \])\s+(.+)$")
_PLAN_CUE_RE = re.compile(
    r"\b(plan|next steps?|todo|remaining|then i'll|afterwards)\b", re.IGNORECASE
)
_SENTENCE_RE = re.compile(r"(?<=[.!?;])\s+|\n+")
_INJECTED_RE = re.compile(
    r"^\s*(?:\[Request interrupted by user[^\]]*\]|<task-notification>|<command-name>"
    r"|<command-message>|<command-args>|<local-command-std(?:out|err)>|<system-reminder>"
    r"|<user-prompt-submit-hook>|<bash-(?:input|stdout|stderr)>"
    r"|Caveat: The messages below were generated by the user while running local commands"
    r"|\[Image #?\d*\]\s*$|This session is being continued from a previous conversation)",
    re.IGNORECASE,
)
_REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL | re.IGNORECASE)

_IDENT_RES: Final = (
    re.compile(r"https?://[^\s)>\]\"'`]+[^\s)>\]\"'`.,;:]"),  # URLs
    re.compile(r"`([^`\n]{2,120})`"),  # spans the writer already marked as code
    re.compile(r"(?<![\w/.-])(?:[\w.-]+/)+[\w-]+\.\w{1,8}\b"),  # relative and absolute paths
    re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d{1,6}\b"),  # ticket ids
    re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]{2,}\b"),  # env vars and constants
    re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b"),  # CamelCase names
    re.compile(r"\b[a-z_][a-z0-9]*(?:_[a-z0-9]+)+\(\)"),  # snake_case() function names
    re.compile(r"\bv?\d+\.\d+\.\d+(?:[-.][\w.]+)?\b"),  # versions
    re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"),  # commit shas
)

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
_NEVER_EVICTED: Final = frozenset({"objective", "constraint"})
_FLOOR = 2  # the newest facts of each kind leave last


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


# ------------------------------------------------------------------ text helpers


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (every line break included) as one space."""
    return " ".join(text.split())


def cut_words(text: str, limit: int) -> str:
    """``text`` within about ``limit`` characters, cut at a word boundary with ``…``.

    A word (a path, a URL) is never cut in the middle unless it alone is longer than
    twice the limit.
    """
    if limit <= 0 or len(text) <= limit:
        return text
    space = text.rfind(" ", 0, limit)
    if space > limit // 3:
        return text[:space].rstrip(" ,;:") + " …"
    end = text.find(" ", limit)
    if end == -1:
        end = len(text)
    if end <= 4 * limit:  # keep the word whole: it may be a path
        return text[:end] + (" …" if end < len(text) else "")
    return text[: 4 * limit] + "…"  # one "word" that long is not a path


def code(text: str) -> str:
    """A verbatim value for the digest: in backticks, or quoted when it holds one."""
    return f"`{text}`" if "`" not in text else repr(text)


def workspace_root(paths: Iterable[str]) -> str | None:
    """The deepest directory every absolute path shares (at least two levels deep)."""
    absolute = sorted({p for p in paths if p.startswith("/")})
    if not absolute:
        return None
    parts = [p.split("/")[1:-1] for p in absolute]  # directories only
    common: list[str] = []
    for level in zip(*parts, strict=False):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    # The project, not the deepest shared folder: stop before a source-tree folder, so
    # every path keeps the part that tells it apart (``src/billing/x.py``).
    for i, part in enumerate(common):
        if part in _TREE_DIRS and i >= 2:
            common = common[:i]
            break
    if len(common) < 2:
        return None
    return "/" + "/".join(common)


_TREE_DIRS: Final = frozenset(
    {
        "src",
        "lib",
        "tests",
        "test",
        "app",
        "apps",
        "pkg",
        "packages",
        "docs",
        "cmd",
        "internal",
        "migrations",
        "scripts",
        "include",
    }
)


def _relative(path: str, root: str | None) -> str:
    if root and path.startswith(root + "/"):
        return path[len(root) + 1 :]
    return path


def _norm_key(text: str) -> str:
    return one_line(text).lower().rstrip(".!;: ")


def _user_text(message: UserMessage) -> str:
    text = _REMINDER_RE.sub("", content_text(message.content)).strip()
    if not text or _INJECTED_RE.match(text):
        return ""
    return text


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_RE.split(text) if s and s.strip()]


# ------------------------------------------------------------------ extraction


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
    ) -> Fact:
        # One line each: a line break inside a fact must not start a heading in the digest.
        text, key = one_line(text), " ".join(key.split())
        full = f"{kind}\x00{key}"
        old = self.facts.get(full)
        if old is None:
            fact = Fact(kind, key, text, self.pos, self.pos, bump, self.pos, status, detail)
        else:
            fact = replace(
                old,
                text=text if replace_text else old.text,
                last=self.pos,
                count=old.count + bump,
                source=self.pos,
                status=status or old.status,
                detail=detail or old.detail,
            )
        self.facts[full] = fact
        return fact

    def get(self, kind: FactKind, key: str) -> Fact | None:
        return self.facts.get(f"{kind}\x00{key}")

    def set(self, fact: Fact) -> None:
        self.facts[f"{fact.kind}\x00{fact.key}"] = fact


def _add_idents(b: _Builder, text: str, *, by_user: bool) -> None:
    for pattern in _IDENT_RES:
        for match in pattern.finditer(text):
            value = one_line(match.group(1) if pattern.groups else match.group(0))
            if len(value) < 3 or value.lower() in ("none", "n/a"):
                continue
            old = b.get("identifier", value)
            status = "user" if by_user or (old is not None and old.status == "user") else "agent"
            b.put("identifier", value, value, status=status)


def _tool_target(call: ToolCallBlock) -> tuple[str, str | None]:
    from window_budget.pipeline.summarize._extract import classify_tool_call

    kind, value = classify_tool_call(call.name, call.arguments)
    return kind, value


def _file_op(tool: str, kind: str, existing: Fact | None) -> str:
    name = tool.lower()
    if re.search(r"delete|remove|\brm\b|unlink", name):
        return "deleted"
    if kind == "read":
        return existing.status if existing is not None else "read"
    if re.search(r"^write$|create|new_file|write_file", name) and (
        existing is None or existing.status in ("read", "deleted")
    ):
        return "created"
    if existing is not None and existing.status == "created":
        return "created"
    return "edited"


def _error_line(text: str) -> str:
    from window_budget.pipeline.summarize._extract import key_error_line

    return cut_words(one_line(key_error_line(text, limit=0)), 300)


def _same_step(failed: str, passed: str) -> bool:
    """True when ``passed`` re-ran ``failed``: the same words, give or take trailing flags."""
    if failed == passed:
        return True
    a, b = failed.split(), passed.split()
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return (
        len(short) >= 2
        and long_[: len(short)] == short
        and all(w.startswith("-") for w in long_[len(short) :])
    )


def _resolve(b: _Builder, target: str, shell: bool) -> None:
    """A step that succeeded resolves the open errors of the same step."""
    for full, fact in list(b.facts.items()):
        if (
            fact.kind == "error"
            and fact.status == "open"
            and (fact.detail == target or (shell and _same_step(fact.detail, target)))
        ):
            b.facts[full] = replace(fact, status="resolved", resolved_by=b.pos)


def _fail(b: _Builder, target: str, label: str, output: str) -> None:
    line = _error_line(output)
    shape = re.sub(r"\d+", "#", line)  # the same error at another line number is no news
    b.put("error", f"{target}\x00{shape}", f"{label} failed: {line}", status="open", detail=target)


def _on_user(b: _Builder, msg: UserMessage) -> None:
    text = _user_text(msg)
    if not text:
        return
    if not any(f.kind == "objective" for f in b.facts.values()):
        b.put("objective", "objective", one_line(text))
    else:
        b.put("ask", _norm_key(text), one_line(text))
    for sentence in _sentences(text):
        if _CONSTRAINT_RE.search(sentence):
            b.put("constraint", _norm_key(sentence), one_line(sentence), replace_text=False)
    _add_idents(b, text, by_user=True)


def _on_assistant(
    b: _Builder, msg: AssistantMessage, results: Mapping[str, ToolResultMessage]
) -> None:
    blocks = (TextBlock(msg.content),) if isinstance(msg.content, str) else msg.content
    for block in blocks:
        if isinstance(block, TextBlock):
            _on_prose(b, block.text)
        elif isinstance(block, ToolCallBlock):
            _on_call(b, block, results.get(block.id))


def _on_prose(b: _Builder, text: str) -> None:
    text = text.strip()
    if not text:
        return
    steps = [m.group(1).strip() for ln in text.splitlines() if (m := _PLAN_LINE_RE.match(ln))]
    if len(steps) >= 2 and (_PLAN_CUE_RE.search(text) or len(steps) >= 3):
        # Earlier plans stay, marked earlier (they leave first under pressure): a prose plan
        # does not say which of the old steps are done. A todo list does, see _on_todos.
        for full, fact in list(b.facts.items()):
            if fact.kind == "plan":
                b.facts[full] = replace(fact, status="earlier")
        for step in steps[:12]:
            b.put("plan", _norm_key(step), one_line(step), status="open")
    for sentence in _sentences(text):
        if _PLAN_LINE_RE.match(sentence) and len(steps) >= 2:
            continue
        if _MUSING_RE.match(sentence) or sentence.endswith("?"):
            continue  # thinking aloud: neither a decision nor a source of names
        if _DECISION_RE.search(sentence) and len(sentence) >= 20:
            b.put("decision", _norm_key(sentence), one_line(sentence))
        _add_idents(b, sentence, by_user=False)


def _on_call(b: _Builder, call: ToolCallBlock, result: ToolResultMessage | None) -> None:
    kind, value = _tool_target(call)
    failed = result is not None and result.is_error
    status = "no result" if result is None else ("failed" if failed else "ok")
    if call.name.lower() in ("todowrite", "todo_write", "update_plan"):
        _on_todos(b, call.arguments)
        return
    if kind in ("write", "touch", "read") and value is not None:
        existing = b.get("file", value)
        op = _file_op(call.name, kind, existing)
        if kind == "touch" and existing is None:
            op = "read"
        if existing is not None and existing.status == "read" and op != "read":
            b.set(replace(existing, count=0))  # reads do not count as edits
        bump = 0 if op == "read" and existing is not None and existing.status != "read" else 1
        note = "last edit failed" if failed and op != "read" else ""
        b.put("file", value, value, status=op, detail=note, bump=bump)
        b.put("step", "last", f"{call.name} {code(value)} ({status})")
        target = f"{call.name}\x00{value}"
        if failed and result is not None:
            _fail(b, target, f"{call.name} {code(value)}", content_text(result.content))
        elif not failed:
            _resolve(b, target, shell=False)
        return
    if kind == "shell" and value is not None:
        _on_command(b, value, status, None if result is None else content_text(result.content))
        return
    b.put("step", "last", f"{one_line(call.name)} ({status})")
    if failed and result is not None:
        _fail(b, call.name, one_line(call.name), content_text(result.content))


def _on_todos(b: _Builder, arguments: Mapping[str, object]) -> None:
    todos = arguments.get("todos") or arguments.get("plan")
    if not isinstance(todos, list):
        return
    for full, fact in list(b.facts.items()):
        if fact.kind == "plan":
            del b.facts[full]
    for item in todos[:20]:
        if not isinstance(item, Mapping):
            continue
        text = item.get("content") or item.get("step") or item.get("text")
        state = str(item.get("status", ""))
        if isinstance(text, str) and text.strip() and state != "completed":
            b.put("plan", _norm_key(text), one_line(text), status=state)


def _on_command(b: _Builder, command: str, status: str, output: str | None) -> None:
    cmd = one_line(command)
    old = b.get("command", cmd)
    fails = int(old.detail or 0) if old is not None and old.detail.isdigit() else 0
    failed = status not in ("ok", "no result")
    b.put("command", cmd, cmd, status=status, detail=str(fails + int(failed)))
    b.put("step", "last", f"ran {code(cut_words(cmd, 160))} ({status})")
    if failed and output is not None and status != "cancelled":
        shown = code(cut_words(cmd, 160))
        _fail(b, cmd, f"{shown} ({status})" if status.startswith("exit") else shown, output)
    elif status == "ok":
        _resolve(b, cmd, shell=True)


def _carried(message: AgentMessage) -> FactLedger | None:
    """The ledger a digest in the transcript carries (its own, or read from its text)."""
    if isinstance(message, DigestMessage):
        if message.facts is not None:
            try:
                return ledger_from_json(message.facts)
            except ValueError:
                pass  # a damaged ledger: fall back to what the text says
        from window_budget.digest import digest_body

        return ledger_from_text(digest_body(message) or "")
    if isinstance(message, CompactionSummaryMessage | BranchSummaryMessage):
        return ledger_from_text(message.summary)
    return None


def extract_facts(
    messages: Sequence[AgentMessage],
    *,
    prior: FactLedger | None = None,
) -> FactLedger:
    """Fold ``messages`` into ``prior`` (or a new ledger); returns the merged ledger.

    Digests among ``messages`` (a :class:`DigestMessage` with its ledger, or a summary
    another tool wrote) are merged, not re-read as turns, and take no archive position;
    every other message takes the next one.

    >>> from window_budget.messages import UserMessage
    >>> ledger = extract_facts([UserMessage("Port it to TOML. Never touch migrations/.")])
    >>> [(f.kind, f.text) for f in ledger.facts][:2]
    [('objective', 'Port it to TOML. Never touch migrations/.'),
     ('constraint', 'Never touch migrations/.')]
    """
    base = prior or FactLedger()
    b = _Builder({f"{f.kind}\x00{f.key}": f for f in base.facts}, base.archived)
    groups = ToolGroups(messages)
    generations = base.generations
    for j, msg in enumerate(messages):
        carried = _carried(msg)
        if carried is not None:
            merged = merge_ledgers(FactLedger(tuple(b.facts.values()), b.pos, generations), carried)
            b.facts = {f"{f.kind}\x00{f.key}": f for f in merged.facts}
            generations = merged.generations
            continue
        match msg:
            case UserMessage():
                _on_user(b, msg)
            case AssistantMessage():
                _on_assistant(b, msg, _answers(messages, groups.results(j)))
            case BashExecutionMessage():
                _on_shell(b, msg)
        b.pos += 1
    return _capped(FactLedger(tuple(b.facts.values()), b.pos, generations + 1))


def _answers(
    messages: Sequence[AgentMessage], indexes: Iterable[int]
) -> dict[str, ToolResultMessage]:
    """The results at ``indexes`` by call id (a retried call: its last result)."""
    out: dict[str, ToolResultMessage] = {}
    for r in indexes:
        result = messages[r]
        if isinstance(result, ToolResultMessage):
            out[result.tool_call_id] = result
    return out


def _on_shell(b: _Builder, msg: BashExecutionMessage) -> None:
    command = msg.command.strip()
    if command:
        status = (
            "cancelled"
            if msg.cancelled
            else (f"exit {msg.exit_code}" if msg.exit_code not in (0, None) else "ok")
        )
        _on_command(b, command, status, msg.output)


def merge_ledgers(old: FactLedger, new: FactLedger) -> FactLedger:
    """Merge two ledgers deterministically: one fact per (kind, key), ``old``'s objective wins.

    Counts add, first/last widen, the newer text and status win (an error one side
    resolved stays resolved).
    """
    out: dict[str, Fact] = {f"{f.kind}\x00{f.key}": f for f in old.facts}
    has_objective = any(f.kind == "objective" for f in old.facts)
    for fact in new.facts:
        if fact.kind == "objective" and has_objective:
            continue
        slot = f"{fact.kind}\x00{fact.key}"
        mine = out.get(slot)
        if mine is None:
            out[slot] = fact
            continue
        resolved = "resolved" if "resolved" in (mine.status, fact.status) else fact.status
        out[slot] = replace(
            fact,
            first=min(mine.first, fact.first)
            if mine.first >= 0 <= fact.first
            else max(mine.first, fact.first),
            last=max(mine.last, fact.last),
            count=mine.count + fact.count,
            status=resolved or mine.status,
            resolved_by=fact.resolved_by if fact.resolved_by is not None else mine.resolved_by,
        )
    return _capped(
        FactLedger(
            tuple(out.values()),
            max(old.archived, new.archived),
            max(old.generations, new.generations),
        )
    )


def _capped(ledger: FactLedger) -> FactLedger:
    if len(ledger.facts) <= MAX_FACTS:
        return ledger
    order = _eviction_order(list(ledger.facts))
    gone = {id(f) for f in order[: len(ledger.facts) - MAX_FACTS]}
    return replace(ledger, facts=tuple(f for f in ledger.facts if id(f) not in gone))


def ledger_of(message: AgentMessage) -> FactLedger | None:
    """The ledger a digest message carries (parsed), or None for any other message."""
    return _carried(message)


# ------------------------------------------------------------------ serialization

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
)


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
    if not isinstance(raw, Mapping) or raw.get("format") != LEDGER_FORMAT:
        raise ValueError(f"digest facts: not a {LEDGER_FORMAT} ledger")
    rows = raw.get("facts")
    if not isinstance(rows, list):
        raise ValueError("digest facts: 'facts' must be a list")
    facts: list[Fact] = []
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != len(_FIELDS):
            raise ValueError(f"digest facts: fact {i} must be a list of {len(_FIELDS)} values")
        kind, key, text, first, last, count, source, status, detail, resolved_by = row
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
        facts.append(Fact(kind, key, text, first, last, count, source, status, detail, resolved_by))
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
        b.set(Fact("objective", "objective", " ".join(objective), -1, -1, 1, None))
    facts = [replace(f, first=-1, last=-1, source=None) for f in b.facts.values()]
    facts.sort(key=lambda f: f.kind != "objective")
    return FactLedger(tuple(facts), 0, 1)


# ------------------------------------------------------------------ rendering

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


def _error_text(fact: Fact, *, short: bool, level: int = 0) -> str:
    if level >= 4:  # tightest: the step, the error's distinguishing part, one line
        label, sep, line = fact.text.partition(" failed: ")
        if sep:
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
        return _error_text(fact, short=True)
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
                parent = posixpath.dirname(parent)
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


def _render(
    objective: str,
    lines: Sequence[_Line],
    note: str | None,
    evicted: Mapping[str, Mapping[str, int]],
) -> str:
    by: dict[str, list[str]] = {s: [] for s in DIGEST_SECTIONS}
    for line in sorted(lines, key=lambda ln: ln.order[0]):  # stable: ties keep their order
        if line.text:
            by[line.section].append(line.text)
    for section, kinds in evicted.items():
        if kinds:
            more = ", ".join(f"{n} {_KIND_LABEL.get(k, k)}" for k, n in sorted(kinds.items()))
            by[section].append(f"+{more} more (kept in the digest's ledger)")

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
    return "\n\n".join(parts)


def _eviction_order(facts: list[Fact], cost: Mapping[int, float] | None = None) -> list[Fact]:
    """Which facts leave first: lowest priority, then oldest; the newest of each kind last.

    With ``cost`` (tokens each fact's line takes, by ``id``), a costly fact counts a little
    less than a cheap one of about the same priority: a resolved error with its whole
    command line leaves before three identifiers that fit in the same room, an open error
    still outranks any command.
    """
    evictable = [f for f in facts if f.kind not in _NEVER_EVICTED]
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
        if cost is not None:
            score -= _COST_WEIGHT * math.log2(1 + cost.get(id(f), 1.0))
        return (score, f.last, f.first, f.key)

    first = sorted((f for f in evictable if id(f) not in floor), key=rank)
    last = sorted((f for f in evictable if id(f) in floor), key=rank)
    return first + last


_COST_WEIGHT: Final = 4.0
"""Priority points a fact loses per doubling of the tokens its line takes."""


def render_ledger(
    ledger: FactLedger,
    *,
    max_tokens: int = 2000,
    counter: TokenCounter | None = None,
    note: str | None = None,
) -> str:
    """The ledger as the six-heading digest body, within ``max_tokens``.

    Uses the room while facts remain and stays small when few exist. Under pressure it
    compresses (collapse uninformative commands, group files by directory, shorten prose at
    word boundaries) before it evicts, and says how many facts of each kind it left out.
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
    # Evict: estimate each fact's share of its line, drop until the estimate fits, check.
    lines = _lines(rest, root, 4)
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
        text = _render(objective, _lines(kept, root, 4), note, evicted)
        over = count_text(text, counter) - max_tokens
        if over <= 0:
            return _refill(
                objective, rest, order[:pos], alive, root, note, text, max_tokens, counter
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
) -> str:
    """Evicting in batches overshoots: put back the best evicted facts while they fit."""
    misses = 0
    for f in reversed(evicted):
        if misses >= 40:
            break
        alive.add(id(f))
        kept = [x for x in rest if id(x) in alive]
        candidate = _render(objective, _lines(kept, root, 4), note, _evicted_counts(rest, alive))
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
