"""The scratch writer: the only part of the scratch file that touches the disk.

:class:`ScratchWriter` writes ``<worktree>/.context/scratch.md`` and the four detail files,
every write atomic, appends included (a whole new file in the same directory, then
``os.replace``), so a reader never sees half a file and a kill mid-write leaves the previous
version intact. The transcript it records is untrusted (an agent can write its own
worktree), so the writer never follows a symbolic link: a link (or anything but a plain
file) at ``.context`` or at one of its files is refused with a
:class:`~window_budget.errors.ConfigError` naming the path, and every file is opened
relative to the already-opened ``.context`` directory, so a link swapped in mid-write cannot
redirect it. Nothing is written outside ``.context``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from window_budget.tools.scratch._disk import (
    atomic_write,
    opened_folder,
    read_bytes,
    remove_folder,
    remove_stale_temps,
    valid_dirname,
)
from window_budget.tools.scratch._layout import (
    ARTIFACTS_FILE,
    DEAD_ENDS_FILE,
    DEFAULT_CONTEXT_DIR,
    FILES,
    HUMAN_INPUT_FILE,
    MAX_LINES,
    SCRATCH_FILE,
    STATE_CHANGES_FILE,
)
from window_budget.tools.scratch._model import ScratchModel

__all__ = ["ScratchWriter"]

_ENTRY_SEPARATOR: Final = "\n---\n\n"


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
        self.dirname = valid_dirname(dirname)
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

    def write_scratch(self, model: ScratchModel) -> Path:
        """Rewrite ``scratch.md`` and the detail files from ``model``; returns the index path.

        ``state-changes.md`` and ``artifacts.md`` are rewritten whole; human inputs and
        dead ends the model gained since this writer's last call are appended to
        ``human-input.md`` and ``dead-ends.md``.

        Raises:
            ConfigError: ``.context`` or one of its files is a symbolic link or not a plain
                file (directory); nothing was written through it.

        """
        with opened_folder(self.worktree, self.dirname) as folder:
            remove_stale_temps(folder, FILES)
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
        atomic_write(filename, text.encode("utf-8"), folder, self.context_dir / filename)

    def _append(self, folder: int, filename: str, title: str, text: str) -> None:
        # An append is a whole new file renamed over the old one: a kill mid-way leaves the
        # old file, never a torn entry. The old bytes are kept as they are (not decoded).
        shown = self.context_dir / filename
        old = read_bytes(filename, folder, shown)
        if not old:
            head = f"# {title}\n\n".encode()
        elif old.endswith(b"\n"):
            head = old + _ENTRY_SEPARATOR.encode()
        else:
            # Torn by an older, non-atomic writer (or by hand): end that line first, so the
            # new entry never continues it.
            head = old + b"\n" + _ENTRY_SEPARATOR.encode()
        atomic_write(filename, head + (text.rstrip() + "\n").encode("utf-8"), folder, shown)

    def append_human_input(self, text: str) -> None:
        """Append one human input, in full, to ``human-input.md`` (atomically)."""
        with opened_folder(self.worktree, self.dirname) as folder:
            self._append(folder, HUMAN_INPUT_FILE, "Human input", text)

    def append_dead_end(self, description: str) -> None:
        """Append one dead end, in full, to ``dead-ends.md`` (atomically)."""
        with opened_folder(self.worktree, self.dirname) as folder:
            self._append(folder, DEAD_ENDS_FILE, "Dead ends", description)

    def cleanup(self) -> None:
        """Remove the whole ``.context`` directory (nothing else in the worktree).

        Does nothing when it does not exist. Links inside it are removed, never followed.

        Raises:
            ConfigError: ``.context`` is a symbolic link or not a directory; nothing was
                removed.

        """
        remove_folder(self.worktree, self.dirname)
