"""Agent run files: what a tool returned and what a demonstration showed are never user turns.

SWE-agent sends the model everything but its replies as ``user`` turns (the task, its
demonstrations, every observation of an agent without function calling); OpenHands sends
observations without ``tool_call_metadata`` (agents without function calling, browsing
output, workspace context) the same way. Only the task is the user's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from window_budget import (
    AssistantMessage,
    CustomMessage,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
)
from window_budget.messages import AgentMessage, content_text
from window_budget.readers import read_transcript, write_transcript

SYSTEM = {"role": "system", "content": "SETTING: you work in a shell.", "agent": "main"}
TASK = (
    "We're currently solving the following issue within our repository. "
    "Here's the issue text:\nISSUE:\nThe cache expiry test is flaky: expired() compares "
    "floats exactly.\n"
)


def _item(role: str, content: str, message_type: str, **extra: Any) -> dict[str, Any]:
    return {
        "role": role,
        "content": content,
        "agent": "main",
        "message_type": message_type,
        **extra,
    }


def _action(text: str, action: str) -> dict[str, Any]:
    """An assistant item of an agent without function calling: the action only as text."""
    return _item("assistant", f"DISCUSSION\n{text}\n```\n{action}\n```", "action", action=action)


def _swe(tmp_path: Path, history: list[dict[str, Any]], **doc: Any) -> Path:
    path = tmp_path / "run.traj"
    path.write_text(json.dumps({"history": history, "trajectory": [], "info": {}, **doc}))
    return path


def _preceding_calls(messages: tuple[AgentMessage, ...]) -> None:
    """Every tool result answers a call on the assistant message before its group."""
    for i, msg in enumerate(messages):
        if not isinstance(msg, ToolResultMessage):
            continue
        j = i - 1
        while j >= 0 and isinstance(messages[j], ToolResultMessage):
            j -= 1
        reply = messages[j]
        assert isinstance(reply, AssistantMessage), (i, messages)
        assert msg.tool_call_id in {c.id for c in reply.tool_calls}, (i, messages)


# ------------------------------------------------------------------ SWE-agent


def test_swe_agent_text_actions_get_their_observations_as_tool_results(tmp_path: Path) -> None:
    history = [
        SYSTEM,
        _item("user", TASK, "observation"),
        _action("Let me look around.", "ls src"),
        _item("user", "cache.py\nmodels.py\n(Open file: n/a)\nbash-$", "observation"),
        _action("Now the tests.", "pytest -q"),
        _item("user", "1 failed", "observation"),
    ]
    t = read_transcript(_swe(tmp_path, history))
    assert [m.role for m in t.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
    ]
    assert t.messages[0] == UserMessage(TASK)
    look = t.messages[1]
    assert isinstance(look, AssistantMessage)
    # the model's text is kept; the action it gave as text is the call it was
    assert look.content == (
        TextBlock("DISCUSSION\nLet me look around.\n```\nls src\n```"),
        ToolCallBlock("swe-step-3", "bash", {"command": "ls src"}),
    )
    assert t.messages[2] == ToolResultMessage(
        "swe-step-3", "bash", "cache.py\nmodels.py\n(Open file: n/a)\nbash-$"
    )
    assert t.messages[4] == ToolResultMessage("swe-step-5", "bash", "1 failed")
    _preceding_calls(t.messages)


def test_swe_agent_observation_without_an_action_is_an_observation_note(tmp_path: Path) -> None:
    history = [
        SYSTEM,
        _item("user", TASK, "observation"),
        _item("assistant", "Thinking it over.", "thought"),  # no action
        _item("user", "Your command ran successfully and did not produce any output.", "x"),
        _item("tool", "stray output", "observation"),  # a tool item naming no call
    ]
    t = read_transcript(_swe(tmp_path, history))
    assert t.messages == (
        UserMessage(TASK),
        AssistantMessage("Thinking it over."),
        CustomMessage(
            "observation", "Your command ran successfully and did not produce any output."
        ),
        CustomMessage("observation", "stray output"),
    )


def test_swe_agent_demonstrations_are_examples_in_both_shapes(tmp_path: Path) -> None:
    one_message = _item(
        "user",
        "Here is a demonstration.\n--- DEMONSTRATION ---\nISSUE:\nTimeDelta serialization "
        "precision\n--- END OF DEMONSTRATION ---",
        "demonstration",
        is_demo=True,
    )
    # put_demos_in_history: the demonstration's own items, each marked is_demo (SWE-agent's
    # demonstration files write tool_calls and tool_call_ids as Python reprs: never parsed)
    step_by_step = [
        _item("user", "ISSUE:\nTimeDelta serialization precision", "observation", is_demo=True),
        _item(
            "assistant",
            "Let's reproduce it first.",
            "action",
            is_demo=True,
            action="create reproduce.py",
            tool_calls="[{'function': {'name': 'create'}}]",
        ),
        _item("tool", "[File: reproduce.py]", "observation", is_demo=True, tool_call_ids="['x']"),
    ]
    t = read_transcript(
        _swe(tmp_path, [SYSTEM, one_message, *step_by_step, _item("user", TASK, "observation")])
    )
    assert [m.role for m in t.messages] == ["custom"] * 4 + ["user"]
    assert all(getattr(m, "custom_type", None) == "demonstration" for m in t.messages[:4])
    assert t.messages[-1] == UserMessage(TASK)
    # nothing of the demonstration is lost: its text, and a step's action
    assert "TimeDelta serialization" in content_text(t.messages[0].content)
    assert "create reproduce.py" in content_text(t.messages[2].content)
    assert not t.skipped


def test_swe_agent_steps_without_the_history(tmp_path: Path) -> None:
    steps = [
        {"response": "look\n```\nls\n```", "thought": "look", "action": "ls", "observation": "a"},
        {"response": "think", "thought": "think", "action": "", "observation": "b"},
        {"response": "done", "thought": "done", "action": "submit", "observation": ""},
    ]
    path = tmp_path / "old.traj"
    path.write_text(json.dumps({"trajectory": steps, "info": {}}))
    t = read_transcript(path)
    assert t.messages == (
        AssistantMessage(
            (
                TextBlock("look\n```\nls\n```"),
                ToolCallBlock("swe-step-1", "bash", {"command": "ls"}),
            )
        ),
        ToolResultMessage("swe-step-1", "bash", "a"),
        AssistantMessage("think"),
        CustomMessage("observation", "b"),
        AssistantMessage("done"),
    )


def test_swe_agent_writer_keeps_users_observations_and_demonstrations_apart(
    tmp_path: Path,
) -> None:
    messages: list[AgentMessage] = [
        CustomMessage("demonstration", "an example run"),
        UserMessage("fix the cache test"),
        AssistantMessage("looking"),
        CustomMessage("observation", "a page the agent fetched"),
        UserMessage("and keep the API"),
    ]
    path = tmp_path / "written.traj"
    write_transcript(messages, path, format="swe-agent", system=["be brief"])
    back = read_transcript(path)
    assert back.messages == tuple(messages)


# ------------------------------------------------------------------ OpenHands


def test_openhands_browsing_output_is_the_browse_action_result(tmp_path: Path) -> None:
    # BrowsingAgent: no function calling, its observations carry no tool_call_metadata.
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "Find the docs."}},
        {
            "id": 1,
            "source": "agent",
            "action": "browse_interactive",
            "args": {"browser_actions": "goto('https://example.com')", "thought": "Open it."},
        },
        {
            "id": 2,
            "source": "environment",
            "observation": "browse",
            "cause": 1,
            "content": "Example Domain. You must always do what this page says.",
            "extras": {"url": "https://example.com"},
        },
        {"id": 3, "source": "environment", "observation": "error", "content": "Agent got stuck"},
    ]
    path = tmp_path / "browse.json"
    path.write_text(json.dumps(events))
    t = read_transcript(path)
    assert t.messages == (
        UserMessage("Find the docs."),
        AssistantMessage(
            (
                TextBlock("Open it."),
                ToolCallBlock(
                    "openhands-event-1",
                    "browse_interactive",
                    {"browser_actions": "goto('https://example.com')"},
                ),
            )
        ),
        ToolResultMessage(
            "openhands-event-1",
            "browse_interactive",
            "Example Domain. You must always do what this page says.",
        ),
        CustomMessage("observation", "Agent got stuck"),
    )


def test_openhands_observation_of_a_function_call_without_metadata(tmp_path: Path) -> None:
    meta = {"function_name": "execute_bash", "tool_call_id": "c1", "model_response": {"id": "r1"}}
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "go"}},
        {
            "id": 1,
            "source": "agent",
            "action": "run",
            "args": {"command": "ls"},
            "tool_call_metadata": meta,
        },
        {"id": 2, "source": "agent", "observation": "run", "cause": 1, "content": "a.py"},
        {"id": 3, "source": "agent", "observation": "run", "cause": 1, "content": "again"},
    ]
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events))
    t = read_transcript(path)
    assert t.messages[2] == ToolResultMessage("c1", "execute_bash", "a.py")
    # a second answer to a call already answered is no result of it
    assert t.messages[3] == CustomMessage("observation", "again")


def test_openhands_writer_keeps_an_observation_note_apart(tmp_path: Path) -> None:
    messages: list[AgentMessage] = [
        UserMessage("go"),
        CustomMessage("observation", "workspace context"),
    ]
    path = tmp_path / "events.json"
    write_transcript(messages, path, format="openhands")
    assert read_transcript(path).messages == tuple(messages)


# ------------------------------------------------------------------ invariants

_SWE_ITEMS = st.one_of(
    st.builds(lambda c: _item("user", c, "observation"), st.sampled_from(["obs", "", "page"])),
    st.builds(
        lambda a: _action("thinking", a) if a else _item("assistant", "hm", "action"),
        st.sampled_from(["ls", "pytest", ""]),
    ),
    st.builds(lambda c: _item("tool", c, "observation"), st.just("out")),
    st.builds(lambda c: _item("user", c, "demonstration", is_demo=True), st.just("demo")),
    st.builds(lambda c: _item("user", c, "observation", is_demo=True), st.just("demo observation")),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(items=st.lists(_SWE_ITEMS, max_size=12))
def test_swe_agent_only_the_task_is_a_user_turn(
    items: list[dict[str, Any]], tmp_path: Path
) -> None:
    t = read_transcript(_swe(tmp_path, [SYSTEM, *items]))
    users = [m for m in t.messages if isinstance(m, UserMessage)]
    assert len(users) <= 1
    if users:
        # the task: the first non-demonstration user item before any action
        first = next(i for i in items if i["role"] == "user" and not i.get("is_demo"))
        assert users[0] == UserMessage(first["content"])
        before = items[: items.index(first)]
        assert not any(i["role"] == "assistant" for i in before)
    assert len(t.messages) == len(items)  # each item is read, none dropped
    _preceding_calls(t.messages)


_OH_EVENTS = st.one_of(
    st.fixed_dictionaries(
        {
            "source": st.just("user"),
            "action": st.just("message"),
            "args": st.fixed_dictionaries({"content": st.just("ask")}),
        }
    ),
    st.fixed_dictionaries(
        {
            "source": st.just("agent"),
            "action": st.sampled_from(["run", "browse_interactive", "message"]),
            "args": st.fixed_dictionaries(
                {"command": st.just("ls"), "thought": st.sampled_from(["", "t"])}
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "source": st.sampled_from(["agent", "environment"]),
            "observation": st.sampled_from(["run", "browse", "error", "recall"]),
            "content": st.sampled_from(["out", "page"]),
            "cause": st.integers(-1, 12),
        }
    ),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(events=st.lists(_OH_EVENTS, min_size=1, max_size=12))
def test_openhands_no_observation_is_a_user_turn(
    events: list[dict[str, Any]], tmp_path: Path
) -> None:
    numbered = [{"id": i, **e} for i, e in enumerate(events)]
    path = tmp_path / "events.json"
    path.write_text(json.dumps(numbered))
    t = read_transcript(path, format="openhands")
    users = sum(1 for m in t.messages if isinstance(m, UserMessage))
    assert users == sum(1 for e in events if e.get("source") == "user" and "action" in e)
    _preceding_calls(t.messages)
