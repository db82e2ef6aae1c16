"""Small files that asked the readers for huge work, and JSON inside JSON strings.

An OpenHands condensation names the events it forgets as a ``start..end`` range: ten bytes
can name 10**12 events, and expanding them made a 290-byte file take a gigabyte. A string
a reader decodes (SWE-agent's ``replay_config``, tool-call ``arguments``) gets the limits of
the file around it: nesting past the recursion limit is one sentence, never a raw
``RecursionError``.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from window_budget import AssistantMessage
from window_budget.readers import ReadError, read_transcript


def _events(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "go"}}
    ]
    for i in range(1, n):
        out.append({"id": i, "source": "agent", "action": "message", "args": {"content": f"m{i}"}})
    return out


def _condensation(event_id: int, **args: Any) -> dict[str, Any]:
    return {"id": event_id, "source": "agent", "action": "condensation", "args": args}


def test_huge_forgotten_ranges_are_never_expanded(tmp_path: Path) -> None:
    events = _events(6)
    # A range of 10**12 ids, others of a million each (the old reader expanded those into a
    # set: 1.1 GB for 290 bytes), overlapping, and a pruned_* spelling.
    events.append(_condensation(6, forgotten_events_start_id=1, forgotten_events_end_id=10**12))
    for k in range(3):
        start = 10 * k * 10**6
        events.append(
            _condensation(
                7 + k, forgotten_events_start_id=start, forgotten_events_end_id=start + 10**6 - 1
            )
        )
    events.append(_condensation(10, pruned_events_start_id=0, pruned_events_end_id=10**15))
    path = tmp_path / "condensed.json"
    path.write_text(json.dumps(events))
    assert path.stat().st_size < 2_000
    tracemalloc.start()
    try:
        t = read_transcript(path, format="openhands")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2**20, f"peak {peak:,} bytes"
    # every event is inside a range: all of them forgotten, to the archive
    assert t.messages == ()
    assert len(t.archive) == 6
    assert t.meta["compactions"] == 5


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    spans=st.lists(st.tuples(st.integers(-3, 14), st.integers(-3, 14)), max_size=5),
    ids=st.lists(st.one_of(st.integers(-2, 14), st.booleans()), max_size=4),
)
def test_forgotten_events_are_exactly_those_named(
    spans: list[tuple[int, int]], ids: list[int | bool], tmp_path: Path
) -> None:
    events = _events(12)
    for k, (start, end) in enumerate(spans):
        events.append(
            _condensation(12 + k, forgotten_events_start_id=start, forgotten_events_end_id=end)
        )
    events.append(_condensation(12 + len(spans), forgotten_event_ids=ids))
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events))
    t = read_transcript(path, format="openhands")
    named = {i for i in ids if not isinstance(i, bool)}
    for start, end in spans:
        named.update(range(start, end + 1))
    kept = [i for i in range(12) if i not in named]
    forgotten = [i for i in range(12) if i in named]
    assert [_number(m) for m in t.messages] == kept
    assert [_number(m) for m in t.archive] == forgotten


def _number(message: object) -> int:
    text = message.content if isinstance(message, AssistantMessage) else "m0"
    return int(str(text)[1:])


# ------------------------------------------------------------------ JSON inside strings

DEEP = "[" * 100_000


def _swe(tmp_path: Path, **doc: Any) -> Path:
    history = [
        {"role": "system", "content": "a shell", "message_type": "system_prompt"},
        {"role": "user", "content": "fix it", "message_type": "observation"},
    ]
    path = tmp_path / "deep.traj"
    path.write_text(json.dumps({"history": history, "trajectory": [], "info": {}, **doc}))
    return path


@pytest.mark.parametrize("skip_bad", [False, True])
def test_a_deeply_nested_replay_config_is_one_sentence(tmp_path: Path, skip_bad: bool) -> None:
    path = _swe(tmp_path, replay_config=DEEP)
    with pytest.raises(ReadError) as info:
        read_transcript(path, skip_bad=skip_bad)
    message = str(info.value)
    assert str(path) in message
    assert "'replay_config'" in message
    assert "nested too deeply" in message
    assert "\n" not in message


def test_a_replay_config_with_a_huge_integer_is_one_sentence(tmp_path: Path) -> None:
    path = _swe(tmp_path, replay_config='{"agent": {"model": {"name": ' + "9" * 5001 + "}}}")
    with pytest.raises(ReadError, match=r"'replay_config' holds an integer with more than"):
        read_transcript(path)


def test_an_unreadable_replay_config_is_still_just_no_model(tmp_path: Path) -> None:
    t = read_transcript(_swe(tmp_path, replay_config="not json"))
    assert t.model is None
    assert "model" not in t.meta


@pytest.mark.parametrize("fmt", ["openai", "swe-agent"])
def test_deeply_nested_tool_arguments_are_kept_as_text(tmp_path: Path, fmt: str) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": DEEP}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go", "message_type": "observation"},
        {"role": "assistant", "content": None, "tool_calls": [call], "message_type": "action"},
    ]
    doc: Any = messages if fmt == "openai" else {"history": messages, "trajectory": []}
    path = tmp_path / "deep_args.json"
    path.write_text(json.dumps(doc))
    t = read_transcript(path, format=fmt)
    reply = t.messages[1]
    assert isinstance(reply, AssistantMessage)
    assert reply.tool_calls[0].arguments == {"_raw": DEEP}
