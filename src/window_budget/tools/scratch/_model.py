"""The scratch model: working memory that survives compaction.

:class:`ScratchModel` collects, from whatever transcript an agent loop sees, the
things a compaction must not lose: what the human said, the files the agent wrote,
the workflow's state changes and the approaches that failed. It reads this library's
messages, Claude Code stream-json events (``user`` / ``assistant`` / ``tool_use`` /
``tool_result``) and plain ``{"role": ..., "content": ...}`` chat dicts alike. A tool
call that fails ``dead_end_after`` times in a row with the same arguments is recorded
as a dead end on its own.

:meth:`ScratchModel.render` gives a markdown index capped at 200 lines, four sections
with equal line budgets, each pointing to a detail file that holds every entry.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from window_budget.digest import is_digest
from window_budget.errors import ConfigError
from window_budget.messages import (
    AssistantMessage,
    BashExecutionMessage,
    ToolResultMessage,
    UserMessage,
    content_text,
)
from window_budget.pipeline.summarize.facts import classify_tool_call, key_error_line
from window_budget.tools.scratch._events import Answered, Called, Said, read_event
from window_budget.tools.scratch._layout import (
    ARTIFACTS_FILE,
    DEAD_ENDS_FILE,
    DEFAULT_CONTEXT_DIR,
    HUMAN_INPUT_CHARS,
    HUMAN_INPUT_FILE,
    MAX_LINES,
    STATE_CHANGES_FILE,
)

__all__ = ["ScratchModel", "StateChange"]

_ITEM_CHARS: Final = 200
_HEADER_LINES: Final = 3  # title, note, blank line
_SECTION_OVERHEAD: Final = 3  # heading, pointer, trailing blank line


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class StateChange:
    """One transition of the workflow's state."""

    previous: str
    """The state left."""
    new: str
    """The state entered."""


