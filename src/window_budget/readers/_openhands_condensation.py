"""OpenHands condensations: which events the model no longer sees, and where the summary goes.

A ``condensation`` action forgets events by ``forgotten_event_ids`` or a
``forgotten_events_start_id``..``end_id`` range (``pruned_*`` in some versions) and may put
a summary at ``summary_offset`` of the events left. Ranges are kept as merged intervals,
never expanded: ten bytes of file can name 10**12 events.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from functools import partial
from typing import Any

from window_budget.messages import AgentMessage, CompactionSummaryMessage
from window_budget.readers._base import (
    Collector,
)
from window_budget.readers._openhands_events import Events, is_id
from window_budget.readers._records import (
    tag,
)

__all__ = ["Forgotten", "condensed_view", "is_condensation"]


def is_condensation(event: Any) -> bool:
    """True for a ``condensation`` action (OpenHands' condenser forgot events there)."""
    return isinstance(event, Mapping) and tag(event.get("action")) == "condensation"


class Forgotten:
    """The event ids condensations forget, as listed ids and merged ``start..end`` ranges.

    A range is never expanded: a ten-byte ``forgotten_events_end_id`` can name 10**12
    events, so membership is a binary search over the merged ranges.
    """

    def __init__(self) -> None:
        self.ids: set[int] = set()
        self.spans: list[tuple[int, int]] = []
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, args: Mapping[str, Any]) -> None:
        """Take in what one condensation forgets (``pruned_*`` is another spelling of it)."""
        for prefix in ("forgotten", "pruned"):
            ids = args.get(f"{prefix}_event_ids")
            if isinstance(ids, list):
                self.ids.update(i for i in ids if is_id(i))
            start, end = args.get(f"{prefix}_events_start_id"), args.get(f"{prefix}_events_end_id")
            if is_id(start) and is_id(end) and start <= end:
                self.spans.append((start, end))

    def merge(self) -> None:
        """Merge overlapping and adjacent ranges, for :meth:`__contains__`."""
        self.starts, self.ends = [], []
        for start, end in sorted(self.spans):
            if self.ends and start <= self.ends[-1] + 1:
                self.ends[-1] = max(self.ends[-1], end)
            else:
                self.starts.append(start)
                self.ends.append(end)

    def __contains__(self, number: int) -> bool:
        if number in self.ids:
            return True
        at = bisect_right(self.starts, number) - 1
        return at >= 0 and number <= self.ends[at]


def condensed_view(
    numbered: list[tuple[int, Any]],
    last: int,
    built: Events,
    archive: Events,
    collector: Collector,
) -> list[AgentMessage]:
    """The model's view after the condensations: what is not forgotten, the summary placed.

    ``numbered`` is every event with its 1-based number, ``last`` the number of the last
    condensation. Forgotten events are read into ``archive``, the rest into ``built``; a
    malformed event goes to ``collector``.
    """
    forgotten = Forgotten()
    summary: tuple[str, int] | None = None
    for _, event in numbered:
        if is_condensation(event):
            args = event.get("args")
            args = args if isinstance(args, Mapping) else {}
            forgotten.add(args)
            text, offset = args.get("summary"), args.get("summary_offset")
            if isinstance(text, str) and isinstance(offset, int) and offset >= 0:
                summary = (text, offset)
    forgotten.merge()
    live: list[tuple[int, Any]] = []
    for index, event in numbered:
        if is_condensation(event):
            built.ignored += 1
        elif isinstance(event, Mapping) and is_id(event.get("id")) and event["id"] in forgotten:
            collector.guard(index, partial(archive.add, event))
        else:
            live.append((index, event))
    # Messages each live event produced, to place the summary by event offset and to count
    # the kept ones that predate the condensation.
    spans: list[tuple[int, int]] = []
    for index, event in live:
        before = len(built.out)
        collector.guard(index, partial(built.add, event))
        spans.append((index, len(built.out) - before))
    if summary is None:
        return built.out
    text, offset = summary
    at = sum(n for _, n in spans[:offset])
    stale = sum(n for index, n in spans[offset:] if index < last)
    return [*built.out[:at], CompactionSummaryMessage(text, kept_count=stale), *built.out[at:]]
