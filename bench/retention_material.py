"""The generated sessions of ``bench_fact_retention.py`` and how a planted fact is scored.

Generated sessions plant facts of every kind the fact ledger tracks (the objective, the
user's constraints and later asks, files under long absolute paths of one workspace root,
informative commands among dozens of ``git status`` / ``ls`` / ``cat``, errors buried in noisy
output, decisions among musings, identifiers, open plan items) in heads of a chosen size, with
system-injected user turns as noise; :func:`found` tells whether a text still states one.
"""

from __future__ import annotations

import random
import re
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from window_budget import (
    AgentMessage,
    AssistantMessage,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    estimate_tokens,
)
from window_budget.digest import digest_body, is_digest
from window_budget.messages import message_text

ROOT = "/home/dev/work/acme-platform/services/ledgerly"
KINDS = (
    "objective",
    "constraint",
    "ask",
    "file",
    "command",
    "error",
    "decision",
    "identifier",
    "plan",
)


@dataclass(frozen=True)
class Planted:
    kind: str
    probe: str
    """The string that must appear (a path is also found relative to the root or grouped)."""
    generation: int = 0


# ------------------------------------------------------------------ generator


def _call(cid: str, name: str, **args: object) -> AssistantMessage:
    return AssistantMessage((ToolCallBlock(cid, name, dict(args)),))


class Session:
    """Builds one generated session; ``facts`` lists what was planted."""

    def __init__(self, seed: int, generation: int = 0) -> None:
        self.rng = random.Random(seed * 1000 + generation)
        self.g = generation
        self.msgs: list[AgentMessage] = []
        self.facts: list[Planted] = []
        self.n = 0

    def cid(self) -> str:
        self.n += 1
        return f"g{self.g}c{self.n}"

    def plant(self, kind: str, probe: str) -> None:
        self.facts.append(Planted(kind, probe, self.g))

    def tool(self, name: str, output: str, *, error: bool = False, **args: object) -> None:
        cid = self.cid()
        self.msgs += [
            _call(cid, name, **args),
            ToolResultMessage(cid, name, output, is_error=error),
        ]

    def noise(self, pad: int) -> None:
        """Uninformative steps: git status, ls, cat, musings, injected user turns."""
        r = self.rng
        for _ in range(r.randint(2, 4)):
            which = r.random()
            sub = r.choice(["billing", "accounts", "notify", "search", "export"])
            if which < 0.3:
                self.tool(
                    "Bash",
                    "On branch feature/ledger\nnothing to commit, working tree clean",
                    command="git status",
                )
            elif which < 0.5:
                self.tool(
                    "Bash",
                    "\n".join(f"file_{i}.py" for i in range(30)),
                    command=f"ls {ROOT}/src/{sub}",
                )
            elif which < 0.75:
                self.tool(
                    "Read",
                    f"# module {sub}\n" + "def helper(x):\n    return x\n" * pad,
                    file_path=f"{ROOT}/src/ledgerly/{sub}/helpers.py",
                )
            elif which < 0.85:
                self.tool("Bash", "x = 1\n" * pad, command=f"cat src/ledgerly/{sub}/models.py")
            else:
                self.msgs.append(
                    AssistantMessage(
                        r.choice(
                            [
                                "Let me look at how the helpers are wired before changing "
                                "anything.",
                                "Hmm, I wonder if the cache is involved here. Let me check.",
                                "Now let me read the surrounding code to understand the flow.",
                                "Okay, that looks fine. I'll check the next module.",
                            ]
                        )
                    )
                )
        if r.random() < 0.2:
            self.msgs.append(
                UserMessage(
                    r.choice(
                        [
                            "[Request interrupted by user for tool use]",
                            "<task-notification><task-id>t1</task-id><status>completed</status></task-notification>",
                            "<command-name>/cost</command-name>\n<command-message>cost</command-message>",
                            "<local-command-stdout>Total cost: $0.42</local-command-stdout>",
                        ]
                    )
                )
            )


