"""The scratch file: extraction from messages and stream events, rendering, the atomic writer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from window_budget import (
    AssistantMessage,
    BashExecutionMessage,
    DigestMessage,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
)
from window_budget.errors import ConfigError
from window_budget.tools.scratch import (
    ARTIFACTS_FILE,
    DEAD_ENDS_FILE,
    HUMAN_INPUT_FILE,
    SCRATCH_FILE,
    STATE_CHANGES_FILE,
    ScratchModel,
    ScratchWriter,
)
from window_budget.tools.scratch import _disk as scratch_disk
from window_budget.tools.scratch._events import extract_text

# ----------------------------------------------------------------- extraction


def test_extract_text_handles_strings_and_block_lists() -> None:
    assert extract_text("plain") == "plain"
    assert (
        extract_text(
            [{"type": "text", "text": "a"}, {"type": "tool_result"}, {"type": "text", "text": "b"}]
        )
        == "a\nb"
    )
    assert extract_text(None) == ""


def test_stream_events_human_input_and_file_writes() -> None:
    model = ScratchModel()
    model.extract_all(
        [
            {"type": "system", "subtype": "init"},
            {"type": "user", "message": {"role": "user", "content": "Port the loader."}},
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [{"type": "text", "text": "Never touch migrations/."}],
                },
            },
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "On it."},
                        {
                            "type": "tool_use",
                            "id": "t1",
                            "name": "Write",
                            "input": {
                                "file_path": "docs/release notes/überblick.md",
                                "content": "x",
                            },
                        },
                        {
                            "type": "tool_use",
                            "id": "t2",
                            "name": "Edit",
                            "input": {
                                "file_path": "src/app.py",
                                "old_string": "a",
                                "new_string": "b",
                            },
                        },
                        {
                            "type": "tool_use",
                            "id": "t3",
                            "name": "Read",
                            "input": {"file_path": "README.md"},
                        },
                    ],
                },
            },
            # tool results ride on user events: they are not human input
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
                },
            },
            {"type": "tool_use", "id": "t4", "name": "Edit", "input": {"file_path": "src/app.py"}},
            {"type": "result", "usage": {"input_tokens": 5}},
        ]
    )
    assert model.human_inputs == ["Port the loader.", "Never touch migrations/."]
    assert model.file_modifications == ["docs/release notes/überblick.md", "src/app.py"]


def test_core_messages_are_accepted() -> None:
    model = ScratchModel()
    model.extract_all(
        [
            UserMessage("Keep the API."),
            DigestMessage("[session digest — older turns condensed]\n\n# Objective\nx"),
            AssistantMessage((ToolCallBlock("c1", "edit_file", {"path": "a b/ç.py"}),)),
            ToolResultMessage("c1", "edit_file", "ok"),
        ]
    )
    assert model.human_inputs == ["Keep the API."]
    assert model.file_modifications == ["a b/ç.py"]


def test_openai_chat_dicts_are_accepted() -> None:
    model = ScratchModel()
    model.extract_all(
        [
            {"role": "user", "content": "hello"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "x",
                        "type": "function",
                        "function": {"name": "write_file", "arguments": '{"path": "out.txt"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "x", "content": "done"},
        ]
    )
    assert model.human_inputs == ["hello"]
    assert model.file_modifications == ["out.txt"]


def test_repeated_failures_of_the_same_call_become_a_dead_end() -> None:
    model = ScratchModel(dead_end_after=2)
    for i in range(3):
        model.extract(
            AssistantMessage((ToolCallBlock(f"c{i}", "bash", {"command": "pip install foo"}),))
        )
        model.extract(
            ToolResultMessage(
                f"c{i}", "bash", "ERROR: No matching distribution found for foo", is_error=True
            )
        )
    assert model.dead_ends == [
        "`pip install foo` failed 2 times in a row: ERROR: No matching distribution found for foo"
    ]


def test_a_success_breaks_the_streak() -> None:
    model = ScratchModel(dead_end_after=2)
    outcomes = [True, False, True, False]  # failed, ok, failed, ok
    for i, failed in enumerate(outcomes):
        model.extract(
            {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "make"}}
        )
        model.extract(
            {
                "type": "tool_result",
                "tool_use_id": f"t{i}",
                "is_error": failed,
                "content": [{"type": "text", "text": "boom"}],
            }
        )
    assert model.dead_ends == []


def test_shell_commands_the_user_ran_count_too() -> None:
    model = ScratchModel(dead_end_after=2)
    for _ in range(2):
        model.extract(
            BashExecutionMessage("cargo build", "error[E0432]: unresolved import", exit_code=101)
        )
    assert model.dead_ends[0].startswith("`cargo build` failed 2 times")


def test_different_arguments_are_different_calls() -> None:
    model = ScratchModel(dead_end_after=2)
    for i, path in enumerate(["a.py", "b.py"]):
        model.extract(AssistantMessage((ToolCallBlock(f"c{i}", "Edit", {"file_path": path}),)))
        model.extract(ToolResultMessage(f"c{i}", "Edit", "old_string not found", is_error=True))
    assert model.dead_ends == []


def test_manual_records() -> None:
    model = ScratchModel()
    model.record_state_change("PLANNING", "EXECUTING")
    model.add_dead_end("tried pinning numpy<2: breaks scipy")
    model.add_dead_end("tried pinning numpy<2: breaks scipy")
    assert model.dead_ends == ["tried pinning numpy<2: breaks scipy"]
    assert model.state_changes[0].new == "EXECUTING"


def test_bad_dead_end_after() -> None:
    with pytest.raises(ConfigError):
        ScratchModel(dead_end_after=0)


# -------------------------------------------------------------------- render


def test_render_sections_and_pointers() -> None:
    model = ScratchModel()
    model.add_human_input("x" * 300)
    text = model.render()
    for title, detail in [
        ("Human Input", HUMAN_INPUT_FILE),
        ("State Changes", STATE_CHANGES_FILE),
        ("Dead Ends", DEAD_ENDS_FILE),
        ("Artifacts", ARTIFACTS_FILE),
    ]:
        assert f"## {title}\nFull entries: .context/{detail}" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("- x"))
    assert len(line) == 2 + 120
    assert line.endswith("…")


@given(
    st.integers(0, 120),
    st.integers(0, 120),
    st.integers(0, 120),
    st.integers(0, 120),
    st.integers(23, 400),
)
def test_render_is_capped_with_equal_budgets(
    h: int, s: int, d: int, a: int, max_lines: int
) -> None:
    model = ScratchModel()
    for i in range(h):
        model.add_human_input(f"input {i}\nwith a second line")
    for i in range(s):
        model.record_state_change(f"S{i}", f"S{i + 1}")
    for i in range(d):
        model.add_dead_end(f"dead end {i}")
    for i in range(a):
        model.add_file_modification(f"src/f{i}.py")
    lines = model.render(max_lines=max_lines).splitlines()
    assert len(lines) <= max_lines
    share = (max_lines - 3) // 4
    starts = [i for i, ln in enumerate(lines) if ln.startswith("## ")]
    assert len(starts) == 4
    for begin, end in zip(starts, [*starts[1:], len(lines)], strict=True):
        assert end - begin <= share
    if h:  # the latest input is always shown
        assert any(f"input {h - 1} with a second line" in ln for ln in lines)


def test_render_rejects_too_few_lines() -> None:
    with pytest.raises(ConfigError, match="at least 23"):
        ScratchModel().render(max_lines=10)


# -------------------------------------------------------------------- writer


def _filled() -> ScratchModel:
    model = ScratchModel()
    model.add_human_input("Keep the public API.")
    model.record_state_change("DRAFT", "REVIEW")
    model.add_dead_end("yaml.CSafeLoader: not built on this platform")
    model.add_file_modification("docs/my notes/überblick.md")
    return model


def test_writer_writes_index_and_all_detail_files(tmp_path: Path) -> None:
    work = tmp_path / "work tree ü"
    writer = ScratchWriter(work)
    model = _filled()
    path = writer.write_scratch(model)
    assert path == work / ".context" / SCRATCH_FILE
    ctx = work / ".context"
    assert "- Keep the public API." in path.read_text(encoding="utf-8")
    assert "- DRAFT → REVIEW" in (ctx / STATE_CHANGES_FILE).read_text(encoding="utf-8")
    assert "`docs/my notes/überblick.md`" in (ctx / ARTIFACTS_FILE).read_text(encoding="utf-8")
    assert "Keep the public API." in (ctx / HUMAN_INPUT_FILE).read_text(encoding="utf-8")
    assert "CSafeLoader" in (ctx / DEAD_ENDS_FILE).read_text(encoding="utf-8")

    # a second write appends only what is new to the append-only detail files
    model.add_human_input("Second thought.")
    writer.write_scratch(model)
    human = (ctx / HUMAN_INPUT_FILE).read_text(encoding="utf-8")
    assert human.count("Keep the public API.") == 1
    assert human.count("Second thought.") == 1
    assert sorted(p.name for p in ctx.iterdir()) == sorted(
        [SCRATCH_FILE, HUMAN_INPUT_FILE, STATE_CHANGES_FILE, DEAD_ENDS_FILE, ARTIFACTS_FILE]
    )


def test_append_methods_keep_full_text(tmp_path: Path) -> None:
    writer = ScratchWriter(tmp_path)
    long = "word " * 100
    writer.append_human_input(long)
    writer.append_human_input("second")
    writer.append_dead_end("tried X")
    human = (tmp_path / ".context" / HUMAN_INPUT_FILE).read_text(encoding="utf-8")
    assert long.strip() in human
    assert human.index(long.strip()) < human.index("second")
    assert "tried X" in (tmp_path / ".context" / DEAD_ENDS_FILE).read_text(encoding="utf-8")


def test_crash_between_write_and_replace_keeps_the_previous_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = ScratchWriter(tmp_path)
    first = writer.write_scratch(_filled())
    before = first.read_text(encoding="utf-8")

    def crash(src: str, dst: str, **dir_fds: int) -> None:
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(scratch_disk.os, "replace", crash)
    changed = _filled()
    changed.add_human_input("this must not appear")
    with pytest.raises(OSError, match="simulated crash"):
        writer.write_scratch(changed)
    assert first.read_text(encoding="utf-8") == before
    assert not [p for p in (tmp_path / ".context").iterdir() if p.name.endswith(".tmp")]


def test_killed_process_leaves_old_file_and_only_a_stray_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = ScratchWriter(tmp_path)
    first = writer.write_scratch(_filled())
    before = first.read_text(encoding="utf-8")
    real_replace = os.replace

    def die(src: str, dst: str, **dir_fds: int) -> None:
        raise SystemExit(137)  # like a kill: the temp file is written, the rename never ran

    monkeypatch.setattr(scratch_disk.os, "replace", die)
    with pytest.raises(SystemExit):
        writer.write_scratch(ScratchModel())
    monkeypatch.setattr(scratch_disk.os, "replace", real_replace)
    assert first.read_text(encoding="utf-8") == before
    writer.write_scratch(ScratchModel())  # and the next write still works
    assert "none yet" in first.read_text(encoding="utf-8")


def test_cleanup_removes_only_the_context_dir(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine", encoding="utf-8")
    writer = ScratchWriter(tmp_path)
    writer.write_scratch(_filled())
    writer.cleanup()
    assert not (tmp_path / ".context").exists()
    assert (tmp_path / "keep.txt").exists()
    writer.cleanup()  # idempotent


@pytest.mark.parametrize("dirname", ["", "../escape", "/abs"])
def test_writer_rejects_dirs_outside_the_worktree(tmp_path: Path, dirname: str) -> None:
    with pytest.raises(ConfigError):
        ScratchWriter(tmp_path, dirname=dirname)
