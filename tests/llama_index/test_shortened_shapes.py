"""A stored LlamaIndex message shortened for a view is never larger than the core measured.

When the newest turn does not fit, a view carries a copy of the stored message with the
core's shortened text (``convert.from_core_shortened``). For any mix of the blocks a
``ChatMessage`` holds (text, signed and unsigned thinking, images, documents, audio, cited
sources, tool calls) and provider metadata in ``additional_kwargs``, the copy keeps its
role, its calls and its signed thinking, costs no more than the core's shortened message
(but for unknown metadata, which rides whole: see ``from_core_shortened``), and the stored
message itself is never changed.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import words
from window_budget.budget import estimate_message_tokens, text_tokens
from window_budget.messages import TextBlock
from window_budget.pipeline._fit import shorten_message

types = pytest.importorskip("llama_index.core.base.llms.types")
convert = pytest.importorskip("llama_index.memory.window_budget.convert")


_BLOCKS = st.one_of(
    st.builds(lambda t: types.TextBlock(text=t), words),
    st.builds(lambda t: types.ThinkingBlock(content=t), words),
    st.builds(
        lambda t: types.ThinkingBlock(content=t, additional_information={"signature": "sig=="}),
        words,
    ),
    st.just(types.ImageBlock(url="https://example.com/plot.png")),
    st.just(types.ImageBlock(image=b"\x89PNG" * 200, image_mimetype="image/png")),
    st.just(types.DocumentBlock(data=b"%PDF-1.4 " * 200, document_mimetype="application/pdf")),
    st.just(types.AudioBlock(audio=b"RIFF" * 200, format="wav")),
    st.builds(
        lambda t: types.CitableBlock(
            content=[types.TextBlock(text=t)], source="https://e.x", title="E"
        ),
        words,
    ),
)

_METADATA = st.one_of(
    st.just({}),
    st.builds(lambda t: {"provider_raw": {"choices": [{"text": t}]}}, words),
)


def _metadata_text(content: Any) -> str:
    found = [b.text for b in content if isinstance(b, TextBlock) and b.text.startswith("[meta")]
    return found[-1] if found else ""


def _tokens(message: Any) -> int:
    return estimate_message_tokens(convert.to_core(message))


@settings(max_examples=150, deadline=None)
@given(
    role=st.sampled_from(["user", "assistant", "tool"]),
    blocks=st.lists(_BLOCKS, min_size=1, max_size=5),
    metadata=_METADATA,
    call=st.booleans(),
    share=st.floats(0.05, 0.9),
)
def test_a_shortened_copy_costs_what_the_core_measured(
    role: str, blocks: list[Any], metadata: dict[str, Any], call: bool, share: float
) -> None:
    kwargs: dict[str, Any] = dict(metadata)
    if role == "tool":
        kwargs["tool_call_id"] = "c1"
    if role == "assistant" and call:
        blocks = [*blocks, types.ToolCallBlock(tool_call_id="c1", tool_name="grep", tool_kwargs={})]
    original = types.ChatMessage(role=role, blocks=blocks, additional_kwargs=kwargs)
    before = original.model_dump()
    core = convert.to_core(original)
    size = estimate_message_tokens(core)
    short = shorten_message(core, max(1, int(size * share)))
    made = convert.from_core_shortened(original, short)

    assert original.model_dump() == before  # the stored message is never changed
    assert made.role == original.role
    assert made.additional_kwargs.get("tool_call_id") == kwargs.get("tool_call_id")
    assert convert.tool_calls_of(made) == convert.tool_calls_of(original)
    signed = [
        b.content
        for b in original.blocks
        if isinstance(b, types.ThinkingBlock) and (b.additional_information or {}).get("signature")
    ]
    kept = [b.content for b in made.blocks if isinstance(b, types.ThinkingBlock)]
    assert all(text in kept for text in signed)
    # Unknown metadata rides whole (integrations send it back); the core may have cut its
    # stand-in, and that cut is all a copy may cost above the core's shortened message.
    stand_in = _metadata_text(core.content) if metadata else ""
    cut = _metadata_text(short.content) if metadata else ""
    metadata_cut = text_tokens(stand_in) - text_tokens(cut) if stand_in else 0
    assert _tokens(made) <= estimate_message_tokens(short) + math.ceil(metadata_cut) + 1
