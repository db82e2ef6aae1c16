"""How many planted facts survive a compaction with no model bound.

Generates long coding-session transcripts (reads, edits, test runs with noisy output,
short user turns) and plants facts in the head that the condenser will drop: files
edited (one with a space and non-ASCII letters in its path), commands run, error
strings buried in 30 lines of output, user constraints and identifiers. The condenser
runs with no model (``create_condenser(model=Model(...))`` + ``run_sync``); the
benchmark reports the share of planted facts found in the digest, the digest body's
size against its budget (the one-line header is stamped on top), and the median time
of the whole ``run_sync`` (estimate, cut and network-free digest).

Run by hand:  python bench/bench_fact_retention.py [--counter tiktoken] [--digest-max-tokens N]
"""

from __future__ import annotations

import argparse
import statistics
import time

from window_budget import (
    AssistantMessage,
    BudgetPolicy,
    Model,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    create_condenser,
    estimate_tokens,
    resolve_counter,
)
from window_budget.budget.estimate import estimate_message_tokens
from window_budget.digest import digest_body

_MODULES = [f"{pkg}/{name}.py" for pkg in ("billing", "accounts", "notify", "search")
            for name in ("models", "views", "tasks", "serializers", "api")]

PLANTED: list[tuple[str, str]] = [
    # (kind, the exact string that must appear in the digest)
    ("path", "src/billing/invoice_tax.py"),
    ("path", "docs/release notes/überblick 2026.md"),
    ("path", "migrations/0042_add_invoice_lines.py"),
    ("path", "config/settings/production.toml"),
    ("path", "frontend/src/components/InvoiceTable.tsx"),
    ("path", "scripts/backfill_invoices.sh"),
    ("command", "alembic upgrade head"),
    ("command", "make migrate-db ENV=staging"),
    ("command", "npm run build:prod -- --sourcemap"),
    ("command", "python -m scripts.reindex --since 2026-01-01"),
    ("command", "docker compose up -d postgres redis"),
    ("error", 'relation "invoice_lines" does not exist'),
    ("error", "TypeError: Cannot read properties of undefined (reading 'currency')"),
    ("error", "ModuleNotFoundError: No module named 'stripe_v2'"),
    ("error", "redis.exceptions.ConnectionError: Error 111 connecting to localhost:6379"),
    ("constraint", "Never push to the main branch directly."),
    ("constraint", "Only use Python 3.11 features, the workers run 3.11."),
    ("constraint", "Don't add new dependencies without asking me first."),
    ("constraint", "Keep every monetary value in integer cents."),
    ("ident", "PAY-4821"),
    ("ident", "BILLING_API_TIMEOUT_MS"),
    ("ident", "https://runbooks.example.com/billing/invoices"),
    ("ident", "InvoiceLineSerializer"),
]


def _noise_source(path: str, lines: int) -> str:
    out = [f'"""{path}"""', "from __future__ import annotations", ""]
    for i in range(lines):
        out.append(f"def step_{i}(value: int, *, strict: bool = False) -> int:")
        out.append(f"    return value * {i} if strict else value + {i}\n")
    return "\n".join(out)


def _noisy_failure(key: str, i: int) -> str:
    frames = "".join(f'  File "/app/src/mod_{j}.py", line {10 + j}, in handler_{j}\n'
                     f"    result = handler_{j + 1}(request)\n" for j in range(14))
    return f"Traceback (most recent call last):\n{frames}{key}\n"


def _filler_turn(t: int, session: list, fail_every: int = 5, lines: int = 40) -> None:
    path = _MODULES[t % len(_MODULES)]
    ids = [f"c{t}_{k}" for k in range(3)]
    session.append(AssistantMessage((TextBlock(f"Looking at {path}."),
                                     ToolCallBlock(ids[0], "read_file", {"path": path}))))
    session.append(ToolResultMessage(ids[0], "read_file", _noise_source(path, lines + t % 3)))
    session.append(AssistantMessage((ToolCallBlock(ids[1], "edit_file", {
        "path": path, "old": "value + 1", "new": "value + 2"}),)))
    session.append(ToolResultMessage(ids[1], "edit_file", f"Edited {path}."))
    test = f"pytest tests/{path.replace('/', '_')} -q"
    session.append(AssistantMessage((ToolCallBlock(ids[2], "bash", {"command": test}),)))
    failed = t % fail_every == 3
    out = (_noisy_failure(f"AssertionError: assert {t} == {t + 1}", t) if failed
           else "." * 20 + f"\n20 passed in 0.{t % 10}s")
    session.append(ToolResultMessage(ids[2], "bash", out, is_error=failed))
    session.append(UserMessage(f"Ok, continue with the next module after {path}."))


