"""WindowBudgetMemory against LlamaIndex's own memories on 1k and 10k message histories.

Run by hand: ``python bench/bench_llama_index.py [--cap SECONDS]``. Never part of the tests.

For each memory and history size it measures, with the same tokenizer (tiktoken
cl100k_base, offline) and the same limit:

* cold get: a fresh memory given the history with ``set`` and asked for it once
  (``set`` + ``get`` timed together: a memory may do its work in either);
* per turn: ``put(user)`` + ``put(assistant)`` + ``get()`` on that loaded memory;
* tokens returned: the largest ``get()`` result (content tokens, no framing) vs the limit.

ChatMemoryBuffer re-tokenizes the remaining history for every message it drops, so a
single get can take minutes at 10k messages. Every case runs in its own process with a
wall-clock cap (``--cap``, 60 s by default); a case that hits it is reported as ``>cap``.
Summaries come from ``MockLLM(max_tokens=200)`` for both summarizing memories.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import sys
import time
from typing import Any

LIMIT = 3000
"""Token limit given to every memory."""
TURNS = 15
"""Per-turn repetitions for fast memories."""
SLOW_TURNS = 2
"""Per-turn repetitions for a memory whose cold get took more than a second."""
PEERS = ("WindowBudgetMemory", "ChatMemoryBuffer", "ChatSummaryMemoryBuffer", "Memory")


def history(n: int) -> list[Any]:
    from llama_index.core.llms import ChatMessage

    out = []
    for i in range(n // 2):
        out.append(
            ChatMessage(
                role="user",
                content=f"turn {i}: how does module_{i % 97} "
                f"handle retries when the upstream {i % 13} times out? " * 2,
            )
        )
        out.append(
            ChatMessage(
                role="assistant",
                content=f"module_{i % 97} retries "
                f"{i % 5 + 1} times with backoff, then raises TimeoutError "
                f"#{i}; see docs/retries.md for the table. " * 2,
            )
        )
    return out


def build(name: str) -> Any:
    from llama_index.core.llms import MockLLM
    from llama_index.core.memory import ChatMemoryBuffer, ChatSummaryMemoryBuffer, Memory

    from window_budget import BudgetPolicy
    from window_budget.budget import load_encoding

    tokenizer = load_encoding().encode_ordinary
    llm = MockLLM(max_tokens=200)
    if name == "WindowBudgetMemory":
        from llama_index.memory.window_budget import WindowBudgetMemory

        policy = BudgetPolicy(
            trigger_ratio=1.0,
            reserve_tokens=0,
            keep_recent=int(LIMIT * 0.35),
            digest_max_tokens=int(LIMIT * 0.2),
        )
        return WindowBudgetMemory.from_defaults(
            llm=llm, context_window=LIMIT, policy=policy, counter="tiktoken"
        )
    if name == "ChatMemoryBuffer":
        return ChatMemoryBuffer.from_defaults(token_limit=LIMIT, tokenizer_fn=tokenizer)
    if name == "ChatSummaryMemoryBuffer":
        return ChatSummaryMemoryBuffer.from_defaults(
            llm=llm, token_limit=LIMIT, tokenizer_fn=tokenizer
        )
    return Memory.from_defaults(token_limit=LIMIT, tokenizer_fn=tokenizer)


def content_tokens(messages: list[Any]) -> int:
    from window_budget.budget import load_encoding

    enc = load_encoding()
    return sum(len(enc.encode_ordinary(m.content or "")) for m in messages)


def run_case(name: str, n: int, out: Any) -> None:
    """One memory, one history size; sends a result dict through ``out``."""
    import warnings

    from llama_index.core.llms import ChatMessage

    warnings.simplefilter("ignore")
    msgs = history(n)
    memory = build(name)
    # Cold: load the history and read it once (a memory may do its work in either step).
    t0 = time.perf_counter()
    memory.set(msgs)
    view = memory.get()
    cold = time.perf_counter() - t0
    biggest = content_tokens(view)
    out.send({"cold_ms": cold * 1000, "max_tokens": biggest, "turn_ms": None})
    turns = TURNS if cold < 1.0 else SLOW_TURNS
    times = []
    for i in range(turns):
        t0 = time.perf_counter()
        memory.put(ChatMessage(role="user", content=f"new question {i} about module_{i}? " * 3))
        memory.put(ChatMessage(role="assistant", content=f"answer {i}: it depends. " * 6))
        view = memory.get()
        times.append(time.perf_counter() - t0)
        biggest = max(biggest, content_tokens(view))
    out.send(
        {
            "cold_ms": cold * 1000,
            "max_tokens": biggest,
            "turn_ms": statistics.median(times) * 1000,
            "turns": turns,
        }
    )


def measure(name: str, n: int, cap: float) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=run_case, args=(name, n, child), daemon=True)
    proc.start()
    result: dict[str, Any] = {"cold_ms": None, "max_tokens": None, "turn_ms": None}
    deadline = time.monotonic() + cap
    while time.monotonic() < deadline and (proc.is_alive() or parent.poll()):
        if parent.poll(0.05):
            result = parent.recv()
            if result.get("turn_ms") is not None:
                break
    if proc.is_alive():
        proc.terminate()
    proc.join()
    return result


def fmt_ms(v: float | None, cap: float) -> str:
    return f">{cap:.0f}s" if v is None else f"{v:,.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=float, default=60.0, help="seconds per case")
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000, 10_000])
    args = parser.parse_args()
    print(
        f"python {sys.version.split()[0]}; limit {LIMIT} tokens; tiktoken cl100k_base; "
        "medians in ms"
    )
    print(
        f"{'memory':<24} {'msgs':>6} {'cold get':>10} {'per turn':>10} "
        f"{'max tokens':>11} {'<= limit':>9}"
    )
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for n in args.sizes:
        for name in PEERS:
            r = measure(name, n, args.cap)
            rows[(name, n)] = r
            within = (
                "?" if r["max_tokens"] is None else ("yes" if r["max_tokens"] <= LIMIT else "NO")
            )
            print(
                f"{name:<24} {n:>6} {fmt_ms(r['cold_ms'], args.cap):>10} "
                f"{fmt_ms(r['turn_ms'], args.cap):>10} "
                f"{r['max_tokens'] if r['max_tokens'] is not None else '?':>11} {within:>9}",
                flush=True,
            )
    print("\nratios (peer / WindowBudgetMemory; '>' when the peer hit the cap):")
    for n in args.sizes:
        ours = rows[("WindowBudgetMemory", n)]
        for name in PEERS[1:]:
            peer = rows[(name, n)]
            parts = []
            for key, label in (("cold_ms", "cold"), ("turn_ms", "per turn")):
                a, b = peer[key], ours[key]
                if b is None:
                    parts.append(f"{label} n/a")
                elif a is None:
                    parts.append(f"{label} >{args.cap * 1000 / b:,.0f}x")
                else:
                    parts.append(f"{label} {a / b:,.1f}x")
            print(f"  {n:>6} {name:<24} " + ", ".join(parts))


if __name__ == "__main__":
    main()
