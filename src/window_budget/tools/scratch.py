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
``<worktree>/.context/scratch.md`` and the four detail files, every write atomic, appends
included (a whole new file in the same directory, then ``os.replace``), so a reader never
sees half a file and a kill mid-write leaves the previous version intact. The transcript
it records is untrusted (an agent can write its own worktree), so the writer never follows
a symbolic link: a link (or anything but a plain file) at ``.context`` or at one of its
files is refused with a :class:`~window_budget.errors.ConfigError` naming the path, and
every file is opened relative to the already-opened ``.context`` directory, so a link
swapped in mid-write cannot redirect it. Nothing is written outside ``.context``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
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
from window_budget.pipeline.summarize.facts import classify_tool_call, key_error_line

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
        kind = event.get("type")
        message = event.get("message")
        if kind in ("user", "assistant") and isinstance(message, Mapping):
            self._extract_chat(str(message.get("role", kind)), message)
        elif kind == "tool_use":
            self._on_call(
                str(event.get("id", "")), str(event.get("name", "")), _args(event.get("input"))
            )
        elif kind == "tool_result":
            self._on_result(
                str(event.get("tool_use_id", "")),
                bool(event.get("is_error")),
                _result_text(event.get("content")),
            )
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
                    self._on_result(
                        str(block.get("tool_use_id", "")),
                        bool(block.get("is_error")),
                        _result_text(block.get("content")),
                    )
        elif role == "assistant":
            for block in blocks:
                if isinstance(block, Mapping) and block.get("type") == "tool_use":
                    self._on_call(
                        str(block.get("id", "")),
                        str(block.get("name", "")),
                        _args(block.get("input")),
                    )
            for call in message.get("tool_calls") or ():  # OpenAI-style chat dict
                if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                    fn = call["function"]
                    self._on_call(
                        str(call.get("id", "")), str(fn.get("name", "")), _args(fn.get("arguments"))
                    )
        elif role == "tool":
            self._on_result(
                str(message.get("tool_call_id", "")),
                bool(message.get("is_error")),
                _result_text(content),
            )

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


_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# No O_NOFOLLOW (Windows): the lstat checks below still refuse links, only not race-free.
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def _refuse_link_or_special(name: str, dir_fd: int, shown: Path, *, want_dir: bool) -> bool:
    """True when ``name`` exists (as the kind wanted); refuses a link or any other kind."""
    try:
        st = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode):
        raise ConfigError(
            f"{shown} is a symbolic link; the scratch writer never follows "
            "links — remove it and write again"
        )
    if want_dir and not stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{shown} is not a directory; remove it or pick another dirname")
    if not want_dir and not stat.S_ISREG(st.st_mode):
        raise ConfigError(
            f"{shown} is not a regular file; the scratch writer only replaces "
            "plain files — remove it and write again"
        )
    return True


def _read_bytes(name: str, dir_fd: int, shown: Path) -> bytes:
    """The current bytes of a detail file, or empty when it does not exist yet."""
    if not _refuse_link_or_special(name, dir_fd, shown, want_dir=False):
        return b""
    # Non-blocking and checked again once open: a FIFO swapped in after the check must not
    # hang the writer.
    fd = os.open(
        name, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | getattr(os, "O_NONBLOCK", 0), dir_fd=dir_fd
    )
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(
                f"{shown} is not a regular file; the scratch writer only "
                "replaces plain files — remove it and write again"
            )
        return fh.read()


def _atomic_write(name: str, data: bytes, dir_fd: int, shown: Path) -> None:
    """Replace ``name`` in ``dir_fd`` with ``data``: readers see the old file or the new.

    The temporary file is created exclusively and without following links; ``os.replace``
    renames over the entry itself, never through a link at it.
    """
    _refuse_link_or_special(name, dir_fd, shown, want_dir=False)
    while True:
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(
                tmp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC,
                0o644,
                dir_fd=dir_fd,
            )
        except FileExistsError:
            continue  # a leftover (or planted) entry of that name: draw another
        break
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


_FILES: Final = (SCRATCH_FILE, HUMAN_INPUT_FILE, STATE_CHANGES_FILE, DEAD_ENDS_FILE, ARTIFACTS_FILE)


def _remove_stale_temps(dir_fd: int) -> None:
    """Remove temporary files a killed write left behind (the orchestrator is the only writer)."""
    with os.scandir(dir_fd) as entries:
        stale = [
            e.name
            for e in entries
            if e.name.endswith(".tmp") and any(e.name.startswith(f".{name}.") for name in _FILES)
        ]
    for name in stale:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)  # unlink removes a link itself, never its target


