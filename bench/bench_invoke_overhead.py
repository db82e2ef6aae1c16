"""What a middleware adds to a whole ``agent.invoke``, measured the way a user meets it.

Run by hand:  python bench/bench_invoke_overhead.py [--sizes 2000,10000] [--runs 25] [--sets 8]
              python bench/bench_invoke_overhead.py --sizes 2000 --one-process (one process)
              python bench/bench_invoke_overhead.py --profile 10000   (cProfile, ours vs peer)

``create_agent`` + ``InMemorySaver``, a thread seeded with N messages (a tool-using agent's),
one more ``agent.invoke`` per sample with a fake chat model that answers at once and reports
no usage (so every gate counts the thread), nothing summarized:

* (a) no middleware,
* (b) ``SummarizationMiddleware`` with a token trigger nothing reaches,
* (c) ``WindowBudgetMiddleware`` with its defaults and a window nothing fills.

The configurations take turns (round robin, a collection before each sample), so a load spike
or a collection lands on each alike. Reported: medians of wall time and of this process's CPU
time, the cost each middleware adds, ``(b) - (a)`` and ``(c) - (a)``, and the ratio
``(c) / (b)`` (target <= 1.0), the same from each configuration's lower quartile (steadier
on a loaded machine: other processes only ever add time), and the objects each worker's
cyclic collector tracks after the warm-up. The whole invoke counts: the hooks, the graph's
nodes, the checkpoint writes, and the garbage collections the invoke's new objects trigger over
everything alive, what a middleware keeps between turns included.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

warnings.simplefilter("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_cold_turns import _quiet_model, lc_transcript  # noqa: E402

WINDOW = 50_000_000
"""Large enough that nothing is ever compacted or summarized."""

NONE, PEER, OURS = "(a) no middleware", "(b) SummarizationMiddleware", "(c) WindowBudgetMiddleware"
CONFIGS = (NONE, PEER, OURS)


def chat_thread(n: int) -> list[Any]:
    """``n`` plain chat messages without ids (the checkpointer gives each a UUID)."""
    from langchain_core.messages import AIMessage, HumanMessage

    return [
        HumanMessage(f"question {i}: " + "q" * 200)
        if i % 2 == 0
        else AIMessage(f"answer {i}: " + "a" * 400)
        for i in range(n)
    ]


def fake_model(kind: str) -> Any:
    """The bench's chat model: ``quiet`` (answers "ok") or LangChain's ``generic`` fake."""
    if kind == "quiet":
        return _quiet_model()
    from itertools import repeat

    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    return GenericFakeChatModel(messages=repeat(AIMessage("ok")))


SHAPE: dict[str, Any] = {"model": "quiet", "thread": "tools"}
"""The model and the thread's shape (``--model``, ``--thread``)."""


def build(n: int, only: str | None = None) -> dict[str, tuple[Any, dict[str, Any]]]:
    """The three agents (or the one named ``only``), each over its own checkpointer holding
    a thread of ``n`` messages."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_window_budget import WindowBudgetMiddleware
    from window_budget import BudgetPolicy

    never = BudgetPolicy.for_window(WINDOW, cache_aware=False)
    model = fake_model(SHAPE["model"])
    seed = lc_transcript(n) if SHAPE["thread"] == "tools" else chat_thread(n)
    middleware: dict[str, list[Any]] = {
        NONE: [],
        PEER: [SummarizationMiddleware(model, trigger=("tokens", WINDOW), keep=("messages", 20))],
        # The window's share, not the default's prompt ceiling: nothing is ever compacted.
        OURS: [WindowBudgetMiddleware(model, context_window=WINDOW, policy=never)],
    }
    agents = {}
    for name, mws in middleware.items():
        if only is not None and name != only:
            continue
        agent = create_agent(model, tools=[], middleware=mws, checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": f"t-{n}"}}
        agent.update_state(config, {"messages": seed})
        for k in range(2):  # warm: imports, first sight of the thread
            agent.invoke({"messages": [HumanMessage(f"warm up {k}")]}, config)
        agents[name] = (agent, config)
    return agents


@dataclass(frozen=True)
class Sample:
    """One invoke of one configuration (ms)."""

    wall: float
    cpu: float
    gc_ms: float
    """CPU time spent in the collector's runs during the invoke."""
    full: float
    """Full (generation 2) collections during the invoke."""

    @property
    def mutator(self) -> float:
        """CPU time outside the collector."""
        return self.cpu - self.gc_ms


TRACKED: dict[str, int] = {}
"""Per configuration, the objects its worker's cyclic collector tracks after the warm-up:
what every full collection walks (a middleware's share is what it keeps between turns)."""


