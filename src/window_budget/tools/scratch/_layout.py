"""The ``.context`` folder's layout: the index, its four detail files and the index's caps."""

from __future__ import annotations

from typing import Final

__all__ = [
    "ARTIFACTS_FILE",
    "DEAD_ENDS_FILE",
    "DEFAULT_CONTEXT_DIR",
    "FILES",
    "HUMAN_INPUT_CHARS",
    "HUMAN_INPUT_FILE",
    "MAX_LINES",
    "SCRATCH_FILE",
    "STATE_CHANGES_FILE",
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
FILES: Final = (SCRATCH_FILE, HUMAN_INPUT_FILE, STATE_CHANGES_FILE, DEAD_ENDS_FILE, ARTIFACTS_FILE)
"""Every file the writer owns in the folder."""

MAX_LINES: Final = 200
"""Line cap of the rendered scratch file."""
HUMAN_INPUT_CHARS: Final = 120
"""A human input longer than this is cut in the index (the detail file keeps it whole)."""