def generation_material(seed: int, g: int, pad: int) -> tuple[list[AgentMessage], list[Planted]]:
    """One generation of planted facts and noise (generation 0 holds the objective)."""
    s = Session(seed, g)
    sub = ["billing", "accounts", "notify", "search", "export", "audit", "tax", "payouts"][g % 8]
    if g == 0:
        s.msgs.append(
            UserMessage(
                "Migrate the ledgerly billing service from the legacy invoice tables to the new "
                "double-entry ledger API. Never push to the main branch directly. Only use Python "
                "3.11 features, the workers run 3.11. Don't add new dependencies without asking me "
                "first. Keep every monetary value in integer cents. Make sure the LEDGER_API_URL "
                "comes from the environment. Never drop the legacy_invoices table."
            )
        )
        s.plant("objective", "double-entry ledger API")
        for c in (
            "Never push to the main branch directly.",
            "Only use Python 3.11 features, the workers run 3.11.",
            "Don't add new dependencies without asking me first.",
            "Keep every monetary value in integer cents.",
            "Make sure the LEDGER_API_URL comes from the environment.",
            "Never drop the legacy_invoices table.",
        ):
            s.plant("constraint", c)
        s.plant("identifier", "LEDGER_API_URL")
    asks = [
        f"Also port the {sub} reconciliation job (ticket LED-{400 + g * 7}).",
        f"Please add a regression test for the {sub} rounding bug.",
        f"Can you make the {sub} exporter idempotent?",
    ]
    files = [
        f"{ROOT}/src/ledgerly/{sub}/ledger_client.py",
        f"{ROOT}/src/ledgerly/{sub}/reconcile.py",
        f"{ROOT}/src/ledgerly/{sub}/exporters/csv_exporter.py",
        f"{ROOT}/tests/{sub}/test_reconcile_rounding.py",
        f"{ROOT}/migrations/versions/{g:04d}_{sub}_ledger_entries.py",
        f"{ROOT}/docs/runbooks/{sub}-cutover.md",
    ]
    commands = [
        f"pytest tests/{sub}/test_reconcile_rounding.py -q",
        f"alembic upgrade {g:04d}_{sub}_ledger_entries",
        f"python -m ledgerly.tools.backfill --service {sub} --since 2026-0{g % 9 + 1}-01",
        f"docker compose run --rm {sub}-worker make check",
    ]
    errors = [
        (f"E   AssertionError: {sub} total 1999 != 2000 cents", True),
        (f'sqlalchemy.exc.ProgrammingError: relation "{sub}_ledger_entries" does not exist', True),
        (f"ModuleNotFoundError: No module named 'ledgerly.{sub}.legacy_rates'", g % 2 == 0),
    ]
    decisions = [
        f"Renamed `calc_{sub}_tax` to `compute_{sub}_line_tax` so the ledger naming is consistent.",
        f"Switched to the table-rewrite migration for {sub} because the in-place ALTER "
        "locks the table for minutes.",
        f"Decided to keep the {sub} exporter streaming rather than batching, since memory "
        "spiked at 2 GB.",
    ]
    idents = [
        f"LED-{400 + g * 7}",
        f"{sub.capitalize()}LedgerClient",
        f"LEDGERLY_{sub.upper()}_BATCH_SIZE",
    ]
    plan = [
        f"wire the {sub} reconciliation job to compute_{sub}_line_tax",
        f"backfill {sub} ledger entries on staging",
        f"remove the {sub} legacy rate tables after sign-off",
    ]

    s.noise(pad)
    s.msgs.append(UserMessage(asks[0]))
    s.plant("ask", f"{sub} reconciliation job (ticket LED-{400 + g * 7})")
    s.plant("identifier", idents[0])
    for i, path in enumerate(files):
        s.noise(pad)
        name = "Write" if i % 3 == 0 else "Edit"
        for _ in range(1 + (i % 2)):
            s.tool(name, "ok", file_path=path, old_string="a", new_string="b")
        s.plant("file", path)
        if i == 1:
            s.msgs.append(AssistantMessage(decisions[0]))
            s.plant("decision", f"compute_{sub}_line_tax")
        if i == 3:
            s.msgs.append(UserMessage(asks[1]))
            s.plant("ask", f"regression test for the {sub} rounding bug")
    s.tool("Bash", "removed", command=f"git rm src/ledgerly/{sub}/legacy_rates.py")
    s.tool("Delete", "ok", file_path=f"{ROOT}/src/ledgerly/{sub}/legacy_rates.py")
    s.plant("file", f"{ROOT}/src/ledgerly/{sub}/legacy_rates.py")
    for i, ((err, resolved), cmd) in enumerate(zip(errors, commands, strict=False)):
        s.noise(pad)
        noisy = "\n".join(f"  at frame_{k} (ledgerly/{sub}/mod.py:{k})" for k in range(25))
        s.tool(
            "Bash",
            f"collected 48 items\n{noisy}\n{err}\n1 failed, 47 passed",
            error=True,
            command=cmd,
        )
        s.plant("error", err.removeprefix("E   "))
        s.plant("command", cmd)
        if i == 0:
            s.msgs.append(AssistantMessage(decisions[1]))
            s.plant("decision", "table-rewrite migration")
        if resolved:
            s.noise(pad)
            s.tool("Bash", "48 passed in 3.2s", command=cmd)
    s.tool("Bash", "done", command=commands[3])
    s.plant("command", commands[3])
    s.msgs.append(
        AssistantMessage(
            f"{decisions[2]} The client class is {idents[1]} and the batch size comes from "
            f"`{idents[2]}`."
        )
    )
    s.plant("decision", "streaming rather than batching")
    s.plant("identifier", idents[1])
    s.plant("identifier", idents[2])
    s.msgs.append(UserMessage(asks[2]))
    s.plant("ask", f"{sub} exporter idempotent")
    s.noise(pad)
    s.msgs.append(
        AssistantMessage(
            "Here is the plan from here:\n" + "\n".join(f"{k + 1}. {p}" for k, p in enumerate(plan))
        )
    )
    for p in plan:
        s.plant("plan", p)
    return s.msgs, s.facts


