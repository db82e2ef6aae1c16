from __future__ import annotations

import math
from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import transcripts
from window_budget import (
    AssistantMessage,
    BashExecutionMessage,
    ImageBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    estimate_tokens,
)
from window_budget.budget import (
    BLOCK_FRAMING_TOKENS,
    CHARS_PER_TOKEN,
    IMAGE_TOKENS,
    MESSAGE_FRAMING_TOKENS,
    TOOL_FRAMING_TOKENS,
    TokenLedger,
    estimate_message_tokens,
    prefix_tokens,
    text_tokens,
)


def test_heuristic_formula() -> None:
    assert estimate_message_tokens(UserMessage("x" * 36)) == 10 + MESSAGE_FRAMING_TOKENS
    assert estimate_message_tokens(UserMessage("x" * 37)) == 11 + MESSAGE_FRAMING_TOKENS
    two_blocks = UserMessage([TextBlock("x" * 36), ImageBlock("AAAA")])
    assert estimate_message_tokens(two_blocks) == (
        10 + MESSAGE_FRAMING_TOKENS + 2 * BLOCK_FRAMING_TOKENS + IMAGE_TOKENS
    )


def test_empty_transcript_is_zero_and_prefix_has_n_plus_one() -> None:
    assert estimate_tokens([]) == 0
    msgs = [UserMessage("a"), AssistantMessage("b")]
    p = prefix_tokens(msgs)
    assert len(p) == 3
    assert p[0] == 0
    assert p[-1] == estimate_tokens(msgs)


def test_tool_arguments_and_ids_are_counted() -> None:
    bare = AssistantMessage([ToolCallBlock("c", "bash", {})])
    heavy = AssistantMessage([ToolCallBlock("c", "bash", {"command": "x" * 3600})])
    assert estimate_message_tokens(heavy) - estimate_message_tokens(bare) >= 1000


def test_each_tool_call_and_tool_result_carries_its_framing() -> None:
    # Claude's prompt grows by about six tokens more per call and result than their text.
    text = math.ceil(text_tokens("bash") + text_tokens("c"))
    call = AssistantMessage([ToolCallBlock("c", "bash", {})])
    assert estimate_message_tokens(call) == (
        text + MESSAGE_FRAMING_TOKENS + BLOCK_FRAMING_TOKENS + TOOL_FRAMING_TOKENS
    )
    two = AssistantMessage(
        [ToolCallBlock("c", "bash", {}), TextBlock("and"), ToolCallBlock("c", "bash", {})]
    )
    assert estimate_message_tokens(two) == (
        math.ceil(2 * text_tokens("bash") + 2 * text_tokens("c") + text_tokens("and"))
        + MESSAGE_FRAMING_TOKENS
        + 3 * BLOCK_FRAMING_TOKENS
        + 2 * TOOL_FRAMING_TOKENS
    )
    result = ToolResultMessage("c", "bash", "ok")
    assert estimate_message_tokens(result) == (
        math.ceil(text_tokens("bash") + text_tokens("c") + text_tokens("ok"))
        + MESSAGE_FRAMING_TOKENS
        + TOOL_FRAMING_TOKENS
    )
    assert estimate_message_tokens(AssistantMessage("bash c")) < estimate_message_tokens(call)


@dataclass
class Weird:
    role: str
    blob: object


def test_unknown_roles_are_estimated_from_their_serialized_form() -> None:
    small = estimate_message_tokens(Weird("systemNote", "x"))
    large = estimate_message_tokens(Weird("systemNote", "x" * 3600))
    assert small > 0
    assert large >= 3600 / CHARS_PER_TOKEN  # an unbroken run of letters: the character rule


def test_every_known_role_costs_something() -> None:
    for msg in [
        UserMessage(""),
        AssistantMessage(""),
        ToolResultMessage("c", "t", ""),
        BashExecutionMessage("", ""),
    ]:
        assert estimate_message_tokens(msg) >= MESSAGE_FRAMING_TOKENS


@given(transcripts(), transcripts())
def test_estimates_are_additive_and_monotone_under_concatenation(a: list, b: list) -> None:
    assert estimate_tokens(a + b) == estimate_tokens(a) + estimate_tokens(b)
    assert estimate_tokens(a + b) >= max(estimate_tokens(a), estimate_tokens(b))


@given(transcripts())
def test_heuristic_is_at_least_its_character_floor(msgs: list) -> None:
    from window_budget.budget import FLOOR_CHARS_PER_TOKEN, message_parts

    for m in msgs:
        parts, _, _ = message_parts(m)
        assert estimate_message_tokens(m) >= math.ceil(sum(map(len, parts)) / FLOOR_CHARS_PER_TOKEN)


def test_ledger_estimates_only_new_messages_after_an_append() -> None:
    ledger = TokenLedger()
    history = [UserMessage(f"message {i}") for i in range(10_000)]
    assert ledger.total(history) == estimate_tokens(history)
    assert ledger.estimated == 10_000
    history.append(UserMessage("one more"))
    assert ledger.total(history) == estimate_tokens(history)
    assert ledger.estimated == 10_001


def test_ledger_recomputes_from_the_first_change() -> None:
    ledger = TokenLedger()
    history = [UserMessage(f"m{i}") for i in range(100)]
    ledger.total(history)
    edited = [*history[:50], UserMessage("replaced"), *history[51:]]
    assert ledger.total(edited) == estimate_tokens(edited)
    assert ledger.estimated == 150
    shorter = edited[:20]
    assert ledger.total(shorter) == estimate_tokens(shorter)
    assert ledger.prefix(shorter) == prefix_tokens(shorter)


@given(transcripts(), transcripts())
def test_ledger_matches_prefix_tokens(a: list, b: list) -> None:
    ledger = TokenLedger()
    assert ledger.prefix(a) == prefix_tokens(a)
    assert ledger.prefix(a + b) == prefix_tokens(a + b)
    assert ledger.prefix(b) == prefix_tokens(b)


@given(transcripts(), transcripts(), st.integers(0, 40))
def test_ledger_structure_matches_the_batch_functions(a: list, b: list, cut: int) -> None:
    from window_budget import Model
    from window_budget.budget._anchor import anchor_index
    from window_budget.pipeline import blocked_cuts

    ledger = TokenLedger()
    model = Model("m", 1000)
    for msgs in (a, a + b, (a + b)[cut:], b):
        assert ledger.blocked(msgs) == blocked_cuts(msgs)[: len(msgs)]
        assert ledger.anchor(msgs, model) == anchor_index(msgs, model)
        assert ledger.anchor(msgs) == anchor_index(msgs)
