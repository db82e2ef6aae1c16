"""Does the session still know what matters after compacting? Facts planted, facts found.

Generated sessions plant 67 facts of every kind the fact ledger tracks — the objective,
the user's constraints and later asks, files created / edited / deleted under long
absolute paths of one workspace root, informative commands among dozens of
``git status`` / ``ls`` / ``cat``, errors (most later resolved) buried in noisy output,
decisions stated in prose among the agent's musings, identifiers, open plan items — in
heads of 50k to 250k tokens, with system-injected user turns (interruptions, task
notifications, command wrappers) as noise. A weak digest scores low here: one that lists
every ``git status``, picks sentences from musings or cuts long paths in the middle.

Reported, with medians over seeds:

1. retention per kind after one compaction at 2,000 digest tokens (network-free digest),
   tokens used, and whether any path was cut in the middle;
2. survival after 5 and 10 successive compactions, new material arriving between them
   (of the first generation's facts and of all facts);
3. the audit, with a scripted model whose digest omits about half of the facts and
   rewrites (drops a third of) the carried digest each generation: found / pinned, and
   retention with and without the pins, after 1 and 5 compactions;
4. masking: summary calls over growing sessions — an agent with large tool outputs,
   one with small outputs, a chat with no tools — masking off and on (K, size);
5. a peer in the same run: LangChain's ``SummarizationMiddleware`` (token ``keep``) with a
   scripted model that writes the same half-omitting digest — how many first-generation
   facts survive its successive summaries;
6. with ``--real DIR``: real Claude Code sessions (``*.jsonl``) whose compaction the agent's
   own model summarized (an ``isCompactSummary`` record): the share of the file paths,
   identifiers, commands and errors that summary kept (and that occur verbatim in the folded
   messages) found in our digest plus kept tail, at a digest budget of the summary's size.

Run:  python bench/bench_fact_retention.py [--seeds 3] [--real DIR] [--counter tiktoken]
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from window_budget import (
    AgentMessage,
    AssistantMessage,
    BudgetPolicy,
    Model,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    create_condenser,
    estimate_tokens,
)
from window_budget.budget import count_text, resolve_counter
from window_budget.digest import digest_body, is_digest
from window_budget.messages import message_text
from window_budget.pipeline.summarize import ledger_of
from window_budget.testing import ScriptedCompleter

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


# ------------------------------------------------------------------ scenarios


def one_compaction(seeds: int, counter: Any) -> None:
    print("\n1. One compaction at 2,000 digest tokens, no model (network-free digest)")
    for head in (50_000, 100_000, 250_000):
        rows: list[dict[str, float]] = []
        used, cuts, times = [], [], []
        for seed in range(seeds):
            msgs, facts = session(seed, head, generations=2)
            head_tokens = estimate_tokens(msgs)
            msgs = msgs + tail(seed, 6000)
            condenser = create_condenser(
                model=Model("m", 400_000), counter=counter, policy=BudgetPolicy(keep_recent=5000)
            )
            start = time.perf_counter()
            result = condenser.run_sync(msgs, force=True)
            times.append(time.perf_counter() - start)
            assert result.summary is not None
            digest = result.summary.text
            rows.append(retention(facts, digest))
            used.append(
                counter.count(digest) if counter else estimate_tokens([result.summary.message])
            )
            cuts.append(cut_paths(digest))
        n_facts = len(facts)
        per_kind = "  ".join(f"{k} {pct(med([r.get(k, 0) for r in rows]))}" for k in KINDS)
        print(
            f"   head {head_tokens // 1000}k tokens, {n_facts} facts: overall "
            f"{pct(med([r['overall'] for r in rows]))}, min kind "
            f"{pct(min(med([r.get(k, 0) for r in rows]) for k in KINDS))}; digest "
            f"{med(used):.0f} tokens; paths cut {max(cuts)}; run {med(times) * 1000:.0f} ms"
        )
        print(f"      {per_kind}")


def successive(
    seeds: int, counter: Any, generations: int, digest_tokens: int = 2000
) -> dict[str, float]:
    """Compact after every generation; check all facts planted so far."""
    first_rows, all_rows, kinds0, current_rows, ledger_rows = [], [], [], [], []
    for seed in range(seeds):
        history: list = []
        facts: list[Planted] = []
        for g in range(generations):
            m, f = generation_material(seed, g, 30)
            history = history + m + tail(seed * 7 + g, 1500)
            facts += f
            condenser = create_condenser(
                model=Model("m", 400_000),
                counter=counter,
                policy=BudgetPolicy(keep_recent=1500, digest_max_tokens=digest_tokens),
            )
            history = list(condenser.run_sync(history, force=True).messages)
        text = text_of(history)
        first = [f for f in facts if f.generation == 0]
        first_rows.append(retention(first, text)["overall"])
        all_rows.append(retention(facts, text)["overall"])
        kinds0.append(retention(first, text))
        # A later plan supersedes the earlier ones: their steps are no longer "open".
        current = [f for f in facts if f.kind != "plan" or f.generation == generations - 1]
        current_rows.append(retention(current, text)["overall"])
        carried = ledger_of(history[0])
        assert carried is not None
        ledger_text = "\n".join(f.text for f in carried.facts)
        ledger_rows.append(retention(facts, ledger_text)["overall"])
    core = {k: med([r.get(k, 0) for r in kinds0]) for k in ("objective", "constraint", "file")}
    errors_open = []
    return {
        "first": med(first_rows),
        "all": med(all_rows),
        "current": med(current_rows),
        "ledger": med(ledger_rows),
        **core,
        "open_errors": med(errors_open) if errors_open else float("nan"),
    }


def open_error_survival(seeds: int, counter: Any, generations: int) -> float:
    rows = []
    for seed in range(seeds):
        history: list = []
        opened: list[Planted] = []
        for g in range(generations):
            m, f = generation_material(seed, g, 30)
            history = history + m + tail(seed * 7 + g, 1500)
            if g % 2 == 1:  # the third error of odd generations stays open
                opened += [x for x in f if x.kind == "error" and "No module named" in x.probe]
            condenser = create_condenser(
                model=Model("m", 400_000), counter=counter, policy=BudgetPolicy(keep_recent=1500)
            )
            history = list(condenser.run_sync(history, force=True).messages)
        text = text_of(history)
        rows.append(sum(found(f, text) for f in opened) / max(1, len(opened)))
    return med(rows)


def forgetful_model(
    facts_of: Callable[[], list[Planted]],
    rng: random.Random,
) -> Callable[[Any], str]:
    """A scripted model: keeps the carried digest's lines at 2/3, and half of the new facts."""

    def reply(context: Any) -> str:
        prompt = context.messages[-1].content
        carried = ""
        if "<carried-digest>" in prompt:
            carried = prompt.split("<carried-digest>\n", 1)[1].split("\n</carried-digest>", 1)[0]
        kept = [ln for ln in carried.splitlines() if ln.startswith("#") or rng.random() < 0.67]
        scroll = prompt.split("<scrollback>", 1)[1]
        new = [f for f in facts_of() if f.probe.lower() in scroll.lower() and rng.random() < 0.5]
        body = "\n".join(kept) if kept else "# Objective\ncontinue the migration"
        return body + "\n# Carryover\n" + "\n".join(f"- {f.probe}" for f in new)

    return reply


