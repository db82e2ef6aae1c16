from __future__ import annotations

from typing import Any

import pytest

from window_budget import ConfigError, CustomMessage, Model, UserMessage
from window_budget.pipeline import MessageCategory, classify_message, trim_by_category
from window_budget.tools.subagent import (
    ClampNotice,
    clamp_child_window,
    clamp_notice_message,
    clamp_subagent,
)


def test_child_window_is_the_lower_of_parent_and_clamp() -> None:
    assert clamp_child_window(128_000, 32_000) == 32_000
    assert clamp_child_window(16_000, 32_000) == 16_000
    assert clamp_child_window(16_000) == 16_000


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_bad_windows(bad: Any) -> None:
    with pytest.raises(ConfigError, match="clamp"):
        clamp_child_window(1000, bad)
    with pytest.raises(ConfigError, match="parent_max"):
        clamp_child_window(bad, 1000)


def test_clamped_spawn_records_the_note_on_both_transcripts() -> None:
    parent = [UserMessage("research X")]
    child = [UserMessage("you research X")]
    spawn = clamp_subagent(
        Model("big", 200_000, max_output_tokens=64_000),
        50_000,
        sub_agent="researcher",
        parent_messages=parent,
        child_messages=child,
    )
    assert spawn.clamped is True
    assert spawn.child_max == 50_000
    assert spawn.notice == ClampNotice("researcher", 50_000, 200_000, True)
    assert spawn.model == Model("big", 50_000, max_output_tokens=50_000)
    assert spawn.parent_messages == [*parent, spawn.note]
    assert spawn.child_messages == [*child, spawn.note]
    assert parent == [UserMessage("research X")]  # input untouched
    assert spawn.note.details == {
        "type": "cw_clamp_notice",
        "sub_agent": "researcher",
        "child_max": 50_000,
        "parent_max": 200_000,
        "clamped": True,
    }
    assert "clamped to 50,000" in spawn.note.content


def test_unclamped_spawn_says_so() -> None:
    spawn = clamp_subagent(8000, 32_000, sub_agent="helper")
    assert spawn.clamped is False
    assert spawn.child_max == 8000
    assert spawn.model is None
    assert spawn.parent_messages == [spawn.note]
    assert spawn.note.details["clamped"] is False  # type: ignore[index]
    assert "parent's 8,000" in spawn.note.content


def test_note_is_system_and_survives_trimming() -> None:
    note = clamp_notice_message(ClampNotice("a", 10, 20, True))
    assert isinstance(note, CustomMessage)
    assert classify_message(note) is MessageCategory.SYSTEM
    msgs = [note, *(UserMessage("x" * 400) for _ in range(5))]
    result = trim_by_category(msgs, 200)
    assert result.kept[0] is note