class ScratchModel:
    """In-memory working memory of one job: human inputs, state changes, dead ends, artifacts.

    Feed it with :meth:`extract` (one message or event) or :meth:`extract_all`.

    >>> model = ScratchModel()
    >>> model.extract({"type": "user", "message": {"role": "user", "content": "Use TOML."}})
    >>> model.extract({"type": "tool_use", "id": "t1", "name": "Write",
    ...                "input": {"file_path": "conf/app.toml"}})
    >>> model.human_inputs, model.file_modifications
    (['Use TOML.'], ['conf/app.toml'])
    """

    def __init__(self, *, dead_end_after: int = 2) -> None:
        if (
            isinstance(dead_end_after, bool)
            or not isinstance(dead_end_after, int)
            or dead_end_after < 1
        ):
            raise ConfigError(
                f"dead_end_after must be an int of at least 1, got {dead_end_after!r}"
            )
        self.dead_end_after = dead_end_after
        """Consecutive failures of the same tool call that make it a dead end."""
        self.human_inputs: list[str] = []
        """What the human said, in order, in full."""
        self.file_modifications: list[str] = []
        """Paths the agent wrote or edited, first write first, each once."""
        self.state_changes: list[StateChange] = []
        """State transitions, in order."""
        self.dead_ends: list[str] = []
        """Approaches that failed, in order."""
        self._pending: dict[str, tuple[str, str]] = {}  # call id -> (signature, label)
        self._failures: dict[str, int] = {}  # signature -> consecutive failures
        self._reported: set[str] = set()

    # ------------------------------------------------------------------ recording

    def add_human_input(self, text: str) -> None:
        """Record something the human said (blank text is ignored)."""
        if text.strip():
            self.human_inputs.append(text.strip())

    def add_file_modification(self, path: str) -> None:
        """Record a file the agent wrote (each path once)."""
        path = path.strip()
        if path and path not in self.file_modifications:
            self.file_modifications.append(path)

    def record_state_change(self, previous: str, new: str) -> None:
        """Record a transition of the workflow's state."""
        self.state_changes.append(StateChange(str(previous), str(new)))

    def add_dead_end(self, description: str) -> None:
        """Record an approach that failed (blank or repeated descriptions are ignored)."""
        description = description.strip()
        if description and description not in self.dead_ends:
            self.dead_ends.append(description)

    # ---------------------------------------------------------------- extraction

    def extract_all(self, items: Iterable[object]) -> None:
        """:meth:`extract` each item in order."""
        for item in items:
            self.extract(item)

    def extract(self, item: object) -> None:
        """Take what matters from one message or stream event; anything else is ignored.

        Accepts this library's messages, Claude Code stream-json events and plain
        ``{"role": ..., "content": ...}`` chat dicts.
        """
        match item:
            case UserMessage():
                if not is_digest(item):
                    self.add_human_input(content_text(item.content))
            case AssistantMessage():
                for call in item.tool_calls:
                    self._on_call(call.id, call.name, call.arguments)
            case ToolResultMessage():
                self._on_result(item.tool_call_id, item.is_error, content_text(item.content))
            case BashExecutionMessage():
                command = item.command.strip()
                failed = item.exit_code not in (0, None) and not item.cancelled
                self._on_outcome(f"shell\x00{command}", f"`{command}`", failed, item.output)
            case Mapping():
                self._extract_event(item)

    def _extract_event(self, event: Mapping[str, Any]) -> None:
        for seen in read_event(event):
            match seen:
                case Said(text):
                    self.add_human_input(text)
                case Called(call_id, name, arguments):
                    self._on_call(call_id, name, arguments)
                case Answered(call_id, is_error, text):
                    self._on_result(call_id, is_error, text)

    def _on_call(self, call_id: str, name: str, arguments: Mapping[str, object]) -> None:
        kind, value = classify_tool_call(name, arguments)
        if kind == "write" and value is not None:
            self.add_file_modification(value)
        if kind == "shell" and value is not None:
            signature, label = f"shell\x00{value}", f"`{value}`"
        else:
            dumped = json.dumps(dict(arguments), ensure_ascii=False, sort_keys=True, default=repr)
            signature = f"{name}\x00{dumped}"
            label = f"{name} `{value}`" if value is not None else f"{name} {dumped}"
        if call_id:
            self._pending[call_id] = (signature, _one_line(label, 160))

    def _on_result(self, call_id: str, is_error: bool, text: str) -> None:
        pending = self._pending.pop(call_id, None)
        if pending is not None:
            self._on_outcome(pending[0], pending[1], is_error, text)

    def _on_outcome(self, signature: str, label: str, failed: bool, output: str) -> None:
        if not failed:
            self._failures.pop(signature, None)  # it works now: the streak is broken
            return
        streak = self._failures.get(signature, 0) + 1
        self._failures[signature] = streak
        if streak >= self.dead_end_after and signature not in self._reported:
            self._reported.add(signature)
            self.add_dead_end(f"{label} failed {streak} times in a row: {key_error_line(output)}")

    # ------------------------------------------------------------------- render

    def render(self, *, max_lines: int = MAX_LINES, detail_dir: str = DEFAULT_CONTEXT_DIR) -> str:
        """The scratch file: a markdown index of at most ``max_lines`` lines.

        Four sections share the lines equally; a section with more entries than its
        share shows the latest ones and says how many earlier entries its detail file
        holds. Human inputs are cut at 120 characters, other entries at 200.
        """
        # Each section needs two entry lines: the latest entry and the "earlier" marker.
        minimum = _HEADER_LINES + 4 * (_SECTION_OVERHEAD + 2)
        if max_lines < minimum:
            raise ConfigError(
                f"max_lines must be at least {minimum} to give each of the four "
                f"sections two lines, got {max_lines}"
            )
        share = (max_lines - _HEADER_LINES) // 4
        sections = [
            (
                "Human Input",
                HUMAN_INPUT_FILE,
                [_one_line(t, HUMAN_INPUT_CHARS) for t in self.human_inputs],
            ),
            (
                "State Changes",
                STATE_CHANGES_FILE,
                [_one_line(f"{c.previous} → {c.new}", _ITEM_CHARS) for c in self.state_changes],
            ),
            ("Dead Ends", DEAD_ENDS_FILE, [_one_line(d, _ITEM_CHARS) for d in self.dead_ends]),
            (
                "Artifacts",
                ARTIFACTS_FILE,
                [_one_line(f"`{p}`", _ITEM_CHARS) for p in self.file_modifications],
            ),
        ]
        lines = [
            "# Scratch — working memory",
            "_Written by the orchestrator at turn boundaries; read it after compaction._",
            "",
        ]
        for title, filename, entries in sections:
            room = share - _SECTION_OVERHEAD
            lines.append(f"## {title}")
            lines.append(f"Full entries: {detail_dir}/{filename}")
            if not entries:
                lines.append("- none yet")
            elif len(entries) <= room:
                lines.extend(f"- {e}" for e in entries)
            else:
                shown = entries[len(entries) - (room - 1) :]
                lines.append(
                    f"- … {len(entries) - len(shown)} earlier entries in {detail_dir}/{filename}"
                )
                lines.extend(f"- {e}" for e in shown)
            lines.append("")
        return "\n".join(lines[:max_lines]).rstrip("\n") + "\n"