def _stays_open(fact: Planted) -> bool:
    """The third error of odd generations is never resolved (see ``generation_material``)."""
    return fact.kind == "error" and "No module named" in fact.probe and fact.generation % 2 == 1


def audit(seeds: int, counter: Any) -> None:
    print("\n3. The audit, scripted model omitting ~half of the facts (drops 1/3 of the carried)")
    for generations in (1, 5):
        pinned_rows, model_rows, final_rows, found_rows, appended = [], [], [], [], []
        floor_rows: list[float] = []
        tokens: list[int] = []
        for seed in range(seeds):
            rng = random.Random(seed)
            facts: list[Planted] = []
            fake = ScriptedCompleter([forgetful_model(facts.copy, rng)] * 50)
            condenser = create_condenser(
                model=Model("m", 400_000),
                counter=counter,
                complete_sync=fake.sync,
                summarizer_model=Model("s", 400_000),
                policy=BudgetPolicy(keep_recent=1500),
            )
            history: list = []
            for g in range(generations):
                m, f = generation_material(seed, g, 30)
                history = history + m + tail(seed * 7 + g, 1500)
                facts += f
                result = condenser.run_sync(history, force=True)
                history = list(result.messages)
            assert result.summary is not None
            assert result.summary.audit is not None
            a = result.summary.audit
            found_rows.append(a.found / max(1, a.checked))
            appended.append(a.appended)
            text = result.summary.text
            model_text = text.rsplit("\n\n# Pinned facts", 1)[0]
            model_rows.append(retention(facts, model_text)["overall"])
            final_rows.append(retention(facts, text)["overall"])
            key = [f for f in facts if f.kind in ("objective", "constraint", "file", "error")]
            pinned_rows.append(retention(key, text)["overall"])
            floor = [f for f in key if f.kind != "error" or _stays_open(f)]
            floor_rows.append(retention(floor, text)["overall"])
            tokens.append(count_text(text, counter))
        print(
            f"   after {generations} compaction(s): key facts found in the model's text "
            f"{pct(med(found_rows))}, pinned {med(appended):.0f}; all facts in the model's "
            f"text {pct(med(model_rows))} -> with pins {pct(med(final_rows))}; objective, "
            f"constraints, edited files and open errors with pins {pct(med(floor_rows))} "
            f"(errors resolved since included: {pct(med(pinned_rows))}); digest "
            f"{med(tokens):.0f} tokens"
        )


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