def session(seed: int, head_tokens: int, generations: int = 1) -> tuple[list, list[Planted]]:
    """A session whose planted facts sit in a head of about ``head_tokens`` tokens."""
    pad = 10
    for _ in range(12):  # find the padding that gives the head its size
        msgs: list = []
        facts: list[Planted] = []
        for g in range(generations):
            m, f = generation_material(seed, g, pad)
            msgs += m
            facts += f
        size = estimate_tokens(msgs)
        if abs(size - head_tokens) < head_tokens * 0.1:
            break
        pad = max(1, int(pad * head_tokens / size))
    return msgs, facts


def tail(seed: int, tokens: int) -> list:
    s = Session(seed, 99)
    while estimate_tokens(s.msgs) < tokens:
        s.noise(8)
    return s.msgs


# ------------------------------------------------------------------ checks


def _norm(text: str) -> str:
    return " ".join(text.replace("`", "").split()).lower()


def found(fact: Planted, text: str) -> bool:
    """True when ``text`` still tells an agent the fact: its probe verbatim (backticks and
    runs of whitespace aside, any case), or — for files and commands — the same words split
    across one line of a group: a directory and the path below it, a program's leading words
    and the rest of the command (at least 8 characters). An error counts only with its whole
    key line (type and message), a decision with its distinguishing phrase.
    """
    hay = _norm(text)
    if fact.kind == "command":
        if _norm(fact.probe) in hay:
            return True
        # Grouped by program: the program's words and the rest of the command, on one line
        # (``ran, passing, `alembic upgrade …` (5 commands): 0000_billing, 0001_accounts``).
        words = fact.probe.split()
        splits = [(" ".join(words[:i]), " ".join(words[i:])) for i in range(1, len(words))]
        return any(
            _norm(head + " …") in _norm(line) and _norm(rest) in _norm(line)
            for line in text.splitlines()
            for head, rest in splits
            if len(rest) >= 8
        )
    if fact.kind != "file":
        return _norm(fact.probe) in hay
    rel = fact.probe.removeprefix(ROOT + "/")
    if _norm(rel) in hay or _norm(fact.probe) in hay:
        return True
    # Grouped by directory: a directory and the rest of the path below it on one line
    # (``src/billing/ (4 files): reconcile.py, exporters/csv.py``).
    parts = rel.split("/")
    splits = [("/".join(parts[:i]) + "/", "/".join(parts[i:])) for i in range(1, len(parts))]
    return any(
        _norm(directory) in _norm(line) and _norm(rest) in _norm(line)
        for line in text.splitlines()
        for directory, rest in splits
    )


def cut_paths(text: str) -> int:
    """Paths cut in the middle: an elision marker inside a path-like token."""
    return len(re.findall(r"[\w./-]+\[… [\d,]+ chars removed by window-budget …\][\w./-]*", text))


def retention(facts: Sequence[Planted], text: str) -> dict[str, float]:
    by: dict[str, list[bool]] = defaultdict(list)
    for f in facts:
        by[f.kind].append(found(f, text))
    out = {k: sum(v) / len(v) for k, v in by.items()}
    out["overall"] = sum(found(f, text) for f in facts) / len(facts)
    return out


def text_of(messages: Sequence[Any]) -> str:
    return "\n".join(digest_body(m) or "" if is_digest(m) else message_text(m) for m in messages)


def med(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


# ------------------------------------------------------------------ a chat with no tools


def chat_material(seed: int, g: int, pad: int) -> tuple[list[AgentMessage], list[Planted]]:
    """A chat-only generation: the same asks, decisions and plans, no tool calls at all.

    The assistant explains at length (``pad`` sentences a turn), so the window still fills.
    """
    msgs, facts = generation_material(seed, g, 1)
    rng = random.Random(seed * 31 + g)
    chat: list[AgentMessage] = []
    for m in msgs:
        if isinstance(m, UserMessage):
            chat.append(m)
        elif isinstance(m, AssistantMessage) and isinstance(m.content, str):
            chat.append(m)
            chat.append(UserMessage("Go on, explain how that affects the rollout."))
            chat.append(
                AssistantMessage(
                    " ".join(
                        f"Step {k}: the {rng.choice(['ledger', 'exporter', 'worker', 'report'])} "
                        f"{rng.choice(['reads', 'writes', 'batches', 'checks'])} "
                        "the entries in order."
                        for k in range(pad)
                    )
                )
            )
    text = "\n".join(message_text(m) for m in chat)
    return chat, [f for f in facts if found(f, text)]
