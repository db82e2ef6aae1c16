"""Prompt assembly under a hard token budget, from prioritised sections (no model call).

A prompt is built from ``(priority, label, content)`` sections; a lower number is more
essential. Sections are taken in priority order while they fit; the first one that
does not fit is cut with a visible marker when enough room is left for it, otherwise
dropped, and every less essential section after it is dropped too — so a section never
appears while a more essential one was cut short. The text is measured as a whole with
the chosen counter, separators and marker included, so the budget holds exactly for
that counter.

Each call emits one ``prompt_assembled`` event through :mod:`logging` (logger
``window_budget.tools.assemble``) and, when given, a callback.

>>> result = assemble_prompt(
...     [(0, "rule", "Rule 4.2: tabs"), (1, "plan", "Replace tabs with spaces.")], 100)
>>> print(result.text)
Rule 4.2: tabs
<BLANKLINE>
Replace tabs with spaces.
>>> result.included, result.dropped
(('rule', 'plan'), ())
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from window_budget.budget import HeuristicCounter, resolve_counter
from window_budget.contract import TokenCounter
from window_budget.errors import ConfigError
from window_budget.pipeline import SHORTENED_MARKER, cut_text

__all__ = [
    "EVENT_NAME",
    "TRUNCATION_MARKER",
    "AssembledPrompt",
    "EventCallback",
    "Section",
    "SectionLike",
    "assemble_prompt",
]

logger = logging.getLogger("window_budget.tools.assemble")

EVENT_NAME = "prompt_assembled"
"""Name of the event every assembly emits."""

TRUNCATION_MARKER = "\n" + SHORTENED_MARKER
"""Ends the one section that was cut short, so the model (and a reader) can tell: the
library's one marker on its own line, ``{n}`` filled with the characters cut."""

DEFAULT_MIN_TRUNCATED_TOKENS = 100
"""Below this much room a section is dropped rather than cut to a useless stub."""

_RESERVED_KEYS = frozenset(
    {
        "event",
        "budget_tokens",
        "used_tokens",
        "sections_included",
        "sections_truncated",
        "sections_dropped",
        "sections_empty",
    }
)


@dataclass(frozen=True, slots=True)
class Section:
    """One piece of a prompt: how essential it is, a name for reports, and its text."""

    priority: int
    """Lower is more essential; ties keep the order the sections were given in."""
    label: str
    """Name used in the result and the event (``"plan"``, ``"lessons"``, ...)."""
    content: str
    """The text that goes into the prompt."""


SectionLike: TypeAlias = Section | tuple[int, str, str]
"""A :class:`Section` or a plain ``(priority, label, content)`` tuple."""

