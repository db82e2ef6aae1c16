"""Provider compaction blocks in transcript files: read, kept verbatim, written back, inspected."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from window_budget import AssistantMessage, TextBlock, ToolCallBlock, UserMessage
from window_budget.cli import main
from window_budget.messages import ProviderCompactionBlock
from window_budget.readers import read_transcript, write_transcript

SUMMARY = "The user is porting the budget module; tests/test_io.py fails on Windows paths."
ANTHROPIC_BLOCK = {
    "type": "compaction",
    "content": SUMMARY,
    "signature": "c2ln",
    "tool_changes": None,
}
OPENAI_ITEM = {"type": "compaction", "id": "cmp_0a1", "encrypted_content": "gAAAAABp" + "Q" * 2000}


def _anthropic_log() -> dict:
    """A Messages API log: long history, then a reply that compacted on the server."""
    history = []
    for i in range(30):
        history.append({"role": "user", "content": f"step {i}: " + "details " * 200})
        history.append({"role": "assistant", "content": f"did step {i} " + "output " * 200})
    return {
        "model": "claude-opus-4-6",
        "messages": [
            *history,
            {"role": "user", "content": "keep going"},
            {
                "role": "assistant",
                "content": [
                    ANTHROPIC_BLOCK,
                    {"type": "text", "text": "Resuming the port."},
                    {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "ls"}},
                ],
                "stop_reason": "tool_use",
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}],
            },
        ],
    }


def test_anthropic_reader_keeps_the_block_and_writes_it_back_verbatim() -> None:
    transcript = read_transcript(io.StringIO(json.dumps(_anthropic_log())), format="anthropic")
    reply = transcript.messages[-2]
    assert isinstance(reply, AssistantMessage)
    assert not isinstance(reply.content, str)
    block = reply.content[0]
    assert isinstance(block, ProviderCompactionBlock)
    assert block.provider == "anthropic"
    assert block.summary == SUMMARY
    assert block.payload == ANTHROPIC_BLOCK
    out = io.StringIO()
    write_transcript(transcript.messages, out, format="anthropic")
    written = json.loads(out.getvalue())
    records = written["messages"] if isinstance(written, dict) else written
    assert records[-2]["content"][0] == ANTHROPIC_BLOCK


def test_openai_reader_reads_a_responses_compaction_item() -> None:
    items = [
        {"role": "user", "content": "hi"},
        OPENAI_ITEM,
        {"role": "assistant", "content": "Continuing."},
    ]
    transcript = read_transcript(io.StringIO(json.dumps(items)), format="openai")
    compacted = transcript.messages[1]
    assert isinstance(compacted, AssistantMessage)
    assert compacted.content == (ProviderCompactionBlock("openai", None, OPENAI_ITEM),)
    out = io.StringIO()
    write_transcript(transcript.messages, out, format="openai")
    assert OPENAI_ITEM in json.loads(out.getvalue())


@pytest.mark.parametrize("fmt", ["langchain", "llama-index", "json"])
@pytest.mark.parametrize("raw", [ANTHROPIC_BLOCK, OPENAI_ITEM], ids=["anthropic", "openai"])
def test_framework_dumps_round_trip_the_block(fmt: str, raw: dict) -> None:
    block = ProviderCompactionBlock.from_provider(raw)
    assert block is not None
    msgs = [
        UserMessage("go on"),
        AssistantMessage([block, TextBlock("next"), ToolCallBlock("c1", "bash", {"cmd": "ls"})]),
    ]
    out = io.StringIO()
    write_transcript(msgs, out, format=fmt)
    back = read_transcript(io.StringIO(out.getvalue()), format=fmt)
    reply = back.messages[1]
    assert isinstance(reply, AssistantMessage)
    assert not isinstance(reply.content, str)
    found = [b for b in reply.content if isinstance(b, ProviderCompactionBlock)]
    assert found == [block]


def test_inspect_shows_the_provider_compaction_and_gates_from_it(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    path.write_text(json.dumps(_anthropic_log()), encoding="utf-8")
    runner = CliRunner()
    as_json = runner.invoke(main, ["inspect", str(path), "--json", "--window", "12000"])
    assert as_json.exit_code == 0, as_json.output
    info = json.loads(as_json.stdout)[0]
    found = info["provider_compaction"]
    assert found["provider"] == "anthropic"
    assert found["index"] == 61
    assert found["before"] == 61
    assert found["chars"] == len(SUMMARY)
    assert found["tokens"] > 0
    # The whole file is far over a 12k window; from the compaction on it is not.
    assert info["estimated_tokens"] > 12_000
    assert not info["gate"]["over_budget"]
    text = runner.invoke(main, ["inspect", str(path), "--window", "12000"])
    assert text.exit_code == 0, text.output
    assert "provider compaction  message #62 (anthropic" in text.stdout
    assert "folded the 61 messages before it" in text.stdout
