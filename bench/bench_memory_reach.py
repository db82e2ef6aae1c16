"""After many compactions, can the agent still see or fetch what mattered? (issue 22, core part)

Generated coding sessions plant at least 120 facts in every stretch of work ("generation"):
the objective (first user message), constraints said in a trailing clause of long user
messages ("…, and never touch `migrations/`"), later asks, created and edited files with
near-identical names (``services/billing/api_07.py`` beside ``api_17.py``), distinctive
shell commands among many ``ls`` / ``git status`` / ``pytest -q``, errors (some fixed later,
some open), decisions ("switched to X because Y"), renames stated in prose, plan items —
mixed with many similar unplanted ones (files only read, commands re-run, questions and
musings, symptoms that sound like rules, a superseded plan) and long tool outputs. The first
generation is a head of about 50k, 110k or 230k tokens (by seed), each later one about 50k.

Every generation is appended turn by turn to a condenser with the network-free digest and an
``InProcessMemoryStore`` (``condenser.run_sync(history)`` after each turn, as an agent loop
calls it; the gate fires on its own in small windows), then compacted once more at its end
(``force=True``, as a user's ``/compact`` between tasks does), so after generation N at least
N compactions happened. After 1, 5 and 10 generations, for every fact planted so far:

* **digest**: its distinguishing text is in the digest message's text (what the model sees
  without a call);
* **no recall**: in the digest or in the kept tail (what a weak implementation, one without
  a memory tier, offers);
* **reachable**: that, or returned by recall — ``recall_text(kind=K, page=p)`` for p <= 3
  contains it, or ``recall_text(query=<one distinguishing word>)`` (top 5) does (in its
  quoted lines: the header echoes the query).

Plan items a later plan superseded are reported apart (``plan (earlier)``). Recall is the
library's, through two shortcuts that answer identically and are checked to (a word index on
the store, the protocol's optional ``search``; fact ranking with each fact's words kept):
the plain path re-reads the whole archive on every search, and a run makes thousands.

Why it can score low: the digest is bounded (2,000 tokens by default at every window) while
the ledger grows by 120+ facts per generation; a long constraint sentence may be cut before
its trailing clause; similar names must not count for each other (``api_07`` is not
``api_17``); a ledger holds at most 800 facts; a kind's listing shows 3 pages of 25; a word
search returns 5 facts and 5 messages, and stems shared by many files rank together.

Also: a digest-budget sweep at the 128k window (``BudgetPolicy(digest_max_tokens=B)``), the
digest's size and its record's size (``json.dumps(digest.facts)``, counted).

Run:  python bench/bench_memory_reach.py [--seeds 3] [--quick] [--check] [--json PATH]
(``--check`` only verifies the generator — >= 120 planted facts in the first head, each one
present in the generated messages — and the recall shortcuts.) About 3 CPU minutes; --quick
about 1.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import random
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from window_budget import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BudgetPolicy,
    Model,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    create_condenser,
    estimate_tokens,
)
from window_budget.budget import count_text
from window_budget.digest import digest_body, is_digest
from window_budget.memory import InProcessMemoryStore, recall_text
from window_budget.memory._rank import _B, _K1, words
from window_budget.messages import message_text
from window_budget.pipeline.summarize._memory import record_budget

# The package exports a function named ``recall``; this is its module (for ``fast_recall``).
recall_module = importlib.import_module("window_budget.memory.recall")
ROOT = "/srv/work/harbor"
CONVERSATION = "bench"
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
EARLIER = "plan (earlier)"
"""Plan items a later generation's plan superseded: reported apart (they leave the digest
first, by design; they should stay reachable)."""
ROWS = (*KINDS, EARLIER)
SERVICES = (
    "billing",
    "accounts",
    "payouts",
    "ledger",
    "invoices",
    "refunds",
    "disputes",
    "fx",
    "treasury",
    "notify",
    "risk",
    "catalog",
)
_ADJ_WORDS = (
    "amber copper silent rapid hollow crimson frozen gentle lunar polar rustic "
    "scarlet tidal velvet woven arctic brisk cobalt dusty ember fallow gilded hazel "
    "ivory jade kindred lofty misty noble opal pale quiet russet sable tawny umber "
    "vivid wintry zesty bold"
)
_NOUN_WORDS = (
    "falcon harbor meadow canyon ridge willow otter beacon cinder delta ferry glacier "
    "heron island juniper kestrel lagoon marsh nectar orchard pebble quarry raven "
    "summit thicket upland valley walrus yarrow zephyr badger cobble dune ember fjord "
    "grove hollow inlet jetty knoll"
)
_ADJ, _NOUN = _ADJ_WORDS.split(), _NOUN_WORDS.split()
FIRST_HEADS = (55_000, 120_000, 250_000)
"""Tokens of the first generation's head, by seed; later generations are about 50k each."""
# File stems: a prefix and two digits, with the directory the prefix lives in.
_STEMS = {
    "api": "",
    "handler": "handlers/",
    "model": "models/",
    "job": "jobs/",
    "client": "clients/",
    "view": "views/",
    "schema": "schemas/",
    "test_api": "tests/",
}