def masking(seeds: int, counter: Any) -> None:
    print(
        "\n4. Masking: summary calls over growing sessions (128k window, 8 generations, a "
        "model bound)"
    )
    candidate = {"mask_keep_outputs": 3, "mask_min_chars": 2000}
    shapes: list[
        tuple[
            str, Callable[[int, int], tuple[list, list[Planted]]], list[tuple[str, dict[str, Any]]]
        ]
    ] = [
        (
            "agent, large tool outputs",
            lambda seed, g: generation_material(seed, g, 400),
            [
                ("off", {"mask_keep_outputs": None}),
                ("K=3, >2,000 chars", candidate),
                ("K=10, >2,000 chars", {"mask_keep_outputs": 10, "mask_min_chars": 2000}),
                ("K=3, >8,000 chars", {"mask_keep_outputs": 3, "mask_min_chars": 8000}),
            ],
        ),
        (
            "agent, small tool outputs",
            lambda seed, g: generation_material(seed, g, 12),
            [("off", {"mask_keep_outputs": None}), ("K=3, >2,000 chars", candidate)],
        ),
        (
            "chat only, no tools",
            lambda seed, g: chat_material(seed, g, 700),
            [("off", {"mask_keep_outputs": None}), ("K=3, >2,000 chars", candidate)],
        ),
    ]
    for shape, material, configs in shapes:
        print(f"   {shape}:")
        for label, extra in configs:
            calls, masked, ret, ends = [], [], [], []
            for seed in range(seeds):
                rng = random.Random(seed)
                facts: list[Planted] = []
                fake = ScriptedCompleter([forgetful_model(facts.copy, rng)] * 400)
                condenser = create_condenser(
                    model=Model("m", 128_000),
                    counter=counter,
                    complete_sync=fake.sync,
                    policy=BudgetPolicy(**extra),
                )
                history: list = []
                n_masked = 0
                for g in range(8 if shape != "agent, small tool outputs" else 24):
                    m, f = material(seed, g)
                    facts += f
                    for msg in m:  # one message at a time, as an agent loop would
                        history = [*history, msg]
                        result = condenser.run_sync(history)
                        n_masked += result.reason == "masked"
                        history = list(result.messages)
                calls.append(len(fake.calls))
                masked.append(n_masked)
                ret.append(retention(facts, text_of(history))["overall"])
                ends.append(estimate_tokens(history, counter))
            print(
                f"     masking {label:<20} summary calls {med(calls):4.0f}, masking passes "
                f"{med(masked):4.0f}, facts held at the end {pct(med(ret))}, transcript "
                f"{med(ends) / 1000:.0f}k tokens"
            )


def peer_langchain(seeds: int) -> None:
    print("\n5. Peer: LangChain SummarizationMiddleware (trigger 60k tokens, keep 6k tokens)")
    try:
        from langchain.agents.middleware import SummarizationMiddleware
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    except ImportError as exc:
        print(f"   skipped: {exc}")
        return
    rows = []
    for seed in range(seeds):
        rng = random.Random(seed)
        facts: list[Planted] = []
        model = _peer_model(facts, rng)
        middleware = SummarizationMiddleware(
            model=model, trigger=("tokens", 60_000), keep=("tokens", 6_000)
        )
        history: list = []
        for g in range(5):
            m, f = generation_material(seed, g, 150)
            facts += f
            history += _to_langchain(m, HumanMessage, AIMessage, ToolMessage)
            update = middleware.before_model({"messages": history}, None)  # type: ignore[arg-type]
            if update:
                history = [x for x in update["messages"] if type(x).__name__ != "RemoveMessage"]
        text = "\n".join(str(x.content) for x in history)
        first = [f for f in facts if f.generation == 0]
        ours = _ours_with_half_model(seed)
        rows.append(
            (retention(first, text)["overall"], retention(facts, text)["overall"], ours[0], ours[1])
        )
    print(
        f"   after 5 generations, the same model keeping half of what it reads: "
        f"SummarizationMiddleware first-generation facts {pct(med([r[0] for r in rows]))}, "
        f"all {pct(med([r[1] for r in rows]))}; window-budget (same trigger and keep) "
        f"first-generation {pct(med([r[2] for r in rows]))}, "
        f"all {pct(med([r[3] for r in rows]))}"
    )


