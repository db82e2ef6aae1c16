"""Conversion from LangChain messages to the core's contract, and the digest record."""

from __future__ import annotations

from langchain_core.messages import (
    AIMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

import langchain_window_budget as lwb
from langchain_window_budget import LangChainCondenser, digest_record
from langchain_window_budget._convert import Converter, OpaqueMessage, chat_model_id, to_core
from langchain_window_budget._digest import build_digest
from langchain_window_budget._shorten import shortened_copy
from window_budget import (
    AssistantMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from window_budget.budget import usage_from_langchain
from window_budget.digest import SESSION_HEADER, is_digest
from window_budget.pipeline import shorten_message
from window_budget.tools.meter import parse_usage

from .conftest import RecordingChatModel


def test_human_text_and_blocks() -> None:
    assert to_core(HumanMessage("hi")) == UserMessage("hi")
    core = to_core(
        HumanMessage(
            content=[
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ]
        )
    )
    assert isinstance(core, UserMessage)
    assert isinstance(core.content[0], TextBlock)
    assert isinstance(core.content[1], ImageBlock)


def test_ai_text_reasoning_tool_calls_and_usage() -> None:
    msg = AIMessage(
        content=[
            {"type": "thinking", "thinking": "plan", "signature": "sig"},
            {"type": "reasoning", "reasoning": "more plan"},
            {"type": "text", "text": "done"},
            {"type": "tool_use", "id": "c1", "name": "bash", "input": {}},
        ],
        tool_calls=[{"name": "bash", "args": {"cmd": "ls"}, "id": "c1", "type": "tool_call"}],
        invalid_tool_calls=[
            {
                "name": "bad",
                "args": "{oops",
                "id": "c2",
                "error": "json",
                "type": "invalid_tool_call",
            }
        ],
        usage_metadata={
            "input_tokens": 1000,
            "output_tokens": 50,
            "total_tokens": 1050,
            "input_token_details": {"cache_read": 600},
        },
        response_metadata={"model_name": "gpt-x", "finish_reason": "tool_calls"},
        additional_kwargs={"reasoning_content": "deepseek style"},
    )
    core = to_core(msg, model_id="gpt-x")
    assert isinstance(core, AssistantMessage)
    kinds = [type(b) for b in core.content]
    assert kinds.count(ThinkingBlock) == 3
    assert [c.id for c in core.tool_calls] == ["c1", "c2"]  # tool_use block counted once
    assert core.tool_calls[1].arguments["_raw"] == "{oops"
    assert core.usage is not None
    assert (core.usage.input_tokens, core.usage.cache_read_tokens) == (400, 600)
    assert core.usage.context_tokens == 1050
    assert core.model == "gpt-x"
    assert core.stop_reason == "tool_calls"
    # Without a known guarded model id the figure is trusted, whatever model wrote it.
    assert to_core(msg).model is None  # type: ignore[union-attr]
    assert to_core(msg, trust_usage=False).usage is None  # type: ignore[union-attr]


def test_usage_metadata_is_read_by_the_cores_langchain_parser() -> None:
    meta = {
        "input_tokens": 1000,
        "output_tokens": 50,
        "total_tokens": 1050,
        "input_token_details": {"cache_read": 600, "cache_creation": 100},
    }
    core = to_core(AIMessage("hi", usage_metadata=meta))  # type: ignore[arg-type]
    assert core.usage == usage_from_langchain(meta) == Usage(300, 50, 600, 100)  # type: ignore[union-attr]
    assert parse_usage(AIMessage("hi", usage_metadata=meta)) == core.usage  # type: ignore[arg-type, union-attr]


def test_tool_function_chat_system_and_unknown() -> None:
    err = to_core(ToolMessage("boom", tool_call_id="c1", name="bash", status="error"))
    assert err == ToolResultMessage("c1", "bash", "boom", is_error=True)
    fn = to_core(FunctionMessage(name="calc", content="4"))
    assert isinstance(fn, ToolResultMessage)
    assert fn.tool_call_id == "function:calc"
    legacy = to_core(
        AIMessage("", additional_kwargs={"function_call": {"name": "calc", "arguments": "{}"}})
    )
    assert [c.id for c in legacy.tool_calls] == ["function:calc"]  # type: ignore[union-attr]
    assert to_core(ChatMessage(role="user", content="x")) == UserMessage("x")
    assert to_core(ChatMessage(role="critic", content="x")) == CustomMessage("chat:critic", "x")
    assert to_core(SystemMessage("mid")) == CustomMessage("system", "mid")
    odd = to_core({"role": "mystery", "payload": "z" * 50})
    assert isinstance(odd, OpaqueMessage)
    assert "zzz" in odd.serialized


def test_remove_message_never_counted_and_system_pinned() -> None:
    conv = Converter().convert(
        [
            SystemMessage("rules " * 50),
            SystemMessage("more"),
            HumanMessage("a"),
            RemoveMessage(id="x"),
            AIMessage("b"),
        ]
    )
    assert conv.pinned == 2
    assert conv.pinned_tokens > 60  # cl100k_base: 52 tokens
    assert conv.origin == [2, 4]
    assert [m.role for m in conv.core] == ["user", "assistant"]


def test_digest_round_trip_is_recognised() -> None:
    digest = build_digest(
        f"{SESSION_HEADER}\n\nbody", covered=10, kept=3, compactions=2, fallback=False
    )
    assert lwb.is_digest(digest)
    record = digest_record(digest)
    assert record is not None
    assert record.pop("seal")  # sealed by the library
    assert record.pop("text_sha")
    assert record == {
        "digest": True,
        "covered": 10,
        "kept": 3,
        "compactions": 2,
        "fallback": False,
    }
    assert is_digest(to_core(digest))
    assert not lwb.is_digest(HumanMessage("hi"))
    # LangChain's own SummarizationMiddleware summary is carried in like a digest.
    theirs = HumanMessage("Here is a summary", additional_kwargs={"lc_source": "summarization"})
    assert isinstance(to_core(theirs), CompactionSummaryMessage)


def test_usage_before_the_digest_is_not_trusted() -> None:
    stale = AIMessage(
        "old", usage_metadata={"input_tokens": 90_000, "output_tokens": 1, "total_tokens": 90_001}
    )
    fresh = AIMessage(
        "new", usage_metadata={"input_tokens": 500, "output_tokens": 1, "total_tokens": 501}
    )
    digest = build_digest(
        f"{SESSION_HEADER}\n\nbody", covered=5, kept=1, compactions=1, fallback=False
    )
    conv = Converter().convert([digest, stale])
    assert conv.core[1].usage is None  # type: ignore[union-attr]
    conv = Converter().convert([digest, stale, HumanMessage("q"), fresh])
    assert conv.core[3].usage is not None  # type: ignore[union-attr]
    engine = LangChainCondenser(context_window=100_000)
    # The stale 90k figure would put this over the 73k limit; it must be ignored.
    assert engine.estimate([digest, stale]) < 1_000


def test_other_model_usage_is_ignored() -> None:
    model = RecordingChatModel(model_name="ours", sizes=[], summary_calls=[])
    assert chat_model_id(model) == "ours"
    engine = LangChainCondenser(model, context_window=100_000)
    theirs = AIMessage(
        "x",
        usage_metadata={"input_tokens": 95_000, "output_tokens": 1, "total_tokens": 95_001},
        response_metadata={"model_name": "someone-else"},
    )
    assert engine.estimate([HumanMessage("q"), theirs]) < 1_000
    ours = theirs.model_copy(update={"response_metadata": {"model_name": "ours"}})
    assert engine.estimate([HumanMessage("q"), ours]) > 95_000


# ---------------------------------------------------------- shortened copies


def _shorten(message: AIMessage | HumanMessage | ToolMessage, tokens: int = 60) -> object:
    return shortened_copy(message, shorten_message(to_core(message), tokens))


def test_shortened_ai_keeps_reasoning_content_out_of_content() -> None:
    # Review 6b: the reasoning used to move from additional_kwargs into the content.
    original = AIMessage(
        "answer " + "a" * 4000,
        id="ai-1",
        additional_kwargs={"reasoning_content": "thought " + "t" * 4000},
        tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1", "type": "tool_call"}],
    )
    copy = _shorten(original)
    assert isinstance(copy, AIMessage)
    assert isinstance(copy.content, str)
    assert copy.content.startswith("answer ")
    assert "thought" not in copy.content
    assert len(copy.content) < 4000
    reasoning = copy.additional_kwargs["reasoning_content"]
    assert reasoning.startswith("thought ")
    assert copy.id == "ai-1"
    assert copy.tool_calls == original.tool_calls


def test_shortened_file_audio_video_blocks_become_placeholders() -> None:
    # Review 6c: binary blocks were shortened into a base64 dump.
    blob = "QUJD" * 3000
    original = HumanMessage(
        [
            {"type": "text", "text": "look at these"},
            {"type": "file", "base64": blob, "mime_type": "application/pdf"},
            {"type": "audio", "base64": blob, "mime_type": "audio/wav"},
            {"type": "video", "base64": blob, "mime_type": "video/mp4"},
        ]
    )
    copy = _shorten(original, 200)
    assert isinstance(copy, HumanMessage)
    assert isinstance(copy.content, list)
    assert copy.content[0] == {"type": "text", "text": "look at these"}
    for block, kind in zip(copy.content[1:], ("file", "audio", "video"), strict=True):
        assert isinstance(block, dict)
        assert block["type"] == "text"
        assert kind in block["text"]
        assert "removed by window-budget" in block["text"]
        assert "QUJD" not in block["text"]


def test_shortened_responses_reasoning_block_keeps_type_and_id() -> None:
    # Review 6d: OpenAI Responses reasoning blocks lost their type and id.
    original = AIMessage(
        [
            {
                "type": "reasoning",
                "id": "rs_123",
                "summary": [{"type": "summary_text", "text": "step " * 2000}],
            },
            {"type": "text", "text": "done " * 2000},
        ]
    )
    copy = _shorten(original, 100)
    assert isinstance(copy, AIMessage)
    assert isinstance(copy.content, list)
    reasoning, text = copy.content
    assert isinstance(reasoning, dict)
    assert isinstance(text, dict)
    assert reasoning["type"] == "reasoning"
    assert reasoning["id"] == "rs_123"
    assert len(reasoning["summary"][0]["text"]) < 10_000
    assert text["type"] == "text"
    assert len(text["text"]) < 10_000


def test_signed_thinking_and_unchanged_blocks_are_left_intact() -> None:
    thinking = {"type": "thinking", "thinking": "deep " * 50, "signature": "sig"}
    original = AIMessage([thinking, {"type": "text", "text": "x " * 5000}])
    copy = _shorten(original, 200)
    assert isinstance(copy, AIMessage)
    assert copy.content[0] == thinking
    tool = ToolMessage("r" * 8000, tool_call_id="c1")
    short = _shorten(tool)
    assert isinstance(short, ToolMessage)
    assert short.tool_call_id == "c1"
    assert isinstance(short.content, str)
    assert len(short.content) < 8000


def test_is_digest_recognises_the_digest_and_the_summary_stream() -> None:
    digest = build_digest(
        f"{SESSION_HEADER}\n\nbody", covered=4, kept=1, compactions=1, fallback=False
    )
    assert lwb.is_digest(digest)
    assert not lwb.is_digest(HumanMessage(f"{SESSION_HEADER}\n\ntyped by a user"))
    assert lwb.is_digest(AIMessage("token"), {"tags": ["window-budget"]})
