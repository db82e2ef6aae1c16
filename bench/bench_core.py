"""Core decision path: estimate + gate + slice on 1k, 10k and 100k messages, and re-gating.

Run by hand: ``python bench/bench_core.py``. Prints medians; never part of the test suite.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

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
    plan_slice,
)
from window_budget.budget import TokenLedger, prefix_tokens
from window_budget.pipeline import budget_limit
from window_budget.pipeline.summarize import build_local_digest


def synthetic(n: int) -> list:
    msgs: list = []
    i = 0
    while len(msgs) < n:
        msgs.append(UserMessage(f"turn {i}: please refactor module_{i % 50}.py and rerun tests"))
        msgs.append(
            AssistantMessage(
                [
                    TextBlock("Reading the module first."),
                    ToolCallBlock(f"c{i}", "read_file", {"path": f"src/module_{i % 50}.py"}),
                ]
            )
        )
        msgs.append(ToolResultMessage(f"c{i}", "read_file", "def f():\n    return 1\n" * 20))
        msgs.append(AssistantMessage(f"Done with module_{i % 50}.py; tests pass."))
        i += 1
    return msgs[:n]


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    policy = BudgetPolicy()
    print(f"python {sys.version.split()[0]}; medians in ms")
    print(
        f"{'messages':>9} {'cold decide':>12} {'re-gate +1':>11} {'estimate':>9} "
        f"{'slice':>8} {'tokens':>11}"
    )
    for n in (1_000, 10_000, 100_000):
        msgs = synthetic(n)
        total = estimate_tokens(msgs)
        model = Model("bench", int(total * 1.1) + 10_000)  # over budget, like a full window
        repeat = 15 if n < 100_000 else 5

        prefix = prefix_tokens(msgs)

        def cold(msgs: list = msgs, model: Model = model) -> object:
            return create_condenser(model=model, policy=policy).decide(msgs)

        def est(msgs: list = msgs) -> object:
            return estimate_tokens(msgs)

        def slice_only(msgs: list = msgs, prefix: list = prefix) -> object:
            return plan_slice(msgs, policy, prefix=prefix)

        # Re-gating after one append: a warm condenser sees the same list grow by one.
        warm = create_condenser(model=model, policy=policy)
        grown = list(msgs)
        warm.decide(grown)
        times = []
        for k in range(repeat * 4):
            grown.append(UserMessage(f"one more message {k}"))
            t0 = time.perf_counter()
            warm.decide(grown)
            times.append((time.perf_counter() - t0) * 1000)
        regate = statistics.median(times)
        print(
            f"{n:>9,} {median_ms(cold, repeat):>12.2f} {regate:>11.3f} "
            f"{median_ms(est, repeat):>9.2f} {median_ms(slice_only, repeat):>8.2f} {total:>11,}"
        )
    ledger = TokenLedger()
    msgs = synthetic(100_000)
    ledger.total(msgs)
    msgs.append(UserMessage("x"))
    ledger.total(msgs)
    print(f"ledger: {ledger.estimated:,} estimates for 100,000 + 1 messages (incremental)")
    print(f"limit for a 32k window: {budget_limit(Model('m', 32_768), policy):,.0f} tokens")
    head = tool_loop_head(400)
    ms = median_ms(lambda: build_local_digest(head), 5)
    print(f"network-free digest of a ~200k-token head (400 tool turns): {ms:,.0f} ms")


def tool_loop_head(turns: int) -> list:
    """A coding agent's head: a read and a noisy test run per turn, ~500 tokens of output each."""
    noise = "".join(f"tests/test_{k}.py::test_case_{k} PASSED\n" for k in range(30))
    msgs: list = []
    for i in range(turns):
        read = ToolCallBlock(f"r{i}", "read_file", {"path": f"src/pkg_{i % 40}/mod.py"})
        run = ToolCallBlock(f"t{i}", "bash", {"command": f"pytest tests/test_{i % 40}.py"})
        msgs += [
            UserMessage(f"Step {i}: keep going, never skip tests."),
            AssistantMessage((read,)),
            ToolResultMessage(f"r{i}", "read_file", f"def f_{i}(x):\n    return x\n" * 60),
            AssistantMessage((run,)),
            ToolResultMessage(f"t{i}", "bash", noise, is_error=i % 7 == 0),
        ]
    return msgs


if __name__ == "__main__":
    main()
