"""A written transcript reads back as it was: digests stay digests (their kept turns' usage
never anchors), compaction boundaries keep their counts, session formats keep system prompts."""

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
    Usage,
    UserMessage,
    create_condenser,
)
from window_budget.pipeline import estimate_context
from window_budget.readers import read_transcript, write_transcript

LONG = Path(__file__).parents[2] / "examples" / "long_session.jsonl"
WINDOW = 32_768

# Formats that keep provider usage on assistant messages, so a stale figure could anchor.
USAGE_FORMATS = ["claude-code", "pi", "langchain", "json"]


def _compacted() -> tuple[list[object], int, int | None]:
    original = read_transcript(LONG)
    model = Model(original.model or "m", WINDOW)
    # Masking off: these tests are about a digest surviving the writers.
    result = create_condenser(model=model, policy=BudgetPolicy(mask_keep_outputs=None)).run_sync(
        list(original.messages)
    )
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
        {
            "type": "system",
            "subtype": "compact_boundary",
            "sessionId": "s",
            "compactMetadata": {"trigger": "auto", "preTokens": 150000},
        },
        {
            "type": "user",
            "isCompactSummary": True,
            "sessionId": "s",
            "message": {"role": "user", "content": "summary of before"},
        },
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    back = read_transcript(io.StringIO(text), format="claude-code")
    assert type(back.messages[0]).__name__ == "CompactionSummaryMessage"
    assert back.messages[0].tokens_before == 150000  # type: ignore[attr-defined]


def test_usage_on_kept_turns_of_a_written_digest_never_anchors() -> None:
    digest = DigestMessage(
        "[session digest — older turns condensed]\n\nstuff", covered_count=10, kept_count=2
    )
    kept = [UserMessage("q"), AssistantMessage("a", usage=Usage(90_000, 10), model="m")]
    buffer = io.StringIO()
    write_transcript([digest, *kept], buffer, format="claude-code")
    back = read_transcript(io.StringIO(buffer.getvalue()), format="claude-code")
    assert not estimate_context(back.messages, Model("m", WINDOW)).anchored


@pytest.mark.parametrize("fmt", ["claude-code", "pi"])
def test_agent_session_formats_keep_the_system_prompt(fmt: str) -> None:
    buffer = io.StringIO()
    write_transcript(
        [UserMessage("hi"), AssistantMessage("hello")],
        buffer,
        format=fmt,
        system=["be brief", "use tools"],
    )
    back = read_transcript(io.StringIO(buffer.getvalue()), format=fmt)
    assert back.system == ("be brief", "use tools")
    assert [m.role for m in back.messages] == ["user", "assistant"]
