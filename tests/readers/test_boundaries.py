"""Compaction boundaries: readers hand back what the model sees after the last compaction.

A Claude Code ``compact_boundary`` + ``isCompactSummary`` pair, a pi ``compaction`` entry
(``firstKeptEntryIndex`` or ``firstKeptEntryId``) and a digest this library wrote all
start the live context. Usage from before a boundary, or on the turns a compaction kept,
measured a longer transcript and must never anchor the estimate.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from window_budget import AssistantMessage, CompactionSummaryMessage, Model, UserMessage
from window_budget.cli import main
from window_budget.messages import message_text
from window_budget.pipeline import estimate_context
from window_budget.readers import read_transcript, write_transcript

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
MODEL = "claude-sonnet-4-5"
BIG = 150_000  # a usage figure from the long transcript before a compaction


def _claude_lines(*, usage_after: bool) -> list[dict[str, Any]]:
    def reply(uid: str, text: str, usage: int | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": f"msg_{uid}",
            "role": "assistant",
            "model": MODEL,
            "content": [{"type": "text", "text": text}],
        }
        if usage is not None:
            body["usage"] = {
                "input_tokens": 10,
                "cache_read_input_tokens": usage,
                "cache_creation_input_tokens": 0,
                "output_tokens": 5,
            }
        return {"type": "assistant", "uuid": uid, "sessionId": "s", "message": body}

    def user(uid: str, text: str, **extra: Any) -> dict[str, Any]:
        return {
            "type": "user",
            "uuid": uid,
            "sessionId": "s",
            "message": {"role": "user", "content": text},
            **extra,
        }

    return [
        user("u1", "port the loader " * 500),
        reply("a1", "reading " * 500, BIG),
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "b1",
            "sessionId": "s",
            "compactMetadata": {"trigger": "auto", "preTokens": BIG},
        },
        user("s1", "Summary: the loader is half ported.", isCompactSummary=True),
        user("u2", "now the schema"),
        reply("a2", "on it", 2_000 if usage_after else None),
    ]


def _write_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_claude_code_reads_the_live_context_and_archives_the_rest(tmp_path: Path) -> None:
    path = _write_lines(tmp_path / "s.jsonl", _claude_lines(usage_after=False))
    t = read_transcript(path)
    summary, ask, reply = t.messages
    assert isinstance(summary, CompactionSummaryMessage)
    assert isinstance(reply, AssistantMessage)
    assert summary.kept_count == 0  # Claude Code keeps no turn verbatim
    assert summary.tokens_before == BIG
    assert ask == UserMessage("now the schema", timestamp=None)
    assert [m.role for m in t.archive] == ["user", "assistant"]
    assert not t.whole_file
    # the figure from before the boundary is not the prompt's size: it must not anchor
    context = estimate_context(t.messages, Model(MODEL, 200_000))
    assert not context.anchored
    assert context.context_tokens < 1_000
    whole = read_transcript(path, whole_file=True)
    assert whole.whole_file
    assert whole.archive == ()
    assert [m.role for m in whole.messages] == [
        "user",
        "assistant",
        "compactionSummary",
        "user",
        "assistant",
    ]


def test_claude_code_usage_after_the_boundary_anchors(tmp_path: Path) -> None:
    path = _write_lines(tmp_path / "s.jsonl", _claude_lines(usage_after=True))
    context = estimate_context(read_transcript(path).messages, Model(MODEL, 200_000))
    assert context.anchored
    assert context.context_tokens == 10 + 2_000 + 5


def _pi(first_kept: dict[str, Any]) -> str:
    usage = {"input": 12, "output": 40, "cacheRead": BIG, "cacheWrite": 0}
    entries: list[dict[str, Any]] = [
        {"type": "session", "id": "p", "version": 3},
        {"type": "message", "id": "m1", "message": {"role": "user", "content": "old ask"}},
        {
            "type": "message",
            "id": "m2",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "old answer"}],
                "usage": usage,
                "model": MODEL,
            },
        },
        {"type": "model_change", "id": "m3", "modelId": MODEL},
        {"type": "message", "id": "m4", "message": {"role": "user", "content": "kept ask " * 40}},
        {
            "type": "message",
            "id": "m5",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "kept answer " * 40}],
                "usage": usage,
                "model": MODEL,
            },
        },
        {
            "type": "compaction",
            "id": "c1",
            "summary": "Older turns: the loader.",
            "tokensBefore": BIG,
            **first_kept,
        },
        {"type": "message", "id": "m6", "message": {"role": "user", "content": "next"}},
    ]
    return "".join(json.dumps(e) + "\n" for e in entries)


@pytest.mark.parametrize(
    "first_kept",
    [
        {"firstKeptEntryId": "m4"},
        {"firstKeptEntryIndex": 4},
        # a pointer at a settings entry means the next message
        {"firstKeptEntryId": "m3"},
    ],
    ids=["by-id", "by-index", "at-a-settings-entry"],
)
def test_pi_compaction_moves_the_kept_turns_after_its_summary(
    first_kept: dict[str, Any],
) -> None:
    t = read_transcript(io.StringIO(_pi(first_kept)), format="pi")
    summary, kept_ask, kept_answer, new = t.messages
    assert isinstance(summary, CompactionSummaryMessage)
    assert summary.kept_count == 2
    assert kept_ask.content.startswith("kept ask")  # type: ignore[union-attr]
    assert isinstance(kept_answer, AssistantMessage)
    assert new.content == "next"  # type: ignore[union-attr]
    assert [m.content for m in t.archive] == [
        "old ask",
        (  # type: ignore[union-attr]
            t.archive[1].content[0],
        ),
    ]  # type: ignore[union-attr]
    # the kept answer's usage measured the whole old transcript (the 6.8x overestimate)
    context = estimate_context(t.messages, Model(MODEL, 200_000))
    assert not context.anchored
    assert context.context_tokens < 2_000
    whole = read_transcript(io.StringIO(_pi(first_kept)), format="pi", whole_file=True)
    assert [m.role for m in whole.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "compactionSummary",
        "user",
    ]


def test_pi_live_context_survives_a_write_and_read(tmp_path: Path) -> None:
    t = read_transcript(io.StringIO(_pi({"firstKeptEntryId": "m4"})), format="pi")
    path = tmp_path / "out.jsonl"
    write_transcript(t.messages, path, format="pi")
    back = read_transcript(path)
    assert back.messages == t.messages
    assert back.messages[0].kept_count == 2  # type: ignore[union-attr]


def test_pi_aborted_reply_with_zero_usage_is_not_trusted() -> None:
    text = (
        json.dumps({"type": "session", "id": "p"})
        + "\n"
        + json.dumps(
            {
                "type": "message",
                "message": {
                    "role": "assistant",
                    "content": [],
                    "stopReason": "aborted",
                    "model": MODEL,
                    "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                },
            }
        )
        + "\n"
    )
    (reply,) = read_transcript(io.StringIO(text), format="pi").messages
    assert isinstance(reply, AssistantMessage)
    assert reply.usage is None


def test_a_library_digest_in_a_pi_file_is_a_boundary() -> None:
    from window_budget import DigestMessage
    from window_budget.digest import SESSION_HEADER

    digest = DigestMessage(f"{SESSION_HEADER}\n\nthe loader", covered_count=4, kept_count=1)
    messages = [UserMessage("before"), digest, AssistantMessage("kept"), UserMessage("new")]
    buffer = io.StringIO()
    write_transcript(messages, buffer, format="pi")
    t = read_transcript(io.StringIO(buffer.getvalue()), format="pi")
    assert t.messages[0] == digest
    assert [m.role for m in t.archive] == ["user"]


def test_claude_code_side_chain_file_reads_its_messages(tmp_path: Path) -> None:
    lines = [
        {**line, "isSidechain": True, "agentId": "a1b2"}
        for line in _claude_lines(usage_after=True)[4:]
    ]
    t = read_transcript(_write_lines(tmp_path / "agent-a1b2.jsonl", lines))
    assert [m.role for m in t.messages] == ["user", "assistant"]
    assert t.meta["sidechain"] is True
    assert t.meta["agentId"] == "a1b2"
    assert t.model == MODEL
    # in a session file the same lines are someone else's context: counted, not read
    main_line = _claude_lines(usage_after=False)[0]
    mixed = read_transcript(_write_lines(tmp_path / "s.jsonl", [main_line, *lines]))
    assert [m.role for m in mixed.messages] == ["user"]
    assert mixed.ignored == 2


def test_inspect_says_which_context_it_shows(tmp_path: Path) -> None:
    path = _write_lines(tmp_path / "s.jsonl", _claude_lines(usage_after=False))
    live = CliRunner().invoke(main, ["inspect", str(path)])
    assert live.exit_code == 0, live.output
    assert "live: after the last of 1 compaction (2 earlier messages archived" in live.output
    whole = CliRunner().invoke(main, ["inspect", str(path), "--whole-file", "--json"])
    (report,) = json.loads(whole.stdout)
    assert report["shows"] == "whole-file"
    assert report["messages"] == 5
    assert report["archived_messages"] == 0
    live_json = json.loads(CliRunner().invoke(main, ["inspect", str(path), "--json"]).stdout)
    assert live_json[0]["shows"] == "live"
    assert live_json[0]["messages"] == 3
    assert live_json[0]["archived_messages"] == 2


def test_compact_keeps_the_archive_ahead_of_the_new_digest(tmp_path: Path) -> None:
    source = FIXTURES / "pi_session.jsonl"
    before = read_transcript(source)
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        main,
        [
            "compact",
            str(source),
            "--force",
            "-o",
            str(out),
            "--window",
            "4000",
            "--keep-recent",
            "50",
        ],
    )
    assert result.exit_code == 0, result.output

    # the file is still the whole log: nothing that was in it is gone
    def texts(messages: Any) -> list[tuple[str, str]]:
        return [(m.role, message_text(m)) for m in messages]

    whole_after = texts(read_transcript(out, whole_file=True).messages)
    assert all(m in whole_after for m in texts([*before.archive, *before.messages]))
    live = read_transcript(out)
    assert live.messages[0].role == "user"  # the new digest leads the live context
    assert "session digest" in live.messages[0].content  # type: ignore[union-attr,operator]
    assert len(live.archive) > len(before.archive)


def test_a_kept_count_survives_this_librarys_json() -> None:
    summary = CompactionSummaryMessage("older turns", 5_000, kept_count=2)
    buffer = io.StringIO()
    write_transcript([summary, UserMessage("a"), AssistantMessage("b")], buffer, format="json")
    assert read_transcript(io.StringIO(buffer.getvalue()), format="json").messages[0] == summary


def test_compact_to_a_format_without_boundaries_says_what_it_left_out(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = CliRunner().invoke(
        main,
        [
            "compact",
            str(FIXTURES / "pi_session.jsonl"),
            "--force",
            "--to",
            "openai",
            "-o",
            str(out),
            "--window",
            "4000",
            "--keep-recent",
            "50",
        ],
    )
    assert result.exit_code == 0, result.output
    note = "the 5 messages before its last compaction are left out of the openai output"
    assert note in result.stderr


def _tree_session() -> str:
    def entry(kind: str, eid: str, parent: str | None, **fields: Any) -> dict[str, Any]:
        return {
            "type": kind,
            "id": eid,
            "parentId": parent,
            "timestamp": "2025-12-01T10:00:00.000Z",
            **fields,
        }

    def msg(eid: str, parent: str | None, **message: Any) -> dict[str, Any]:
        return entry("message", eid, parent, message=message)

    entries = [
        {"type": "session", "version": 3, "id": "tree", "cwd": "/w"},
        msg("e1", None, role="user", content="port the loader"),
        msg(
            "e2",
            "e1",
            role="assistant",
            content=[{"type": "text", "text": "which way?"}],
            model=MODEL,
            usage={"input": 900, "output": 9, "cacheRead": 0, "cacheWrite": 0},
        ),
        msg("e3", "e2", role="user", content="try approach A"),
        msg("e4", "e3", role="assistant", content=[{"type": "text", "text": "A fails"}]),
        # /tree back to e2: the left branch is summarised, the new one starts from it
        entry("branch_summary", "e5", "e2", fromId="e4", summary="Approach A failed."),
        msg("e6", "e5", role="user", content="try approach B"),
        entry("label", "e7", "e6", targetId="e1", label="start"),
        entry("custom", "e8", "e7", customType="ext", data={"n": 1}),
        entry(
            "custom_message",
            "e9",
            "e8",
            customType="ext",
            content="repo rules: no yaml",
            display=True,
        ),
        msg(
            "e10",
            "e9",
            role="bashExecution",
            command="ls",
            output="a.py",
            exitCode=0,
            cancelled=False,
            truncated=False,
            excludeFromContext=True,
        ),
        entry("session_info", "e11", "e10", name="loader port"),
    ]
    return "".join(json.dumps(e) + "\n" for e in entries)


def test_pi_reads_the_active_branch_of_a_session_tree() -> None:
    t = read_transcript(io.StringIO(_tree_session()), format="pi")
    assert [m.role for m in t.messages] == ["user", "assistant", "branchSummary", "user", "custom"]
    assert t.messages[2].summary == "Approach A failed."  # type: ignore[union-attr]
    assert t.messages[4].content == "repo rules: no yaml"  # type: ignore[union-attr]
    assert [message_text(m) for m in t.archive] == ["try approach A", "A fails"]
    assert t.meta["name"] == "loader port"
    assert t.ignored == 4  # label, custom, session_info and the `!!` shell run
    whole = read_transcript(io.StringIO(_tree_session()), format="pi", whole_file=True)
    assert [m.role for m in whole.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "branchSummary",
        "user",
        "custom",
    ]
    assert detect_format_of(_tree_session()) == "pi"


def detect_format_of(text: str) -> str:
    return read_transcript(io.StringIO(text)).format
