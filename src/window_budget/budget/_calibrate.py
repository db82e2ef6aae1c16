"""Self-calibration: learn from reported usage how a provider counts, compared with the estimate.

A transcript that carries provider usage says, call after call, how much the prompt grew;
the messages that caused that growth are in the transcript too. Their ratio, taken over the
recent calls of one model, is how the provider counts compared with the heuristic (or the
counter in use): Claude counts about a fifth more than cl100k_base, and each provider wraps
tool calls its own way. The first calls also show the constant part the provider counts and
the transcript does not hold: the system prompt and the tool schemas.

:func:`calibrate` learns a :class:`Calibration` from one transcript, :func:`calibrate_many`
one per model from many; :meth:`Calibration.apply` turns an estimate into the provider's
figure. The gate applies it to what no usage figure covers (see
:func:`~window_budget.pipeline._gate.estimate_context`), and to sessions of the same model that
carry no usage at all.

>>> from window_budget import AssistantMessage, ToolResultMessage, Usage, UserMessage
>>> msgs = [UserMessage("list the files")]
>>> for i in range(6):
...     msgs.append(AssistantMessage("calling ls", usage=Usage(3000 + 600 * i, 10)))
...     msgs.append(ToolResultMessage(f"t{i}", "ls", "src/ tests/ docs/ README.md " * 40))
>>> cal = calibrate(msgs)
>>> round(cal.ratio, 2), cal.overhead_tokens, cal.samples
(1.35, 2991, 5)
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from window_budget.budget._anchor import anchor_usage
from window_budget.budget._cache import cached_estimates
from window_budget.budget._models import lookup_model
from window_budget.contract import TokenCounter
from window_budget.digest import is_digest
from window_budget.messages import AgentMessage, AssistantMessage

__all__ = [
    "MAX_RATIO",
    "MIN_RATIO",
    "MIN_SAMPLES",
    "Calibration",
    "calibrate",
    "calibrate_many",
    "model_key",
]

MIN_RATIO = 0.5
"""The smallest ratio a calibration may learn; a figure below it measured something else."""
MAX_RATIO = 2.0
"""The largest ratio a calibration may learn."""
MIN_SAMPLES = 3
"""Growth samples needed before a ratio is trusted."""
RECENT_SAMPLES = 64
"""How many of the most recent growth samples the ratio is the median of."""
MIN_GROWTH_TOKENS = 24
"""Smaller growths are mostly framing the estimate and the provider count differently."""
OVERHEAD_CALLS = 3
"""How many of the first calls the constant overhead is the median of."""


def model_key(model_id: str | None) -> str:
    """The key calibrations are kept under: the model's family when it is well known.

    >>> model_key("anthropic/claude-sonnet-4-5-20250929")
    'claude-sonnet-4-5'
    """
    limits = lookup_model(model_id)
    if limits is not None:
        return limits.family
    return (model_id or "").strip().lower()


@dataclass(frozen=True, slots=True, kw_only=True)
class Calibration:
    """How one model's provider counts against the estimate; build it with :func:`calibrate`."""

    model: str = ""
    """The model it was learned from (see :func:`model_key`); empty when unknown."""
    ratio: float = 1.0
    """Provider tokens per estimated token: the median over recent calls of how much the
    reported prompt grew since the first call (or the last compaction), divided by the
    estimate of the messages that grew it."""
    overhead_tokens: int = 0
    """What the provider counts on every call and the transcript does not hold (system
    prompt, tool schemas): the median, over the first calls (those mostly made of it, when
    there are any), of the reported prompt less the calibrated estimate of the messages
    before it. Never negative."""
    samples: int = 0
    """How many growth samples the ratio is the median of."""
    spread: tuple[float, float] = (1.0, 1.0)
    """The 10th and 90th percentile of the per-call ratios: how far one call strays."""

    def __post_init__(self) -> None:
        if not MIN_RATIO <= self.ratio <= MAX_RATIO:
            raise ValueError(
                f"Calibration.ratio must be within [{MIN_RATIO}, {MAX_RATIO}], got {self.ratio!r}"
            )
        if (
            isinstance(self.overhead_tokens, bool)
            or not isinstance(self.overhead_tokens, int)
            or self.overhead_tokens < 0
        ):
            raise ValueError(
                f"Calibration.overhead_tokens must be a non-negative int, got "
                f"{self.overhead_tokens!r}"
            )

    def apply(self, estimated_tokens: int, *, overhead: bool = True) -> int:
        """The provider's figure for what the estimate puts at ``estimated_tokens``.

        ``overhead=False`` for a part of a transcript (the messages after a usage anchor):
        the overhead is counted once per request, and the anchor already holds it.
        """
        scaled = round(estimated_tokens * self.ratio)
        return scaled + self.overhead_tokens if overhead else scaled


@dataclass(frozen=True, slots=True)
class _Samples:
    growth: list[tuple[int, int]]
    """(reported growth, estimated growth) from the first good figure after a break."""
    first: list[tuple[int, int]]
    """(reported prompt, estimate of the messages before it) for the first figures."""


