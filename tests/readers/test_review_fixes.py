"""Regressions from review: digests survive a round trip, provider-run tool calls become
text, system prompts are kept, JSON syntax errors say where, URL images keep their type."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from window_budget import (
    AssistantMessage,
    BudgetPolicy,
    DigestMessage,
    Model,
    ToolCallBlock,
    Usage,
    UserMessage,
    create_condenser,
    estimate_context,
)
from window_budget.readers import ReadError, read_transcript, write_transcript

LONG = Path(__file__).parents[2] / "examples" / "long_session.jsonl"
WINDOW = 32_768

# Formats that keep provider usage on assistant messages, so a stale figure could anchor.
USAGE_FORMATS = ["claude-code", "pi", "langchain", "json"]


def _compacted() -> tuple[list[object], int, int | None]:
    original = read_transcript(LONG)
    model = Model(original.model or "m", WINDOW)
    # Masking off: these tests are about a digest surviving the writers.
    result = create_condenser(model=model, policy=BudgetPolicy(mask_keep_outputs=None)
                              ).run_sync(list(original.messages))
    assert result.reason == "condensed"
    digest = result.messages[0]
    assert isinstance(digest, DigestMessage)
    return list(result.messages), result.tokens_before, digest.kept_count


@pytest.mark.parametrize("fmt", [*USAGE_FORMATS, "llama-index"])
def test_a_compacted_transcript_reads_back_under_budget(fmt: str) -> None:
    messages, tokens_before, kept = _compacted()
    buffer = io.StringIO()
    write_transcript(messages, buffer, format=fmt, tokens_before=tokens_before)
    back = read_transcript(io.StringIO(buffer.getvalue()), format=fmt)
    head = back.messages[0]
    assert isinstance(head, DigestMessage)
    assert head.kept_count == kept
    assert head.covered_count == messages[0].covered_count  # type: ignore[attr-defined]
    context = estimate_context(back.messages, Model(back.model or "m", WINDOW))
    assert not context.anchored
    assert context.context_tokens < WINDOW * 0.5


def test_claude_code_compact_boundary_records_tokens_before() -> None:
    messages, tokens_before, kept = _compacted()
    buffer = io.StringIO()
    write_transcript(messages, buffer, format="claude-code", tokens_before=tokens_before)
    boundary = json.loads(buffer.getvalue().splitlines()[0])
    assert boundary["subtype"] == "compact_boundary"
    assert boundary["compactMetadata"]["preTokens"] == tokens_before
    assert boundary["compactMetadata"]["window_budget"]["kept"] == kept


def test_a_claude_code_compaction_from_claude_code_stays_a_summary() -> None:
    lines = [
        {"type": "system", "subtype": "compact_boundary", "sessionId": "s",
         "compactMetadata": {"trigger": "auto", "preTokens": 150000}},
        {"type": "user", "isCompactSummary": True, "sessionId": "s",
         "message": {"role": "user", "content": "summary of before"}},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    back = read_transcript(io.StringIO(text), format="claude-code")
    assert type(back.messages[0]).__name__ == "CompactionSummaryMessage"
    assert back.messages[0].tokens_before == 150000  # type: ignore[attr-defined]


@pytest.mark.parametrize("fmt", ["claude-code", "pi"])
def test_agent_session_formats_keep_the_system_prompt(fmt: str) -> None:
    buffer = io.StringIO()
    write_transcript([UserMessage("hi"), AssistantMessage("hello")], buffer, format=fmt,
                     system=["be brief", "use tools"])
    back = read_transcript(io.StringIO(buffer.getvalue()), format=fmt)
    assert back.system == ("be brief", "use tools")
    assert [m.role for m in back.messages] == ["user", "assistant"]


def _server_tool_reply() -> dict[str, object]:
    return {"role": "assistant", "content": [
        {"type": "text", "text": "let me look"},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
         "input": {"query": "tomllib"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
         "content": [{"type": "web_search_result", "url": "https://docs.python.org",
                      "title": "tomllib"}]},
        {"type": "text", "text": "found it"},
    ]}


def test_server_tool_use_is_text_not_a_tool_call() -> None:
    doc = {"messages": [{"role": "user", "content": "search"}, _server_tool_reply()]}
    back = read_transcript(io.StringIO(json.dumps(doc)), format="anthropic")
    reply = back.messages[-1]
    assert isinstance(reply, AssistantMessage)
    assert reply.tool_calls == ()
    text = json.dumps([b.text for b in reply.content if hasattr(b, "text")])  # type: ignore[union-attr]
    assert "web_search" in text
    assert "tomllib" in text
    assert "docs.python.org" in text

    out = io.StringIO()
    write_transcript(back.messages, out, format="anthropic")
    written = json.loads(out.getvalue())
    kinds = {b["type"] for m in written["messages"] if isinstance(m["content"], list)
             for b in m["content"]}
    assert "tool_use" not in kinds


def test_claude_code_server_tool_use_is_text() -> None:
    line = {"type": "assistant", "sessionId": "s", "uuid": "u1",
            "message": {"id": "msg_1", "model": "claude-x", **_server_tool_reply()}}
    back = read_transcript(io.StringIO(json.dumps(line) + "\n"), format="claude-code")
    reply = back.messages[0]
    assert isinstance(reply, AssistantMessage)
    assert reply.tool_calls == ()


def test_langchain_invalid_tool_calls_become_text() -> None:
    dump = [
        {"type": "human", "data": {"content": "go"}},
        {"type": "ai", "data": {"content": "", "tool_calls": [], "invalid_tool_calls": [
            {"name": "bash", "args": "{not json", "id": "call_1", "error": "bad JSON",
             "type": "invalid_tool_call"}]}},
    ]
    back = read_transcript(io.StringIO(json.dumps(dump)), format="langchain")
    reply = back.messages[-1]
    assert isinstance(reply, AssistantMessage)
    assert not any(isinstance(b, ToolCallBlock) for b in reply.content)
    text = reply.content if isinstance(reply.content, str) else \
        " ".join(getattr(b, "text", "") for b in reply.content)
    assert "bash" in text
    assert "{not json" in text
    assert "bad JSON" in text


def test_a_json_syntax_error_says_where(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[\n  {"role": "user", "content": "hi"},\n  {"role": oops}\n]\n')
    with pytest.raises(ReadError, match=r"broken\.json, line 3, column 12: not valid JSON "
                                        r"\(Expecting value\)") as info:
        read_transcript(path)
    assert "cannot tell" not in str(info.value)


def test_a_json_file_of_another_kind_still_cannot_be_told(tmp_path: Path) -> None:
    path = tmp_path / "package.json"
    path.write_text('{"name": "x", "version": "1.0.0"}\n')
    with pytest.raises(ReadError, match="cannot tell which transcript format"):
        read_transcript(path)


def test_bad_record_hint_uses_both_spellings(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\nnot json\n'
                    '{"role": "user", "content": "again"}\n')
    with pytest.raises(ReadError) as info:
        read_transcript(path, format="openai-jsonl")
    assert "skip_bad=True" in str(info.value)
    assert "--skip-bad on the command line" in str(info.value)
    assert "pass skip_bad=True (--skip-bad)" not in str(info.value)


@pytest.mark.parametrize(("url", "mime"), [("https://x.test/a.jpg", "image/jpeg"),
                                           ("https://x.test/b.webp?size=2", "image/webp"),
                                           ("https://x.test/plain", "image/png")])
def test_url_images_keep_a_sensible_mime_type(url: str, mime: str) -> None:
    line = {"type": "user", "sessionId": "s", "uuid": "u1", "message": {
        "role": "user", "content": [{"type": "image", "source": {"type": "url", "url": url}}]}}
    back = read_transcript(io.StringIO(json.dumps(line) + "\n"), format="claude-code")
    block = back.messages[0].content[0]  # type: ignore[union-attr,index]
    assert block.data == url  # type: ignore[union-attr]
    assert block.mime_type == mime  # type: ignore[union-attr]


def test_usage_on_kept_turns_of_a_written_digest_never_anchors() -> None:
    digest = DigestMessage("[session digest — older turns condensed]\n\nstuff",
                           covered_count=10, kept_count=2)
    kept = [UserMessage("q"), AssistantMessage("a", usage=Usage(90_000, 10), model="m")]
    buffer = io.StringIO()
    write_transcript([digest, *kept], buffer, format="claude-code")
    back = read_transcript(io.StringIO(buffer.getvalue()), format="claude-code")
    assert not estimate_context(back.messages, Model("m", WINDOW)).anchored
