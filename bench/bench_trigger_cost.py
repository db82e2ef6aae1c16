"""Gate cost per turn with ``trigger=`` / ``keep=``: ours against ``SummarizationMiddleware``.

Run by hand:  python bench/bench_trigger_cost.py [--messages 2000] [--seeds 3]

A thread that only grows (one exchange per turn, every message a new object each turn, as a
checkpointer hands it back) stays under its trigger; each turn ``before_model`` runs once.
Peers in the same run, same thread, same trigger and keep: ``WindowBudgetMiddleware``
(default counter, the heuristic) and ``SummarizationMiddleware`` (its default counter,
``count_tokens_approximately``). Reported: the median milliseconds of one ``before_model``
over the last 100 turns, per configuration, the median of the seeds, and the ratio.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from typing import Any

from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime

from langchain_window_budget import WindowBudgetMiddleware

CONFIGS: dict[str, dict[str, Any]] = {
    "tokens trigger": {"trigger": ("tokens", 900_000)},
    "tokens trigger + keep": {"trigger": ("tokens", 900_000), "keep": ("messages", 20)},
    "messages trigger + keep": {"trigger": ("messages", 100_000), "keep": ("messages", 20)},
}


def _model() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=itertools.cycle([AIMessage("# Objective\nx")]))


def _thread(n: int) -> list[BaseMessage]:
    return [
        m
        for i in range(n // 2)
        for m in (
            HumanMessage(f"question {i}: " + "the schedule and the migration " * 6, id=f"h{i}"),
            AIMessage(f"answer {i}: " + "checked the logs and the config " * 6, id=f"a{i}"),
        )
    ]


def _per_turn(middleware: Any, thread: list[BaseMessage]) -> float:
    times = []
    for n in range(len(thread) - 400, len(thread), 2):
        state = {"messages": [m.model_copy() for m in thread[:n]]}
        start = time.perf_counter()
        assert middleware.before_model(state, Runtime()) is None
        if n >= len(thread) - 200:
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    thread = _thread(args.messages)
    for name, sizes in CONFIGS.items():
        ours, theirs = [], []
        for _ in range(args.seeds):
            ours.append(
                _per_turn(
                    WindowBudgetMiddleware(_model(), context_window=1_000_000, **sizes), thread
                )
            )
            theirs.append(_per_turn(SummarizationMiddleware(_model(), **sizes), thread))
        a, b = statistics.median(ours), statistics.median(theirs)
        print(f"{name:26} window-budget {a:6.2f} ms  SummarizationMiddleware {b:6.2f} ms  "
              f"ratio {a / b:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
