"""Shortening messages to fit, with a visible marker, and sharing a cut fairly.

Used by the condenser (an oversized tail), category trimming (an oversized newest group)
and the adapters. Every cut starts from the original message, so markers never nest;
tool-call ids, names and arguments and signed thinking blocks are never cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from window_budget.budget import estimate_message_tokens, message_parts
from window_budget.contract import BudgetPolicy, Model, TokenCounter
from window_budget.errors import BudgetError
from window_budget.messages import (
    AgentMessage,
    Content,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    message_kind,
)
from window_budget.pipeline._cut import SHORTENED_MARKER, cut_text
from window_budget.pipeline._gate import budget_limit

__all__ = ["SHORTENED_MARKER", "fit_messages", "fit_tail", "shorten_message", "water_level"]


def _shorten_content(content: Content, keep_chars: int) -> Content:
    """Cut ``content`` to about ``keep_chars`` characters of text, the longest blocks first.

    A cap is chosen so that blocks shorter than it stay whole (a one-line instruction next
    to a huge paste survives) and longer ones are cut to it. Signed thinking blocks are
    left intact: a provider rejects a changed signature. Images become a placeholder.
    """
    if isinstance(content, str):
        return cut_text(content, keep_chars)
    lengths = [
        len(b.text) if isinstance(b, TextBlock) else len(b.thinking)
        for b in content
        if isinstance(b, TextBlock) or (isinstance(b, ThinkingBlock) and not b.signature)
    ]
    fixed = sum(len(b.thinking) for b in content if isinstance(b, ThinkingBlock) and b.signature)
    budget = max(keep_chars - fixed, 0)
    cap = water_level(lengths, budget)
    out: list[Any] = []
    for b in content:
        if isinstance(b, TextBlock):
            out.append(b if len(b.text) <= cap else TextBlock(cut_text(b.text, cap)))
        elif isinstance(b, ThinkingBlock) and not b.signature:
            out.append(b if len(b.thinking) <= cap else ThinkingBlock(cut_text(b.thinking, cap)))
        elif isinstance(b, ImageBlock):
            out.append(
                TextBlock(
                    f"[image {b.mime_type} removed by window-budget to fit the context window]"
                )
            )
        else:
            out.append(b)
    return tuple(out)


def _shorten_once(message: AgentMessage, keep_chars: int) -> AgentMessage:
    """A copy of ``message`` with its body (``MESSAGE_KINDS``) cut; unknown objects as they are."""
    kind = message_kind(message)
    if kind is None:
        return message
    body = _shorten_content(getattr(message, kind.body), keep_chars)
    return replace(message, **{kind.body: body})  # type: ignore[type-var]


def shorten_message(
    message: AgentMessage, target_tokens: int, counter: TokenCounter | None = None
) -> AgentMessage:
    """A copy of ``message`` whose text is cut to about ``target_tokens``, with a visible marker.

    Tool-call ids, names and arguments are kept intact (providers validate them), as are
    signed thinking blocks; images become a text placeholder; short blocks next to a long
    one stay whole. Returns ``message`` itself when it fits or cannot be shortened.
    """
    size = estimate_message_tokens(message, counter)
    if size <= target_tokens:
        return message
    parts, _, _ = message_parts(message)
    chars = sum(map(len, parts)) or 1
    keep_chars = max(0, int(chars * max(target_tokens - 40, 0) / max(size, 1)))
    best, best_cost = message, size
    for _ in range(6):  # the char/token ratio is uneven: tighten until it fits
        candidate = _shorten_once(message, keep_chars)  # always from the original
        cost = estimate_message_tokens(candidate, counter)
        if cost < best_cost:
            best, best_cost = candidate, cost
        if cost <= target_tokens or keep_chars == 0:
            break
        keep_chars = int(keep_chars * min(0.9, target_tokens / max(cost, 1)))
    return best


def water_level(sizes: Sequence[int], room: int) -> int:
    """The largest cap under which ``sum(min(size, cap)) <= room``."""
    lo, hi = 0, max(sizes, default=0)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(min(n, mid) for n in sizes) <= room:
            lo = mid
        else:
            hi = mid - 1
    return lo


def fit_messages(
    kept: list[AgentMessage],
    room: int,
    counter: TokenCounter | None = None,
) -> tuple[list[AgentMessage], tuple[int, ...]]:
    """Shorten tail messages until the tail fits ``room`` tokens, fairly.

    Every message above a common cap is cut to it (the largest first give way, small
    ones stay whole), always from the original so markers never nest. Parts that cannot
    shrink (tool-call arguments, signed thinking) tighten the cap for the rest.
    """
    sizes = [estimate_message_tokens(m, counter) for m in kept]
    if sum(sizes) <= room:
        return kept, ()
    target = room
    out, out_sizes = list(kept), list(sizes)
    for _ in range(6):
        cap = water_level(sizes, max(target, 0))
        out = [
            shorten_message(m, cap, counter) if n > cap else m
            for m, n in zip(kept, sizes, strict=True)
        ]
        out_sizes = [
            estimate_message_tokens(m, counter) if m is not o else n
            for m, o, n in zip(out, kept, sizes, strict=True)
        ]
        excess = sum(out_sizes) - room
        if excess <= 0:
            return out, tuple(
                i for i, (m, o) in enumerate(zip(out, kept, strict=True)) if m is not o
            )
        if target <= 0:
            break
        target -= excess
    total = sum(out_sizes)
    raise BudgetError(
        f"the kept tail needs {total:,} tokens even shortened but only {room:,} remain for it — "
        "lower keep_recent, raise the context window, or shorten the newest messages",
        needed=total,
        available=room,
    )


def fit_tail(
    kept: list[AgentMessage],
    room: int,
    counter: TokenCounter | None,
    model: Model | None,
    policy: BudgetPolicy,
    pinned: int,
) -> tuple[list[AgentMessage], tuple[int, ...]]:
    """:func:`fit_messages` into ``room``; under a prompt ceiling, else into the window's room.

    A ``prompt_ceiling`` is a cost target, not the window: a tail that cannot be shortened
    under it (one large tool group beside a digest and its record) is fitted to what the
    window's own limit leaves (``room`` grown by the difference) instead of failing the turn.
    """
    try:
        return fit_messages(kept, room, counter)
    except BudgetError:
        if model is None or policy.prompt_ceiling is None:
            raise
    ceiling = budget_limit(model, policy, pinned)
    window = budget_limit(model, replace(policy, prompt_ceiling=None), pinned)
    return fit_messages(kept, room + int(window - ceiling), counter)
