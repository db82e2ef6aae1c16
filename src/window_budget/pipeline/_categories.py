"""Message categories and their shares of a budget: what trimming by category divides.

Every message falls into one of five categories, each with a share of the budget
(the default shares):

========================  =====  ==============================================
category                  share  what lands there
========================  =====  ==============================================
``SYSTEM``                10 %   system notes — **never trimmed**
``CONTEXT``               35 %   reference material: digests, summaries, custom notes
``DIALOG``                50 %   user and assistant turns
``SYSTEM_OUTPUT``          5 %   tool results and shell output
``ERROR``                  5 %   failed tool results, non-zero exits, tracebacks
========================  =====  ==============================================

The core contract has no ``system`` role: the adapters keep a framework's system
prompt outside the transcript and pass its size as ``pinned_tokens``, so it is never
touched. Inside a transcript, a message is ``SYSTEM`` when it is a
``CustomMessage`` whose ``custom_type`` is ``"system"`` (or a clamp notice from
:mod:`window_budget.tools.subagent`), or an unknown object whose ``role`` is ``"system"``.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping
from typing import TypeAlias

from window_budget.digest import is_digest
from window_budget.errors import ConfigError
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ToolResultMessage,
    UserMessage,
    content_text,
)

__all__ = [
    "CLAMP_NOTICE_TYPE",
    "DEFAULT_SHARES",
    "SYSTEM_CUSTOM_TYPES",
    "TRIM_ORDER",
    "Classifier",
    "MessageCategory",
    "allocate_budgets",
    "classify_message",
    "resolve_shares",
]


class MessageCategory(enum.Enum):
    """The five kinds of message a budget is split between, most essential first."""

    SYSTEM = "system"
    CONTEXT = "context"
    DIALOG = "dialog"
    SYSTEM_OUTPUT = "system_output"
    ERROR = "error"


DEFAULT_SHARES: Mapping[MessageCategory, float] = {
    MessageCategory.SYSTEM: 0.10,
    MessageCategory.CONTEXT: 0.35,
    MessageCategory.DIALOG: 0.50,
    MessageCategory.SYSTEM_OUTPUT: 0.05,
    MessageCategory.ERROR: 0.05,
}
"""The default split of the budget. They add up to 105 % (ERROR is a fallback allowance);
trimming uses them as relative weights, so they need not sum to 1."""

TRIM_ORDER: tuple[MessageCategory, ...] = (
    MessageCategory.ERROR,
    MessageCategory.SYSTEM_OUTPUT,
    MessageCategory.DIALOG,
    MessageCategory.CONTEXT,
)
"""Which over-allowance category is trimmed first (SYSTEM never is)."""

CLAMP_NOTICE_TYPE = "cw_clamp_notice"
"""``custom_type`` of the sub-agent clamp note (see :mod:`window_budget.tools.subagent`)."""

SYSTEM_CUSTOM_TYPES = frozenset({"system", CLAMP_NOTICE_TYPE})
"""``CustomMessage.custom_type`` values classified as ``SYSTEM``."""

_TRACEBACK = "Traceback (most recent call last)"

Classifier: TypeAlias = Callable[[AgentMessage], MessageCategory]
"""A function that puts a message in a category (:func:`classify_message` by default)."""


def classify_message(message: AgentMessage) -> MessageCategory:
    """Classify one message by its role and content.

    >>> classify_message(ToolResultMessage("c1", "bash", "boom", is_error=True))
    <MessageCategory.ERROR: 'error'>
    """
    match message:
        case UserMessage():
            return MessageCategory.CONTEXT if is_digest(message) else MessageCategory.DIALOG
        case AssistantMessage():
            failed = message.stop_reason == "error"
            return MessageCategory.ERROR if failed else MessageCategory.DIALOG
        case ToolResultMessage():
            failed = message.is_error or _TRACEBACK in content_text(message.content)
            return MessageCategory.ERROR if failed else MessageCategory.SYSTEM_OUTPUT
        case BashExecutionMessage():
            failed = message.exit_code not in (None, 0) or _TRACEBACK in message.output
            return MessageCategory.ERROR if failed else MessageCategory.SYSTEM_OUTPUT
        case CustomMessage() if message.custom_type.lower() in SYSTEM_CUSTOM_TYPES:
            return MessageCategory.SYSTEM
        case CustomMessage() | BranchSummaryMessage() | CompactionSummaryMessage():
            return MessageCategory.CONTEXT
    role = str(getattr(message, "role", "")).lower()
    if role in ("system", "developer"):
        return MessageCategory.SYSTEM
    if role in ("tool", "function", "toolresult"):
        return MessageCategory.SYSTEM_OUTPUT
    # An unknown kind is treated as conversation: trimmed normally, never pinned.
    return MessageCategory.DIALOG


def resolve_shares(
    shares: Mapping[MessageCategory | str, float] | None = None,
) -> dict[MessageCategory, float]:
    """Return every category's share: the defaults, overridden by ``shares``.

    Keys may be categories or their names (``"dialog"``); shares are relative weights.

    Raises:
        ConfigError: an unknown category, a negative or non-finite share, or no positive
            share outside SYSTEM.

    """
    out = dict(DEFAULT_SHARES)
    for key, value in (shares or {}).items():
        try:
            cat = key if isinstance(key, MessageCategory) else MessageCategory[str(key).upper()]
        except KeyError:
            names = ", ".join(c.name for c in MessageCategory)
            raise ConfigError(f"unknown category {key!r} in shares; use one of {names}") from None
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < 0
        ):
            raise ConfigError(f"share of {cat.name} must be a finite number >= 0, got {value!r}")
        out[cat] = float(value)
    if sum(out[c] for c in TRIM_ORDER) <= 0:
        raise ConfigError(
            "the shares of CONTEXT, DIALOG, SYSTEM_OUTPUT and ERROR are all 0; "
            "give at least one of them a positive share"
        )
    return out


def allocate_budgets(
    budget: int,
    needs: Mapping[MessageCategory, int],
    shares: Mapping[MessageCategory | str, float] | None = None,
) -> dict[MessageCategory, int]:
    """Each category's allowance: SYSTEM gets what it needs, the rest is split by share.

    A category needing less than its share keeps only what it needs; the remainder is
    lent to the others in proportion to their shares, until nothing is left to lend.
    The allowances never sum to more than ``budget``.

    >>> alloc = allocate_budgets(1000, {MessageCategory.DIALOG: 2000, MessageCategory.ERROR: 10})
    >>> alloc[MessageCategory.ERROR], alloc[MessageCategory.DIALOG]
    (10, 990)
    """
    norm = resolve_shares(shares)
    system = needs.get(MessageCategory.SYSTEM, 0)
    caps = {MessageCategory.SYSTEM: system}
    pool = max(0, budget - system)
    active = list(TRIM_ORDER)
    while active:
        weight = sum(norm[c] for c in active)
        if weight <= 0:
            for c in active:
                caps[c] = 0
            break
        fair = {c: pool * norm[c] / weight for c in active}
        satisfied = [c for c in active if needs.get(c, 0) <= fair[c]]
        if not satisfied:
            for c in active:
                caps[c] = math.floor(fair[c])
            break
        for c in satisfied:
            caps[c] = needs.get(c, 0)
            pool -= caps[c]
            active.remove(c)
    return caps
