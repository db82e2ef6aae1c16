"""Trimming by category, without a model: the condenser's ``strategy="trim"``.

Trimming runs in passes and stops as soon as the transcript fits:

1. every image but the most recent becomes a short text placeholder that records
   what it replaced (media type, size, a hash);
2. the budget left after ``SYSTEM`` is split by the other shares; a category that
   needs less than its share lends the rest to the others, in proportion to theirs;
3. each category over its allowance loses its oldest messages first (``ERROR``,
   then ``SYSTEM_OUTPUT``, ``DIALOG``, ``CONTEXT``); an assistant message with tool
   calls and the results answering them always leave together;
4. if rounding left it over, the oldest remaining units go, and a single newest
   message that is too large on its own is shortened with a visible marker.

The categories and their shares are in :mod:`window_budget.pipeline._categories`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from window_budget.budget import ToolGroups, estimate_message_tokens, estimate_tokens
from window_budget.contract import CondensePlan, CondenseResult, TokenCounter
from window_budget.errors import BudgetError, ConfigError
from window_budget.messages import AgentMessage, AssistantMessage
from window_budget.pipeline._boundary import provider_boundary
from window_budget.pipeline._categories import (
    TRIM_ORDER,
    Classifier,
    MessageCategory,
    allocate_budgets,
    classify_message,
)
from window_budget.pipeline._fit import shorten_message
from window_budget.pipeline._images import ImageReplacement, replace_old_images_classified

__all__ = ["TrimResult", "trim_by_category", "trim_messages_by_category", "trim_result"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrimResult:
    """Everything one category trim decided."""

    kept: tuple[AgentMessage, ...]
    """The output, in input order; untouched messages are the input objects."""
    dropped: tuple[AgentMessage, ...]
    """Input messages removed whole, in input order (the originals, images intact)."""
    images: tuple[ImageReplacement, ...]
    """Images swapped for placeholders in the messages that were kept."""
    shortened: tuple[int, ...]
    """Indexes into ``kept`` of messages shortened with a marker to fit."""
    tokens_before: int
    """Estimate of the input."""
    tokens_after: int
    """Estimate of ``kept``; at most ``budget``."""
    budget: int
    """The budget trimmed to."""
    allowances: Mapping[MessageCategory, int]
    """Each category's allowance after lending (empty when nothing had to be trimmed)."""

    @property
    def changed(self) -> bool:
        """True when the output differs from the input."""
        return bool(self.dropped or self.images or self.shortened)


def _units(messages: Sequence[AgentMessage], cats: Sequence[MessageCategory]) -> list[list[int]]:
    """Group indexes that leave together: a tool-calling turn with its results.

    SYSTEM messages are never trimmed, so they take no part: a SYSTEM message is in no
    unit, and neither owns a call nor answers one.
    """
    indexes = [j for j in range(len(messages)) if cats[j] is not MessageCategory.SYSTEM]
    groups = ToolGroups(messages[j] for j in indexes)
    return [[indexes[k] for k in unit] for unit in groups.units()]


class _Survivors:
    """The messages a trim still keeps (by index), their sizes and their running total."""

    def __init__(self, current: list[AgentMessage], sizes: list[int]) -> None:
        self.current = current
        """The messages, images already replaced; shortening replaces entries in place."""
        self.sizes = sizes
        self.alive = [True] * len(current)
        self.running = sum(sizes)

    def drop(self, unit: Sequence[int]) -> None:
        for j in unit:
            self.alive[j] = False
            self.running -= self.sizes[j]

    def recount(self) -> None:
        self.running = sum(s for s, a in zip(self.sizes, self.alive, strict=True) if a)


def _category_passes(
    units: Sequence[list[int]],
    cats: Sequence[MessageCategory],
    kept: _Survivors,
    needs: Mapping[MessageCategory, int],
    allowances: Mapping[MessageCategory, int],
) -> None:
    """Drop whole units, oldest first, category by category, until each is within its share."""
    use = dict(needs)
    for cat in TRIM_ORDER:
        # The newest unit is what the model must answer: the category passes spare it.
        for unit in units[:-1]:
            if use[cat] <= allowances[cat]:
                break
            if not kept.alive[unit[0]] or all(cats[j] is not cat for j in unit):
                continue
            for j in unit:
                use[cats[j]] -= kept.sizes[j]
            kept.drop(unit)


