"""Default policy in a small window: summary calls per turn and window used, old vs scaled.

Run by hand:  python bench/bench_small_window_default.py [--window 4000] [--turns 200]

The README's LangChain example guards a 4,000-token window. A conversation is replayed
turn by turn the way the agent middleware and the history wrapper store it: the user's
message is appended, the engine condenses the stored thread when it is over budget (the
result replaces the thread), the reply is appended. Message sizes vary per turn (seeded),
so no policy is tuned to one size. Two peers run on the same conversations:

* ``fixed``  ``BudgetPolicy()``: 2,048 reserved, a 6,000-token tail, 2,000-token digests
  (the LangChain adapter's default before it scaled with the window);
* ``scaled`` ``BudgetPolicy.for_window(window)`` (its default now).

Reported per peer, medians over the seeds: compactions and summary calls per 100 turns
(a long head in a small window takes more than one summary request), and the share of
the window the requests used (median and minimum over turns after the first compaction;
a policy that refills too little wastes the window, one that summarizes every turn pays a
model call per turn).
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_window_budget import LangChainCondenser
from window_budget import BudgetPolicy

DIGEST = "# Objective\nkeep the notes\n# Status\nnotes taken so far: " + "n " * 60


class CountingFake(GenericFakeChatModel):
    """LangChain's fake chat model, counting the summary calls it answers."""

    calls: int = 0

    def _generate(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.calls += 1
        return super()._generate(*args, **kwargs)


def replay(
    policy: BudgetPolicy,
    window: int,
    turns: int,
    seed: int,
) -> tuple[float, float, float, float]:
    rng = random.Random(seed)
    model = CountingFake(messages=itertools.cycle([AIMessage(DIGEST)]))
    engine = LangChainCondenser(model, context_window=window, policy=policy)
    thread: list[BaseMessage] = []
    used: list[float] = []
    compacted = False
    compactions = 0
    for i in range(turns):
        thread.append(HumanMessage(f"note {i}: " + "x" * rng.randint(100, 700)))
        result = engine.run(thread)
        if result.changed:
            thread = list(result.messages)
            compacted = True
            compactions += 1
        if compacted:
            used.append(engine.count_messages(thread) / window)
        thread.append(AIMessage(f"noted {i}: " + "y" * rng.randint(50, 500)))
    return (
        compactions * 100 / turns,
        model.calls * 100 / turns,
        statistics.median(used),
        min(used),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=4000)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    peers = {"fixed": BudgetPolicy(), "scaled": BudgetPolicy.for_window(args.window)}
    rows = {}
    for name, policy in peers.items():
        runs = [replay(policy, args.window, args.turns, seed) for seed in range(args.seeds)]
        rows[name] = [statistics.median(r[k] for r in runs) for k in range(4)]
    print(f"window {args.window:,}, {args.turns} turns, median of {args.seeds} seeds")
    print(
        f"{'policy':8} {'compactions/100':>16} {'summary calls/100':>18} "
        f"{'window used (median)':>21} {'(min)':>7}"
    )
    for name, (comp, calls, med, low) in rows.items():
        print(f"{name:8} {comp:16.1f} {calls:18.1f} {med:21.0%} {low:7.0%}")
    fixed, scaled = rows["fixed"], rows["scaled"]
    print(
        f"ratio scaled/fixed: compactions {scaled[0] / fixed[0]:.2f}, summary calls "
        f"{scaled[1] / fixed[1]:.2f}, window used {scaled[2] / fixed[2]:.2f}"
    )


if __name__ == "__main__":
    main()
