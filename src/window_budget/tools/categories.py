"""Trimming by message category, without a model: the condenser's ``strategy="trim"``.

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
"""

from __future__ import annotations

import enum
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeAlias

from window_budget.budget._estimate import estimate_message_tokens
from window_budget.budget._groups import ToolGroups
from window_budget.contract import TokenCounter
from window_budget.digest import is_digest
from window_budget.errors import BudgetError, ConfigError
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Content,
    CustomMessage,
    ImageBlock,
    TextBlock,
    ToolResultMessage,
    UserMessage,
    content_text,
    message_blocks,
)
from window_budget.pipeline._fit import shorten_message

__all__ = [
    "CLAMP_NOTICE_TYPE",
    "DEFAULT_SHARES",
    "SYSTEM_CUSTOM_TYPES",
    "TRIM_ORDER",
    "Classifier",
    "ImageReplacement",
    "MessageCategory",
    "TrimResult",
    "allocate_budgets",
    "classify_message",
    "replace_old_images",
    "resolve_shares",
    "trim_by_category",
    "trim_messages_by_category",
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


# ----------------------------------------------------------------------- images


@dataclass(frozen=True, slots=True)
class ImageReplacement:
    """Record of one image swapped for a placeholder."""

    index: int
    """Index of the message in the input transcript."""
    block: int
    """Index of the block inside that message's content."""
    mime_type: str
    """Media type of the image."""
    data_chars: int
    """Length of its (base64) data."""
    sha256: str
    """First 12 hex digits of the SHA-256 of the data, to match it against an archive."""

    @property
    def placeholder(self) -> str:
        """The text that stands in for the image."""
        return (
            f"[earlier image removed by window-budget: {self.mime_type}, "
            f"{self.data_chars:,} data chars, sha256 {self.sha256} — only the most recent "
            "image is kept]"
        )


def _images_in(message: AgentMessage) -> list[int]:
    """Indexes of the image blocks in a message's content."""
    return [i for i, b in enumerate(message_blocks(message)) if isinstance(b, ImageBlock)]


def replace_old_images(
    messages: Sequence[AgentMessage],
    *,
    classify: Classifier = classify_message,
) -> tuple[list[AgentMessage], tuple[ImageReplacement, ...]]:
    """Replace every image but the most recent with a placeholder (SYSTEM messages untouched).

    Returns a new list (untouched messages are the same objects) and what was replaced,
    oldest first. With one image or none, the list holds exactly the input objects.
    """
    return _replace_old_images(messages, [classify(m) for m in messages])


def _replace_old_images(
    messages: Sequence[AgentMessage],
    cats: Sequence[MessageCategory],
) -> tuple[list[AgentMessage], tuple[ImageReplacement, ...]]:
    spots = [
        (i, b)
        for i, m in enumerate(messages)
        if cats[i] is not MessageCategory.SYSTEM
        for b in _images_in(m)
    ]
    out = list(messages)
    records: list[ImageReplacement] = []
    for i, b in spots[:-1]:
        content = getattr(out[i], "content", None)
        assert isinstance(content, tuple)
        image = content[b]
        assert isinstance(image, ImageBlock)
        rec = ImageReplacement(
            i,
            b,
            image.mime_type,
            len(image.data),
            hashlib.sha256(image.data.encode()).hexdigest()[:12],
        )
        records.append(rec)
        new_content: Content = (*content[:b], TextBlock(rec.placeholder), *content[b + 1 :])
        out[i] = replace(out[i], content=new_content)  # type: ignore[type-var]
    return out, tuple(records)


# --------------------------------------------------------------------- trimming


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


def _category_passes(
    units: Sequence[list[int]],
    cats: Sequence[MessageCategory],
    sizes: Sequence[int],
    alive: Sequence[bool],
    needs: Mapping[MessageCategory, int],
    allowances: Mapping[MessageCategory, int],
    drop: Callable[[list[int]], None],
) -> None:
    """Drop whole units, oldest first, category by category, until each is within its share."""
    use = dict(needs)
    for cat in TRIM_ORDER:
        # The newest unit is what the model must answer: the category passes spare it.
        for unit in units[:-1]:
            if use[cat] <= allowances[cat]:
                break
            if not alive[unit[0]] or all(cats[j] is not cat for j in unit):
                continue
            for j in unit:
                use[cats[j]] -= sizes[j]
            drop(unit)


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
    docstring for the passes.

    Raises:
        BudgetError: the SYSTEM messages alone exceed the budget.
        ConfigError: a bad budget or bad shares.

    """
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

    current, images = _replace_old_images(messages, cats)
    sizes = [
        estimate_message_tokens(m, counter) if m is not o else s
        for m, o, s in zip(current, messages, sizes, strict=True)
    ]
    alive = [True] * len(messages)
    running = sum(sizes)

    def drop(unit: list[int]) -> None:
        nonlocal running
        for j in unit:
            alive[j] = False
            running -= sizes[j]

    allowances: dict[MessageCategory, int] = {}
    shortened: set[int] = set()
    if running > budget:
        needs = dict.fromkeys(MessageCategory, 0)
        for s, c in zip(sizes, cats, strict=True):
            needs[c] += s
        allowances = allocate_budgets(budget, needs, shares)
        units = _units(messages, cats)
        _category_passes(units, cats, sizes, alive, needs, allowances, drop)
        # Rounding, or units spanning categories, can leave it a little over.
        live_units = [u for u in units if alive[u[0]]]
        live_units.reverse()  # pop() from the end takes the oldest
        while running > budget and len(live_units) > 1:
            drop(live_units.pop())
        if running > budget and live_units:
            last = live_units[0]
            room = budget - (running - sum(sizes[j] for j in last))
            shortened = _shorten_last(current, sizes, last, room, counter)
            running = sum(s for s, a in zip(sizes, alive, strict=True) if a)
            if running > budget:
                shortened = set()
                drop(last)

    shortened_idx = sorted(j for j in shortened if alive[j])
    kept = tuple(m for m, a in zip(current, alive, strict=True) if a)
    dropped = tuple(o for o, a in zip(messages, alive, strict=True) if not a)
    kept_images = tuple(r for r in images if alive[r.index])
    position = {j: k for k, j in enumerate(j for j in range(len(messages)) if alive[j])}
    after = running
    assert after <= budget, (after, budget)
    return TrimResult(
        kept=kept,
        dropped=dropped,
        images=kept_images,
        shortened=tuple(position[j] for j in shortened_idx),
        tokens_before=before,
        tokens_after=after,
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
    # Imported here: the condenser imports this module lazily, and vice versa.

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

    >>> msgs = [UserMessage("a" * 400), UserMessage("b" * 400), UserMessage("c")]
    >>> kept, dropped = trim_messages_by_category(msgs, 150)
    >>> [m.content[0] for m in kept], len(dropped)
    (['b', 'c'], 1)
    """
    result = trim_by_category(messages, budget, counter=counter, shares=shares, classify=classify)
    return list(result.kept), list(result.dropped)