def _last_resort(
    units: Sequence[list[int]], kept: _Survivors, budget: int, counter: TokenCounter | None
) -> set[int]:
    """Past the category passes: drop the oldest units left, then shorten the newest one.

    Rounding, or units spanning categories, can leave the passes a little over. Returns the
    indexes of the messages shortened (none when the newest unit had to go too).
    """
    live_units = [u for u in units if kept.alive[u[0]]]
    live_units.reverse()  # pop() from the end takes the oldest
    while kept.running > budget and len(live_units) > 1:
        kept.drop(live_units.pop())
    if kept.running <= budget or not live_units:
        return set()
    last = live_units[0]
    room = budget - (kept.running - sum(kept.sizes[j] for j in last))
    shortened = _shorten_last(kept.current, kept.sizes, last, room, counter)
    kept.recount()
    if kept.running > budget:
        kept.drop(last)
        return set()
    return shortened


def trim_by_category(
    messages: Sequence[AgentMessage],
    budget: int,
    *,
    counter: TokenCounter | None = None,
    shares: Mapping[MessageCategory | str, float] | None = None,
    classify: Classifier = classify_message,
) -> TrimResult:
    """Trim a transcript to ``budget`` tokens by category, oldest first; no model call.

    Under budget, nothing changes (``kept`` holds the input objects). See the module
    docstring for the passes. A provider's own compaction (``pipeline._boundary``) is kept
    whole, with everything before it, and counted like a system message; only what follows
    it is trimmed (the provider no longer reads what came before).

    Raises:
        BudgetError: the SYSTEM messages alone exceed the budget.
        ConfigError: a bad budget or bad shares.

    """
    bound = provider_boundary(messages)
    if bound is None:
        return _trim(messages, budget, counter=counter, shares=shares, classify=classify)
    start, end = bound
    group = {id(m) for m in messages[start:end]}

    def pinned(message: AgentMessage) -> MessageCategory:
        return MessageCategory.SYSTEM if id(message) in group else classify(message)

    after = _trim(messages[start:], budget, counter=counter, shares=shares, classify=pinned)
    return replace(after, kept=(*messages[:start], *after.kept))


def _trim(
    messages: Sequence[AgentMessage],
    budget: int,
    *,
    counter: TokenCounter | None,
    shares: Mapping[MessageCategory | str, float] | None,
    classify: Classifier,
) -> TrimResult:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ConfigError(f"budget must be a non-negative int of tokens, got {budget!r}")
    sizes = [estimate_message_tokens(m, counter) for m in messages]
    before = sum(sizes)
    if before <= budget:
        return TrimResult(
            kept=tuple(messages),
            dropped=(),
            images=(),
            shortened=(),
            tokens_before=before,
            tokens_after=before,
            budget=budget,
            allowances={},
        )
    cats = [classify(m) for m in messages]
    system = sum(s for s, c in zip(sizes, cats, strict=True) if c is MessageCategory.SYSTEM)
    if system > budget:
        raise BudgetError(
            f"SYSTEM messages need {system:,} tokens but the budget is {budget:,} — shorten "
            "the system notes or raise the budget",
            needed=system,
            available=budget,
        )
    current, images = replace_old_images_classified(messages, cats)
    kept = _Survivors(
        current,
        [
            estimate_message_tokens(m, counter) if m is not o else s
            for m, o, s in zip(current, messages, sizes, strict=True)
        ],
    )
    allowances: dict[MessageCategory, int] = {}
    shortened: set[int] = set()
    if kept.running > budget:
        needs = dict.fromkeys(MessageCategory, 0)
        for s, c in zip(kept.sizes, cats, strict=True):
            needs[c] += s
        allowances = allocate_budgets(budget, needs, shares)
        units = _units(messages, cats)
        _category_passes(units, cats, kept, needs, allowances)
        shortened = _last_resort(units, kept, budget, counter)
    return _result(
        messages, kept, images, shortened, before=before, budget=budget, allowances=allowances
    )


