"""The sub-agent clamp: a child agent never gets a larger window than its parent.

When a parent spawns a sub-agent with its own context window and a clamp, the
child's window is the lower of the parent's and the clamp. A note records the
decision — child max, parent max, whether it was clamped — on both transcripts, so
it shows in logs and dashboards. The note is a ``CustomMessage`` whose
``custom_type`` is ``"cw_clamp_notice"``; category trimming treats it as SYSTEM, so
it is never trimmed away.

>>> from window_budget import Model
>>> spawn = clamp_subagent(Model("parent", 128_000), 32_000, sub_agent="researcher")
>>> spawn.child_max, spawn.clamped, spawn.model.context_window
(32000, True, 32000)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from window_budget.contract import Model
from window_budget.errors import ConfigError
from window_budget.messages import AgentMessage, CustomMessage
from window_budget.pipeline import CLAMP_NOTICE_TYPE

__all__ = [
    "ClampNotice",
    "SubagentSpawn",
    "clamp_child_window",
    "clamp_notice_message",
    "clamp_subagent",
]


def _positive(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{name} must be a positive int of tokens, got {value!r}")
    return value


def clamp_child_window(parent_max: int, clamp: int | None = None) -> int:
    """Return the child's window: ``min(parent_max, clamp)``, or ``parent_max`` with no clamp.

    >>> clamp_child_window(128_000, 200_000)
    128000
    """
    parent_max = _positive("parent_max", parent_max)
    if clamp is None:
        return parent_max
    return min(parent_max, _positive("clamp", clamp))


@dataclass(frozen=True, slots=True)
class ClampNotice:
    """What the clamp decided for one sub-agent."""

    sub_agent: str
    """The child agent's id."""
    child_max: int
    """The child's effective window."""
    parent_max: int
    """The parent's window when the child was spawned."""
    clamped: bool
    """True when the child got less than the parent."""

    def as_details(self) -> dict[str, object]:
        """Return the note's metadata, as stored in ``CustomMessage.details``."""
        return {
            "type": CLAMP_NOTICE_TYPE,
            "sub_agent": self.sub_agent,
            "child_max": self.child_max,
            "parent_max": self.parent_max,
            "clamped": self.clamped,
        }


def clamp_notice_message(notice: ClampNotice) -> CustomMessage:
    """Build the note recorded on both transcripts for ``notice``."""
    verdict = (
        f"clamped to {notice.child_max:,} tokens"
        if notice.clamped
        else f"given the parent's {notice.child_max:,} tokens"
    )
    text = (
        f"[context window] sub-agent {notice.sub_agent!r} {verdict} "
        f"(parent max {notice.parent_max:,}, child max {notice.child_max:,})"
    )
    return CustomMessage(CLAMP_NOTICE_TYPE, text, display=True, details=notice.as_details())


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentSpawn:
    """The child's budget and both transcripts with the clamp note appended."""

    notice: ClampNotice
    """The decision."""
    note: CustomMessage
    """The note message (the same object is appended to both transcripts)."""
    model: Model | None
    """The child's model (the parent's with the clamped window), when a model was given."""
    parent_messages: list[AgentMessage]
    """A new list: the parent's transcript plus the note."""
    child_messages: list[AgentMessage]
    """A new list: the child's transcript plus the note."""

    @property
    def child_max(self) -> int:
        """The child's effective window."""
        return self.notice.child_max

    @property
    def clamped(self) -> bool:
        """True when the child got less than the parent."""
        return self.notice.clamped


def clamp_subagent(
    parent: Model | int,
    clamp: int | None = None,
    *,
    sub_agent: str,
    parent_messages: Sequence[AgentMessage] = (),
    child_messages: Sequence[AgentMessage] = (),
) -> SubagentSpawn:
    """Clamp a sub-agent's window to its parent's and record the note on both transcripts.

    Args:
        parent: The parent's model, or its window in tokens.
        clamp: The window asked for the child (``None``: same as the parent).
        sub_agent: The child's id, written into the note.
        parent_messages: The parent's transcript; not modified.
        child_messages: The child's transcript so far; not modified.

    Raises:
        ConfigError: a window or clamp that is not a positive int.

    """
    parent_max = parent.context_window if isinstance(parent, Model) else parent
    child_max = clamp_child_window(parent_max, clamp)
    notice = ClampNotice(str(sub_agent), child_max, parent_max, child_max < parent_max)
    note = clamp_notice_message(notice)
    model = None
    if isinstance(parent, Model):
        output_cap = parent.max_output_tokens
        model = replace(
            parent,
            context_window=child_max,
            max_output_tokens=None if output_cap is None else min(output_cap, child_max),
        )
    return SubagentSpawn(
        notice=notice,
        note=note,
        model=model,
        parent_messages=[*parent_messages, note],
        child_messages=[*child_messages, note],
    )
