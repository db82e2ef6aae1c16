"""What the provider-compaction boundary search costs each turn.

Run by hand:  python bench/bench_provider_boundary.py [--messages 10000]

The condenser, the ahead compactor and both adapters look for the newest message carrying a
provider's compaction block once a turn (``window_budget.pipeline.provider_boundary``): a
scan from the end that stops at the first one found. Reported, in a fresh process: the cost
before any block was made (the scan is skipped), with blocks made elsewhere but none in the
transcript (the whole transcript is scanned), and with one 1,000 messages from the end.
"""

from __future__ import annotations

import argparse
import timeit

from window_budget import (
    AgentMessage,
    AssistantMessage,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
)
from window_budget.messages import ProviderCompactionBlock
from window_budget.pipeline import provider_boundary


def transcript(n: int) -> list[AgentMessage]:
    out: list[AgentMessage] = []
    for i in range(n // 4):
        out += [
            UserMessage(f"q{i}"),
            AssistantMessage([TextBlock("a"), ToolCallBlock(f"c{i}", "bash", {})]),
            ToolResultMessage(f"c{i}", "bash", "ok"),
            AssistantMessage("done"),
        ]
    return out


def per_call(messages: list[AgentMessage], number: int = 200) -> float:
    return timeit.timeit(lambda: provider_boundary(messages), number=number) / number


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    args = parser.parse_args()
    msgs = transcript(args.messages)
    print(f"{len(msgs):,} messages")
    print(f"  no block made yet (skipped):      {per_call(msgs) * 1e6:8.2f} us")
    block = ProviderCompactionBlock("anthropic", "the story so far")
    print(f"  blocks made, none here (scanned): {per_call(msgs) * 1e3:8.2f} ms")
    at = max(len(msgs) - 1_000, 0)
    with_one = [*msgs[:at], AssistantMessage([block]), *msgs[at:]]
    print(f"  one 1,000 messages from the end:  {per_call(with_one) * 1e3:8.2f} ms")


if __name__ == "__main__":
    main()
