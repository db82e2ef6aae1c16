"""The summary call as a cache hit: input tokens billed, scrollback vs prefix-shaped requests.

Run by hand:  python bench/bench_summary_request.py [--turns 300] [--window 32000] [--seeds 3]

A scripted coding-agent session (seeded: user asks, tool calls, tool outputs of varied size)
is replayed turn by turn. Before each agent call the condenser runs (``AheadCompactor.run``
with no early mark: the synchronous path, the agent's system prompt handed in); the agent's
request is then the system prompt and the transcript. Every request is recorded, the agent's
and the summary calls alike, and counted with tiktoken cl100k (each message as its JSON).

Cache model: exact prefix at message granularity, as the provider would serve it with every
earlier request cached (no expiry): a request's cached tokens are those of its longest run of
leading messages (system prompt first) equal to the start of an earlier request. Billed
input = uncached + 0.1 × cached (Anthropic's cache read, OpenAI's cheapest cached rate; the
cache-write premium is left out). Both shapes run on the same session: ``scrollback``
(the default: brief + flattened turns) and ``prefix`` (the agent's prefix + an instruction).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import statistics
from collections.abc import Sequence

from window_budget import (
    AssistantMessage,
    BudgetPolicy,
    Model,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    create_condenser,
)
from window_budget.budget import TiktokenCounter
from window_budget.contract import CompleteOptions, Context
from window_budget.messages import AgentMessage, TextBlock, message_to_dict
from window_budget.pipeline import AheadCompactor

SYSTEM = "You are a coding agent working in a Python repository. " * 40  # ~500 tokens
READ = 0.1
COUNTER = TiktokenCounter("cl100k_base")


def script(seed: int, turns: int) -> list[list[AgentMessage]]:
    """The session's turns: what each agent call appends (a user ask or tool results)."""
    rng = random.Random(seed)
    out: list[list[AgentMessage]] = []
    for i in range(turns):
        if i % 6 == 0:
            out.append([UserMessage(f"task {i}: fix the bug in src/pkg/mod_{i}.py, keep tests")])
        path = f"src/pkg/mod_{rng.randrange(200)}.py"
        call = ToolCallBlock(f"c{i}", "read", {"path": path})
        body = "\n".join(
            f"line {n}: value = {rng.random():.6f}" for n in range(rng.randint(20, 400))
        )
        out.append([AssistantMessage((TextBlock(f"Reading {path}."), call))])
        out.append([ToolResultMessage(f"c{i}", "read", body)])
    return out


def tokens_of(system: str, messages: Sequence[AgentMessage]) -> list[tuple[str, int]]:
    rows = [system, *(json.dumps(message_to_dict(m), sort_keys=True) for m in messages)]
    return [(hashlib.sha256(r.encode()).hexdigest(), COUNTER.count(r)) for r in rows]


class Cache:
    """Every prefix of every request seen, by a running hash of its rows."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def bill(self, rows: list[tuple[str, int]]) -> tuple[int, int]:
        """(cached, uncached) tokens of one request; then remember its prefixes."""
        running, cached, hit = hashlib.sha256(), 0, True
        prefixes = []
        for digest, n in rows:
            running.update(digest.encode())
            key = running.hexdigest()
            prefixes.append(key)
            if hit and key in self.seen:
                cached += n
            else:
                hit = False
        self.seen.update(prefixes)
        return cached, sum(n for _, n in rows) - cached


async def run(seed: int, turns: int, window: int, shape: str) -> dict[str, float]:
    cache = Cache()
    summary = {"calls": 0, "cached": 0, "uncached": 0}
    total = {"cached": 0, "uncached": 0}

    async def complete(
        model: Model, context: Context, options: CompleteOptions | None = None
    ) -> AssistantMessage:
        cached, uncached = cache.bill(tokens_of(context.system_prompt, context.messages))
        summary["calls"] += 1
        summary["cached"] += cached
        summary["uncached"] += uncached
        text = "# Objective\nFix the bugs in src/pkg, keeping the tests green.\n# Plan\nGo on."
        return AssistantMessage((TextBlock(text),), model=model.id)

    policy = BudgetPolicy(summary_request=shape, mask_keep_outputs=None)  # type: ignore[arg-type]
    condenser = create_condenser(
        model=Model("m", window), policy=policy, complete=complete, counter=COUNTER
    )
    ahead = AheadCompactor(condenser)
    pinned = COUNTER.count(SYSTEM)
    msgs: list[AgentMessage] = []
    for step in script(seed, turns):
        msgs.extend(step)
        result = await ahead.run(msgs, pinned_tokens=pinned, system_prompt=SYSTEM)
        if result.changed:
            msgs = list(result.messages)
        cached, uncached = cache.bill(tokens_of(SYSTEM, msgs))
        total["cached"] += cached
        total["uncached"] += uncached
    total["cached"] += summary["cached"]
    total["uncached"] += summary["uncached"]
    return {
        "summary_calls": summary["calls"],
        "summary_billed": summary["uncached"] + READ * summary["cached"],
        "summary_input": summary["uncached"] + summary["cached"],
        "session_billed": total["uncached"] + READ * total["cached"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--window", type=int, default=32_000)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    rows: dict[str, list[dict[str, float]]] = {"scrollback": [], "prefix": []}
    for seed in range(args.seeds):
        for shape in rows:
            rows[shape].append(asyncio.run(run(seed, args.turns, args.window, shape)))
    for shape, runs in rows.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(
            f"{shape:10s} summary calls {med['summary_calls']:.0f}, summary input "
            f"{med['summary_input']:,.0f} tokens, billed {med['summary_billed']:,.0f}; "
            f"whole session billed {med['session_billed']:,.0f}"
        )
    ratio = [
        p["summary_billed"] / s["summary_billed"]
        for p, s in zip(rows["prefix"], rows["scrollback"], strict=True)
    ]
    whole = [
        p["session_billed"] / s["session_billed"]
        for p, s in zip(rows["prefix"], rows["scrollback"], strict=True)
    ]
    print(
        f"prefix / scrollback, billed input of summary calls: median {statistics.median(ratio):.3f}"
        f" (range {min(ratio):.3f}-{max(ratio):.3f}); whole session: "
        f"{statistics.median(whole):.3f} ({min(whole):.3f}-{max(whole):.3f})"
    )


if __name__ == "__main__":
    main()
