"""The command line: build the sessions, run the trajectories (in worker processes with
``--jobs``), print the tables, write the results file."""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from memory_reach.generator import Session, session
from memory_reach.names import FIRST_HEADS
from memory_reach.report import _commit, _rounded, reach_table, summarize, sweep_table
from memory_reach.scoring import Snapshot, check_generator, trajectory
from window_budget import BudgetPolicy, estimate_tokens

WINDOWS = (16_000, 128_000, 1_000_000)
SWEEP_WINDOW = 128_000
CHECKPOINTS = (1, 5, 10)

_SESSIONS: dict[int, list[Session]] = {}
"""Built once before the workers fork; each worker reads its seed's sessions from here."""

Job = tuple[int, int, int | None, bool]
"""(seed, window, digest budget or None for the default, with recall)."""


def _cpu() -> float:
    """CPU seconds of this process and of the workers it has joined."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _run(job: Job) -> list[Snapshot]:
    seed, window, budget, with_recall = job
    return trajectory(
        _SESSIONS[seed], window, budget=budget, checkpoints=CHECKPOINTS, with_recall=with_recall
    )


def _run_all(jobs: Sequence[Job], workers: int) -> dict[Job, list[Snapshot]]:
    """Every job's snapshots, in worker processes when ``workers`` > 1 (forked: the sessions
    are inherited, not pickled)."""
    if workers <= 1:
        return {job: _run(job) for job in jobs}
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        return dict(zip(jobs, pool.map(_run, jobs), strict=True))


def _parser(doc: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--quick", action="store_true", help="1 seed (a 55k first head), 3 budgets in the sweep"
    )
    parser.add_argument("--check", action="store_true", help="only self-check the generator")
    parser.add_argument(
        "-j", "--jobs", type=int, default=1, help="worker processes (one seed and window each)"
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        help="where the figures go (default bench/results/memory_reach.json, "
        "memory_reach_quick.json with --quick)",
    )
    return parser


def main(doc: str = "", argv: Sequence[str] | None = None) -> None:
    args = _parser(doc).parse_args(argv)
    if args.json is None:
        name = "memory_reach_quick.json" if args.quick else "memory_reach.json"
        args.json = Path(__file__).parent.parent / "results" / name
    if args.check:
        check_generator()
        return
    seeds = 1 if args.quick else args.seeds
    budgets = (2000, 6000, 12000) if args.quick else (2000, 4000, 6000, 8000, 12000)
    started = time.time()
    for seed in range(seeds):
        _SESSIONS[seed] = session(seed, max(CHECKPOINTS), FIRST_HEADS[seed % len(FIRST_HEADS)])
    sizes = {
        seed: [estimate_tokens([m for step in s.steps for m in step]) for s in ss]
        for seed, ss in _SESSIONS.items()
    }
    print(
        f"# Memory reach (bench_memory_reach.py), {seeds} seed(s), commit {_commit()}\n\n"
        f"Heads: first {', '.join(f'{v[0] // 1000}k' for v in sizes.values())} tokens, "
        f"later {min(min(v[1:]) for v in sizes.values()) // 1000}k–"
        f"{max(max(v[1:]) for v in sizes.values()) // 1000}k; planted facts per generation: "
        f"{len(_SESSIONS[0][0].facts)} then {len(_SESSIONS[0][1].facts)}."
    )
    sys.stdout.flush()
    default = BudgetPolicy().digest_max_tokens  # the main runs measure it at the sweep window
    jobs: list[Job] = [(seed, w, None, True) for w in WINDOWS for seed in range(seeds)]
    jobs += [
        (seed, SWEEP_WINDOW, b, False) for b in budgets if b != default for seed in range(seeds)
    ]
    cpu_before = _cpu()
    done = _run_all(jobs, args.jobs)
    main_runs = {
        w: summarize([done[(seed, w, None, True)] for seed in range(seeds)]) for w in WINDOWS
    }
    for window, summary in main_runs.items():
        print(reach_table(window, summary, seeds))
    sweep = {
        b: main_runs[SWEEP_WINDOW]
        if b == default
        else summarize([done[(seed, SWEEP_WINDOW, b, False)] for seed in range(seeds)])
        for b in budgets
    }
    print(sweep_table(SWEEP_WINDOW, sweep, seeds))
    wall = time.time() - started
    cpu = _cpu() - cpu_before
    print(f"\nCPU time: {cpu:.0f} s; wall time: {wall:.0f} s with {max(1, args.jobs)} worker(s)")
    result: dict[str, Any] = {
        "bench": "bench_memory_reach.py",
        "date": time.strftime("%Y-%m-%d"),
        "commit": _commit(),
        "seeds": seeds,
        "quick": args.quick,
        "jobs": args.jobs,
        "head_tokens": {str(k): v for k, v in sizes.items()},
        "cpu_seconds": round(cpu, 1),
        "wall_seconds": round(wall, 1),
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