EventCallback: TypeAlias = Callable[[dict[str, Any]], None]
"""Receives the event payload (``payload["event"] == "prompt_assembled"``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AssembledPrompt:
    """The assembled prompt and what happened to each section."""

    text: str
    """The prompt: included sections in priority order, joined by the separator."""
    used_tokens: int
    """``counter.count(text)``; never above ``budget_tokens``."""
    budget_tokens: int
    """The budget it was assembled under."""
    included: tuple[str, ...]
    """Labels of the sections in ``text``, in order (a truncated one included)."""
    truncated: tuple[str, ...]
    """Label of the section cut short with the marker (at most one)."""
    dropped: tuple[str, ...]
    """Labels of the sections left out, in priority order."""
    empty: tuple[str, ...] = ()
    """Labels of sections with no text; they take no room and add no separator."""
    counter_name: str = "heuristic"
    """Which counter measured the budget."""

    def __str__(self) -> str:
        """Return the prompt text."""
        return self.text


def _to_section(index: int, raw: object) -> Section:
    if isinstance(raw, Section):
        section = raw
    elif isinstance(raw, tuple) and len(raw) == 3:
        section = Section(*raw)
    else:
        raise ConfigError(
            f"section {index} is {raw!r}; pass a Section or a (priority, label, content) tuple"
        )
    if isinstance(section.priority, bool) or not isinstance(section.priority, int):
        raise ConfigError(f"section {index} has priority {section.priority!r}; use an int")
    if not isinstance(section.label, str) or not isinstance(section.content, str):
        raise ConfigError(f"section {index}: label and content must both be str")
    return section


def _longest_prefix(length: int, fits: Callable[[int], bool]) -> int:
    """Largest ``k <= length`` with ``fits(k)``, by binary search (0 when nothing fits)."""
    lo, hi = 0, length
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def assemble_prompt(
    sections: Iterable[SectionLike],
    budget: int,
    *,
    counter: TokenCounter | Callable[[str], int] | Literal["tiktoken", "heuristic"] | None = None,
    separator: str = "\n\n",
    marker: str = TRUNCATION_MARKER,
    min_truncated_tokens: int = DEFAULT_MIN_TRUNCATED_TOKENS,
    context: Mapping[str, Any] | None = None,
    on_event: EventCallback | None = None,
) -> AssembledPrompt:
    """Build a prompt from prioritised sections that never exceeds ``budget`` tokens.

    Args:
        sections: ``(priority, label, content)`` tuples or :class:`Section` objects.
        budget: Token budget for the whole text, separators and marker included.
        counter: What "token" means: a :class:`~window_budget.contract.TokenCounter`, a
            ``str -> int`` callable, ``"tiktoken"`` or ``"heuristic"``; the character
            heuristic (3.6 characters per token) when None.
        separator: Placed between sections.
        marker: Ends the section that is cut short; ``{n}`` becomes the count of
            characters cut.
        min_truncated_tokens: A section is cut only when at least this many tokens of
            its own text would remain; otherwise it is dropped.
        context: Extra fields for the event (``{"agent": "worker", "rule_id": ...}``).
        on_event: Called once with the event payload, after the log record.

    Returns:
        An :class:`AssembledPrompt`; the sections keep their priority order.

    Raises:
        ConfigError: a negative budget, a malformed section, or a ``context`` key that
            would overwrite one of the event's own fields.

    """
    extra = _checked(budget, min_truncated_tokens, context)
    tc = resolve_counter(counter) or HeuristicCounter()
    ordered = sorted(
        (_to_section(i, s) for i, s in enumerate(sections)), key=lambda s: s.priority
    )  # sorted() is stable: ties keep input order
    result = _packed(ordered, budget, tc, separator, marker, min_truncated_tokens)
    _emit(result, extra, on_event)
    return result


def _packed(
    ordered: Sequence[Section],
    budget: int,
    tc: TokenCounter,
    separator: str,
    marker: str,
    min_truncated_tokens: int,
) -> AssembledPrompt:
    """The sections in order while they fit; the first that does not is cut short or dropped."""
    text = ""
    included: list[str] = []
    truncated: list[str] = []
    dropped: list[str] = []
    empty: list[str] = []
    stopped = False
    for section in ordered:
        if not section.content:
            empty.append(section.label)
            continue
        if stopped:
            dropped.append(section.label)
            continue
        joint = separator if text else ""
        candidate = text + joint + section.content
        if tc.count(candidate) <= budget:
            text = candidate
            included.append(section.label)
            continue
        stopped = True
        shortened = _shortened(
            text + joint, section.content, budget, tc, marker, min_truncated_tokens
        )
        if shortened is not None:
            text = shortened
            included.append(section.label)
            truncated.append(section.label)
        else:
            dropped.append(section.label)

    return AssembledPrompt(
        text=text,
        used_tokens=tc.count(text) if text else 0,
        budget_tokens=budget,
        included=tuple(included),
        truncated=tuple(truncated),
        dropped=tuple(dropped),
        empty=tuple(empty),
        counter_name=tc.name,
    )


def _shortened(
    before: str, content: str, budget: int, tc: TokenCounter, marker: str, min_tokens: int
) -> str | None:
    """``before`` and the longest head of ``content`` that fits ``budget``, marked as cut.

    None when less than ``min_tokens`` (at least one) of the section's own text would remain.
    Counting the whole text (not summing pieces) keeps the guarantee exact for tokenizers
    whose counts are not additive across a join.
    """

    def cut(keep: int) -> str:
        return cut_text(content, keep, keep_tail=False, marker=marker)

    def fits(keep: int) -> bool:
        return tc.count(before + cut(keep)) <= budget

    keep = _longest_prefix(len(content), fits)
    if keep and tc.count(content[:keep]) >= max(min_tokens, 1):
        return before + cut(keep)
    return None


def _checked(
    budget: int, min_truncated_tokens: int, context: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The event's extra fields, once the arguments are known to be sound."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ConfigError(f"budget must be a non-negative int of tokens, got {budget!r}")
    if min_truncated_tokens < 0:
        raise ConfigError(f"min_truncated_tokens must be >= 0, got {min_truncated_tokens}")
    extra = dict(context or {})
    clash = sorted(_RESERVED_KEYS & extra.keys())
    if clash:
        raise ConfigError(
            f"context keys {clash} would overwrite the event's own fields; rename them"
        )
    return extra


def _emit(result: AssembledPrompt, extra: dict[str, Any], on_event: EventCallback | None) -> None:
    """Log the assembly as one structured record, then hand the same payload to ``on_event``."""
    budget, used = result.budget_tokens, result.used_tokens
    payload: dict[str, Any] = {
        **extra,
        "event": EVENT_NAME,
        "budget_tokens": budget,
        "used_tokens": used,
        "sections_included": list(result.included),
        "sections_truncated": list(result.truncated),
        "sections_dropped": list(result.dropped),
        "sections_empty": list(result.empty),
    }
    logger.info(
        "%s budget=%d used=%d included=%s dropped=%s",
        EVENT_NAME,
        budget,
        used,
        result.included,
        result.dropped,
        extra={"window_budget_event": payload},
    )
    if on_event is not None:
        on_event(payload)
