"""The scratch file: working memory that survives compaction.

:class:`ScratchModel` collects what a compaction must not lose — what the human said, the
files the agent wrote, the workflow's state changes, the approaches that failed — from this
library's messages, Claude Code stream-json events and plain chat dicts, and renders it as
a markdown index of at most 200 lines. :class:`ScratchWriter` writes that index and its four
detail files to ``<worktree>/.context/``, atomically and never through a symbolic link.
"""

from window_budget.tools.scratch._layout import (
    ARTIFACTS_FILE,
    DEAD_ENDS_FILE,
    DEFAULT_CONTEXT_DIR,
    HUMAN_INPUT_FILE,
    SCRATCH_FILE,
    STATE_CHANGES_FILE,
)
from window_budget.tools.scratch._model import ScratchModel, StateChange
from window_budget.tools.scratch._writer import ScratchWriter

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
]
