"""KeyedCounts: the gate's figure from per-message keys equals the token ledger's."""

from __future__ import annotations

import gc

from hypothesis import given, settings
from hypothesis import strategies as st

from window_budget import Model
from window_budget.budget import KeyedCounts, TokenLedger, estimate_message_tokens
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    CompactionSummaryMessage,
    DigestMessage,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    Usage,
    UserMessage,
)

MODEL = Model("m-1", 200_000)

_text = st.text(alphabet="abc xyz", min_size=0, max_size=200)


@st.composite
def messages(draw: st.DrawFn) -> AgentMessage:
    kind = draw(st.sampled_from(["user", "reply", "call", "result", "digest", "summary"]))
    text = draw(_text)
    if kind == "user":
        return UserMessage(text)
    if kind in ("reply", "call"):
        usage = None
        if draw(st.booleans()):
            usage = Usage(draw(st.integers(0, 5_000)), draw(st.integers(0, 50)))
        content: str | tuple[TextBlock | ToolCallBlock, ...] = text
        if kind == "call":
            content = (TextBlock(text), ToolCallBlock("c", "f", {"q": text[:9]}))
        return AssistantMessage(
            content,
            usage=usage,
            model=draw(st.sampled_from([None, "m-1", "m-10", "other"])),
            stop_reason=draw(st.sampled_from([None, "end_turn", "error"])),
        )
    if kind == "result":
        return ToolResultMessage("c", "f", text)
    if kind == "digest":
        return DigestMessage(text, kept_count=draw(st.sampled_from([None, 0, 1, 3])))
    return CompactionSummaryMessage(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(messages(), max_size=30), st.integers(0, 500))
def test_the_figure_from_keys_is_the_ledgers(transcript: list[AgentMessage], pinned: int) -> None:
    counts = KeyedCounts()
    keys = list(range(100, 100 + len(transcript)))
    assert counts.missing(keys) == list(range(len(transcript)))
    for key, message in zip(keys, transcript, strict=True):
        counts.learn(key, message, estimate_message_tokens(message), MODEL)
    assert counts.missing(keys) == []
    expected = TokenLedger().context(transcript, MODEL, pinned_tokens=pinned)
    assert counts.context(keys, MODEL, pinned_tokens=pinned) == expected
    assert counts.context(keys, MODEL, pinned_tokens=pinned, estimates=counts.estimates(keys)) == (
        expected
    )


def test_usage_before_trusted_from_never_anchors() -> None:
    reply = AssistantMessage("x", usage=Usage(5_000, 5))
    counts = KeyedCounts()
    counts.learn(1, UserMessage("hello"), 6)
    counts.learn(2, reply, estimate_message_tokens(reply))
    assert counts.context([1, 2], MODEL).anchored
    assert not counts.context([1, 2], MODEL, trusted_from=2).anchored


def test_what_it_keeps_is_never_tracked_by_the_collector() -> None:
    counts = KeyedCounts()
    for i in range(1_000):
        message = AssistantMessage(f"reply {i}", usage=Usage(100 + i, 5), model="m-1")
        counts.learn(hash(("k", i)), message, estimate_message_tokens(message), MODEL, tag=i % 3)
    counts.learn(7, DigestMessage("d", kept_count=2), 10)
    assert not any(map(gc.is_tracked, (counts._tokens, counts._info, counts._digests)))
    counts.keep_only([7])
    assert len(counts) == 1


def test_lookup_gives_the_estimates_and_every_key_not_learned() -> None:
    counts = KeyedCounts()
    for key in (1, 3, 4):
        counts.learn(key, UserMessage("hello"), 6)
    assert counts.lookup([1, 2, 3, 4, 5]) == ([6, None, 6, 6, None], [1, 4])
    assert counts.lookup([1, 3]) == ([6, 6], [])
    assert counts.missing([9, 1, 8]) == [0, 2]
