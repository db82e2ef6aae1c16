"""A kept LangChain message shortened to fit keeps its own shape, whatever its blocks.

When the newest turn does not fit, the adapter hands the model a copy of the caller's
message carrying the core's shortened text (``_shorten.shortened_copy``). Providers check
what comes back: a signed or redacted thinking block must be byte for byte, a tool call
must keep its id and arguments, and a text block's citations point into text that is no
longer there. For any mix of the blocks LangChain messages carry, the copy is the same
message type with the same id, calls and block types, its signed and opaque blocks
untouched, its media a text placeholder, never larger than the original, and the
original itself is never changed.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_window_budget._convert import to_core
from langchain_window_budget._shorten import shortened_copy
from tests.strategies import words
from window_budget.budget import estimate_message_tokens
from window_budget.pipeline._fit import shorten_message

_PARTS = st.one_of(
    words,
    st.builds(lambda t: {"type": "text", "text": t}, words),
    st.builds(
        lambda t: {"type": "text", "text": t, "annotations": [{"type": "url", "start": 0}]},
        words,
    ),
    st.builds(lambda t: {"type": "thinking", "thinking": t}, words),
    st.builds(lambda t: {"type": "thinking", "thinking": t, "signature": "sig=="}, words),
    st.just({"type": "redacted_thinking", "data": "opaque" * 40}),
    st.builds(lambda t: {"type": "reasoning", "id": "rs_1", "reasoning": t}, words),
    st.builds(
        lambda t: {
            "type": "reasoning",
            "id": "rs_2",
            "summary": [{"type": "summary_text", "text": t}],
        },
        words,
    ),
    st.just({"type": "image", "base64": "iVBOR" * 200, "mime_type": "image/png"}),
    st.just({"type": "image_url", "image_url": {"url": "https://example.com/plot.png"}}),
    st.just({"type": "file", "base64": "JVBER" * 200, "mime_type": "application/pdf"}),
    st.builds(lambda t: {"type": "citation", "cited_text": t, "url": "https://e.x"}, words),
)

_SIGNED_OR_OPAQUE = ("redacted_thinking",)


def _message(kind: str, parts: list[Any], reasoning: str) -> BaseMessage:
    if kind == "ai":
        return AIMessage(
            content=parts,
            id="m-1",
            tool_calls=[{"id": "c1", "name": "grep", "args": {"pattern": "TODO"}}],
            additional_kwargs={"reasoning_content": reasoning} if reasoning else {},
        )
    if kind == "tool":
        return ToolMessage(content=parts, tool_call_id="c1", id="m-1")
    return HumanMessage(content=parts, id="m-1")


def _untouchable(part: Any) -> bool:
    return isinstance(part, dict) and (
        part.get("type") in _SIGNED_OR_OPAQUE
        or (part.get("type") == "thinking" and bool(part.get("signature")))
    )


@settings(max_examples=150, deadline=None)
@given(
    kind=st.sampled_from(["ai", "human", "tool"]),
    parts=st.lists(_PARTS, min_size=1, max_size=6),
    reasoning=st.sampled_from(["", "Because the keys are empty. " * 40]),
    share=st.floats(0.05, 0.9),
)
def test_a_shortened_copy_keeps_the_originals_shape(
    kind: str, parts: list[Any], reasoning: str, share: float
) -> None:
    original = _message(kind, parts, reasoning)
    before = copy.deepcopy(original.model_dump())
    core = to_core(original)
    size = estimate_message_tokens(core)
    short = shorten_message(core, max(1, int(size * share)))
    made = shortened_copy(original, short)

    assert original.model_dump() == before  # the caller's message is never changed
    if short is core:
        assert made == original
        return
    assert type(made) is type(original)
    assert made.id == original.id
    if isinstance(original, AIMessage):
        assert isinstance(made, AIMessage)
        assert made.tool_calls == original.tool_calls
    if isinstance(original, ToolMessage):
        assert isinstance(made, ToolMessage)
        assert made.tool_call_id == original.tool_call_id
    assert estimate_message_tokens(to_core(made)) <= size
    if isinstance(made.content, list) and len(made.content) == len(original.content):
        for old, new in zip(original.content, made.content, strict=True):
            if _untouchable(old):
                assert new == old
            elif isinstance(old, dict) and old.get("type") in ("text", "thinking", "reasoning"):
                assert isinstance(new, dict)
                assert new.get("type") == old.get("type")
                if new.get("text") != old.get("text"):
                    assert "annotations" not in new
            elif isinstance(old, dict) and new != old:
                # Media and blocks billed as their JSON become one short text placeholder.
                assert isinstance(new, dict)
                assert new["type"] == "text"
                assert "removed by window-budget" in new["text"]
