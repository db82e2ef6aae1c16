"""Text forms for messages a target format has no kind for (shell runs, notes, old digests)."""

from __future__ import annotations

from window_budget.digest import SESSION_HEADER
from window_budget.messages import (
    AgentMessage,
    BashExecutionMessage,
    CompactionSummaryMessage,
    message_text,
)

__all__ = ["render_as_text"]


def render_as_text(message: AgentMessage) -> str:
    """A user-visible text stand-in for a message kind the target format cannot express.

    A shell run shows its prompt and exit code, a compaction summary its digest header;
    every other kind is its ``message_text``.
    """
    match message:
        case BashExecutionMessage():
            code = "" if message.exit_code is None else f" (exit {message.exit_code})"
            return f"$ {message.command}{code}\n{message.output}"
        case CompactionSummaryMessage():
            return f"{SESSION_HEADER}\n\n{message.summary}"
    return message_text(message)