@dataclass(frozen=True)
class Planted:
    """One planted fact: what must be found, what an agent would search for, what was said."""

    kind: str
    probe: str
    """The distinguishing text (a file's path relative to the root, a command, a clause)."""
    query: str
    """One distinguishing word for ``recall(query=...)``."""
    text: str
    """The full text as planted (the sentence, the output line, the message)."""
    generation: int


# ------------------------------------------------------------------ generator


class Names:
    """Unique names for one seed: word pairs, file stems, ticket numbers, never reused."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(f"names-{seed}")
        self.pairs = [f"{a}_{n}" for a in _ADJ for n in _NOUN]
        rng.shuffle(self.pairs)
        self.stems = [(p, k) for p in _STEMS for k in range(100)]
        rng.shuffle(self.stems)
        self.tickets = rng.sample(range(1000, 9999), 2000)

    def pair(self) -> str:
        return self.pairs.pop()

    def stem(self) -> tuple[str, int]:
        return self.stems.pop()

    def ticket(self) -> str:
        return f"HB-{self.tickets.pop()}"


def _camel(pair: str) -> str:
    return "".join(w.capitalize() for w in pair.split("_"))


def file_path(svc: str, prefix: str, k: int) -> str:
    """A path relative to the workspace root (tests live under ``tests/<service>/``)."""
    if prefix == "test_api":
        return f"tests/{svc}/test_api_{k:02d}.py"
    return f"services/{svc}/{_STEMS[prefix]}{prefix}_{k:02d}.py"


class Session:
    """Builds one generation of one seed's session as steps (a turn each) and planted facts."""

    def __init__(self, seed: int, g: int, names: Names, pad: int) -> None:
        self.rng = random.Random(seed * 7919 + g)
        self.g = g
        self.names = names
        self.pad = pad
        self.steps: list[list[AgentMessage]] = []
        self.facts: list[Planted] = []
        self.n = 0
        self.svcs = self.rng.sample(SERVICES, 3)
        self.seen_paths: list[str] = []

    # -- primitives

    def plant(self, kind: str, probe: str, query: str, text: str) -> None:
        self.facts.append(Planted(kind, probe, query, text, self.g))

    def user(self, text: str) -> None:
        self.steps.append([UserMessage(text)])

    def say(self, text: str) -> None:
        self.steps.append([AssistantMessage(text)])

    def tool(self, name: str, output: str, *, error: bool = False, **args: object) -> None:
        self.n += 1
        cid = f"g{self.g}t{self.n}"
        self.steps.append(
            [
                AssistantMessage((ToolCallBlock(cid, name, dict(args)),)),
                ToolResultMessage(cid, name, output, is_error=error),
            ]
        )

    def bash(self, command: str, output: str, *, error: bool = False) -> None:
        self.tool("Bash", output, error=error, command=command)

    def abs(self, rel: str) -> str:
        return f"{ROOT}/{rel}"

    # -- noise and distractors

    def code(self, rel: str, lines: int) -> str:
        """A plausible source file that mentions neighbouring (similar) names."""
        r = self.rng
        body = [
            f'"""{rel}: part of the harbor settlement services."""',
            "from __future__ import annotations",
            "",
        ]
        for i in range(lines):
            other = r.choice(self.seen_paths) if self.seen_paths and i % 9 == 0 else None
            if other:
                body.append(f"# see {other}")
            elif i % 5 == 0:
                body.append(f"def step_{i}(batch, cutoff=None):")
            else:
                body.append(f"    total_{i % 7} = sum(line.amount for line in batch if line.ok)")
        return "\n".join(body)

    def noise(self, count: int | None = None) -> None:
        """Uninformative steps: status, listings, reads of similar files, test runs, musings."""
        r = self.rng
        for _ in range(count if count is not None else r.randint(2, 4)):
            svc = r.choice(self.svcs)
            x = r.random()
            if x < 0.18:
                changed = "\n".join(f"\tmodified:   {p}" for p in self.seen_paths[-12:])
                self.bash(
                    "git status", f"On branch feature/streaming\nChanges not staged:\n{changed}"
                )
            elif x < 0.30:
                listing = "\n".join(
                    f"{p}_{k:02d}.py" for p in ("api", "handler", "job") for k in range(0, 100, 3)
                )
                self.bash(r.choice(["ls", f"ls services/{svc}"]), listing)
            elif x < 0.52:
                prefix, k = r.choice(list(_STEMS)), r.randrange(100)
                rel = file_path(svc, prefix, k)  # a read: a distractor of a similar name
                self.tool("Read", self.code(rel, 8 * self.pad), file_path=self.abs(rel))
            elif x < 0.64:
                dots = "\n".join("." * 70 for _ in range(max(1, self.pad // 2)))
                self.bash("pytest -q", f"{dots}\n{r.randint(300, 900)} passed in 41.2s")
            elif x < 0.74:
                hits = "\n".join(
                    f"services/{r.choice(SERVICES)}/api_{r.randrange(100):02d}.py:{r.randrange(400)}:"
                    f"    settle_batch(batch, cutoff=cutoff)"
                    for _ in range(4 * self.pad)
                )
                self.tool("Grep", hits, pattern="settle_batch", path=self.abs("services"))
            elif x < 0.80:
                self.bash("git diff --stat", f" {len(self.seen_paths)} files changed")
            elif x < 0.92:
                a, b = (
                    self.names.pairs[r.randrange(200)],
                    _camel(self.names.pairs[r.randrange(200)]),
                )
                self.say(
                    r.choice(
                        [
                            f"Let me look at how {b} is wired before changing anything.",
                            f"Hmm, maybe we should switch to {a.replace('_', ' ')} locking here?",
                            f"I wonder if the {svc} cutoff handling is related. Let me check.",
                            f"Now let me read {b}Item to see whether it is still used.",
                            "Okay, that looks fine. I'll check the next module.",
                        ]
                    )
                )
            else:
                self.user(
                    r.choice(
                        [
                            "continue",
                            "ok",
                            "[Request interrupted by user for tool use]",
                            "<system-reminder>Remember to keep answers short.</system-reminder>",
                        ]
                    )
                )

    # -- planted facts of each kind

    def objective(self) -> None:
        codename = _camel(self.names.pair())
        svcs = ", ".join(self.svcs)
        text = (
            f"We are moving the harbor payments platform from the nightly settlement batch to "
            f"the streaming settlement engine (project {codename}), one service at a time, "
            f"starting with {svcs}. The batch has missed its window twice this quarter and "
            f"finance wants same-day settlement. Keep the work incremental: each service "
            f"should be switchable back to the batch with a flag."
        )
        self.user(text)
        self.plant("objective", f"streaming settlement engine (project {codename})", codename, text)

    def constraint(self, clause: str, query: str, lead: str) -> None:
        text = f"{lead}, and {clause}."
        self.user(text)
        self.plant("constraint", clause, query, text)

    def constraints(self, count: int) -> None:
        r = self.rng
        fixed = [
            ("never touch `migrations/` by hand", "migrations"),
            ("don't change the signature of `settle_batch()`", "signature"),
            ("never log full card numbers, mask them to the last four digits", "card"),
            ("do not bump the `pydantic` pin in requirements.txt", "pydantic"),
            ("make sure every amount stays in integer minor units", "minor"),
            ("never push to the `release/*` branches yourself", "release"),
            ("avoid adding new top-level packages under `harbor/`", "top-level"),
            ("don't drop the `legacy_settlements` table", "legacy_settlements"),
        ]
        made: list[tuple[str, str]] = []
        for svc in self.svcs:
            w = self.names.pair()
            made += [
                (f"never call the {svc} sandbox `{w}` from unit tests", w),
                (f"don't retry {svc} webhooks more than {r.randint(3, 9)} times ({w})", w),
            ]
        r.shuffle(made)
        pool = (fixed if self.g == 0 else []) + made
        leads = [
            "Next, please port the {svc} payout scheduler to the engine; the old cron job "
            "lives in services/{svc}/jobs and it has been flaky since March, the on-call "
            "rotation is tired of it",
            "When you get to the {svc} reconciliation code, please read the runbook first "
            "because half of its behaviour is undocumented and the tests only cover the happy "
            "path",
            "For the {svc} cutover we need the same shape as before, with a feature flag per "
            "merchant tier and a dashboard panel that shows lag per partition",
        ]
        for clause, query in pool[:count]:
            lead = r.choice(leads).format(svc=r.choice(self.svcs))
            self.noise()
            self.constraint(clause, query, lead)

    def ask(self) -> None:
        r = self.rng
        svc = r.choice(self.svcs)
        topic = r.choice(
            [
                "cursor pagination",
                "idempotency keys",
                "rate limiting",
                "a dry-run mode",
                "structured logging",
                "a backfill command",
                "per-merchant metrics",
                "a kill switch",
            ]
        )
        thing = self.names.pair()
        ticket = self.names.ticket()
        text = f"Can you add {topic} to the {svc} {thing.replace('_', ' ')} endpoint ({ticket})?"
        self.user(text)
        self.plant("ask", f"{topic} to the {svc} {thing.replace('_', ' ')}", ticket, text)

    def files(self, count: int, on_each: Callable[[int], None]) -> None:
        r = self.rng
        for i in range(count):
            svc = r.choice(self.svcs)
            prefix, k = self.names.stem()
            rel = file_path(svc, prefix, k)
            self.seen_paths.append(rel)
            created = i % 3 != 2
            self.tool(
                "Write" if created else "Edit",
                "File created successfully" if created else "The file has been updated.",
                file_path=self.abs(rel),
                **(
                    {"content": self.code(rel, 3)}
                    if created
                    else {"old_string": "a", "new_string": "b"}
                ),
            )
            if r.random() < 0.4:
                self.tool(
                    "Edit",
                    "The file has been updated.",
                    file_path=self.abs(rel),
                    old_string="x",
                    new_string="y",
                )
            self.plant("file", rel, f"{prefix}_{k:02d}", self.abs(rel))
            if r.random() < 0.35:
                self.noise(1)
            on_each(i)

    def command(self, kind: int, *, user_shell: bool = False) -> tuple[str, str]:
        """A distinctive command (planted) and its query word."""
        svc = self.rng.choice(self.svcs)
        w = self.names.pair()
        rel = self.seen_paths[-1] if self.seen_paths else f"tests/{svc}/test_api_00.py"
        cmds = [
            (f"pytest {rel} -q -k {w}", w),
            (f"alembic upgrade {w}_{self.rng.randrange(16**6):06x}", w),
            (f"python -m harbor.tools.replay --service {svc} --window {w}", w),
            (f"make -C services/{svc} proto-{w.replace('_', '-')}", w),
            (f"docker compose run --rm {svc}-worker python manage.py {w}", w),
        ]
        cmd, query = cmds[kind % len(cmds)]
        if user_shell:
            self.steps.append([BashExecutionMessage(cmd, "done\n" * self.pad, exit_code=0)])
        else:
            self.bash(cmd, "\n".join(f"[{i:03d}] ok" for i in range(self.pad)) + "\ndone")
        self.plant("command", cmd, query, cmd)
        return cmd, query

    def error(self, i: int, resolved: bool) -> None:
        r = self.rng
        svc = r.choice(self.svcs)
        w = self.names.pair()
        line = [
            f"KeyError: 'settle_window_{w}'",
            f'IntegrityError: duplicate key value violates unique constraint "{svc}_{w}_pkey"',
            f"TypeError: settle_batch() got an unexpected keyword argument '{w}'",
            f"ModuleNotFoundError: No module named 'harbor.{svc}.{w}'",
            f"ValueError: unknown settlement currency for partner {w}",
        ][i % 5]
        cmd = f"pytest tests/{svc} -q -k {w}"
        trace = "\n".join(
            f'  File "{ROOT}/services/{svc}/api_{r.randrange(100):02d}.py", '
            f"line {r.randrange(400)}, in step_{k}"
            for k in range(3 * self.pad)
        )
        full = f"sqlalchemy.exc.{line}" if line.startswith("Integrity") else line
        self.bash(
            cmd,
            f"collected 212 items\nTraceback (most recent call last):\n{trace}\nE   {full}\n"
            f"1 failed, 211 passed in 12.4s",
            error=True,
        )
        self.plant("error", line, w, full)
        if resolved:
            self.noise()
            self.say(f"Fixed the {svc} step; re-running the failing test.")
            self.bash(cmd, "212 passed in 12.1s")

    def decision(self) -> None:
        r = self.rng
        svc = r.choice(self.svcs)
        w = self.names.pair()
        choice, reason = r.choice(
            [
                ("optimistic locking", "row locks held the partition for seconds"),
                ("the outbox pattern", "the broker drops messages on failover"),
                ("server-side cursors", "the export loaded 2 GB into memory"),
                ("batch upserts", "single inserts took 40 minutes for a day of data"),
                ("exponential backoff with jitter", "retries stampeded the partner API"),
                ("UUIDv7 keys", "random keys fragmented the index"),
            ]
        )
        sentence = (
            f"Switched to {choice} for the {svc} {w.replace('_', ' ')} step because {reason}."
        )
        self.say(f"The tests pass now. {sentence} I'll keep an eye on the lag metrics.")
        self.plant("decision", f"{choice} for the {svc} {w.replace('_', ' ')}", w, sentence)

    def rename(self, by_user: bool) -> None:
        old, new = _camel(self.names.pair()), _camel(self.names.pair())
        if by_user:
            text = f"Please rename `{old}` to `{new}` everywhere, the old name confuses finance."
            self.user(text)
        else:
            text = f"Renamed `{old}` to `{new}` so the settlement naming matches the engine's."
            self.say(text)
        # A near miss kept in view: `{new}Item` is another class the code already has.
        self.tool(
            "Read",
            self.code(f"{new}Item", 2 * self.pad) + f"\nclass {new}Item: ...",
            file_path=self.abs("harbor/models.py"),
        )
        self.plant("identifier", new, new, text)

    def env_var(self) -> None:
        svc = self.rng.choice(self.svcs)
        w = self.names.pair().upper()
        name = f"HARBOR_{svc.upper()}_{w}"
        text = f"The cutoff now comes from `{name}`, read once at start-up."
        self.say(text)
        self.plant("identifier", name, name, text)

    def plan(self, count: int, *, planted: bool) -> None:
        items = []
        for _ in range(count):
            svc = self.rng.choice(self.svcs)
            w = self.names.pair()
            verb = self.rng.choice(["backfill", "shadow-run", "load-test", "document", "cut over"])
            items.append((f"{verb} {svc} {w.replace('_', ' ')}", w))
        self.say(
            "Here is the plan from here:\n"
            + "\n".join(f"{k + 1}. {t}" for k, (t, _) in enumerate(items))
        )
        if planted:
            for item, w in items:
                self.plant("plan", item, w, item)

    def symptom(self) -> None:
        """A user sentence that sounds like a rule but describes a symptom (not planted)."""
        svc = self.rng.choice(self.svcs)
        self.user(
            f"FYI the {svc} nightly job never finished before 6am last week and the dashboard "
            f"can't show partitions older than a day."
        )


def generation(seed: int, g: int, names: Names, pad: int) -> Session:
    """One stretch of work: 127 planted facts in generation 0, 120 in later ones."""
    s = Session(seed, g, names, pad)
    if g == 0:
        s.objective()
    s.constraints(8 if g == 0 else 2)
    plan_at = {12, 30}
    decision_at = set(range(3, 45, 5))  # 9 decisions among the files
    errors = 0

    def between(i: int) -> None:
        nonlocal errors
        r = s.rng
        if i % 4 == 0:
            s.ask()
        if i in decision_at:
            s.decision()
        if i % 2 == 1:
            s.command(i // 2, user_shell=i % 10 == 7)
        if i % 4 == 2:
            s.error(errors, resolved=errors % 3 != 2)
            errors += 1
        if i % 6 == 5:
            s.rename(by_user=i % 12 == 5)
        if i % 11 == 10:
            s.env_var()
        if i in plan_at:
            s.plan(5, planted=False)  # superseded by the plan below
        if i == 36:
            s.plan(8, planted=True)  # the current plan until the next generation's first
        if i == 29:
            s.symptom()
        s.noise(r.randint(1, 3))

    s.files(45, between)
    s.noise()
    return s


def _pad_for(seed: int, g: int, tokens: int) -> int:
    """The padding that gives generation ``g`` about ``tokens`` tokens (size is linear in it)."""

    def size(pad: int) -> int:
        s = generation(seed, g, Names(seed), pad)
        return estimate_tokens([m for step in s.steps for m in step])

    # Nearly linear in the padding: a secant step from 1 and 9, then one more from there.
    a, size_a, b, size_b = 1, size(1), 9, size(9)
    for _ in range(2):
        slope = (size_b - size_a) / (b - a)
        if slope <= 0:
            break
        guess = max(1, round(b + (tokens - size_b) / slope))
        if guess in (a, b):
            break
        a, size_a, b, size_b = b, size_b, guess, size(guess)
    return b if abs(size_b - tokens) <= abs(size_a - tokens) else a


def session(seed: int, generations: int, first: int, later: int = 50_000) -> list[Session]:
    """``generations`` stretches of work: the first about ``first`` tokens, the others ``later``."""
    pads = (_pad_for(seed, 0, first), _pad_for(seed, 1, later))
    names = Names(seed)
    return [generation(seed, g, names, pads[g > 0]) for g in range(generations)]


# ------------------------------------------------------------------ checks


def _norm(text: str) -> str:
    return " ".join(text.replace("`", "").split()).casefold()


def _has(probe: str, hay: str) -> bool:
    """``probe`` in ``hay`` (normalized) with no word character glued to either end."""
    p = re.escape(_norm(probe))
    return re.search(rf"(?<![\w]){p}(?![\w])", hay) is not None


def found(fact: Planted, text: str, norm: str | None = None) -> bool:
    """True when ``text`` tells the fact: its probe verbatim (backticks and runs of whitespace
    aside, any case), never a longer name that contains it (``api_07`` is not ``api_17``,
    ``JournalLine`` is not ``JournalLineItem``). A file also counts grouped under its directory
    on one line (``services/billing/ (4 files): api_07.py, …``), a command grouped by program
    on one line (``pytest …`` … ``-q -k amber_falcon``).
    """
    hay = norm if norm is not None else _norm(text)
    if _has(fact.probe, hay):
        return True
    if fact.kind not in ("file", "command"):
        return False
    sep = "/" if fact.kind == "file" else " "
    parts = fact.probe.split(sep)
    if len(parts) < 2:
        return False
    for line in text.splitlines():
        low = _norm(line)
        if _norm(parts[-1]) not in low:
            continue
        for i in range(1, len(parts)):
            head = sep.join(parts[:i]) + (sep if fact.kind == "file" else "")
            rest = sep.join(parts[i:])
            if (fact.kind == "command" and len(rest) < 8) or not head.strip():
                continue
            if _has(head.strip(), low) and _has(rest, low):
                return True
    return False


def flat_text(messages: Iterable[AgentMessage]) -> str:
    """What a model reads of ``messages``: text, tool-call arguments, shell commands."""
    out = []
    for m in messages:
        if is_digest(m):
            out.append(digest_body(m) or "")
            continue
        out.append(message_text(m))
        if isinstance(m, AssistantMessage) and not isinstance(m.content, str):
            for b in m.content:
                if isinstance(b, ToolCallBlock):
                    out.extend(str(v) for v in b.arguments.values())
    return "\n".join(out)


def check_generator(seed: int = 0, head_tokens: int = 60_000) -> None:
    """The self-check: >= 120 facts in the first head, each one present in the messages."""
    sessions = session(seed, 2, head_tokens)
    for s in sessions:
        msgs = [m for step in s.steps for m in step]
        text = flat_text(msgs)
        norm = _norm(text)
        missing = [f for f in s.facts if not found(f, text, norm)]
        assert not missing, f"generation {s.g}: planted facts not in the messages: {missing[:3]}"
        kinds = {f.kind for f in s.facts}
        assert kinds >= set(KINDS) - ({"objective"} if s.g else set()), kinds
        probes = [(f.kind, f.probe.casefold()) for f in s.facts]
        assert len(set(probes)) == len(probes), "a probe is planted twice"
        print(
            f"generation {s.g}: {len(s.facts)} planted facts, {len(msgs)} messages, "
            f"{estimate_tokens(msgs):,} tokens; all present"
        )
    assert len(sessions[0].facts) >= 120, len(sessions[0].facts)
    # The bench's recall shortcuts answer as the library does, on a run with compactions and
    # masking (a 16k window): word searches of every kind.
    store = IndexedStore()
    condenser = create_condenser(model=Model("m", 16_000), memory=store, conversation=CONVERSATION)
    history: list[AgentMessage] = []
    for step in (step for s in sessions for step in s.steps):
        history = list(condenser.run_sync([*history, *step]).messages)
    facts = [f for s in sessions for f in s.facts]
    verify_recall(store, [f.query for f in facts[::12]])
    print(f"recall shortcuts: {len(facts[::12])} searches answered as the library answers")


# ------------------------------------------------------------------ runs


class CachedRank:
    """``_rank.rank`` with each document's word bag kept between calls: the same BM25, the same
    order, ties in document order. Recall ranks every fact of the ledger on every search
    (13 ms a query at 800 facts); a run makes about a thousand searches over few ledgers.
    """

    def __init__(self) -> None:
        self.bags: dict[str, tuple[Counter[str], int]] = {}

    def bag(self, document: str) -> tuple[Counter[str], int]:
        got = self.bags.get(document)
        if got is None:
            counts = Counter(words(document))
            got = self.bags[document] = (counts, sum(counts.values()))
        return got

    def __call__(self, query: str, documents: Sequence[str], *, limit: int) -> list[int]:
        terms = list(dict.fromkeys(words(query)))
        if not terms or not documents or limit <= 0:
            return []
        bags = [self.bag(d) for d in documents]
        n = len(documents)
        mean = (sum(length for _, length in bags) / n) or 1.0
        idf = {}
        for t in terms:
            df = sum(1 for b, _ in bags if t in b)
            idf[t] = math.log(1 + (n - df + 0.5) / (df + 0.5))
        scored = []
        for i, (bag, length) in enumerate(bags):
            score = 0.0
            for t in terms:
                tf = bag.get(t, 0)
                if tf:
                    score += idf[t] * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * length / mean))
            if score > 0:
                scored.append((-score, i))
        scored.sort()
        return [i for _, i in scored[:limit]]


class IndexedStore(InProcessMemoryStore):
    """The library's in-process store: it answers recall's word search from texts it keeps
    per archived message (``InProcessMemoryStore.search``), as a store with an index does."""

    def __init__(self) -> None:
        super().__init__()
        self.ranker = CachedRank()


class _Plain:
    """A view of a store without ``search``: recall ranks the archive itself."""

    def __init__(self, store: InProcessMemoryStore) -> None:
        self.original, self.originals, self.ledger = store.original, store.originals, store.ledger


@contextmanager
def fast_recall(ranker: CachedRank) -> Iterator[None]:
    """Kept for the call sites: recall ranks with the library's own ranking."""
    yield


def verify_recall(store: IndexedStore, queries: Iterable[str]) -> None:
    """The bench's shortcuts answer exactly as the library's own recall does."""
    for query in queries:
        with fast_recall(store.ranker):
            mine = recall_text(store, CONVERSATION, query=query).text
        theirs = recall_text(_Plain(store), CONVERSATION, query=query).text  # type: ignore[arg-type]
        assert mine == theirs, f"recall {query!r}: the bench's index answers differently"


@dataclass
class Snapshot:
    """What one trajectory held after ``generations`` stretches of work."""

    generations: int
    compactions: int
    """Digests written so far: the gate's and the one closing each generation."""
    masked: int
    """Masking passes so far (old tool outputs replaced, no digest written)."""
    digest_tokens: int
    record_tokens: int
    """``json.dumps(digest.facts)``, counted."""
    record_compact_tokens: int
    """As the library measures it (no spaces, no ``\\u`` escapes): what ``record_budget`` bounds."""
    ledger: dict[str, int]
    """Facts per kind in the stored (full) ledger."""
    hits: dict[str, list[tuple[bool, bool, bool]]] = field(default_factory=dict)
    """Per kind, per planted fact: (in the digest, in digest or tail, reachable)."""

    def rows(self, kind: str | None) -> list[tuple[bool, bool, bool]]:
        return self.hits.get(kind, []) if kind else [h for v in self.hits.values() for h in v]

    def share(self, kind: str | None, which: int) -> float:
        rows = self.rows(kind)
        return sum(r[which] for r in rows) / len(rows) if rows else float("nan")


def quoted(recalled: str) -> str:
    """The data lines of a recall answer (``| …``): not its header, which echoes the query."""
    return "\n".join(line[2:] for line in recalled.splitlines() if line.startswith("| "))


def measure(
    history: Sequence[AgentMessage],
    store: IndexedStore,
    facts: Sequence[Planted],
    *,
    with_recall: bool,
    current: int,
) -> dict[str, list[tuple[bool, bool, bool]]]:
    """For each planted fact: in the digest text, in digest or tail, reachable by recall."""
    text = digest_body(history[0]) or ""
    norm = _norm(text)
    tail = flat_text(history[1:])
    tail_norm = _norm(tail)
    pages: dict[str, list[str]] = {}
    if with_recall:
        for kind in KINDS:
            pages[kind] = [
                quoted(recall_text(store, CONVERSATION, kind=kind, page=p).text) for p in (1, 2, 3)
            ]
    hits: dict[str, list[tuple[bool, bool, bool]]] = {k: [] for k in ROWS}
    for f in facts:
        in_digest = found(f, text, norm)
        seen = in_digest or found(f, tail, tail_norm)
        reach = seen
        if with_recall and not reach:
            reach = any(found(f, page) for page in pages[f.kind])
        if with_recall and not reach:
            reach = found(f, quoted(recall_text(store, CONVERSATION, query=f.query).text))
        row = EARLIER if f.kind == "plan" and f.generation < current else f.kind
        hits[row].append((in_digest, seen, reach))
    return hits


def trajectory(
    sessions: Sequence[Session],
    window: int,
    *,
    budget: int | None = None,
    checkpoints: Sequence[int] = (1, 5, 10),
    with_recall: bool = True,
) -> list[Snapshot]:
    """Feed the generations turn by turn; compact at each one's end; measure at checkpoints."""
    store = IndexedStore()
    policy = BudgetPolicy() if budget is None else BudgetPolicy(digest_max_tokens=budget)
    condenser = create_condenser(
        model=Model("m", window), memory=store, conversation=CONVERSATION, policy=policy
    )
    history: list[AgentMessage] = []
    facts: list[Planted] = []
    compactions = masked = 0
    out: list[Snapshot] = []
    for s in sessions:
        facts += s.facts
        for step in s.steps:  # one turn at a time, as an agent loop calls the condenser
            history = [*history, *step]
            result = condenser.run_sync(history)
            compactions += result.reason == "condensed"
            masked += result.reason == "masked"
            history = list(result.messages)
        history = [*history, UserMessage("Let's stop here; the next part comes later.")]
        result = condenser.run_sync(history, force=True)
        compactions += result.summary is not None
        history = list(result.messages)
        if s.g + 1 not in checkpoints:
            continue
        digest = history[0]
        assert is_digest(digest), "a compaction leaves a digest at the head"
        if with_recall and not out:
            verify_recall(store, [facts[0].query, facts[-1].query, facts[len(facts) // 2].query])
        with fast_recall(store.ranker):
            hits = measure(history, store, facts, with_recall=with_recall, current=s.g)
        record = getattr(digest, "facts", None) or {}
        stored = store.ledger(CONVERSATION)
        rows = stored.ledger.get("facts", ()) if stored is not None else ()
        out.append(
            Snapshot(
                generations=s.g + 1,
                compactions=compactions,
                masked=masked,
                digest_tokens=count_text(digest_body(digest) or ""),
                record_tokens=count_text(json.dumps(record)),
                record_compact_tokens=count_text(
                    json.dumps(record, ensure_ascii=False, separators=(",", ":"))
                ),
                ledger=dict(Counter(row[0] for row in rows)),
                hits=hits,
            )
        )
    return out


# ------------------------------------------------------------------ report


def med(values: Iterable[float]) -> float:
    got = [v for v in values if v == v]
    return statistics.median(got) if got else float("nan")


def pct(x: float) -> str:
    return "–" if x != x else f"{100 * x:.0f}"


def summarize(runs: Sequence[Sequence[Snapshot]]) -> dict[str, Any]:
    """Medians over seeds, per checkpoint: shares per kind and overall, sizes, counts."""
    out: dict[str, Any] = {}
    for at in zip(*runs, strict=True):  # the same checkpoint in every seed
        n = at[0].generations
        kinds = {}
        for kind in (*ROWS, None):
            kinds[kind or "overall"] = {
                "facts": med(len(x.rows(kind)) for x in at),
                "digest": med(x.share(kind, 0) for x in at),
                "no_recall": med(x.share(kind, 1) for x in at),
                "reachable": med(x.share(kind, 2) for x in at),
            }
        out[str(n)] = {
            "kinds": kinds,
            "compactions": med(x.compactions for x in at),
            "masking_passes": med(x.masked for x in at),
            "digest_tokens": med(x.digest_tokens for x in at),
            "record_tokens": med(x.record_tokens for x in at),
            "record_compact_tokens": med(x.record_compact_tokens for x in at),
            "ledger_facts": med(sum(x.ledger.values()) for x in at),
            "ledger_by_kind": {k: med(x.ledger.get(k, 0) for x in at) for k in KINDS},
            "overall_per_seed": [[round(x.share(None, i), 4) for i in range(3)] for x in at],
        }
    return out


def reach_table(window: int, summary: Mapping[str, Any], seeds: int) -> str:
    checks = list(summary)
    head = (
        "| kind | facts | "
        + " | ".join(f"after {n}: digest | +tail | reach" for n in checks)
        + " |"
    )
    rule = "| --- | ---: |" + " ---: | ---: | ---: |" * len(checks)
    lines = [
        f"\n### Window {window:,}: share of planted facts (%), medians over {seeds} seed(s)",
        "",
        head,
        rule,
    ]
    for kind in (*ROWS, "overall"):
        cells = []
        for n in checks:
            k = summary[n]["kinds"][kind]
            cells += [pct(k["digest"]), pct(k["no_recall"]), pct(k["reachable"])]
        facts = summary[checks[-1]]["kinds"][kind]["facts"]
        name = f"**{kind}**" if kind == "overall" else kind
        lines.append(f"| {name} | {facts:.0f} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| after | compactions | masking passes | digest tokens | record tokens "
        "(compact) / budget | ledger facts (by kind) |",
        "| ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for n in checks:
        x = summary[n]
        by = ", ".join(f"{k} {v:.0f}" for k, v in x["ledger_by_kind"].items() if v)
        lines.append(
            f"| {n} | {x['compactions']:.0f} | {x['masking_passes']:.0f} | "
            f"{x['digest_tokens']:.0f} | {x['record_tokens']:.0f} "
            f"({x['record_compact_tokens']:.0f}) / {record_budget(window)} | "
            f"{x['ledger_facts']:.0f} ({by}) |"
        )
    return "\n".join(lines)


def sweep_table(window: int, sweep: Mapping[int, Mapping[str, Any]], seeds: int) -> str:
    budgets = list(sweep)
    checks = list(sweep[budgets[0]])
    lines = [
        f"\n### Digest budget sweep at window {window:,}: in the digest (%), medians over "
        f"{seeds} seed(s)",
        "",
        "| digest_max_tokens | "
        + " | ".join(f"after {n}" for n in checks)
        + " | digest tokens after "
        + checks[-1]
        + " | "
        + " | ".join(ROWS)
        + " |",
        "| ---: |" + " ---: |" * (len(checks) + 1 + len(ROWS)),
    ]
    for b in budgets:
        rows = sweep[b]
        overall = [pct(rows[n]["kinds"]["overall"]["digest"]) for n in checks]
        first, last = rows[checks[0]]["kinds"], rows[checks[-1]]["kinds"]
        per_kind = [f"{pct(first[k]['digest'])} → {pct(last[k]['digest'])}" for k in ROWS]
        lines.append(
            f"| {b:,} | "
            + " | ".join(overall)
            + f" | {rows[checks[-1]]['digest_tokens']:.0f} | "
            + " | ".join(per_kind)
            + " |"
        )
    lines.append(f"\nPer kind: in the digest after {checks[0]} → after {checks[-1]} compaction(s).")
    return "\n".join(lines)


def _rounded(value: Any) -> Any:
    """``value`` with its floats to 4 places (a small, diffable results file)."""
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--quick", action="store_true", help="1 seed (a 55k first head), 3 budgets in the sweep"
    )
    parser.add_argument("--check", action="store_true", help="only self-check the generator")
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        help="where the figures go (default bench/results/memory_reach.json, "
        "memory_reach_quick.json with --quick)",
    )
    args = parser.parse_args()
    if args.json is None:
        name = "memory_reach_quick.json" if args.quick else "memory_reach.json"
        args.json = Path(__file__).parent / "results" / name
    if args.check:
        check_generator()
        return
    seeds = 1 if args.quick else args.seeds
    windows = (16_000, 128_000, 1_000_000)
    budgets = (2000, 6000, 12000) if args.quick else (2000, 4000, 6000, 8000, 12000)
    checkpoints = (1, 5, 10)
    started = time.process_time()
    sessions = {
        seed: session(seed, max(checkpoints), FIRST_HEADS[seed % len(FIRST_HEADS)])
        for seed in range(seeds)
    }
    sizes = {
        seed: [estimate_tokens([m for step in s.steps for m in step]) for s in ss]
        for seed, ss in sessions.items()
    }
    print(
        f"# Memory reach (bench_memory_reach.py), {seeds} seed(s), commit {_commit()}\n\n"
        f"Heads: first {', '.join(f'{v[0] // 1000}k' for v in sizes.values())} tokens, "
        f"later {min(min(v[1:]) for v in sizes.values()) // 1000}k–"
        f"{max(max(v[1:]) for v in sizes.values()) // 1000}k; planted facts per generation: "
        f"{len(sessions[0][0].facts)} then {len(sessions[0][1].facts)}."
    )
    main_runs: dict[int, dict[str, Any]] = {}
    for window in windows:
        runs = [trajectory(ss, window, checkpoints=checkpoints) for ss in sessions.values()]
        main_runs[window] = summarize(runs)
        print(reach_table(window, main_runs[window], seeds))
        sys.stdout.flush()
    sweep: dict[int, dict[str, Any]] = {}
    for b in budgets:
        if b == BudgetPolicy().digest_max_tokens:
            sweep[b] = main_runs[128_000]  # the default: the main run already measured it
            continue
        runs = [
            trajectory(ss, 128_000, budget=b, checkpoints=checkpoints, with_recall=False)
            for ss in sessions.values()
        ]
        sweep[b] = summarize(runs)
    print(sweep_table(128_000, sweep, seeds))
    cpu = time.process_time() - started
    print(f"\nCPU time: {cpu:.0f} s")
    result = {
        "bench": "bench_memory_reach.py",
        "date": time.strftime("%Y-%m-%d"),
        "commit": _commit(),
        "seeds": seeds,
        "quick": args.quick,
        "head_tokens": {str(k): v for k, v in sizes.items()},
        "cpu_seconds": round(cpu, 1),
        "windows": {str(w): v for w, v in main_runs.items()},
        "digest_budget_sweep_128k": {
            str(b): {
                n: {
                    "digest_tokens": v["digest_tokens"],
                    "digest": {k: kv["digest"] for k, kv in v["kinds"].items()},
                }
                for n, v in rows.items()
            }
            for b, rows in sweep.items()
        },
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(_rounded(result), indent=1) + "\n", encoding="utf-8")
    print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
