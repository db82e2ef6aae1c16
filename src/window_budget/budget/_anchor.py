"""Anchoring: which usage figure a provider reported may stand for the transcript's size.

A reply's reported prompt size is the truest count there is, but only for the messages it
measured: a failed reply, another model's figure, or a figure far below the estimate (it
measured a shorter, condensed request) must not anchor. The gate and the token ledger both
ask these questions.
"""

from __future__ import annotations

from collections.abc import Sequence

from window_budget.budget._cache import estimate_tokens
from window_budget.contract import Model, TokenCounter
from window_budget.digest import is_digest
from window_budget.messages import AgentMessage, AssistantMessage, Usage

__all__ = [
    "ANCHOR_MIN_RATIO",
    "SKIPPED_STOP_REASONS",
    "anchor_index",
    "anchor_usage",
    "same_model",
    "usage_is_plausible",
]

ANCHOR_MIN_RATIO = 0.5
"""A reported figure below this share of the estimate cannot be measuring this transcript."""


SKIPPED_STOP_REASONS = frozenset({"error", "aborted", "cancelled", "canceled"})
"""Stop reasons of replies whose usage is not a measure of the prompt (the call failed)."""


def anchor_usage(message: AgentMessage) -> Usage | None:
    """The usage figure an assistant message can anchor with, or None.

    A reply that was aborted or failed reports zero, or whatever the provider had counted
    when it stopped: such a figure is skipped, so the last good figure before it still
    anchors (with the failed reply estimated like any message after the anchor).
    """
    if not isinstance(message, AssistantMessage) or message.usage is None:
        return None
    usage = message.usage
    if usage.prompt_tokens == 0 or (message.stop_reason or "").lower() in SKIPPED_STOP_REASONS:
        return None
    return usage


def same_model(reported: str | None, model: Model | None) -> bool:
    """Whether a usage figure reported by ``reported`` may stand for ``model``.

    Unknown on either side counts as the same; a dated alias matches its base name
    (``gpt-4o-2024-08-06`` and ``gpt-4o``).
    """
    if reported is None or model is None:
        return True
    a, b = reported.lower(), model.id.lower()
    return a == b or a.startswith(b) or b.startswith(a)


def usage_is_plausible(reported_tokens: int, estimated_tokens: int) -> bool:
    """False when a figure is far below the estimate of what it claims to measure.

    Such a figure measured a different, shorter list — the condensed request a
    transformer sent, say — and anchoring on it would let the transcript overflow. A
    figure above the estimate is kept: the provider counts what the estimate cannot see
    (tool schemas, its own framing).
    """
    return reported_tokens >= ANCHOR_MIN_RATIO * estimated_tokens


def anchor_index(
    messages: Sequence[AgentMessage],
    model: Model | None = None,
    *,
    pinned_tokens: int = 0,
    counter: TokenCounter | None = None,
) -> int | None:
    """Index of the assistant message whose reported usage can anchor the estimate, or None.

    Only the last assistant message with a good usage figure qualifies (zero usage and
    the usage of a failed or aborted reply are skipped, see :func:`anchor_usage`), and
    only when no digest or compaction summary follows it (the digest replaced what that
    figure measured), it is not one of the turns kept verbatim with a digest
    (``kept_count`` of a ``DigestMessage`` or a ``CompactionSummaryMessage``: their
    figures measured the longer transcript), it came from ``model`` (see
    :func:`same_model`), and the figure is plausible for the messages it measured — from
    the last digest, when there is one, up to it (:func:`usage_is_plausible`): a whole
    file read with an earlier compaction inside still anchors on its recent figures.
    """
    found: int | None = None
    start = 0  # where what the figure measured begins: the last digest, or the start
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if is_digest(msg):
            stale_until = i + (getattr(msg, "kept_count", None) or 0)
            if found is None or found <= stale_until:
                return None
            start = i
            break
        if found is None and anchor_usage(msg) is not None:
            if not same_model(msg.model, model):  # type: ignore[union-attr]
                return None
            found = i
    if found is not None:
        usage = messages[found].usage  # type: ignore[union-attr]
        assert usage is not None
        expected = estimate_tokens(messages[start : found + 1], counter) + pinned_tokens
        if not usage_is_plausible(usage.context_tokens, expected):
            return None
    return found