def _half_summary(facts: list[Planted], rng: random.Random) -> Callable[[Any], str]:
    def reply(context: Any) -> str:
        prompt = context.messages[-1].content.lower()
        kept = [f for f in facts if f.probe.lower() in prompt and rng.random() < 0.5]
        return "Summary:\n" + "\n".join(f"- {f.probe}" for f in kept)

    return reply


def _ours_with_half_model(seed: int) -> tuple[float, float]:
    rng = random.Random(seed)
    facts: list[Planted] = []
    fake = ScriptedCompleter([_half_summary(facts, rng)] * 50)
    # limit = (window - reserve) * 0.75 = 60k, like the middleware's trigger; keep 6k.
    condenser = create_condenser(
        model=Model("m", 82_048),
        complete_sync=fake.sync,
        summarizer_model=Model("s", 400_000),
        policy=BudgetPolicy(keep_recent=6000),
    )
    history: list = []
    for g in range(5):
        m, f = generation_material(seed, g, 150)
        facts += f
        history = list(condenser.run_sync(history + m).messages)
    text = text_of(history)
    first = [f for f in facts if f.generation == 0]
    return retention(first, text)["overall"], retention(facts, text)["overall"]


def _peer_model(facts: list[Planted], rng: random.Random) -> Any:
    """A LangChain chat model that writes the same half-omitting summary as above."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class Forgetful(GenericFakeChatModel):
        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> Any:
            prompt = "\n".join(str(m.content) for m in messages).lower()
            kept = [f for f in facts if f.probe.lower() in prompt and rng.random() < 0.5]
            text = "Summary:\n" + "\n".join(f"- {f.probe}" for f in kept)
            return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])

    return Forgetful(messages=iter([]))


def _to_langchain(msgs: Sequence[Any], human: Any, ai: Any, tool: Any) -> list:
    out = []
    for m in msgs:
        if isinstance(m, UserMessage):
            out.append(human(message_text(m)))
        elif isinstance(m, AssistantMessage):
            calls = (
                [
                    {"id": b.id, "name": b.name, "args": dict(b.arguments)}
                    for b in m.content
                    if isinstance(b, ToolCallBlock)
                ]
                if not isinstance(m.content, str)
                else []
            )
            text = (
                m.content
                if isinstance(m.content, str)
                else "\n".join(b.text for b in m.content if isinstance(b, TextBlock))
            )
            out.append(ai(text, tool_calls=calls))
        elif isinstance(m, ToolResultMessage):
            out.append(
                tool(
                    message_text(m),
                    tool_call_id=m.tool_call_id,
                    status="error" if m.is_error else "success",
                )
            )
    return out


# ------------------------------------------------------------------ real sessions

_REAL_RES = (
    re.compile(r"(?<![\w.-])(?:/?[\w.-]+/)+[\w-]+\.\w{1,8}\b"),  # paths
    re.compile(r"`([^`\n]{3,80})`"),  # code spans: commands, identifiers
    re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b"),  # CamelCase
    re.compile(r"\b[a-z_][a-z0-9]*(?:_[a-z0-9]+)+\b"),  # snake_case names
    re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]{2,}\b"),  # env vars
    re.compile(r"\b\w*(?:Error|Exception)\b[^\n]{0,60}"),  # errors
)


_MD_TURN = re.compile(r"^## (User|Assistant) \((?:[^)]*)\)\s*$", re.MULTILINE)
_MD_TOOL = re.compile(r"^- \*\*Used (\w+)\*\*(?::\s*(.+)| (?:on|for) `([^`]+)`.*)?$")


def _markdown_session(text: str) -> list:
    """A Claude Code session exported as Markdown (``## User (…)`` / ``## Assistant (…)``
    turns, tools as ``- **Used Read** on `path```; outputs are not in the export)."""
    from window_budget.messages import CompactionSummaryMessage

    parts = _MD_TURN.split(text)
    out: list = []
    n = 0
    for role, body in zip(parts[1::2], parts[2::2], strict=False):
        body = body.strip()
        if role == "User":
            if body.startswith("This session is being continued"):
                out.append(CompactionSummaryMessage(body))
            elif body:
                out.append(UserMessage(body))
            continue
        prose, calls = [], []
        for line in body.splitlines():
            tool = _MD_TOOL.match(line.strip())
            if tool is None:
                prose.append(line)
                continue
            n += 1
            name, described, target = tool.groups()
            key = {
                "Read": "file_path",
                "Edit": "file_path",
                "Write": "file_path",
                "Grep": "pattern",
                "Glob": "pattern",
            }.get(name, "description")
            calls.append(ToolCallBlock(f"md{n}", name, {key: target or described or ""}))
        blocks = [TextBlock("\n".join(prose).strip())] if "".join(prose).strip() else []
        if blocks or calls:
            out.append(AssistantMessage((*blocks, *calls)))
            out += [ToolResultMessage(c.id, c.name, "(output not in the export)") for c in calls]
    return out


def real_sessions(folder: Path, counter: Any) -> None:
    from window_budget.messages import CompactionSummaryMessage, DigestMessage
    from window_budget.readers import read_transcript

    print(f"\n6. Real sessions from {folder}")
    shares, digest_shares, ratio = [], [], []
    for path in sorted([*folder.rglob("*.jsonl"), *folder.rglob("*.md")]):
        if path.suffix == ".md":
            msgs = _markdown_session(path.read_text(encoding="utf-8"))
        else:
            try:
                msgs = list(read_transcript(path, skip_bad=True).messages)
            except Exception as exc:  # a bench reports and moves on
                print(f"   {path.name}: unreadable ({exc})")
                continue
        marks = [
            i for i, m in enumerate(msgs) if isinstance(m, CompactionSummaryMessage | DigestMessage)
        ]
        start = 0
        for k in marks:
            summary = (
                message_text(msgs[k])
                if not isinstance(msgs[k], DigestMessage)
                else digest_body(msgs[k]) or ""
            )
            folded = msgs[start:k]  # from the previous summary (the model saw it) on
            start = k
            if len(folded) < 10:
                continue
            source = "\n".join(message_text(m) for m in folded)
            items = set()
            for pattern in _REAL_RES:
                for match in pattern.finditer(summary):
                    value = (match.group(1) if pattern.groups else match.group(0)).strip()
                    if len(value) >= 4 and value in source:
                        items.add(value)
            if len(items) < 5:
                continue
            budget = max(256, count_text(summary, counter))
            condenser = create_condenser(
                model=Model("m", 1_000_000),
                counter=counter,
                policy=BudgetPolicy(keep_recent=2000, digest_max_tokens=budget),
            )
            result = condenser.run_sync(folded, force=True)
            if result.summary is None:
                continue
            ours = text_of(result.messages)
            digest = result.summary.text
            shares.append(sum(v in ours for v in items) / len(items))
            digest_shares.append(sum(v in digest for v in items) / len(items))
            used = count_text(digest, counter)
            ratio.append(used / budget)
            print(
                f"   {path.name} @ {k}: {len(items)} items the agent's summary kept; "
                f"ours hold {pct(shares[-1])} (digest alone {pct(digest_shares[-1])}), "
                f"digest {used} tokens vs summary {budget}"
            )
    if shares:
        print(
            f"   median over {len(shares)} compactions: digest + tail {pct(med(shares))}, "
            f"digest alone {pct(med(digest_shares))}, tokens vs the summary "
            f"{med(ratio):.2f}x"
        )
    else:
        print("   no compaction with an agent-written summary found")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--counter", default="heuristic")
    parser.add_argument(
        "--real",
        type=Path,
        default=None,
        help="a folder of Claude Code *.jsonl sessions with compactions",
    )
    parser.add_argument("--skip", default="", help="comma-separated scenario numbers to skip")
    args = parser.parse_args()
    counter = None if args.counter == "heuristic" else resolve_counter(args.counter)
    skip = set(args.skip.split(","))
    if "1" not in skip:
        one_compaction(args.seeds, counter)
    if "2" not in skip:
        print("\n2. Successive compactions, new material between them (network-free digest)")
        for generations in (5, 10):
            opened = open_error_survival(args.seeds, counter, generations)
            for tokens in (2000, 4000):
                r = successive(args.seeds, counter, generations, tokens)
                print(
                    f"   after {generations}, digest {tokens:,} tokens: first-generation facts "
                    f"{pct(r['first'])}, all facts {pct(r['all'])} (without superseded plan "
                    f"steps {pct(r['current'])}); objective {pct(r['objective'])}, "
                    f"constraints {pct(r['constraint'])}, first-generation files "
                    f"{pct(r['file'])}, open errors {pct(opened)}; in the carried ledger "
                    f"{pct(r['ledger'])}"
                )
    if "3" not in skip:
        audit(args.seeds, counter)
    if "4" not in skip:
        masking(args.seeds, counter)
    if "5" not in skip:
        peer_langchain(args.seeds)
    if args.real is not None:
        real_sessions(args.real, counter)


if __name__ == "__main__":
    main()
