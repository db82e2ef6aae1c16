"""Decision-path benchmark: window-budget's LangChain adapter vs trim_messages and
SummarizationMiddleware, with no LLM call anywhere.

Run by hand:  python bench/bench_langchain.py [--sizes 1000 10000 100000]

Three measurements per transcript size n (medians of several runs):

* full decision, cold: a fresh condenser converts, estimates, gates and slices an
  over-budget transcript; ``trim_messages`` trims it; ``SummarizationMiddleware`` counts
  tokens, evaluates its trigger and searches its cutoff (its ``before_model`` minus the
  summary call).
* per-turn re-gate: the transcript (under budget) was gated once; one message is
  appended and the gate runs again, as an agent does before every model call. The peers
  have no incremental path, so they redo their whole computation.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
import warnings
from collections.abc import Callable

from langchain.agents.middleware.summarization import SummarizationMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)
from langchain_core.messages.utils import count_tokens_approximately

from langchain_window_budget import LangChainCondenser
from window_budget import BudgetPolicy

warnings.simplefilter("ignore")


def transcript(n: int) -> list[BaseMessage]:
    """``n`` messages: a system prompt, then rounds of human / tool call / result / answer."""
    out: list[BaseMessage] = [SystemMessage("You are a careful coding agent. " * 20)]
    i = 0
    while len(out) < n:
        out.append(HumanMessage(f"step {i}: please look at module_{i}.py " + "q" * 120, id=f"h{i}"))
        out.append(
            AIMessage(
                "checking",
                id=f"a{i}",
                tool_calls=[
                    {
                        "name": "read_file",
                        "args": {"path": f"module_{i}.py"},
                        "id": f"c{i}",
                        "type": "tool_call",
                    }
                ],
            )
        )
        out.append(
            ToolMessage(
                f"contents of module_{i}.py\n" + "x = 1\n" * 60, tool_call_id=f"c{i}", id=f"t{i}"
            )
        )
        out.append(AIMessage(f"module_{i}.py looks fine " + "a" * 80, id=f"s{i}"))
        i += 1
    return out[:n]


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def per_turn(
    fake: GenericFakeChatModel, policy: BudgetPolicy, msgs: list[BaseMessage], turns: int
) -> float:
    """Median ms of one re-gate after appending a message to an already-gated thread."""
    engine = LangChainCondenser(fake, context_window=10**9, policy=policy)
    state = list(msgs)
    engine.run(state)
    extra = iter([HumanMessage(f"follow-up {k} " + "z" * 100) for k in range(turns)])

    def turn() -> None:
        nonlocal state
        state = [*state, next(extra)]  # a new list each turn, as a graph reducer makes
        result = engine.run(state)  # the full per-turn path: convert, gate, map back
        assert not result.changed

    return median_ms(turn, turns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    args = parser.parse_args()

    window = 128_000
    policy = BudgetPolicy(keep_recent=6000, reserve_tokens=2048)
    limit = int((window - 2048) * 0.75)
    fake = GenericFakeChatModel(
        messages=itertools.cycle([AIMessage("x")]), profile={"max_input_tokens": window}
    )
    peer_mw = SummarizationMiddleware(model=fake, trigger=("tokens", limit), keep=("tokens", 6000))

    def ours_cold(msgs: list[BaseMessage], repeats: int) -> float:
        # A fresh engine per run (no cached conversion or ledger); built outside the timer.
        engines = iter(
            [LangChainCondenser(fake, context_window=window, policy=policy) for _ in range(repeats)]
        )
        return median_ms(lambda: next(engines).estimate(msgs), repeats)

    def trim(msgs: list[BaseMessage]) -> None:
        trim_messages(
            msgs,
            max_tokens=limit,
            token_counter=count_tokens_approximately,
            strategy="last",
            start_on="human",
            include_system=True,
        )

    def peer_decision(msgs: list[BaseMessage]) -> None:
        total = peer_mw.token_counter(msgs)
        if peer_mw._should_summarize(msgs, total):
            peer_mw._determine_cutoff_index(msgs)

    print(f"window {window:,} tokens, trigger limit {limit:,}, keep 6,000 tokens; medians in ms")
    header = (
        f"{'messages':>9} | {'case':<22} | {'window-budget':>13} | {'trim_messages':>13} | "
        f"{'Summ.Middleware':>15} | {'vs trim':>8} | {'vs SummMW':>9}"
    )
    print(header)
    print("-" * len(header))
    for n in args.sizes:
        msgs = transcript(n)
        repeats = 15 if n <= 1_000 else 7 if n <= 10_000 else 3
        ours = ours_cold(msgs, repeats)
        t = median_ms(lambda: trim(msgs), repeats)  # noqa: B023
        p = median_ms(lambda: peer_decision(msgs), repeats)  # noqa: B023
        print(
            f"{n:>9,} | {'full decision (cold)':<22} | {ours:>13.2f} | {t:>13.2f} | "
            f"{p:>15.2f} | {t / ours:>7.1f}x | {p / ours:>8.1f}x"
        )

        # Per turn: an under-budget thread gated before every model call.
        ours_t = per_turn(fake, policy, msgs, repeats * 4)
        grown = [*msgs, HumanMessage("follow-up " + "z" * 100)]
        t_t = median_ms(lambda: trim(grown), repeats)  # noqa: B023
        p_t = median_ms(lambda: peer_decision(grown), repeats)  # noqa: B023
        print(
            f"{n:>9,} | {'per-turn re-gate (+1)':<22} | {ours_t:>13.3f} | {t_t:>13.2f} | "
            f"{p_t:>15.2f} | {t_t / ours_t:>7.1f}x | {p_t / ours_t:>8.1f}x"
        )


if __name__ == "__main__":
    main()