def measure(n: int, runs: int, sets: int = 1) -> dict[str, list[Sample]]:
    """(wall ms, CPU ms) of each invoke, per configuration, in the order they ran.

    Each configuration lives in its own worker process (what one keeps alive between turns
    is then collected in its own process only, as for a user), and the workers take turns.
    ``sets`` fresh sets of workers share the ``runs`` rounds: what stays fixed for one
    process's life (where its heap and its hash seed put things) and a slow spell of the
    machine, each a few ms on an invoke, then weigh ``1 / sets`` on each configuration
    instead of being the whole of its difference; pyperf spawns many worker processes for
    the same reason. Fills :data:`TRACKED` (the last set's).
    """
    samples: dict[str, list[Sample]] = {name: [] for name in CONFIGS}
    for turns in _sets(runs, sets):
        _one_set(n, turns, samples)
    return samples


def _sets(runs: int, sets: int) -> list[range]:
    """The rounds of each set: ``runs`` split as evenly as can be among ``sets`` (at most
    one set per round)."""
    sets = max(1, min(sets, runs))
    edges = [round(k * runs / sets) for k in range(sets + 1)]
    return [range(a, b) for a, b in pairwise(edges)]


def _one_set(n: int, turns: range, samples: dict[str, list[Sample]]) -> None:
    """One worker per configuration, built and warmed, then one invoke each per turn."""
    workers = {
        name: subprocess.Popen(
            [sys.executable, __file__, "--worker", name, "--sizes", str(n), *_shape_args()],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in CONFIGS
    }
    try:
        for name, proc in workers.items():  # built and warm
            TRACKED[name] = int(_ask(proc, "ready").split()[1])
        for turn in turns:
            order = list(workers.items())
            if turn % 2:  # alternate the order too: no configuration always runs first
                order.reverse()
            for name, proc in order:
                samples[name].append(Sample(*map(float, _ask(proc, f"turn {turn}").split())))
    finally:
        for proc in workers.values():
            proc.stdin.close()  # type: ignore[union-attr]
            proc.wait()


def _ask(proc: subprocess.Popen[str], line: str) -> str:
    proc.stdin.write(line + "\n")  # type: ignore[union-attr]
    proc.stdin.flush()  # type: ignore[union-attr]
    answer = proc.stdout.readline()  # type: ignore[union-attr]
    if not answer:
        raise RuntimeError(f"worker {proc.args!r} died")
    return answer


def _shape_args() -> list[str]:
    freeze = ["--freeze"] if SHAPE.get("freeze") else []
    return ["--model", SHAPE["model"], "--thread", SHAPE["thread"], *freeze]


def worker(name: str, n: int) -> None:
    """One configuration: build it, then one timed invoke per line read from stdin.

    No collection is forced between invokes: the collections a turn's new objects trigger
    fall where they would for a user, over what this process keeps alive.
    """
    from langchain_core.messages import HumanMessage

    ((agent, config),) = build(n, only=name).values()
    if SHAPE.get("freeze"):
        # Diagnostic: what is alive after the warm-up (the thread's conversion a middleware
        # keeps, among the rest) leaves the collector's view, in every configuration alike.
        gc.collect()
        gc.freeze()
    spent = {"ms": 0.0, "full": 0, "start": 0.0}

    def collections(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            spent["start"] = time.process_time()
            return
        spent["ms"] += (time.process_time() - spent["start"]) * 1000
        spent["full"] += info["generation"] == 2

    gc.callbacks.append(collections)
    for line in sys.stdin:
        if line.strip() == "ready":
            gc.collect()
            print(f"ready {len(gc.get_objects())}", flush=True)
            continue
        spent.update(ms=0.0, full=0)
        w, c = time.perf_counter(), time.process_time()
        agent.invoke({"messages": [HumanMessage(line.strip())]}, config)
        cpu, wall = (time.process_time() - c) * 1000, (time.perf_counter() - w) * 1000
        print(f"{wall:.4f} {cpu:.4f} {spent['ms']:.4f} {spent['full']}", flush=True)


def report(
    n: int, samples: dict[str, list[Sample]], sets: int = 1, collections: bool = True
) -> None:
    """Print, per middleware, what it adds to an invoke, and its ratio to the peer's.

    With several ``sets`` of workers, also the ratio of added CPU medians set by set: the
    spread that one process per configuration would have shown. ``collections=False``:
    the samples did not time the collector (``--one-process``), its rows are left out.
    """

    def added(name: str, field: str, stat: Any = statistics.median) -> float:
        # Per-round differences: a slow spell of the machine hits both sides of a pair.
        pairs = zip(samples[name], samples[NONE], strict=True)
        return float(stat([getattr(s, field) - getattr(b, field) for s, b in pairs]))

    def quartile(name: str, field: str) -> float:
        def low(of: str) -> float:
            return statistics.quantiles([getattr(s, field) for s in samples[of]], n=4)[0]

        return low(name) - low(NONE)

    base = samples[NONE]
    print(
        f"\n{n:,} messages, {len(base)} rounds: invoke without middleware "
        f"{statistics.median(s.wall for s in base):.1f} ms wall, "
        f"{statistics.median(s.cpu for s in base):.1f} ms CPU (medians)"
    )
    rows = {
        "added wall, median": lambda name: added(name, "wall"),
        "added CPU, median": lambda name: added(name, "cpu"),
        "added CPU, mean": lambda name: added(name, "cpu", statistics.fmean),
        "added CPU outside collections, median": lambda name: added(name, "mutator"),
        "collections: ms per invoke, mean": lambda name: added(name, "gc_ms", statistics.fmean),
        # Load from other processes only ever adds time: the fastest rounds are the least
        # disturbed, so the difference of the lower quartiles is the steadier figure.
        "added CPU, lower quartile": lambda name: quartile(name, "cpu"),
        "added wall, lower quartile": lambda name: quartile(name, "wall"),
    }
    if not collections:
        for label in ("added CPU outside collections, median", "collections: ms per invoke, mean"):
            del rows[label]
    print(f"  {'':<40} {'peer':>8} {'ours':>8} {'ours/peer':>10}")
    for label, figure in rows.items():
        peer, ours = figure(PEER), figure(OURS)
        ratio = f"{ours / peer:10.2f}" if peer > 0 else f"{'n/a':>10}"
        print(f"  {label:<40} {peer:+8.2f} {ours:+8.2f} {ratio}")
    for name in CONFIGS if collections else ():
        full = statistics.fmean(s.full for s in samples[name])
        gc_ms = statistics.fmean(s.gc_ms for s in samples[name])
        print(f"  {name:<30} full collections per invoke {full:.2f}, {gc_ms:.1f} ms collecting")
    if sets > 1:
        ratios = []
        for turns in _sets(len(base), sets):
            part = {k: v[turns.start : turns.stop] for k, v in samples.items()}
            diff = {
                name: statistics.median(
                    s.cpu - b.cpu for s, b in zip(part[name], part[NONE], strict=True)
                )
                for name in (PEER, OURS)
            }
            ratios.append(f"{diff[OURS] / diff[PEER]:.2f}" if diff[PEER] > 0 else "n/a")
        print(f"  ours/peer added CPU, set by set: {' '.join(ratios)}")
    if TRACKED:
        extra = {name: TRACKED[name] - TRACKED[NONE] for name in (PEER, OURS)}
        print(
            f"  tracked objects after warm-up: {TRACKED[NONE]:,} without middleware; "
            f"peer {extra[PEER]:+,}, ours {extra[OURS]:+,} "
            f"({extra[OURS] / n:+.1f} per message)"
        )


def one_process(n: int, runs: int) -> dict[str, list[Sample]]:
    """The three configurations in this one process, invokes interleaved (a diagnostic).

    No process's luck differs between them, but they share one heap and one collector:
    use it where no full collection falls in an invoke (2k messages, not 10k).
    """
    from langchain_core.messages import HumanMessage

    agents = build(n)
    samples: dict[str, list[Sample]] = {name: [] for name in CONFIGS}
    for turn in range(runs):
        order = CONFIGS if turn % 2 == 0 else CONFIGS[::-1]
        for name in order:
            agent, config = agents[name]
            w, c = time.perf_counter(), time.process_time()
            agent.invoke({"messages": [HumanMessage(f"turn {turn}")]}, config)
            cpu, wall = (time.process_time() - c) * 1000, (time.perf_counter() - w) * 1000
            samples[name].append(Sample(wall, cpu, 0.0, 0))
    return samples


def profile(n: int, runs: int) -> None:
    """cProfile of ``runs`` invokes of ours and of the peer (top functions by own time)."""
    import cProfile
    import pstats

    from langchain_core.messages import HumanMessage

    agents = build(n)
    for name in (PEER, OURS):
        agent, config = agents[name]
        prof = cProfile.Profile()
        for turn in range(runs):
            gc.collect()
            prof.enable()
            agent.invoke({"messages": [HumanMessage(f"turn {turn}")]}, config)
            prof.disable()
        print(f"\n===== {name}, {runs} invokes at {n:,} messages =====")
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2000,10000", help="thread sizes, comma-separated")
    parser.add_argument("--runs", type=int, default=25, help="samples per configuration")
    parser.add_argument(
        "--sets",
        type=int,
        default=8,
        help="fresh worker processes per configuration, sharing the rounds (1: one each)",
    )
    parser.add_argument(
        "--one-process",
        action="store_true",
        help="diagnostic: the three configurations in this process (no collections counted)",
    )
    parser.add_argument("--profile", type=int, metavar="N", help="profile at N messages instead")
    parser.add_argument("--model", choices=("quiet", "generic"), default="quiet")
    parser.add_argument("--thread", choices=("tools", "chat"), default="tools")
    parser.add_argument(
        "--freeze",
        action="store_true",
        help="diagnostic: gc.freeze() after the warm-up in every worker",
    )
    parser.add_argument("--worker", choices=CONFIGS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    SHAPE.update(model=args.model, thread=args.thread, freeze=args.freeze)
    if args.worker:
        worker(args.worker, int(args.sizes))
        return
    if args.profile:
        profile(args.profile, max(3, args.runs // 3))
        return
    for n in (int(s) for s in args.sizes.split(",")):
        if args.one_process:
            TRACKED.clear()
            report(n, one_process(n, args.runs), collections=False)
        else:
            report(n, measure(n, args.runs, args.sets), sets=args.sets)


if __name__ == "__main__":
    main()