def _valid_dirname(dirname: object) -> str:
    if not isinstance(dirname, str):
        raise ConfigError(f"dirname must be a str, not {type(dirname).__name__}")
    seps = {os.sep, "/", "\\"} | ({os.altsep} if os.altsep else set())
    if (
        dirname in ("", ".", "..")
        or any(sep in dirname for sep in seps)
        or "\x00" in dirname
        or Path(dirname).is_absolute()
        or Path(dirname).drive
    ):
        raise ConfigError(
            "dirname must be one plain folder name inside the worktree (like "
            f"'.context'), not a path, '.' or '..', got {dirname!r}"
        )
    return dirname


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

    def __init__(
        self,
        worktree: str | os.PathLike[str],
        *,
        dirname: str = DEFAULT_CONTEXT_DIR,
        max_lines: int = MAX_LINES,
    ) -> None:
        self.dirname = _valid_dirname(dirname)
        """Name of the directory inside the worktree (``.context``): one plain folder name,
        so that :meth:`cleanup` can only ever remove that folder."""
        self.worktree = Path(worktree)
        """The job's working tree."""
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

    @contextlib.contextmanager
    def _opened_context_dir(self) -> Iterator[int]:
        """The ``.context`` directory, created if missing, opened without following links."""
        self.worktree.mkdir(parents=True, exist_ok=True)
        tree = os.open(self.worktree, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        try:
            if not _refuse_link_or_special(self.dirname, tree, self.context_dir, want_dir=True):
                with contextlib.suppress(FileExistsError):  # made meanwhile: checked below
                    os.mkdir(self.dirname, 0o755, dir_fd=tree)
                _refuse_link_or_special(self.dirname, tree, self.context_dir, want_dir=True)
            try:
                folder = os.open(
                    self.dirname, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=tree
                )
            except OSError as exc:  # swapped for a link between the check and the open
                raise ConfigError(
                    f"{self.context_dir} changed into a link or a file while "
                    "being opened; the scratch writer never follows links"
                ) from exc
        finally:
            os.close(tree)
        try:
            yield folder
        finally:
            os.close(folder)

    def write_scratch(self, model: ScratchModel) -> Path:
        """Rewrite ``scratch.md`` and the detail files from ``model``; returns the index path.

        ``state-changes.md`` and ``artifacts.md`` are rewritten whole; human inputs and
        dead ends the model gained since this writer's last call are appended to
        ``human-input.md`` and ``dead-ends.md``.

        Raises:
            ConfigError: ``.context`` or one of its files is a symbolic link or not a plain
                file (directory); nothing was written through it.

        """
        with self._opened_context_dir() as folder:
            _remove_stale_temps(folder)
            for text in model.human_inputs[self._appended_inputs :]:
                self._append(folder, HUMAN_INPUT_FILE, "Human input", text)
                self._appended_inputs += 1
            for text in model.dead_ends[self._appended_dead_ends :]:
                self._append(folder, DEAD_ENDS_FILE, "Dead ends", text)
                self._appended_dead_ends += 1
            changes = "".join(f"- {c.previous} → {c.new}\n" for c in model.state_changes)
            self._write(folder, STATE_CHANGES_FILE, f"# State changes\n\n{changes}")
            artifacts = "".join(f"- `{p}`\n" for p in model.file_modifications)
            self._write(
                folder, ARTIFACTS_FILE, f"# Artifacts (files written or edited)\n\n{artifacts}"
            )
            self._write(
                folder,
                SCRATCH_FILE,
                model.render(max_lines=self.max_lines, detail_dir=self.dirname),
            )
        return self.scratch_path

    def _write(self, folder: int, filename: str, text: str) -> None:
        _atomic_write(filename, text.encode("utf-8"), folder, self.context_dir / filename)

    def _append(self, folder: int, filename: str, title: str, text: str) -> None:
        # An append is a whole new file renamed over the old one: a kill mid-way leaves the
        # old file, never a torn entry. The old bytes are kept as they are (not decoded).
        shown = self.context_dir / filename
        old = _read_bytes(filename, folder, shown)
        if not old:
            head = f"# {title}\n\n".encode()
        elif old.endswith(b"\n"):
            head = old + _ENTRY_SEPARATOR.encode()
        else:
            # Torn by an older, non-atomic writer (or by hand): end that line first, so the
            # new entry never continues it.
            head = old + b"\n" + _ENTRY_SEPARATOR.encode()
        _atomic_write(filename, head + (text.rstrip() + "\n").encode("utf-8"), folder, shown)

    def append_human_input(self, text: str) -> None:
        """Append one human input, in full, to ``human-input.md`` (atomically)."""
        with self._opened_context_dir() as folder:
            self._append(folder, HUMAN_INPUT_FILE, "Human input", text)

    def append_dead_end(self, description: str) -> None:
        """Append one dead end, in full, to ``dead-ends.md`` (atomically)."""
        with self._opened_context_dir() as folder:
            self._append(folder, DEAD_ENDS_FILE, "Dead ends", description)

    def cleanup(self) -> None:
        """Remove the whole ``.context`` directory (nothing else in the worktree).

        Does nothing when it does not exist. Links inside it are removed, never followed.

        Raises:
            ConfigError: ``.context`` is a symbolic link or not a directory; nothing was
                removed.

        """
        try:
            tree = os.open(self.worktree, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        except FileNotFoundError:
            return
        try:
            if _refuse_link_or_special(self.dirname, tree, self.context_dir, want_dir=True):
                # Relative to the opened worktree: a swapped path cannot redirect it, and
                # rmtree removes links inside instead of following them.
                shutil.rmtree(self.dirname, dir_fd=tree)
        finally:
            os.close(tree)
