"""Format detection, writers, and round trips (through the real frameworks where they exist)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from window_budget import (
    AssistantMessage,
    BashExecutionMessage,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from window_budget.messages import REDACTED_THINKING, AgentMessage, message_to_dict
from window_budget.readers import (
    FORMATS,
    ReadError,
    detect_format,
    iter_transcript_files,
    read_transcript,
    write_transcript,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
BAD = Path(__file__).parents[1] / "fixtures" / "bad"

EXPECTED = {
    "openai_chat.json": "openai",
    "openai_run.json": "openai",
    "openai_chat.jsonl": "openai-jsonl",
    "anthropic_messages.json": "anthropic",
    "claude_code_session.jsonl": "claude-code",
    "pi_session.jsonl": "pi",
    "langchain_dump.json": "langchain",
    "llama_index_dump.json": "llama-index",
    "openhands_output.jsonl": "openhands",
    "tau_bench_results.json": "tau-bench",
    "swe_agent_run.traj": "swe-agent",
    "claude_code_sidechain.jsonl": "claude-code",
}


@pytest.mark.parametrize(("name", "fmt"), sorted(EXPECTED.items()))
def test_detects_each_fixture(name: str, fmt: str) -> None:
    assert detect_format(FIXTURES / name) == fmt


def test_undetectable_file_says_which_formats_exist(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}')
    with pytest.raises(ReadError, match="cannot tell which transcript format") as info:
        read_transcript(path)
    assert "claude-code" in str(info.value)


def test_not_json_at_all(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("hello, world\n")
    with pytest.raises(ReadError):
        read_transcript(path, format="openai")


def test_unknown_format_name() -> None:
    with pytest.raises(ReadError, match="unknown format 'yaml'"):
        read_transcript(FIXTURES / "openai_chat.json", format="yaml")


def test_directory_scan_lists_transcripts_only(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text("[]")
    (tmp_path / "b.jsonl").write_text("")
    (tmp_path / "notes.txt").write_text("x")
    assert [p.name for p in iter_transcript_files(tmp_path)] == ["a.json", "b.jsonl"]


SAMPLE = [
    UserMessage("port the loader"),
    AssistantMessage(
        (
            ThinkingBlock("read first", "sig"),
            TextBlock("reading"),
            ToolCallBlock("c1", "read", {"path": "a.py"}),
        ),
        usage=Usage(100, 10, 50, 5),
        model="m-1",
    ),
    ToolResultMessage("c1", "read", "print('a')"),
    UserMessage((TextBlock("look"), ImageBlock("iVBORw0KGgo=", "image/png"))),
    AssistantMessage("done", model="m-1"),
]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_writer_round_trips_through_its_reader(fmt: str, tmp_path: Path) -> None:
    path = tmp_path / ("out.jsonl" if fmt in ("claude-code", "pi", "openai-jsonl") else "out.json")
    write_transcript(SAMPLE, path, format=fmt, system=["be brief"])
    assert detect_format(path) == fmt
    back = read_transcript(path)
    assert [m.role for m in back.messages] == [m.role for m in SAMPLE]
    assert back.messages[1].tool_calls == SAMPLE[1].tool_calls  # type: ignore[union-attr]
    assert back.messages[2].tool_call_id == "c1"  # type: ignore[union-attr]
    assert any(isinstance(b, ImageBlock) for b in back.messages[3].content)  # type: ignore[union-attr]
    if fmt not in ("claude-code", "pi"):  # session files carry no system prompt
        assert back.system == ("be brief",)


def test_kinds_a_format_lacks_become_user_text() -> None:
    out = io.StringIO()
    write_transcript(
        [BashExecutionMessage("pytest", "3 passed", exit_code=0)], out, format="openai"
    )
    assert json.loads(out.getvalue()) == [
        {"role": "user", "content": "$ pytest (exit 0)\n3 passed"}
    ]


def test_langchain_writer_output_loads_in_langchain() -> None:
    messages_from_dict = pytest.importorskip("langchain_core.messages").messages_from_dict
    out = io.StringIO()
    write_transcript(SAMPLE, out, format="langchain", system=["be brief"])
    msgs = messages_from_dict(json.loads(out.getvalue()))
    assert [m.type for m in msgs] == ["system", "human", "ai", "tool", "human", "ai"]
    assert msgs[2].tool_calls[0]["id"] == "c1"
    assert msgs[2].usage_metadata["input_tokens"] == 155


def test_llama_index_writer_output_loads_in_llama_index() -> None:
    types = pytest.importorskip("llama_index.core.base.llms.types")
    out = io.StringIO()
    write_transcript(SAMPLE, out, format="llama-index")
    msgs = [types.ChatMessage.model_validate(d) for d in json.loads(out.getvalue())]
    assert [m.role.value for m in msgs] == ["user", "assistant", "tool", "user", "assistant"]
    assert msgs[1].blocks[-1].tool_call_id == "c1"


def test_native_json_keeps_every_kind() -> None:
    msgs = [*SAMPLE, BashExecutionMessage("ls", "a.py", exit_code=0)]
    out = io.StringIO()
    write_transcript(msgs, out, format="json", system=["s"])
    back = read_transcript(io.StringIO(out.getvalue()))
    assert back.format == "json"
    assert [message_to_dict(m) for m in back.messages] == [message_to_dict(m) for m in msgs]


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
_messages = st.lists(
    st.one_of(
        _text.map(UserMessage),
        st.builds(
            lambda t, n: AssistantMessage((TextBlock(t), ToolCallBlock(f"c{n}", "tool", {"n": n}))),
            _text,
            st.integers(0, 99),
        ),
        st.builds(lambda t, n: ToolResultMessage(f"c{n}", "tool", t), _text, st.integers(0, 99)),
    ),
    max_size=12,
)


@given(_messages)
def test_pi_and_native_round_trip_exactly(msgs: list) -> None:
    for fmt in ("pi", "json"):
        out = io.StringIO()
        write_transcript(msgs, out, format=fmt)
        back = read_transcript(io.StringIO(out.getvalue()), format=fmt)
        assert [message_to_dict(m) for m in back.messages] == [message_to_dict(m) for m in msgs]


@given(_messages)
def test_openai_and_anthropic_keep_every_call_and_result(msgs: list) -> None:
    for fmt in ("openai", "anthropic", "langchain", "llama-index", "claude-code"):
        out = io.StringIO()
        write_transcript(msgs, out, format=fmt)
        back = read_transcript(io.StringIO(out.getvalue()), format=fmt)
        calls = [c for m in msgs if isinstance(m, AssistantMessage) for c in m.tool_calls]
        back_calls = [
            c for m in back.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
        ]
        assert back_calls == calls
        assert [m.tool_call_id for m in back.messages if isinstance(m, ToolResultMessage)] == [
            m.tool_call_id for m in msgs if isinstance(m, ToolResultMessage)
        ]


# Richer turns: images beside text, thinking (plain, signed, redacted), several calls, failures.
_thinking = st.one_of(
    _text.filter(bool).map(ThinkingBlock),
    st.builds(ThinkingBlock, _text.filter(bool), st.text("abcXYZ019+/=", min_size=1, max_size=12)),
    st.text("abcXYZ019+/=", min_size=1, max_size=12).map(
        lambda data: ThinkingBlock(REDACTED_THINKING, data)
    ),
)
_image = st.sampled_from(
    [ImageBlock("https://e.x/a.png", "image/png"), ImageBlock("iVBORw0K", "image/png")]
)


@st.composite
def _turns(draw: st.DrawFn) -> list[AgentMessage]:
    out: list[AgentMessage] = []
    for _ in range(draw(st.integers(1, 4))):
        asked = draw(
            st.lists(st.one_of(_text.filter(bool).map(TextBlock), _image), min_size=1, max_size=2)
        )
        out.append(UserMessage(tuple(asked)))
        said = draw(st.lists(st.one_of(_thinking, _text.filter(bool).map(TextBlock)), max_size=2))
        first = sum(len(m.tool_calls) for m in out if isinstance(m, AssistantMessage))
        calls = [
            ToolCallBlock(f"c{first + i}", "grep", {"pattern": draw(_text)})
            for i in range(draw(st.integers(0, 2)))
        ]
        out.append(AssistantMessage(tuple(said + calls) or "ok"))
        out.extend(
            ToolResultMessage(c.id, "grep", draw(_text), is_error=draw(st.booleans()))
            for c in calls
        )
    return out


# Chat Completions (and the formats built on it) has no error flag on a tool message.
_NO_ERROR_FLAG = ("openai", "openai-jsonl", "tau-bench", "swe-agent")
_KEEP_THINKING = ("anthropic", "claude-code", "langchain", "llama-index", "pi", "json")


def _thoughts(messages: list[AgentMessage]) -> list[tuple[str, str | None]]:
    return [
        (b.thinking, b.signature)
        for m in messages
        if isinstance(m, AssistantMessage) and not isinstance(m.content, str)
        for b in m.content
        if isinstance(b, ThinkingBlock)
    ]


@settings(max_examples=150, deadline=None)
@given(_turns(), st.sampled_from(sorted(set(FORMATS))))
def test_every_format_keeps_calls_failures_and_signed_thinking(
    msgs: list[AgentMessage], fmt: str
) -> None:
    out = io.StringIO()
    write_transcript(msgs, out, format=fmt)
    back = list(read_transcript(io.StringIO(out.getvalue()), format=fmt).messages)
    assert [
        (c.id, c.name, dict(c.arguments))
        for m in back
        if isinstance(m, AssistantMessage)
        for c in m.tool_calls
    ] == [
        (c.id, c.name, dict(c.arguments))
        for m in msgs
        if isinstance(m, AssistantMessage)
        for c in m.tool_calls
    ]
    results = [(m.tool_call_id, m.is_error) for m in msgs if isinstance(m, ToolResultMessage)]
    read = [(m.tool_call_id, m.is_error) for m in back if isinstance(m, ToolResultMessage)]
    if fmt in _NO_ERROR_FLAG:  # the ids only
        assert [r[0] for r in read] == [r[0] for r in results]
    else:
        assert read == results
    if fmt in _KEEP_THINKING:  # signatures (and redacted blocks) travel back as they were
        assert _thoughts(back) == _thoughts(msgs)
