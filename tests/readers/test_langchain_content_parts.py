"""A LangChain dump's content parts are read as the LangChain adapter reads the live messages.

Both go through ``window_budget.messages.content_blocks``. The pinned cases are parts the
reader used to lose or double: an OpenAI Responses reasoning summary (read as empty), an
Anthropic image given by URL (read as an empty image), LangChain's standard ``tool_call``
parts (read a second time, as JSON text), a ``reasoning_content`` field and a legacy
``function_call`` (both left out; the call's result then answered no call).
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from window_budget.messages import (
    REDACTED_THINKING,
    AssistantMessage,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    content_blocks,
)
from window_budget.readers import read_transcript
from window_budget.readers.langchain_dump import to_langchain

lc_messages = pytest.importorskip("langchain_core.messages")
lc_convert = pytest.importorskip("langchain_window_budget._convert")


def _read(*messages: Any) -> tuple[Any, ...]:
    dump = io.StringIO(json.dumps(lc_messages.messages_to_dict(list(messages))))
    return read_transcript(dump, format="langchain").messages


def _ai_blocks(content: list[Any], **fields: Any) -> tuple[Any, ...]:
    (read,) = _read(lc_messages.AIMessage(content=content, **fields))
    assert isinstance(read, AssistantMessage)
    return (read.content,) if isinstance(read.content, str) else read.content


def test_a_responses_reasoning_summary_is_read_as_thinking() -> None:
    summary = [{"type": "summary_text", "text": "Check the loader first."}]
    parts = [{"type": "reasoning", "id": "rs_1", "summary": summary}, "Done."]
    assert _ai_blocks(parts) == (ThinkingBlock("Check the loader first."), TextBlock("Done."))


def test_an_image_given_by_url_keeps_its_url_and_type() -> None:
    url = "https://example.com/plots/loss.jpg"
    (read,) = _read(
        lc_messages.HumanMessage(
            [{"type": "image", "source": {"type": "url", "url": url}}, "What went wrong?"]
        )
    )
    assert read.content == (ImageBlock(url, "image/jpeg"), TextBlock("What went wrong?"))


def test_standard_tool_call_parts_are_read_once() -> None:
    call = {"type": "tool_call", "id": "c1", "name": "grep", "args": {"pattern": "TODO"}}
    blocks = _ai_blocks(
        ["Searching.", call],
        tool_calls=[{"id": "c1", "name": "grep", "args": {"pattern": "TODO"}}],
    )
    assert blocks == (TextBlock("Searching."), ToolCallBlock("c1", "grep", {"pattern": "TODO"}))


def test_reasoning_content_is_read_as_thinking() -> None:
    blocks = _ai_blocks(
        ["The answer is 4."], additional_kwargs={"reasoning_content": "2 + 2 is 4."}
    )
    assert blocks == (ThinkingBlock("2 + 2 is 4."), TextBlock("The answer is 4."))


def test_a_legacy_function_call_and_its_result_are_one_pair() -> None:
    call = lc_messages.AIMessage(
        "", additional_kwargs={"function_call": {"name": "calc", "arguments": '{"x": 1}'}}
    )
    asked, answered = _read(call, lc_messages.FunctionMessage("2", name="calc"))
    assert asked.content == (ToolCallBlock("fc_calc", "calc", {"x": 1}),)
    assert (answered.tool_call_id, answered.tool_name, answered.content) == ("fc_calc", "calc", "2")


def test_a_redacted_thinking_block_is_kept_whole_and_written_back_as_it_came() -> None:
    part = {"type": "redacted_thinking", "data": "EuYBCkQYAiJA"}
    (read,) = _read(lc_messages.AIMessage(content=[part, "Done."]))
    assert read.content == (ThinkingBlock(REDACTED_THINKING, "EuYBCkQYAiJA"), TextBlock("Done."))
    (written,) = to_langchain([read])
    assert written["data"]["content"] == [part, {"type": "text", "text": "Done."}]


def test_parts_of_no_known_shape_are_kept_as_their_json() -> None:
    cite = {"type": "citation", "url": "https://example.com", "cited_text": "ß"}
    record = {"type": "ai", "data": {"content": ["See:", cite, 7, None]}}
    (read,) = read_transcript(io.StringIO(json.dumps([record])), format="langchain").messages
    assert read.content == (
        TextBlock("See:"),
        TextBlock('{"type":"citation","url":"https://example.com","cited_text":"ß"}'),
        TextBlock("7"),
        TextBlock("null"),
    )


def test_inline_image_data_is_cut_only_when_asked() -> None:
    part = {"type": "image_url", "image_url": {"url": "data:image/webp;base64," + "A" * 500}}
    ((_, whole),) = content_blocks([part], skip_tool_calls=True)
    ((_, cut),) = content_blocks([part], skip_tool_calls=True, image_limit=64)
    assert whole == ImageBlock("A" * 500, "image/webp")
    assert cut == ImageBlock("A" * 64, "image/webp")


# The agreement: whatever the parts, a dump read back holds the blocks the adapter counts.

_TEXT = st.text(max_size=30)
_PARTS = st.one_of(
    _TEXT,
    st.builds(lambda t: {"type": "text", "text": t}, _TEXT),
    st.builds(
        lambda t, s: {"type": "thinking", "thinking": t, **({"signature": s} if s else {})},
        _TEXT,
        st.one_of(st.none(), _TEXT),
    ),
    st.builds(lambda t: {"type": "reasoning", "reasoning": t}, _TEXT),
    st.builds(
        lambda ts: {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": t} for t in ts],
        },
        st.lists(_TEXT, max_size=3),
    ),
    st.builds(lambda d: {"type": "redacted_thinking", "data": d}, _TEXT),
    st.builds(
        lambda u: {"type": "image_url", "image_url": {"url": u}},
        st.sampled_from(["https://a.example/x.png", "data:image/gif;base64," + "R" * 90, ""]),
    ),
    st.builds(
        lambda d, m: {"type": "image", "source": {"type": "base64", "data": d, "media_type": m}},
        st.text("ABCD", max_size=100),
        st.sampled_from(["image/png", "image/jpeg"]),
    ),
    st.builds(lambda n: {"type": "tool_use", "id": "t1", "name": n, "input": {}}, _TEXT),
    st.dictionaries(
        st.sampled_from(["type", "x", "url"]),
        st.one_of(_TEXT, st.integers(), st.lists(st.integers(), max_size=2)),
    ),
)


def _blocks(content: Any, *, cut: bool = False) -> list[Any]:
    blocks = [] if content == "" else [TextBlock(content)] if isinstance(content, str) else content
    if cut:  # the adapter keeps 64 characters of inline image data (a URL up to 2 KiB)
        blocks = [
            content_blocks([_part(b)], skip_tool_calls=True, image_limit=64)[0][1]
            if isinstance(b, ImageBlock)
            else b
            for b in blocks
        ]
    return [b for b in blocks if b != TextBlock("")]  # a lone "" is read as no content


def _part(image: ImageBlock) -> dict[str, Any]:
    return {"type": "image", "base64": image.data, "mime_type": image.mime_type}


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(_PARTS, max_size=6), kind=st.sampled_from(["ai", "human", "tool"]))
def test_a_dump_reads_back_what_the_adapter_counts(parts: list[Any], kind: str) -> None:
    if kind != "ai":  # a call part outside an assistant message: the reader leaves it out
        parts = [p for p in parts if not (isinstance(p, dict) and p.get("type") == "tool_use")]
    message = {
        "ai": lambda: lc_messages.AIMessage(content=parts),
        "human": lambda: lc_messages.HumanMessage(content=parts),
        "tool": lambda: lc_messages.ToolMessage(content=parts, tool_call_id="t1"),
    }[kind]()
    (read,) = _read(message)
    assert _blocks(read.content, cut=True) == _blocks(lc_convert.to_core(message).content)
