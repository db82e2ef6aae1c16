"""What a long agent session costs, by compaction strategy, under three prompt-cache models.

Run by hand:  python bench/bench_session_cost.py [--quick] [--seeds 3] [--windows 32k,128k]
              [--calls 400] [--only "ours,trim"] [--merge a.json b.json]

One scripted coding-agent session per seed (LangChain ``create_agent``, a fake tool-calling
model that follows a script whatever it is sent; tool outputs of varied sizes; twelve planted
facts early on — the objective, constraints, files, commands, errors, decisions — among many
competing ones later) is driven through every strategy at every window. Every request a model
receives, summary calls included, is recorded and counted with cl100k (tiktoken, offline), and
priced afterwards under three cache models:

* **exact**: the longest common prefix (whole messages) with any earlier request is read at
  0.1x, the rest is billed in full — the ideal cache;
* **anthropic**: breakpoints on the system block and on the last message; a breakpoint reads
  the longest prefix written earlier that ends within 20 blocks before it (0.1x) and writes the
  rest (1.25x); prefixes under 1,024 tokens are not cached; summary calls carry no breakpoint;
* **openai**: the common prefix is cached from 1,024 tokens in 128-token steps, read at
  ``--openai-read`` (0.5x and 0.1x both reported), no write premium.

Output tokens cost 5x input in every shape. Per window and price shape the table gives the cost
relative to the cheapest run that never sent a request over the window (same seed), the share
of input read from the cache, cache breaks (a request that does not extend the one before it),
summary calls, peak and mean prompt, requests over the window and the planted facts present in
the final request; medians over the seeds. JSON goes to ``bench/results/session_cost.json``
(``session_cost_quick.json`` with ``--quick``).

Strategies, as users set them: window-budget's ``WindowBudgetMiddleware`` with its defaults
(the prompt ceiling, the middleware's in-process memory store for the run's thread), the same
policy without a memory store (``memory=None``), 75 % of the window
(``cache_aware=False``), ``trigger 0.5`` (half the window, no ceiling), ceilings of 16k and
32k, masking off, masking at the 0.8 target;
``SummarizationMiddleware`` with deepagents' settings (fire at 85 %, keep 10 % in tokens), with
and without ``trim_tokens_to_summarize``; ``ContextEditingMiddleware(ClearToolUsesEdit(keep=3))``
firing at 100k or 75 % of a smaller window; ``trim_messages`` keeping the last 75 % of the window
on every call. ``--explore`` adds variants of ours (JSON, see ``EXPLORE``); ``--merge`` re-tables
saved results (runs are deterministic per seed, so a strategy re-run alone compares with the
rest). A full run (400 calls, 3 seeds, 4 windows) takes about an hour of CPU, most of it in
``ClearToolUsesEdit`` and ``trim_messages``; ``--quick`` is 200 calls.

The summary model is a fake too: it answers every summary call with the same generic digest, so
"facts kept" counts what a strategy keeps by itself (window-budget pins what its audit misses),
not what a good summarizer would have written.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from _cost_session import (
    PLANTED,
    SYSTEM_PROMPT,
    Counter,
    Request,
    Turn,
    build_session,
    make_models,
    make_tools,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
WINDOWS = {"32k": 32_768, "128k": 128_000, "200k": 200_000, "1M": 1_000_000}
OUTPUT_PRICE = 5.0
ANTHROPIC_READ, ANTHROPIC_WRITE, LOOKBACK, MIN_CACHED = 0.1, 1.25, 20, 1024
OPENAI_STEP = 128


# ---------------------------------------------------------------- strategies


def _trim_middleware(window: int) -> Any:
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.messages import trim_messages
    from langchain_core.messages.utils import count_tokens_approximately

    class SlidingWindow(AgentMiddleware):  # type: ignore[type-arg]
        def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
            kept = trim_messages(
                request.messages,
                max_tokens=int(window * 0.75),
                strategy="last",
                token_counter=count_tokens_approximately,
                start_on=("human", "ai"),
                allow_partial=False,
            )
            return handler(request.override(messages=kept))

    return SlidingWindow()


def strategies(window: int) -> dict[str, Callable[[Any, Any], list[Any]]]:
    """Name → (agent model, summary model) → the middleware list; peers as users set them."""
    from langchain.agents.middleware import (
        ClearToolUsesEdit,
        ContextEditingMiddleware,
        SummarizationMiddleware,
    )

    from langchain_window_budget import WindowBudgetMiddleware
    from window_budget import BudgetPolicy

    base = BudgetPolicy.for_window(window)

    def ceiling(tokens: int, **kw: Any) -> BudgetPolicy:
        return replace(base, prompt_ceiling=tokens, **kw)

    def ours(
        policy: BudgetPolicy | None = None,
        mask_target: float | None = None,
        memory: Callable[[], Any] | None = None,
    ) -> Callable[[Any, Any], list[Any]]:
        def make(agent: Any, summarizer: Any) -> list[Any]:
            if mask_target is not None:
                MASK_TARGETS.append(mask_target)
            return [
                WindowBudgetMiddleware(
                    agent,
                    context_window=window,
                    policy=policy,
                    summarizer=summarizer,
                    system_prompt=SYSTEM_PROMPT,
                    **({} if memory is None else {"memory": memory()}),
                )
            ]

        return make

    # deepagents' settings when the model's window is known: fire at 85 %, keep 10 %.
    trigger, keep = ("tokens", int(window * 0.85)), ("tokens", int(window * 0.10))
    return {
        "ours: defaults": ours(),
        # The default for a model whose cached input costs half (gpt-4o): judged under
        # OpenAI 0.5x prices (``--merge`` tables it beside the rest).
        "ours: defaults, cache read 0.5": ours(BudgetPolicy.for_window(window, cache_read=0.5)),
        "ours: ceiling, no memory store": ours(base, memory=lambda: None),
        "ours: 75 % of the window": ours(BudgetPolicy.for_window(window, cache_aware=False)),
        "ours: trigger 0.5": ours(replace(base, trigger_ratio=0.5, prompt_ceiling=None)),
        "ours: ceiling 16k": ours(ceiling(16_000)),
        "ours: ceiling 32k": ours(ceiling(32_000)),
        "ours: masking off": ours(replace(base, mask_keep_outputs=None)),
        "ours: mask target 0.8": ours(None, 0.8),
        **{f"ours: ceiling {c // 1000}k": ours(ceiling(c)) for c in EXPLORE.get("ceilings", ())},
        **{
            f"ours: ceiling {c // 1000}k digest {d}": ours(ceiling(c, digest_max_tokens=d))
            for c, d in EXPLORE.get("digests", ())
        },
        **{f"ours: mask target {t}": ours(None, t) for t in EXPLORE.get("mask", ())},
        **{
            f"ours: ceiling {c // 1000}k mask {t}": ours(ceiling(c), t)
            for c, t in EXPLORE.get("ceiling_mask", ())
        },
        "summarization, keep in tokens": lambda a, s: [
            SummarizationMiddleware(s, trigger=trigger, keep=keep)
        ],
        "summarization, trim None": lambda a, s: [
            SummarizationMiddleware(s, trigger=trigger, keep=keep, trim_tokens_to_summarize=None)
        ],
        "clear tool uses (keep 3)": lambda a, s: [
            ContextEditingMiddleware(
                edits=[ClearToolUsesEdit(trigger=min(100_000, int(window * 0.75)), keep=3)]
            )
        ],
        "trim_messages (last 75 %)": lambda a, s: [_trim_middleware(window)],
    }


EXPLORE: dict[str, Any] = {}
"""Extra variants of ours (``--explore '{"ceilings": [32000]}'``), for choosing the policy."""
MASK_TARGETS: list[float] = []


# ---------------------------------------------------------------- one run


def run_session(
    turns: list[Turn], make_middleware: Callable[[Any, Any], list[Any]], count: Counter
) -> list[Request]:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage

    tools = make_tools(turns)
    tools_text = json.dumps(
        [{"name": t.name, "description": t.description, "args": t.args} for t in tools],
        sort_keys=True,
    )
    log: list[Request] = []
    MASK_TARGETS.clear()
    agent_model, summarizer = make_models(turns, tools_text, log, count)
    agent = create_agent(
        agent_model,
        tools=tools,
        system_prompt=SYSTEM_PROMPT,
        middleware=make_middleware(agent_model, summarizer),
    )
    import window_budget.pipeline._mask as mask

    saved = mask.MASK_TARGET, mask.MASK_TARGET_UNCAPPED
    if MASK_TARGETS:  # a variant's masking target, whichever policy it runs under
        mask.MASK_TARGET = mask.MASK_TARGET_UNCAPPED = MASK_TARGETS[-1]  # type: ignore[misc]
    try:
        messages: list[Any] = []
        for turn in turns:
            state = agent.invoke(
                {"messages": [*messages, HumanMessage(turn.ask)]},
                {"recursion_limit": 10_000, "configurable": {"thread_id": "session"}},
            )
            messages = state["messages"]
    finally:
        mask.MASK_TARGET, mask.MASK_TARGET_UNCAPPED = saved  # type: ignore[misc]
    return log


# ---------------------------------------------------------------- pricing


def _openai_cached(prefix: int) -> int:
    return (
        0
        if prefix < MIN_CACHED
        else MIN_CACHED + (prefix - MIN_CACHED) // OPENAI_STEP * OPENAI_STEP
    )


def price(
    log: Sequence[Request], count: Counter, window: int, openai_reads: Sequence[float]
) -> dict[str, Any]:
    """Every figure of one run, priced under each cache model."""
    seen: set[int] = set()  # prefix hashes of every earlier request (exact, openai)
    written: set[int] = set()  # prefix hashes written at a breakpoint (anthropic)
    costs = {"exact": 0.0, "anthropic": 0.0, **{f"openai {r}": 0.0 for r in openai_reads}}
    read = {"exact": 0, "anthropic": 0, "openai": 0}
    total_in = breaks = summaries = over = 0
    prompts: list[int] = []
    previous: list[int] | None = None
    for req in log:
        sizes = [count(b) for b in req.blocks]
        hashes, h = [], 0
        for b in req.blocks:
            h = hash((h, b))
            hashes.append(h)
        total = sum(sizes)
        out = count(req.output) * OUTPUT_PRICE
        total_in += total
        over += total > window
        cum = [0]
        for s in sizes:
            cum.append(cum[-1] + s)
        lcp = 0
        for i, hh in enumerate(hashes):
            if hh not in seen:
                break
            lcp = i + 1
        prefix = cum[lcp]
        read["exact"] += prefix
        costs["exact"] += 0.1 * prefix + (total - prefix) + out
        cached = _openai_cached(prefix)
        read["openai"] += cached
        for r in openai_reads:
            costs[f"openai {r}"] += r * cached + (total - cached) + out
        if req.kind == "agent":
            prompts.append(total)
            if previous is not None and (
                len(hashes) < len(previous) or hashes[len(previous) - 1] != previous[-1]
            ):
                breaks += 1
            previous = hashes
            last = len(hashes) - 1
            hit = 0
            if cum[1] >= MIN_CACHED and hashes[0] in written:
                hit = 1
            for j in range(last, max(last - LOOKBACK, 0) - 1, -1):
                if hashes[j] in written:
                    hit = max(hit, j + 1)
                    break
            got = cum[hit]
            if total >= MIN_CACHED:
                costs["anthropic"] += ANTHROPIC_READ * got + ANTHROPIC_WRITE * (total - got) + out
                read["anthropic"] += got
                if cum[1] >= MIN_CACHED:
                    written.add(hashes[0])
                written.add(hashes[last])
            else:
                costs["anthropic"] += total + out
        else:
            summaries += 1
            costs["anthropic"] += total + out  # no breakpoint on a summary call
        seen.update(hashes)
    return {
        "requests": len(log),
        "summary_calls": summaries,
        "over_window": over,
        "breaks": breaks,
        "peak_prompt": max(prompts),
        "mean_prompt": statistics.fmean(prompts),
        "input_tokens": total_in,
        "cached_share": {k: v / total_in for k, v in read.items()},
        "cost": costs,
    }


def facts_kept(log: Sequence[Request]) -> list[str]:
    final = next(r for r in reversed(log) if r.kind == "agent")
    text = "\n".join(final.blocks)
    return [name for name, key in PLANTED.items() if key in text]


# ---------------------------------------------------------------- driver


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a shorter session (about 200 calls)")
    parser.add_argument("--calls", type=int, default=None, help="agent calls per session")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--windows", default=",".join(WINDOWS))
    parser.add_argument("--only", default="", help="comma-separated substrings of strategy names")
    parser.add_argument(
        "--openai-read", default="0.5,0.1", help="cached-input price(s), comma-separated"
    )
    parser.add_argument("--out", default=None)
    parser.add_argument("--explore", default="", help="JSON of extra variants of ours")
    parser.add_argument("--merge", nargs="*", default=None, help="re-table these JSON results")
    args = parser.parse_args(argv)
    if args.explore:
        EXPLORE.update(json.loads(args.explore))
    calls = args.calls or (200 if args.quick else 400)
    reads = [float(x) for x in args.openai_read.split(",")]
    windows = [w.strip() for w in args.windows.split(",") if w.strip()]
    only = [s for s in args.only.split(",") if s]
    if args.merge:
        runs = [r for f in args.merge for r in json.loads(Path(f).read_text())["runs"]]
        order = list(WINDOWS)
        windows = sorted({r["window"] for r in runs}, key=order.index)
        report = summarize(runs, windows)
        print(report)
        first = json.loads(Path(args.merge[0]).read_text())
        write(
            Path(args.out) if args.out else RESULTS / "session_cost.json",
            {**first, "runs": runs, "table": report},
        )
        return 0
    count = Counter()
    runs: list[dict[str, Any]] = []
    started = time.perf_counter()
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        turns = build_session(seed, calls)
        for wname in windows:
            window = WINDOWS[wname]
            for name, make in strategies(window).items():
                if only and not any(o in name for o in only):
                    continue
                t0 = time.perf_counter()
                log = run_session(turns, make, count)
                row = {
                    "seed": seed,
                    "window": wname,
                    "strategy": name,
                    **price(log, count, window, reads),
                    "facts": facts_kept(log),
                    "seconds": round(time.perf_counter() - t0, 2),
                }
                runs.append(row)
                print(
                    f"seed {seed} {wname:>4} {name:<32} {row['seconds']:6.1f}s "
                    f"summaries {row['summary_calls']:>3} over {row['over_window']:>3} "
                    f"facts {len(row['facts']):>2} anthropic {row['cost']['anthropic']:>12,.0f}",
                    file=sys.stderr,
                )
    report = summarize(runs, windows)
    print(report)
    name = "session_cost_quick.json" if args.quick else "session_cost.json"
    record = {
        "calls": calls,
        "seeds": args.seeds,
        "planted": PLANTED,
        "seconds": round(time.perf_counter() - started, 1),
        "runs": runs,
        "table": report,
    }
    write(Path(args.out) if args.out else RESULTS / name, record)
    return 0


def write(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1))


def relative(runs: list[dict[str, Any]], shape: str) -> None:
    """Add ``rel[shape]``: cost over the cheapest run of the same seed and window that fit."""
    groups: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((r["seed"], r["window"]), []).append(r)
    for group in groups.values():
        fitting = [r["cost"][shape] for r in group if r["over_window"] == 0]
        floor = min(fitting) if fitting else min(r["cost"][shape] for r in group)
        for r in group:
            r.setdefault("rel", {})[shape] = r["cost"][shape] / floor


def summarize(runs: list[dict[str, Any]], windows: Sequence[str]) -> str:
    shapes = list(runs[0]["cost"]) if runs else []
    for shape in shapes:
        relative(runs, shape)
    names = sorted(dict.fromkeys(r["strategy"] for r in runs), key=lambda n: n != "ours: defaults")
    lines = []
    for wname in windows:
        lines += [
            f"\n### {wname} window (medians over seeds)\n",
            "| strategy | "
            + " | ".join(f"rel. cost {s}" for s in shapes)
            + " | cached (anthropic) | breaks | summary calls | peak prompt | mean prompt"
            " | over window | facts kept |",
            "| --- |" + " --- |" * (len(shapes) + 7),
        ]
        for name in names:
            rows = [r for r in runs if r["window"] == wname and r["strategy"] == name]
            if rows:
                lines.append(_row(name, rows, shapes))
    return "\n".join(lines)


def _row(name: str, rows: list[dict[str, Any]], shapes: Sequence[str]) -> str:
    def med(f: Callable[[dict[str, Any]], float]) -> float:
        return statistics.median(f(r) for r in rows)

    cells = [f"{med(lambda r, s=s: r['rel'][s]):.2f}" for s in shapes] + [
        f"{med(lambda r: r['cached_share']['anthropic']):.0%}",
        f"{med(lambda r: r['breaks']):.0f}",
        f"{med(lambda r: r['summary_calls']):.0f}",
        f"{med(lambda r: r['peak_prompt']):,.0f}",
        f"{med(lambda r: r['mean_prompt']):,.0f}",
        f"{med(lambda r: r['over_window']):.0f}",
        f"{med(lambda r: len(r['facts'])):.0f} of {len(PLANTED)}",
    ]
    return f"| {name} | " + " | ".join(cells) + " |"


if __name__ == "__main__":
    raise SystemExit(main())
