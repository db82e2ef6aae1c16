"""The scratch file: working memory that survives compaction.

:class:`ScratchModel` collects, from whatever transcript an agent loop sees, the
things a compaction must not lose: what the human said, the files the agent wrote,
the workflow's state changes and the approaches that failed. It reads this library's
messages, Claude Code stream-json events (``user`` / ``assistant`` / ``tool_use`` /
``tool_result``) and plain ``{"role": ..., "content": ...}`` chat dicts alike. A tool
call that fails ``dead_end_after`` times in a row with the same arguments is recorded
as a dead end on its own.

:meth:`ScratchModel.render` gives a markdown index capped at 200 lines, four sections
with equal line budgets, each pointing to a detail file that holds every entry.
:class:`ScratchWriter` is the only part that touches the disk: it writes
``<worktree>/.context/scratch.md`` and the four detail files, each rewrite atomic
(temporary file in the same directory, then ``os.replace``), so a reader never sees
half a file and a crash mid-write leaves the previous version intact.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
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
from window_budget.summarize.extract import classify_tool_call, key_error_line

__all__ = [
    "ARTIFACTS_FILE",
    "DEAD_ENDS_FILE",
    "DEFAULT_CONTEXT_DIR",
    "HUMAN_INPUT_FILE",
    "SCRATCH_FILE",
    "STATE_CHANGES_FILE",
    "ScratchModel",
    "ScratchWriter",
    "StateChange",
    "extract_text",
]

DEFAULT_CONTEXT_DIR: Final = ".context"
"""Directory, inside the worktree, that holds the scratch file and its detail files."""
SCRATCH_FILE: Final = "scratch.md"
"""The index an agent reads after compaction."""
HUMAN_INPUT_FILE: Final = "human-input.md"
"""Detail file: every human input, in full."""
STATE_CHANGES_FILE: Final = "state-changes.md"
"""Detail file: every state change."""
DEAD_ENDS_FILE: Final = "dead-ends.md"
"""Detail file: every dead end, in full."""
ARTIFACTS_FILE: Final = "artifacts.md"
"""Detail file: every file the agent wrote."""

MAX_LINES: Final = 200
"""Line cap of the rendered scratch file."""
HUMAN_INPUT_CHARS: Final = 120
"""A human input longer than this is cut in the index (the detail file keeps it whole)."""
_ITEM_CHARS = 200
_HEADER_LINES = 3  # title, note, blank line
_SECTION_OVERHEAD = 3  # heading, pointer, trailing blank line
_ENTRY_SEPARATOR = "\n---\n\n"


def extract_text(content: object) -> str:
    r"""The text of a message content: a string, or a list of text blocks (dicts or strings).

    Non-text blocks (tool results, images, tool calls) contribute nothing.

    >>> extract_text([{"type": "text", "text": "hello"}, {"type": "image"}, "world"])
    'hello\nworld'
    """
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif getattr(block, "text", None) is not None and not isinstance(block, Mapping):
                parts.append(str(block.text))
        return "\n".join(p for p in parts if p)
    return ""


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
        if isinstance(dead_end_after, bool) or not isinstance(dead_end_after, int) \
                or dead_end_after < 1:
            raise ConfigError(
                f"dead_end_after must be an int of at least 1, got {dead_end_after!r}")
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
        if isinstance(item, UserMessage):
            if not is_digest(item):
                self.add_human_input(content_text(item.content))
        elif isinstance(item, AssistantMessage):
            for call in item.tool_calls:
                self._on_call(call.id, call.name, call.arguments)
        elif isinstance(item, ToolResultMessage):
            self._on_result(item.tool_call_id, item.is_error, content_text(item.content))
        elif isinstance(item, BashExecutionMessage):
            failed = item.exit_code not in (0, None) and not item.cancelled
            self._on_outcome(f"shell\x00{item.command.strip()}",
                             f"`{item.command.strip()}`", failed, item.output)
        elif isinstance(item, Mapping):
            self._extract_event(item)

    def _extract_event(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        message = event.get("message")
        if kind in ("user", "assistant") and isinstance(message, Mapping):
            self._extract_chat(str(message.get("role", kind)), message)
        elif kind == "tool_use":
            self._on_call(str(event.get("id", "")), str(event.get("name", "")),
                          _args(event.get("input")))
        elif kind == "tool_result":
            self._on_result(str(event.get("tool_use_id", "")), bool(event.get("is_error")),
                            _result_text(event.get("content")))
        elif kind is None and "role" in event:
            self._extract_chat(str(event["role"]), event)

    def _extract_chat(self, role: str, message: Mapping[str, Any]) -> None:
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if role == "user":
            # A user turn carries tool results too; only its text is the human speaking.
            text = extract_text(content)
            if text and not text.startswith("[session digest"):
                self.add_human_input(text)
            for block in blocks:
                if isinstance(block, Mapping) and block.get("type") == "tool_result":
                    self._on_result(str(block.get("tool_use_id", "")),
                                    bool(block.get("is_error")), _result_text(block.get("content")))
        elif role == "assistant":
            for block in blocks:
                if isinstance(block, Mapping) and block.get("type") == "tool_use":
                    self._on_call(str(block.get("id", "")), str(block.get("name", "")),
                                  _args(block.get("input")))
            for call in message.get("tool_calls") or ():  # OpenAI-style chat dict
                if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                    fn = call["function"]
                    self._on_call(str(call.get("id", "")), str(fn.get("name", "")),
                                  _args(fn.get("arguments")))
        elif role == "tool":
            self._on_result(str(message.get("tool_call_id", "")), bool(message.get("is_error")),
                            _result_text(content))

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
            self.add_dead_end(f"{label} failed {streak} times in a row: "
                              f"{key_error_line(output)}")

    # ------------------------------------------------------------------- render

    def render(self, *, max_lines: int = MAX_LINES,
               detail_dir: str = DEFAULT_CONTEXT_DIR) -> str:
        """The scratch file: a markdown index of at most ``max_lines`` lines.

        Four sections share the lines equally; a section with more entries than its
        share shows the latest ones and says how many earlier entries its detail file
        holds. Human inputs are cut at 120 characters, other entries at 200.
        """
        # Each section needs two entry lines: the latest entry and the "earlier" marker.
        minimum = _HEADER_LINES + 4 * (_SECTION_OVERHEAD + 2)
        if max_lines < minimum:
            raise ConfigError(f"max_lines must be at least {minimum} to give each of the four "
                              f"sections two lines, got {max_lines}")
        share = (max_lines - _HEADER_LINES) // 4
        sections = [
            ("Human Input", HUMAN_INPUT_FILE,
             [_one_line(t, HUMAN_INPUT_CHARS) for t in self.human_inputs]),
            ("State Changes", STATE_CHANGES_FILE,
             [_one_line(f"{c.previous} → {c.new}", _ITEM_CHARS) for c in self.state_changes]),
            ("Dead Ends", DEAD_ENDS_FILE, [_one_line(d, _ITEM_CHARS) for d in self.dead_ends]),
            ("Artifacts", ARTIFACTS_FILE,
             [_one_line(f"`{p}`", _ITEM_CHARS) for p in self.file_modifications]),
        ]
        lines = ["# Scratch — working memory",
                 "_Written by the orchestrator at turn boundaries; read it after compaction._",
                 ""]
        for title, filename, entries in sections:
            room = share - _SECTION_OVERHEAD
            lines.append(f"## {title}")
            lines.append(f"Full entries: {detail_dir}/{filename}")
            if not entries:
                lines.append("- none yet")
            elif len(entries) <= room:
                lines.extend(f"- {e}" for e in entries)
            else:
                shown = entries[len(entries) - (room - 1):]
                lines.append(f"- … {len(entries) - len(shown)} earlier entries in "
                             f"{detail_dir}/{filename}")
                lines.extend(f"- {e}" for e in shown)
            lines.append("")
        return "\n".join(lines[:max_lines]).rstrip("\n") + "\n"


def _args(raw: object) -> Mapping[str, object]:
    if isinstance(raw, Mapping):
        return raw
    if isinstance(raw, str):  # OpenAI sends arguments as a JSON string
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {"_raw": raw}
        return parsed if isinstance(parsed, Mapping) else {"_raw": parsed}
    return {}


def _result_text(content: object) -> str:
    return extract_text(content) if not isinstance(content, str) else content


def _atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that readers see the old file or the new, never half."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class ScratchWriter:
    """Writes a :class:`ScratchModel` to ``<worktree>/.context/``: the index and detail files.

    The orchestrator is the only writer; agents only read. Every rewrite is atomic.

    >>> import tempfile
    >>> model = ScratchModel()
    >>> model.add_human_input("Keep the public API unchanged.")
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     writer = ScratchWriter(tmp)
    ...     path = writer.write_scratch(model)
    ...     print(path.read_text(encoding="utf-8").splitlines()[5])
    - Keep the public API unchanged.
    """

    def __init__(self, worktree: str | os.PathLike[str], *,
                 dirname: str = DEFAULT_CONTEXT_DIR, max_lines: int = MAX_LINES) -> None:
        if not dirname or Path(dirname).is_absolute() or ".." in Path(dirname).parts:
            raise ConfigError(f"dirname must be a relative directory inside the worktree, "
                              f"got {dirname!r}")
        self.worktree = Path(worktree)
        """The job's working tree."""
        self.dirname = dirname
        """Name of the directory inside the worktree (``.context``)."""
        self.max_lines = max_lines
        """Line cap passed to :meth:`ScratchModel.render`."""
        self._appended_inputs = 0
        self._appended_dead_ends = 0

    @property
    def context_dir(self) -> Path:
        """``<worktree>/.context``."""
        return self.worktree / self.dirname

    @property
    def scratch_path(self) -> Path:
        """``<worktree>/.context/scratch.md``: the path to hand to ``build_compact_prompt``."""
        return self.context_dir / SCRATCH_FILE

    def write_scratch(self, model: ScratchModel) -> Path:
        """Rewrite ``scratch.md`` and the detail files from ``model``; returns the index path.

        ``state-changes.md`` and ``artifacts.md`` are rewritten whole; human inputs and
        dead ends the model gained since this writer's last call are appended to
        ``human-input.md`` and ``dead-ends.md``.
        """
        self.context_dir.mkdir(parents=True, exist_ok=True)
        for text in model.human_inputs[self._appended_inputs:]:
            self.append_human_input(text)
        self._appended_inputs = len(model.human_inputs)
        for text in model.dead_ends[self._appended_dead_ends:]:
            self.append_dead_end(text)
        self._appended_dead_ends = len(model.dead_ends)
        changes = "".join(f"- {c.previous} → {c.new}\n" for c in model.state_changes)
        _atomic_write(self.context_dir / STATE_CHANGES_FILE, f"# State changes\n\n{changes}")
        artifacts = "".join(f"- `{p}`\n" for p in model.file_modifications)
        _atomic_write(self.context_dir / ARTIFACTS_FILE,
                      f"# Artifacts (files written or edited)\n\n{artifacts}")
        _atomic_write(self.scratch_path,
                      model.render(max_lines=self.max_lines, detail_dir=self.dirname))
        return self.scratch_path

    def _append(self, filename: str, title: str, text: str) -> None:
        self.context_dir.mkdir(parents=True, exist_ok=True)
        path = self.context_dir / filename
        with path.open("a", encoding="utf-8", newline="\n") as fh:
            if fh.tell() == 0:
                fh.write(f"# {title}\n\n")
            else:
                fh.write(_ENTRY_SEPARATOR)
            fh.write(text.rstrip() + "\n")

    def append_human_input(self, text: str) -> None:
        """Append one human input, in full, to ``human-input.md``."""
        self._append(HUMAN_INPUT_FILE, "Human input", text)

    def append_dead_end(self, description: str) -> None:
        """Append one dead end, in full, to ``dead-ends.md``."""
        self._append(DEAD_ENDS_FILE, "Dead ends", description)

    def cleanup(self) -> None:
        """Remove the whole ``.context`` directory (nothing else in the worktree)."""
        shutil.rmtree(self.context_dir, ignore_errors=True)
