"""The digest's headers and how to recognise a digest in a transcript.

Shared by the budget math (a usage figure from before the last digest is stale) and the
summarizer (a digest at the head of the dropped part is carried in, not flattened again).
"""

from __future__ import annotations

from typing import Final

from window_budget.contract import CondenseScope
from window_budget.messages import (
    AgentMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    DigestMessage,
    content_text,
)

__all__ = ["BRANCH_HEADER", "DIGEST_HEADERS", "SESSION_HEADER", "digest_body", "is_digest"]

SESSION_HEADER: Final = "[session digest — older turns condensed]"
"""First line of a session-scope digest."""
BRANCH_HEADER: Final = "[branch digest — archived from a path not taken]"
"""First line of a branch-scope digest."""
DIGEST_HEADERS: Final[dict[CondenseScope, str]] = {
    "session": SESSION_HEADER,
    "branch": BRANCH_HEADER,
}
"""Header per scope."""


def is_digest(message: AgentMessage) -> bool:
    """True for a digest this library wrote, or a compaction summary from another tool.

    Only a :class:`DigestMessage` counts as the library's own: a plain user message that
    merely *starts* with the header is a user turn like any other (anyone can type the
    header, and a trusted digest's objective would replace the real one).
    """
    return isinstance(message, CompactionSummaryMessage | DigestMessage)


def digest_body(message: AgentMessage) -> str | None:
    """The text of a digest without its header, or None when ``message`` is not a digest."""
    if isinstance(message, CompactionSummaryMessage | BranchSummaryMessage):
        return message.summary.strip()
    if isinstance(message, DigestMessage):
        text = content_text(message.content)
        for header in (SESSION_HEADER, BRANCH_HEADER):
            if text.startswith(header):
                return text[len(header) :].strip()
    return None
