"""Text forms for messages a target format has no kind for (shell runs, notes, old digests)."""

from __future__ import annotations

from window_budget.digest import SESSION_HEADER
from window_budget.messages import (
    AgentMessage,
    BashExecutionMessage,
    Block,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    TextBlock,
    message_text,
)

__all__ = ["plain_text", "render_as_text"]


def plain_text(content: str | tuple[Block, ...]) -> str:
    """The text of content, blocks joined by newlines (non-text blocks ignored)."""
    if isinstance(content, str):
        return content
    return "\n".join(b.text for b in content if isinstance(b, TextBlock))


def render_as_text(message: AgentMessage) -> str:
    """A user-visible text stand-in for a message kind the target format cannot express."""
    if isinstance(message, BashExecutionMessage):
        code = "" if message.exit_code is None else f" (exit {message.exit_code})"
        return f"$ {message.command}{code}\n{message.output}"
    if isinstance(message, CompactionSummaryMessage):
        return f"{SESSION_HEADER}\n\n{message.summary}"
    if isinstance(message, BranchSummaryMessage):
        return message.summary
    if isinstance(message, CustomMessage):
        return message_text(message)
    return message_text(message)
