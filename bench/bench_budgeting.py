"""No-model budgeting: category trimming and prompt assembly, against LangChain's trim_messages.

Times ``trim_by_category`` on 1k and 10k-message transcripts next to
``langchain_core.messages.trim_messages(strategy="last")`` given the same budget and a
comparable character-based counter, and ``assemble_prompt`` on the Worker prompt of
the prompt-assembly spec (seven sections) with the heuristic and tiktoken.

Run by hand: ``python bench/bench_budgeting.py``. Prints medians and ratios; never part
of the test suite.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable

from window_budget import (
    AgentMessage,
    AssistantMessage,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    estimate_tokens,
)
from window_budget.budget import TiktokenCounter
from window_budget.pipeline import trim_by_category
from window_budget.tools.assemble import assemble_prompt


def synthetic(n: int) -> list[AgentMessage]:
    msgs: list[AgentMessage] = []
    i = 0
    while len(msgs) < n:
        msgs.append(UserMessage(f"turn {i}: refactor module_{i % 50}.py and rerun the tests"))
        msgs.append(
            AssistantMessage(
                [
                    TextBlock("Reading it first."),
                    ToolCallBlock(f"c{i}", "read_file", {"path": f"src/module_{i % 50}.py"}),
                ]
            )
        )
        msgs.append(
            ToolResultMessage(
                f"c{i}", "read_file", "def f():\n    return 1\n" * 20, is_error=i % 7 == 0
            )
        )
        msgs.append(AssistantMessage(f"Done with module_{i % 50}.py; tests pass."))
        i += 1
    return msgs[:n]


def median_ms(fn: Callable[[], object], repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def to_langchain(msgs: list[AgentMessage]) -> list[object]:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    out: list[object] = []
    for m in msgs:
        if isinstance(m, UserMessage):
            out.append(HumanMessage(str(m.content)))
        elif isinstance(m, AssistantMessage):
            calls = [{"id": c.id, "name": c.name, "args": dict(c.arguments)} for c in m.tool_calls]
            text = (
                m.content
                if isinstance(m.content, str)
                else " ".join(b.text for b in m.content if isinstance(b, TextBlock))
            )
            out.append(AIMessage(text, tool_calls=calls))
        elif isinstance(m, ToolResultMessage):
            out.append(ToolMessage(str(m.content), tool_call_id=m.tool_call_id))
    return out


def main() -> None:
    print("category trimming to half the transcript (heuristic counter)")
    for n in (1_000, 10_000):
        msgs = synthetic(n)
        budget = estimate_tokens(msgs) // 2
        ours = median_ms(lambda msgs=msgs, budget=budget: trim_by_category(msgs, budget))
        line = f"  n={n:>6,}  trim_by_category {ours:8.1f} ms"
        try:
            from langchain_core.messages import trim_messages

            lc = to_langchain(msgs)

            def counter(ms: list[object]) -> int:
                return sum(math.ceil(len(str(getattr(m, "content", ""))) / 3.6) + 4 for m in ms)

            theirs = median_ms(
                lambda lc=lc, budget=budget: trim_messages(
                    lc,
                    max_tokens=budget,
                    token_counter=counter,
                    strategy="last",
                    start_on="human",
                    allow_partial=False,
                )
            )
            line += f"   langchain trim_messages {theirs:8.1f} ms   ratio {theirs / ours:5.2f}x"
        except ImportError:
            line += "   (langchain-core not installed)"
        print(line)

    sizes = [100, 200, 400, 600, 500, 400, 300]
    sections = [(p, f"s{p}", "lorem ipsum dolor " * (s // 18 + 1)) for p, s in enumerate(sizes)]
    print("assemble_prompt, seven sections, budget 500 tokens")
    heur = median_ms(lambda: [assemble_prompt(sections, 500) for _ in range(100)]) / 100
    tik = TiktokenCounter()
    exact = (
        median_ms(lambda: [assemble_prompt(sections, 500, counter=tik) for _ in range(100)]) / 100
    )
    print(
        f"  heuristic {heur * 1000:7.1f} µs   tiktoken {exact * 1000:7.1f} µs   "
        f"ratio {exact / heur:5.2f}x"
    )


if __name__ == "__main__":
    main()