def _result(
    messages: Sequence[AgentMessage],
    kept: _Survivors,
    images: Sequence[ImageReplacement],
    shortened: set[int],
    *,
    before: int,
    budget: int,
    allowances: Mapping[MessageCategory, int],
) -> TrimResult:
    alive = kept.alive
    assert kept.running <= budget, (kept.running, budget)
    position = {j: k for k, j in enumerate(j for j in range(len(messages)) if alive[j])}
    return TrimResult(
        kept=tuple(m for m, a in zip(kept.current, alive, strict=True) if a),
        dropped=tuple(o for o, a in zip(messages, alive, strict=True) if not a),
        images=tuple(r for r in images if alive[r.index]),
        shortened=tuple(position[j] for j in sorted(j for j in shortened if alive[j])),
        tokens_before=before,
        tokens_after=kept.running,
        budget=budget,
        allowances=allowances,
    )


def _shorten_last(
    current: list[AgentMessage],
    sizes: list[int],
    unit: list[int],
    room: int,
    counter: TokenCounter | None,
) -> set[int]:
    """Shorten the messages of the last remaining unit, largest first, toward ``room``."""
    done: set[int] = set()
    for j in sorted(unit, key=lambda k: -sizes[k]):
        excess = sum(sizes[k] for k in unit) - room
        if excess <= 0:
            break
        new = shorten_message(current[j], max(sizes[j] - excess, 0), counter)
        new_size = estimate_message_tokens(new, counter)
        if new is not current[j] and new_size < sizes[j]:
            current[j] = new
            sizes[j] = new_size
            done.add(j)
    return done


def trim_messages_by_category(
    messages: Sequence[AgentMessage],
    budget: int,
    *,
    counter: TokenCounter | None = None,
    shares: Mapping[MessageCategory | str, float] | None = None,
    classify: Classifier = classify_message,
) -> tuple[list[AgentMessage], list[AgentMessage]]:
    """``(kept, dropped)`` after :func:`trim_by_category`; the condenser's trim hook.

    ``kept`` is in input order, fits ``budget`` (``estimate_message_tokens`` with
    ``counter``), never splits a tool call from its results, and holds the input
    objects for every message it did not change.

    >>> from window_budget import UserMessage
    >>> msgs = [UserMessage("a" * 400), UserMessage("b" * 400), UserMessage("c")]
    >>> kept, dropped = trim_messages_by_category(msgs, 150)
    >>> [m.content[0] for m in kept], len(dropped)
    (['b', 'c'], 1)
    """
    result = trim_by_category(messages, budget, counter=counter, shares=shares, classify=classify)
    return list(result.kept), list(result.dropped)


def trim_result(
    messages: Sequence[AgentMessage],
    *,
    room: int,
    pinned: int,
    limit: float,
    tokens_before: int,
    counter: TokenCounter | None,
) -> CondenseResult:
    """Trim ``messages`` by category into ``room`` tokens; the result as the condenser gives it.

    Raises:
        BudgetError: even trimmed, the transcript and ``pinned`` exceed ``limit``.

    """
    kept, dropped = trim_messages_by_category(messages, room, counter=counter)
    plan = CondensePlan(0, tuple(kept), tuple(dropped))
    if (
        not dropped
        and len(kept) == len(messages)
        and all(a is b for a, b in zip(kept, messages, strict=True))
    ):
        return CondenseResult(
            messages, plan, None, tokens_before, tokens_before, limit, "nothing-condensable"
        )
    # The usage the kept replies report measured the untrimmed transcript: left on them,
    # it would anchor the next check on a figure that is no longer true.
    out = [
        replace(m, usage=None) if isinstance(m, AssistantMessage) and m.usage else m for m in kept
    ]
    after = estimate_tokens(out, counter) + pinned
    if after > limit:
        raise BudgetError(
            f"trimming by category left {after:,} tokens against a limit of "
            f"{limit:,.0f}; the pinned system messages alone need "
            f"{pinned:,} — shorten them or raise the window",
            needed=after,
            available=int(limit),
        )
    return CondenseResult(out, plan, None, tokens_before, after, limit, "trimmed")
