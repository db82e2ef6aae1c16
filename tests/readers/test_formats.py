"""Each reader against the fixture files in tests/fixtures/transcripts."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from window_budget import (
    AssistantMessage,
    BashExecutionMessage,
    CompactionSummaryMessage,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from window_budget.readers import ReadError, read_transcript
from window_budget.readers.anthropic import REDACTED_THINKING

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
BAD = Path(__file__).parents[1] / "fixtures" / "bad"


def read(name: str, **kw: object):
    return read_transcript(FIXTURES / name, **kw)  # type: ignore[arg-type]


# ------------------------------------------------------------------ OpenAI


def test_openai_list_maps_calls_results_parts_and_usage() -> None:
    t = read("openai_chat.json")
    assert t.format == "openai"
    assert t.system == ("You are a careful coding agent.",)
    user, calls, r1, r2, shot, reply = t.messages
    assert user == UserMessage("Why does tests/test_io.py fail?")
    assert isinstance(calls, AssistantMessage)
    assert [c.name for c in calls.tool_calls] == ["read_file", "bash"]
    assert calls.tool_calls[0].arguments == {"path": "tests/test_io.py"}
    assert calls.tool_calls[1].arguments == {"_raw": "not json"}  # kept, not dropped
    assert isinstance(r1, ToolResultMessage)
    assert (r1.tool_call_id, r1.tool_name) == ("call_1", "read_file")  # name from the call
    assert isinstance(r2, ToolResultMessage)
    assert r2.content == (TextBlock("1 failed"),)  # result given as a list of parts
    assert isinstance(shot, UserMessage)
    assert shot.content[1] == ImageBlock("/9j/4AAQSkZJRg==", "image/jpeg")
    assert isinstance(reply, AssistantMessage)
    assert reply.usage == Usage(292, 12, 128)


def test_openai_run_object_with_traj_key() -> None:
    t = read("openai_run.json")
    assert t.system == ("Solve the task.",)
    assert [m.role for m in t.messages] == ["user", "assistant"]


def test_openai_jsonl_streams_one_message_a_line() -> None:
    t = read("openai_chat.jsonl")
    assert t.format == "openai-jsonl"
    assert [m.role for m in t.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert t.messages[2].tool_name == "ls"  # type: ignore[union-attr]


def test_openai_messages_key_and_null_content() -> None:
    doc = (
        '{"messages": [{"role": "assistant", "content": null, "tool_calls": [{"id": "c",'
        ' "type": "function", "function": {"name": "f", "arguments": ""}}]}]}'
    )
    t = read_transcript(io.StringIO(doc), format="openai")
    assert t.messages[0].content == (ToolCallBlock("c", "f", {}),)  # type: ignore[union-attr]


def test_bad_record_names_file_record_and_problem() -> None:
    with pytest.raises(ReadError) as info:
        read_transcript(BAD / "openai_bad_record.json")
    msg = str(info.value)
    assert "openai_bad_record.json, record 2" in msg
    assert "missing field 'role'" in msg
    assert "--skip-bad" in msg
    assert info.value.line == 2


def test_skip_bad_skips_and_counts() -> None:
    t = read_transcript(BAD / "openai_bad_record.json", skip_bad=True)
    assert [m.role for m in t.messages] == ["user", "assistant"]
    assert len(t.skipped) == 1
    assert t.skipped[0].line == 2


def test_unknown_role_is_an_error() -> None:
    with pytest.raises(ReadError, match="unknown role 'robot'"):
        read_transcript(io.StringIO('[{"role": "robot", "content": "x"}]'), format="openai")


# --------------------------------------------------------------- Anthropic


def test_anthropic_blocks_results_images_and_thinking() -> None:
    t = read("anthropic_messages.json")
    assert t.format == "anthropic"
    assert t.system == ("You are a careful coding agent.",)
    roles = [m.role for m in t.messages]
    assert roles == ["user", "assistant", "toolResult", "toolResult", "user", "assistant", "user"]
    plan = t.messages[1]
    assert isinstance(plan, AssistantMessage)
    assert plan.content[0] == ThinkingBlock("I should look at loader.py first.", "sig-abc")
    ok, failed = t.messages[2], t.messages[3]
    assert isinstance(ok, ToolResultMessage)
    assert isinstance(failed, ToolResultMessage)
    assert ok.tool_name == "read_file"
    assert not ok.is_error
    assert failed.is_error
    assert failed.content[1] == ImageBlock("iVBORw0KGgo=", "image/png")  # image inside a result
    assert t.messages[4] == UserMessage("Also keep the old name as an alias.")
    reply = t.messages[5]
    assert isinstance(reply, AssistantMessage)
    assert reply.content[0] == ThinkingBlock(REDACTED_THINKING, "EuYBCkQYAiJA")
    assert reply.usage == Usage(812, 40, 2048, 256)
    assert t.messages[6].content == (  # type: ignore[union-attr]
        ImageBlock("https://example.invalid/diagram.png", "image/png"),
    )


# ------------------------------------------------------------- Claude Code


def test_claude_code_merges_split_lines_and_skips_non_conversation() -> None:
    t = read("claude_code_session.jsonl", whole_file=True)
    assert t.format == "claude-code"
    assert [m.role for m in t.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "compactionSummary",
        "user",
        "assistant",
    ]
    # snapshot, progress, sidechain line, api_error notice, summary record
    assert t.ignored == 5
    first = t.messages[1]
    assert isinstance(first, AssistantMessage)
    assert [type(b) for b in first.content] == [ThinkingBlock, TextBlock, ToolCallBlock]
    # the three lines repeat the usage; the last line's figure wins and is counted once
    assert first.usage == Usage(9, 96, 11000, 3200)
    assert first.model == "claude-sonnet-4-5"
    assert first.stop_reason == "tool_use"
    result = t.messages[2]
    assert isinstance(result, ToolResultMessage)
    assert (result.tool_name, result.is_error) == ("Bash", True)
    assert t.messages[3].usage is None  # type: ignore[union-attr]  # missing usage is fine
    summary = t.messages[4]
    assert isinstance(summary, CompactionSummaryMessage)
    assert summary.tokens_before == 15300
    assert "exact float comparison" in summary.summary
    assert isinstance(t.messages[5].content[1], ImageBlock)  # type: ignore[union-attr]
    assert t.reported_usage == Usage(4, 12, 5200, 900)
    assert t.meta["sessionId"] == "5f0c-demo"
    assert t.messages[0].timestamp is not None  # type: ignore[union-attr]


def test_truncated_last_line_is_reported_then_skippable() -> None:
    with pytest.raises(ReadError, match=r"line 4: the last line is cut off"):
        read_transcript(BAD / "claude_code_truncated.jsonl")
    t = read_transcript(BAD / "claude_code_truncated.jsonl", skip_bad=True)
    assert len(t.skipped) == 1
    assert [m.role for m in t.messages] == ["user", "assistant"]


def test_bad_middle_line_names_the_line(tmp_path: Path) -> None:
    lines = (FIXTURES / "claude_code_session.jsonl").read_text().splitlines()
    lines[3] = "{not json"
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ReadError, match=r"s\.jsonl, line 4: not valid JSON"):
        read_transcript(path)
    assert len(read_transcript(path, skip_bad=True).skipped) == 1


# ---------------------------------------------------------------------- pi


def test_pi_maps_one_to_one_and_accepts_both_compaction_spellings() -> None:
    t = read("pi_session.jsonl", whole_file=True)
    assert t.format == "pi"
    assert [m.role for m in t.messages] == [
        "user",
        "assistant",
        "toolResult",
        "bashExecution",
        "compactionSummary",
        "user",
        "assistant",
        "user",
        "compactionSummary",
    ]
    assert t.ignored == 2  # model_change, thinking_level_change
    reply = t.messages[1]
    assert isinstance(reply, AssistantMessage)
    assert reply.usage == Usage(1200, 80, 4000, 0)
    assert reply.tool_calls[0].arguments == {"path": "settings/loader.py"}
    assert isinstance(t.messages[3], BashExecutionMessage)
    # an aborted turn's call without a result is kept as it is
    assert t.messages[6].tool_calls[0].id == "tc2"  # type: ignore[union-attr]
    older, newer = t.meta["compactions"]
    assert older["first_kept"] == 1
    assert older["tokens_before"] == 5400
    assert newer["first_kept"] == 5  # by entry id "e8"
    assert t.meta["model"] == "claude-sonnet-4-5"


def test_pi_unknown_entry_type_is_an_error() -> None:
    with pytest.raises(ReadError, match="unknown entry type 'mystery'"):
        read_transcript(
            io.StringIO('{"type": "session", "id": "x"}\n{"type": "mystery"}\n'), format="pi"
        )


# ---------------------------------------------------- LangChain / LlamaIndex


def test_langchain_dump() -> None:
    t = read("langchain_dump.json")
    assert t.format == "langchain"
    assert t.system == ("You are a careful coding agent.",)
    assert [m.role for m in t.messages] == ["user", "assistant", "toolResult", "assistant", "user"]
    shot = t.messages[0]
    assert isinstance(shot.content[1], ImageBlock)  # type: ignore[union-attr]
    call = t.messages[1]
    assert isinstance(call, AssistantMessage)
    assert call.tool_calls == (ToolCallBlock("call_a", "ocr", {"region": "top"}),)
    assert call.usage == Usage(500, 20, 1000, 0)  # cache reads split out of input_tokens
    assert call.model == "gpt-4o-mini"
    assert t.messages[2].is_error  # type: ignore[union-attr]
    assert isinstance(t.messages[3].content[0], ThinkingBlock)  # type: ignore[union-attr]


def test_llama_index_dump() -> None:
    t = read("llama_index_dump.json")
    assert t.format == "llama-index"
    assert t.system == ("You are a careful coding agent.",)
    assert [m.role for m in t.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
        "assistant",
    ]
    assert t.messages[0].content[1] == ImageBlock(  # type: ignore[union-attr]
        "https://example.invalid/diagram.png", "image/png"
    )
    assert t.messages[1].tool_calls == (  # type: ignore[union-attr]
        ToolCallBlock("call_x", "describe_image", {"detail": "high"}),
    )
    second = t.messages[3]
    assert isinstance(second, AssistantMessage)
    assert isinstance(second.content[0], ThinkingBlock)
    assert second.tool_calls[0].id == "call_y"
    assert t.messages[4].tool_name == "lookup"  # type: ignore[union-attr]  # name from the call


def test_readers_import_no_framework() -> None:
    import subprocess
    import sys

    code = (
        "import sys, window_budget.readers as r; r.read_transcript(sys.argv[1]);"
        "r.read_transcript(sys.argv[2]);"
        "bad = [m for m in ('langchain_core', 'llama_index') if m in sys.modules];"
        "sys.exit(bool(bad))"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(FIXTURES / "langchain_dump.json"),
            str(FIXTURES / "llama_index_dump.json"),
        ],
        check=False,
    )
    assert done.returncode == 0


class _LinesOnly(io.StringIO):
    """A stream that can only be iterated: any whole-file read fails the test."""

    def read(self, size: int | None = -1) -> str:
        raise AssertionError("the reader slurped the file")


@pytest.mark.parametrize(
    "name", ["claude_code_session.jsonl", "pi_session.jsonl", "openai_chat.jsonl"]
)
def test_jsonl_readers_stream_line_by_line(name: str) -> None:
    from window_budget.readers import FORMATS, detect_format

    fmt = detect_format(FIXTURES / name)
    stream = _LinesOnly((FIXTURES / name).read_text())
    transcript = FORMATS[fmt][0](stream)
    assert transcript.messages
