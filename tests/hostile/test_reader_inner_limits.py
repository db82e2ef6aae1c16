"""Small files that asked the readers for huge work.

An OpenHands condensation names the events it forgets as a ``start..end`` range: ten bytes
can name 10**12 events, and expanding them made a 290-byte file take a gigabyte.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from window_budget import AssistantMessage
from window_budget.readers import read_transcript


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
