"""The report: medians over seeds per checkpoint, the tables, the results file."""

from __future__ import annotations

import statistics
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memory_reach.names import KINDS, REPORTED
from memory_reach.scoring import Snapshot
from window_budget.pipeline.summarize._memory import record_budget


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
        for kind in (*REPORTED, None):
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
    for kind in (*REPORTED, "overall"):
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
        + " | ".join(REPORTED)
        + " |",
        "| ---: |" + " ---: |" * (len(checks) + 1 + len(REPORTED)),
    ]
    for b in budgets:
        rows = sweep[b]
        overall = [pct(rows[n]["kinds"]["overall"]["digest"]) for n in checks]
        first, last = rows[checks[0]]["kinds"], rows[checks[-1]]["kinds"]
        per_kind = [f"{pct(first[k]['digest'])} → {pct(last[k]['digest'])}" for k in REPORTED]
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