def _samples(
    messages: Sequence[AgentMessage],
    key: str | None,
    counter: TokenCounter | None,
    pinned_tokens: int = 0,
) -> tuple[_Samples, str]:
    growth: list[tuple[int, int]] = []
    first: list[tuple[int, int]] = []
    estimated = pinned_tokens  # estimate of messages[:i], with the pinned system prompt
    # Growth is measured from the first figure after the last break, not call to call:
    # providers drop some of what a transcript keeps (Anthropic drops the thinking of
    # earlier turns once a new user turn starts), and only a long span sees that.
    origin: tuple[int, int] | None = None  # (prompt, estimate before it)
    stale_until = -1  # figures on turns kept with a digest measured the old transcript
    fresh = True  # no compaction yet: the prompt holds the whole transcript before it
    found = key or ""
    # Through the process-wide cache: inspect estimates the same messages for its ledger
    # and its category report, and each pass would otherwise cost as much as all of them.
    estimates = cached_estimates(messages, counter)
    for i, message in enumerate(messages):
        if is_digest(message):
            # The transcript before it is not what later prompts hold; growth across it is
            # not growth, and a first call after it does not show the overhead alone.
            origin, fresh = None, False
            stale_until = i + (getattr(message, "kept_count", None) or 0)
        usage = anchor_usage(message)
        if usage is not None and isinstance(message, AssistantMessage) and i > stale_until:
            this = model_key(message.model) if message.model else found
            if not found:
                found = this
            if this == found or not message.model:
                prompt = usage.prompt_tokens
                if origin is not None:
                    reported = prompt - origin[0]
                    grown = estimated - origin[1]
                    if reported > 0 and grown >= MIN_GROWTH_TOKENS:
                        growth.append((reported, grown))
                if fresh and len(first) < OVERHEAD_CALLS:
                    first.append((prompt, estimated))
                if origin is None:
                    origin = (prompt, estimated)
            else:
                origin = None  # another model's figure: growth across it is not ours
        estimated += estimates[i]
    return _Samples(growth, first), found


def _weighted_median(pairs: Sequence[tuple[int, int]]) -> float:
    # Each call weighs by its estimated growth: a large tool output says more about the
    # ratio than a two-word reply whose count is mostly framing.
    ratios = sorted((r / e, e) for r, e in pairs)
    half = sum(e for _, e in ratios) / 2
    seen = 0
    for ratio, weight in ratios:
        seen += weight
        if seen >= half:
            return ratio
    return ratios[-1][0]  # pragma: no cover - the loop always returns


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _calibration(samples: _Samples, key: str) -> Calibration | None:
    recent = samples.growth[-RECENT_SAMPLES:]
    if len(recent) < MIN_SAMPLES:
        return None
    ratio = min(MAX_RATIO, max(MIN_RATIO, _weighted_median(recent)))
    per_call = [r / e for r, e in recent]
    overhead = 0
    # Calls whose prompt is mostly overhead say the most about it: a first call after a
    # large pasted file mostly measures how well that file was estimated.
    first = [(p, b) for p, b in samples.first if b <= p / 2] or samples.first
    if first:
        overhead = max(0, round(statistics.median(p - ratio * b for p, b in first)))
    return Calibration(
        model=key,
        ratio=ratio,
        overhead_tokens=overhead,
        samples=len(recent),
        spread=(_quantile(per_call, 0.1), _quantile(per_call, 0.9)),
    )


def calibrate(
    messages: Sequence[AgentMessage],
    *,
    model: str | None = None,
    counter: TokenCounter | None = None,
    pinned_tokens: int = 0,
) -> Calibration | None:
    """Learn how the provider counts from the usage figures ``messages`` carry.

    Uses the figures of ``model`` (matched by :func:`model_key`), or of the model of the
    first figure when None. Figures of failed replies are skipped; growth across a digest
    or a compaction summary is not growth and is not sampled. Returns None when fewer
    than :data:`MIN_SAMPLES` calls grew the prompt by a usable amount.

    Args:
        messages: The transcript; not modified.
        model: Whose figures to learn from.
        counter: The counter whose estimates are calibrated (the heuristic when None);
            apply the calibration only to estimates made with the same counter.
        pinned_tokens: The estimate of a system prompt kept outside ``messages`` that the
            provider saw; the overhead learned is what it counted beyond that.

    """
    samples, key = _samples(messages, model_key(model) if model else None, counter, pinned_tokens)
    return _calibration(samples, key)


def calibrate_many(
    transcripts: Iterable[Sequence[AgentMessage]], *, counter: TokenCounter | None = None
) -> dict[str, Calibration]:
    """One calibration per model, learned from every transcript that carries its usage.

    Keyed by :func:`model_key`; look one up for a session without usage with
    ``table.get(model_key(model_id))``. A transcript may hold figures of several models
    (a model switch mid-session): each model's figures go to its own calibration.
    """
    pooled: dict[str, _Samples] = {}
    for messages in transcripts:
        keys: list[str] = []
        for message in messages:
            if isinstance(message, AssistantMessage) and anchor_usage(message) is not None:
                key = model_key(message.model)
                if key not in keys:
                    keys.append(key)
        for key in keys:
            samples, _ = _samples(messages, key or None, counter)
            into = pooled.setdefault(key, _Samples([], []))
            into.growth.extend(samples.growth)
            into.first.extend(samples.first)
    out = {}
    for key, samples in pooled.items():
        cal = _calibration(samples, key)
        if cal is not None:
            out[key] = cal
    return out
