"""A provider's own compaction as a boundary: what came before it is already folded.

Anthropic (the ``compact_20260112`` context-management edit) and OpenAI's Responses API
(``context_management`` with ``compact_threshold``) can compact a conversation on the
server. The reply then carries a compaction block (Anthropic) or item (OpenAI), which the
caller must send back; the provider ignores (Anthropic) or no longer needs (OpenAI) what
came before it. So, for this library:

- the window to respect starts at the newest such block: the messages before it are not
  counted, and are never summarized again (the provider did that);
- the message carrying it, with the tool results that answer its calls, is *pinned*: kept
  verbatim where it is, counted, never split, shortened, masked or folded;
- a digest this library writes later goes right after that group, and folds only what
  followed it. Nothing before the boundary is dropped from the caller's list either: the
  output is ``[*head, digest, *kept]`` (``head`` ending with the compaction's group).

>>> from window_budget.messages import AssistantMessage, ProviderCompactionBlock, UserMessage
>>> block = ProviderCompactionBlock("anthropic", "the story so far")
>>> provider_boundary([UserMessage("a"), AssistantMessage([block]), UserMessage("b")])
(1, 2)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from window_budget.budget import estimate_tokens
from window_budget.contract import CondensePlan, CondenseResult, TokenCounter
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    CustomMessage,
    ProviderCompactionBlock,
    ToolResultMessage,
)

__all__ = [
    "PastBoundary",
    "carries_provider_compaction",
    "counted_head",
    "past_boundary",
    "provider_boundary",
]


def carries_provider_compaction(message: object) -> bool:
    """True when ``message`` is an assistant reply holding a provider's compaction block."""
    if not isinstance(message, AssistantMessage) or isinstance(message.content, str):
        return False
    return any(type(b) is ProviderCompactionBlock for b in message.content)


def provider_boundary(messages: Sequence[AgentMessage]) -> tuple[int, int] | None:
    """``(start, end)`` of the newest provider compaction's group; None when there is none.

    ``messages[start]`` carries the block; ``messages[start:end]`` is it plus the tool
    results right after it that answer its calls (a provider rejects a call whose result
    was folded away). ``messages[:end]`` is pinned; only ``messages[start:]`` is counted.
    """
    if not ProviderCompactionBlock.made:
        return None  # the common case: no provider compaction anywhere, no scan
    for start in range(len(messages) - 1, -1, -1):
        message = messages[start]
        if carries_provider_compaction(message):
            break
    else:
        return None
    assert isinstance(message, AssistantMessage)
    calls = {c.id for c in message.tool_calls}
    end = start + 1
    while (
        calls
        and end < len(messages)
        and isinstance(messages[end], ToolResultMessage)
        and messages[end].tool_call_id in calls  # type: ignore[union-attr]
    ):
        end += 1
    return start, end


@dataclass(frozen=True, slots=True)
class PastBoundary:
    """A transcript split at its provider boundary: the condenser runs on :attr:`tail`."""

    messages: Sequence[AgentMessage]
    """The whole input."""
    end: int
    """How many leading messages are pinned (the compaction's group ends there)."""
    tail: list[AgentMessage]
    """``messages[end:]``: what is gated, sliced and perhaps folded."""
    pinned: int
    """The caller's pinned tokens plus the compaction group's."""
    cut: int | None
    """A caller's cut, as an index into :attr:`tail` (never before the boundary)."""

    def options(self, force: bool, conversation: str | None) -> dict[str, Any]:
        """The condenser's run options for :attr:`tail`."""
        return {
            "force": force,
            "pinned_tokens": self.pinned,
            "conversation": conversation,
            "cut": self.cut,
        }

    def rebase(self, result: CondenseResult) -> CondenseResult:
        """``result`` (on :attr:`tail`) as a result on the whole input, head first.

        A no-op returns the input object itself; otherwise the output is ``[*head,
        digest, *kept]``, ``plan.cut`` and the indexes count from the whole input
        (``plan.dropped == messages[end:cut]``: the head is pinned, not dropped).
        """
        if result.messages is self.tail:
            return replace(result, messages=self.messages)
        end, plan = self.end, result.plan
        return replace(
            result,
            messages=[*self.messages[:end], *result.messages],
            plan=CondensePlan(plan.cut + end if plan.cut else 0, plan.kept, plan.dropped),
            shortened=tuple(i + end for i in result.shortened),
            masked=tuple(i + end for i in result.masked),
        )


def past_boundary(
    messages: Sequence[AgentMessage],
    pinned_tokens: int,
    counter: TokenCounter | None,
    cut: int | None = None,
) -> PastBoundary | None:
    """``messages`` split at :func:`provider_boundary`; None when nothing is to split.

    The compaction's group is counted as pinned tokens (the provider sees it); what came
    before it is not counted at all (the provider dropped it).
    """
    bound = provider_boundary(messages)
    if bound is None:
        return None
    start, end = bound
    pinned = pinned_tokens + estimate_tokens(messages[start:end], counter)
    tail_cut = None if cut is None else max(cut - end, 0)
    return PastBoundary(messages, end, list(messages[end:]), pinned, tail_cut)


_INSTRUCTIONS = frozenset({"system", "developer"})


def counted_head(head: Sequence[AgentMessage]) -> Sequence[AgentMessage]:
    """What the provider sees of a pinned ``head``: all of it without a provider compaction.

    With one, the leading instructions (system or developer notes) and the compaction's
    group on; the messages in between the provider has already dropped.
    """
    bound = provider_boundary(head)
    if bound is None:
        return head
    start, lead = bound[0], 0
    while (
        lead < start
        and isinstance(head[lead], CustomMessage)
        and head[lead].custom_type in _INSTRUCTIONS  # type: ignore[union-attr]
    ):
        lead += 1
    return [*head[:lead], *head[start:]]
