"""Generated coding sessions: one stretch of work ("generation") as turns and planted facts.

The first generation opens with the objective; each plants constraints in a trailing clause of
a long user message, asks, created and edited files with near-identical names, distinctive
commands among noisy ones, errors (two in three fixed later), decisions, renames in prose, an
environment variable now and then and plan items (an earlier plan superseded), mixed with many
similar unplanted ones and long tool outputs.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from memory_reach.names import (
    _STEMS,
    ROOT,
    SERVICES,
    Names,
    Planted,
    _camel,
    file_path,
)
from window_budget import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    estimate_tokens,
)


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

    def plant(self, kind: str, probe: str, query: str, text: str, sub: str = "") -> None:
        self.facts.append(Planted(kind, probe, query, text, self.g, sub))

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
            sub = "created" if created else "edited"
            self.plant("file", rel, f"{prefix}_{k:02d}", self.abs(rel), sub)
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
        self.plant("error", line, w, full, "resolved" if resolved else "open")
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
