"""Readers for agent run files: OpenHands event streams, tau-bench results, SWE-agent
trajectories, Claude Code side chains — and detection that tells JSON from JSONL."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from window_budget import (
    AssistantMessage,
    CustomMessage,
    DigestMessage,
    Model,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from window_budget.digest import SESSION_HEADER
from window_budget.messages import content_text
from window_budget.pipeline import estimate_context
from window_budget.readers import ReadError, detect_format, read_transcript, write_transcript

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
OPENHANDS = FIXTURES / "openhands_output.jsonl"
TAU = FIXTURES / "tau_bench_results.json"
SWE = FIXTURES / "swe_agent_run.traj"


# ------------------------------------------------------------------ OpenHands


def test_openhands_rebuilds_what_the_model_saw() -> None:
    t = read_transcript(OPENHANDS)
    assert t.format == "openhands"
    assert t.system == ("You are OpenHands agent, a helpful AI assistant.",)
    assert [m.role for m in t.messages] == [
        "user",
        "custom",  # the workspace context recalled: an observation, not a user turn
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
        "toolResult",
        "assistant",
    ]
    assert t.messages[1] == CustomMessage("observation", "Added workspace context")
    assert t.ignored == 3  # the recall action and two agent state changes
    assert t.meta == {
        "run": 0,
        "runs": 2,
        "instance_id": "svc__cache-101",
        "model": "claude-sonnet-4-5-20250929",
        "compactions": 0,
    }
    first = t.messages[2]
    assert isinstance(first, AssistantMessage)
    assert first.content == (
        TextBlock("Let me look at the repository first."),
        ToolCallBlock("toolu_01", "execute_bash", {"command": "ls src", "is_input": "false"}),
    )
    # one model response, two actions: one reply with both calls, then both results
    both = t.messages[4]
    assert isinstance(both, AssistantMessage)
    assert [c.id for c in both.tool_calls] == ["toolu_02", "toolu_03"]
    assert both.usage == Usage(5480 - 5200, 95, 5200)
    assert both.model == "claude-sonnet-4-5-20250929"
    failed = t.messages[6]
    assert isinstance(failed, ToolResultMessage)
    assert (failed.tool_call_id, failed.tool_name) == ("toolu_03", "execute_bash")
    assert "1 failed" in failed.content  # type: ignore[operator]
    # the provider's own figure anchors the estimate
    context = estimate_context(t.messages, Model(t.model or "", 200_000))
    assert context.anchored
    assert context.context_tokens == 6120 + 70


def test_openhands_run_option_and_its_errors() -> None:
    second = read_transcript(OPENHANDS, run=1)
    assert second.meta["instance_id"] == "svc__loader-7"
    assert [m.role for m in second.messages] == ["user", "assistant"]
    with pytest.raises(
        ReadError,
        match=r"there is no run 5; the file holds 2 runs, "
        r"numbered 0 to 1",
    ):
        read_transcript(OPENHANDS, run=5)
    with pytest.raises(ReadError, match="a pi file holds one"):
        read_transcript(FIXTURES / "pi_session.jsonl", run=1)


def test_openhands_single_run_object_and_bare_event_list(tmp_path: Path) -> None:
    run = json.loads(OPENHANDS.read_text().splitlines()[0])
    as_object = tmp_path / "run.json"
    as_object.write_text(json.dumps(run, indent=2))
    as_events = tmp_path / "trajectory.json"
    as_events.write_text(json.dumps(run["history"]))
    expected = read_transcript(OPENHANDS).messages
    for path in (as_object, as_events):
        assert detect_format(path) == "openhands"
        assert read_transcript(path).messages == expected


def test_openhands_agent_without_function_calling_answers_its_actions() -> None:
    # Was: the observation read as UserMessage("a.py"). It is what the action returned.
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "go"}},
        {
            "id": 1,
            "source": "agent",
            "action": "run",
            "args": {"command": "ls", "thought": "look first"},
        },
        {"id": 2, "source": "agent", "observation": "run", "cause": 1, "content": "a.py"},
        {"id": 3, "source": "agent", "action": "run", "args": {"command": "pwd"}},
    ]
    t = read_transcript(io.StringIO(json.dumps(events)), format="openhands")
    user, action, seen, unanswered = t.messages
    assert user == UserMessage("go")
    assert action == AssistantMessage(
        (TextBlock("look first"), ToolCallBlock("openhands-event-1", "run", {"command": "ls"}))
    )
    assert seen == ToolResultMessage("openhands-event-1", "run", "a.py")
    # an action nothing answered stays the text it was
    assert unanswered == AssistantMessage('[run] {"command": "pwd"}')


# ------------------------------------------------------------------ tau-bench


def test_tau_bench_reads_the_first_run_and_says_so() -> None:
    t = read_transcript(TAU)
    assert t.format == "tau-bench"
    assert t.meta == {"run": 0, "runs": 2, "task_id": 0, "trial": 0, "reward": 1.0}
    assert t.system[0].startswith("# Retail agent policy")
    assert [m.role for m in t.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
        "assistant",
        "user",
    ]
    result = t.messages[2]
    assert isinstance(result, ToolResultMessage)
    assert (result.tool_call_id, result.tool_name) == ("call_a1", "find_user_id_by_email")
    second = read_transcript(TAU, run=1)
    assert second.meta["task_id"] == 1
    assert len(second.messages) == 4
    with pytest.raises(ReadError, match="there is no run 2"):
        read_transcript(TAU, run=2)


# ------------------------------------------------------------------ SWE-agent


def test_swe_agent_reads_the_history_with_its_model() -> None:
    t = read_transcript(SWE)
    assert t.format == "swe-agent"
    assert t.system == ("SETTING: You are an autonomous programmer working in a command line.",)
    assert [m.role for m in t.messages] == [
        "custom",  # the demonstration: an example, not the user's task
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
    ]
    demo = t.messages[0]
    assert isinstance(demo, CustomMessage)
    assert demo.custom_type == "demonstration"
    assert "demonstration of how to solve" in content_text(demo.content)
    assert "The cache expiry test is flaky" in content_text(t.messages[1].content)
    call = t.messages[2]
    assert isinstance(call, AssistantMessage)
    assert call.tool_calls == (ToolCallBlock("toolu_bdrk_01", "bash", {"command": "ls src"}),)
    assert call.model == "claude-sonnet-4-20250514"
    result = t.messages[3]
    assert isinstance(result, ToolResultMessage)
    assert (result.tool_call_id, result.tool_name) == ("toolu_bdrk_01", "bash")
    assert t.meta["model_stats"]["api_calls"] == 2
    assert t.model == "claude-sonnet-4-20250514"


def test_swe_agent_without_history_reads_the_steps(tmp_path: Path) -> None:
    doc = json.loads(SWE.read_text())
    del doc["history"]
    path = tmp_path / "old.traj"
    path.write_text(json.dumps(doc))
    t = read_transcript(path)
    # Was: each step's observation read as a user turn. It is what the step's action returned.
    assert [m.role for m in t.messages] == ["assistant", "toolResult", "assistant", "toolResult"]
    reply, result = t.messages[:2]
    assert isinstance(reply, AssistantMessage)
    assert reply.content == (
        TextBlock("Let me look around.\n\n```\nls src\n```"),
        ToolCallBlock("swe-step-1", "bash", {"command": "ls src"}),
    )
    assert result == ToolResultMessage("swe-step-1", "bash", "cache.py\nmodels.py")


# ----------------------------------------------------- side chains, digests, detection


def test_claude_code_side_chain_fixture() -> None:
    t = read_transcript(FIXTURES / "claude_code_sidechain.jsonl")
    assert [m.role for m in t.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert t.meta["sidechain"] is True
    assert t.model == "claude-haiku-4-5-20251001"
    assert t.reported_usage == Usage(5, 14, 11900, 120)


@pytest.mark.parametrize("fmt", ["openhands", "tau-bench", "swe-agent"])
def test_new_writers_keep_a_digest_and_its_counts(fmt: str) -> None:
    digest = DigestMessage(f"{SESSION_HEADER}\n\nport the loader", covered_count=12, kept_count=2)
    messages = [
        digest,
        AssistantMessage(
            (TextBlock("on it"), ToolCallBlock("c1", "bash", {"cmd": "ls"})),
            usage=Usage(900, 10, 50),
            model="m-1",
        ),
        ToolResultMessage("c1", "bash", "a.py"),
        UserMessage("thanks"),
    ]
    buffer = io.StringIO()
    write_transcript(messages, buffer, format=fmt, system=["be brief"])
    back = read_transcript(io.StringIO(buffer.getvalue()), format=fmt)
    assert back.messages[0] == digest
    assert back.system == ("be brief",)
    assert [m.role for m in back.messages] == [m.role for m in messages]
    assert back.messages[1].tool_calls == messages[1].tool_calls  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "name", ["tau_bench_results.json", "swe_agent_run.traj", "anthropic_messages.json"]
)
def test_a_pretty_printed_document_is_never_invalid_jsonl(name: str, tmp_path: Path) -> None:
    # Named .jsonl, spread over many lines: still one valid JSON document.
    path = tmp_path / "misnamed.jsonl"
    path.write_text(json.dumps(json.loads((FIXTURES / name).read_text()), indent=2))
    expected = read_transcript(FIXTURES / name)
    assert detect_format(path) == expected.format
    assert read_transcript(path).messages == expected.messages


def test_jsonl_in_a_json_file_and_unknown_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    path.write_bytes((FIXTURES / "pi_session.jsonl").read_bytes())
    assert detect_format(path) == "pi"
    unknown = tmp_path / "events.jsonl"
    unknown.write_text('{"kind": "a"}\n{"kind": "b"}\n')
    with pytest.raises(ReadError) as info:
        detect_format(unknown)
    assert "cannot tell which transcript format" in str(info.value)
    assert "not valid JSON" not in str(info.value)


def test_swe_agent_with_only_a_system_prompt_in_its_history_reads_the_steps(tmp_path: Path) -> None:
    doc = json.loads(SWE.read_text())
    doc["history"] = doc["history"][:1]
    path = tmp_path / "trimmed.traj"
    path.write_text(json.dumps(doc))
    t = read_transcript(path)
    assert t.system == ("SETTING: You are an autonomous programmer working in a command line.",)
    assert [m.role for m in t.messages] == ["assistant", "toolResult", "assistant", "toolResult"]


def _oh_reply(event_id: int, call_id: str, prompt: int) -> list[dict[str, object]]:
    response = {
        "id": f"r{event_id}",
        "model": "gpt-5",
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'},
                        }
                    ],
                }
            }
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 10},
    }
    meta = {
        "function_name": "execute_bash",
        "tool_call_id": call_id,
        "model_response": response,
        "total_calls_in_response": 1,
    }
    return [
        {
            "id": event_id,
            "source": "agent",
            "action": "run",
            "tool_call_metadata": meta,
            "args": {"command": "ls"},
        },
        {
            "id": event_id + 1,
            "source": "agent",
            "observation": "run",
            "cause": event_id,
            "tool_call_metadata": meta,
            "content": "x " * 400,
        },
    ]


def test_openhands_condensation_is_a_boundary() -> None:
    events: list[dict[str, object]] = [
        {"id": 0, "source": "agent", "action": "system", "args": {"content": "be brief"}},
        {"id": 1, "source": "user", "action": "message", "args": {"content": "fix it"}},
        *_oh_reply(2, "c1", 90_000),
        *_oh_reply(4, "c2", 91_000),
        {
            "id": 6,
            "source": "agent",
            "action": "condensation",
            "args": {
                "forgotten_events_start_id": 2,
                "forgotten_events_end_id": 3,
                # the offset counts events of the view: the system prompt is the first
                "summary": "Listed the files.",
                "summary_offset": 2,
            },
        },
    ]
    t = read_transcript(io.StringIO(json.dumps(events)), format="openhands")
    ask, summary, kept_call, kept_result = t.messages
    assert ask == UserMessage("fix it")
    assert isinstance(kept_call, AssistantMessage)
    assert kept_call.tool_calls[0].id == "c2"
    assert isinstance(kept_result, ToolResultMessage)
    assert summary.summary == "Listed the files."  # type: ignore[union-attr]
    assert summary.kept_count == 2  # type: ignore[union-attr]
    assert [m.role for m in t.archive] == ["assistant", "toolResult"]
    assert t.meta["compactions"] == 1
    # the kept reply's figure measured the history before the condensation
    assert not estimate_context(t.messages, Model("gpt-5", 200_000)).anchored
    after = [*events, *_oh_reply(7, "c3", 2_000)]
    fresh = read_transcript(io.StringIO(json.dumps(after)), format="openhands")
    context = estimate_context(fresh.messages, Model("gpt-5", 200_000))
    assert context.anchored
    whole = read_transcript(io.StringIO(json.dumps(events)), format="openhands", whole_file=True)
    assert [m.role for m in whole.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
        "compactionSummary",
    ]
