"""Masking: the cheapest tier, tried before any summary call.

When the gate fires, older tool outputs — outside the kept tail, beyond the most recent
``keep_last``, longer than ``min_chars`` — are replaced by a one-line placeholder naming
the tool, its short arguments and the outcome. The call, its id and the pairing with its
result stay, so a provider accepts the transcript as before; the originals are handed
back like any dropped message, and the condenser summarizes only if masking was not
enough. (LangChain's ``ClearToolUsesEdit`` and Anthropic's tool-result clearing do the
same for their stacks.)

It lives apart from the condenser because it is a transform of its own: a list in, a new
list and the replaced originals out, no model and no budget arithmetic.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from itertools import islice
from typing import Final

from window_budget._policy import BudgetPolicy
from window_budget.budget import ToolGroups
from window_budget.messages import (
    AgentMessage,
    ToolCallBlock,
    ToolResultMessage,
    content_text,
)
from window_budget.pipeline._placeholder import MASK_MARKER, placeholder

__all__ = [
    "MASK_MARKER",
    "MASK_TARGET",
    "MASK_TARGET_UNCAPPED",
    "is_masked",
    "mask_target",
    "mask_tool_outputs",
]

MASK_TARGET: Final = 0.7
"""Masking alone is enough only when it brings the transcript under this share of the limit.

Masking rewrites the prompt from the first masked output on, so the provider's cache is lost
from there just as after a digest; it pays only when it buys enough room before the next
compaction, else the gate fires again a few calls later and breaks the cache again
(Anthropic's ``clear_at_least`` intends the same). Chosen with ``bench/bench_session_cost.py``
(``docs/benchmarks.md``) among 0.5, 0.65, 0.7, 0.8 and masking off under the default
``prompt_ceiling``: at 32k-200k windows 0.7 was within 5 % of the cheapest of them keeping as
many planted facts under all four price shapes, where 0.5 missed that by 6-8 % under exact-prefix
and OpenAI 0.1x prices at 128k and 200k, and masking off by 5-10 %; at 1M all were within 6 %.
Without a ceiling the policy keeps :data:`MASK_TARGET_UNCAPPED` (not measured otherwise)."""

MASK_TARGET_UNCAPPED: Final = 0.8
"""The share masking must reach under a policy without a ``prompt_ceiling`` (the default)."""


def mask_target(policy: BudgetPolicy) -> float:
    """The share of the limit masking alone must reach under ``policy`` to be enough."""
    return MASK_TARGET if policy.prompt_ceiling is not None else MASK_TARGET_UNCAPPED


def is_masked(message: AgentMessage) -> bool:
    """True for a tool result whose output masking replaced."""
    return (
        isinstance(message, ToolResultMessage)
        and isinstance(message.content, str)
        and message.content.startswith(MASK_MARKER)
    )


def _placeholder(result: ToolResultMessage, call: ToolCallBlock | None) -> str:
    from window_budget.pipeline.summarize.facts import classify_tool_call, key_error_line

    text = content_text(result.content)
    target: str | None = None
    if call is not None:
        _kind, target = classify_tool_call(call.name, call.arguments)
        if target is None and call.arguments:
            target = json.dumps(
                dict(call.arguments), ensure_ascii=False, sort_keys=True, default=repr
            )
    error_line = key_error_line(text, limit=0) if result.is_error else None
    return placeholder(result.tool_name, target or "", error_line, text)


def mask_tool_outputs(
    messages: Sequence[AgentMessage], *, end: int, keep_last: int, min_chars: int
) -> tuple[list[AgentMessage], list[int]]:
    """Replace old, large tool outputs in ``messages[:end]`` with one-line placeholders.

    The ``keep_last`` most recent tool results of the whole transcript stay whole, as do
    outputs of at most ``min_chars`` characters and placeholders already there.

    Returns:
        The new list (``messages`` itself is not modified) and the indexes replaced;
        ``messages[i]`` for those indexes are the originals to archive.

    >>> from window_budget.messages import ToolResultMessage, UserMessage
    >>> msgs = [UserMessage("go"), ToolResultMessage("c1", "bash", "x" * 5000)]
    >>> out, replaced = mask_tool_outputs(msgs, end=2, keep_last=0, min_chars=1000)
    >>> replaced, out[1].content.startswith(MASK_MARKER)
    ([1], True)

    """
    results = [i for i, m in enumerate(messages) if isinstance(m, ToolResultMessage)]
    # max(..., 0): keeping more than there are must not wrap around to a negative start.
    protected = set(results[max(len(results) - keep_last, 0) :]) if keep_last > 0 else set()
    end = min(end, len(messages))
    groups = ToolGroups(islice(messages, end))
    out = list(messages)
    replaced: list[int] = []
    for i in range(end):
        msg = messages[i]
        if not isinstance(msg, ToolResultMessage) or i in protected or is_masked(msg):
            continue
        if len(content_text(msg.content)) <= min_chars:
            continue
        out[i] = replace(msg, content=_placeholder(msg, groups.call(i)))
        replaced.append(i)
    return out, replaced