def _plant(kind: str, fact: str, n: int, session: list) -> None:
    cid = f"p{n}"
    if kind == "path":
        session.append(AssistantMessage((ToolCallBlock(cid, "write_file", {
            "file_path": fact, "content": "# generated\n" * 10}),)))
        session.append(ToolResultMessage(cid, "write_file", f"Wrote {fact}."))
    elif kind == "command":
        session.append(AssistantMessage((ToolCallBlock(cid, "bash", {"command": fact}),)))
        session.append(ToolResultMessage(cid, "bash", "done\n" + "ok\n" * 20))
    elif kind == "error":
        session.append(AssistantMessage((ToolCallBlock(cid, "bash", {
            "command": f"python -m app.jobs.run_{n}"}),)))
        session.append(ToolResultMessage(cid, "bash", _noisy_failure(
            fact if ":" in fact[:40] else f"psycopg.errors.UndefinedTable: {fact}", n),
            is_error=True))
    elif kind == "constraint":
        session.append(UserMessage(f"One more thing. {fact} Thanks."))
    else:
        session.append(UserMessage(f"For reference, this is tracked as {fact}; see it "
                                   "before changing the billing flow."))


def build_session(head_tokens: int, tail_tokens: int = 6000) -> tuple[list, int]:
    """A transcript whose first ``head_tokens`` hold the planted facts; returns (msgs, head_len)."""
    session: list = [UserMessage(
        "We are moving invoice generation from the monolith into the billing service. "
        "Start with the data model, then the API.")]
    turns = max(len(PLANTED) + 2, head_tokens // 1200)
    base = estimate_tokens(_probe_turn(0))
    per_line = (estimate_tokens(_probe_turn(20)) - base) / 20
    lines = max(0, round((head_tokens / turns - base) / per_line))
    slots = {int((i + 0.5) * turns / len(PLANTED)): i for i in range(len(PLANTED))}
    for t in range(turns):
        _filler_turn(t, session, lines=lines)
        if t in slots:
            kind, fact = PLANTED[slots[t]]
            _plant(kind, fact, slots[t], session)
    head_len = len(session)
    t = turns
    tail = 0
    while tail < tail_tokens:
        before = len(session)
        _filler_turn(t, session, fail_every=10**9)
        tail += sum(estimate_message_tokens(m) for m in session[before:])
        t += 1
    return session, head_len


def _probe_turn(lines: int) -> list:
    probe: list = []
    _filler_turn(7, probe, fail_every=10**9, lines=lines)
    return probe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counter", default=None, help="token counter (e.g. tiktoken)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--digest-max-tokens", type=int, default=BudgetPolicy().digest_max_tokens)
    args = parser.parse_args()
    counter = resolve_counter(args.counter) if args.counter else None
    policy = BudgetPolicy(digest_max_tokens=args.digest_max_tokens)
    model = Model("bench-model", context_window=16_384)
    print(f"policy: keep_recent={policy.keep_recent} digest_max_tokens="
          f"{policy.digest_max_tokens}  counter={counter.name if counter else 'heuristic'}")
    print(f"{'head':>8} {'msgs':>6} {'dropped':>8} {'retained':>10} {'body tok':>11} "
          f"{'condense ms':>11}  missing")
    for head in (10_000, 50_000, 200_000):
        msgs, _head_len = build_session(head)
        condenser = create_condenser(model=model, policy=policy, counter=counter)
        times: list[float] = []
        result = None
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = condenser.run_sync(msgs)
            times.append((time.perf_counter() - start) * 1000)
        assert result is not None
        assert result.summary is not None
        digest = result.summary.text
        body = digest_body(result.summary.message) or ""
        dropped_tokens = estimate_tokens(result.plan.dropped, counter)
        missing = [fact for _kind, fact in PLANTED if fact not in digest]
        share = 1 - len(missing) / len(PLANTED)
        size = counter.count(body) if counter else -(-len(body) * 10 // 36)
        print(f"{dropped_tokens:>8,} {len(msgs):>6} {len(result.plan.dropped):>8} "
              f"{share:>9.0%} {size:>5}/{policy.digest_max_tokens:<5} "
              f"{statistics.median(times):>11.1f}  {missing or ''}")


if __name__ == "__main__":
    main()
