"""What the ahead-of-time compaction tests share: a gated summarizer and turn marks.

The summarizer is an async function that waits on an ``asyncio.Event`` the test sets, so
nothing depends on timing. Every digest names its call (``digest-N``) and the turns it saw
(``turn-K``), so a test can tell which call wrote the digest a compacting turn used and which
head it covered.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage, HumanMessage

from langchain_window_budget import is_digest

MARK = re.compile(r"turn-(\d+)\b")
HANG = 10.0
"""Seconds a gated summary call waits for a gate nobody sets (a summary call on the turn)."""


@dataclass
class GatedSummarizer:
    """An async summarizer: call ``n`` waits for ``gates[n]`` when one is set, else replies.

    ``fail`` holds the calls that raise; ``seen[n]`` the turn marks call ``n`` was shown.
    """

    gates: dict[int, asyncio.Event] = field(default_factory=dict)
    fail: set[int] | None = None
    fail_all: bool = False
    seen: list[set[int]] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)
    cancelled: list[int] = field(default_factory=list)

    async def __call__(self, request: list[BaseMessage]) -> str:
        n = len(self.seen)
        text = "\n".join(str(m.content) for m in request[1:])
        marks = {int(k) for k in MARK.findall(text)}
        self.seen.append(marks)
        self.prompts.append(text)
        gate = self.gates.get(n)
        try:
            if gate is not None:  # bounded, so a test without the wiring fails, not hangs
                await asyncio.wait_for(gate.wait(), HANG)
        except asyncio.CancelledError:
            self.cancelled.append(n)
            raise
        if self.fail_all or (self.fail is not None and n in self.fail):
            raise RuntimeError(f"summarizer down (call {n})")
        listed = ", ".join(f"turn-{k}" for k in sorted(marks))
        files = ", ".join(f"src/mod_{k}.py" for k in sorted(marks))
        return (
            f"# Objective\nFix the modules under src/: {files}.\n"
            f"# Plan\nGo on (digest-{n} of {listed})."
        )

    def gate(self, n: int) -> asyncio.Event:
        return self.gates.setdefault(n, asyncio.Event())


def ask(k: int) -> HumanMessage:
    return HumanMessage(f"turn-{k}: please fix src/mod_{k}.py " + "details " * 110)


def assert_written_on_the_turn(
    summarizer: GatedSummarizer, first: int, messages: Sequence[BaseMessage]
) -> str:
    """The compacting turn made calls ``first``... (a long head takes several, each carrying
    the digest before): the digest is the last call's and covers exactly the head folded."""
    assert len(summarizer.seen) > first
    last = len(summarizer.seen) - 1
    text, named, kept = digest_of(messages)
    assert f"digest-{last} " in text
    assert named == summarizer.seen[last]
    assert not named & kept
    assert named | kept == set(range(max(kept) + 1))
    return text


def digest_of(messages: Sequence[BaseMessage]) -> tuple[str, set[int], set[int]]:
    """The digest's text, the turns it names, the turns the kept messages name."""
    digests = [m for m in messages if is_digest(m)]
    assert len(digests) == 1
    text = str(digests[0].content)
    named = {int(k) for k in MARK.findall(text)}
    kept = {int(k) for m in messages if not is_digest(m) for k in MARK.findall(str(m.content))}
    return text, named, kept
