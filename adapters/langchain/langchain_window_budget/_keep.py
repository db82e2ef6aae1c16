"""Where a compaction cuts when the user said what to keep, as ``SummarizationMiddleware`` does.

``keep=("messages", N)`` keeps the last N messages; ``("tokens", N)`` the longest tail of at
most N tokens (one message at least, unless there is only one). When the cut lands on a tool
result, it moves *back* to the assistant message that made the call, so the pair stays in
the kept tail; a result whose call is nowhere before it is skipped forward instead (the
core's :func:`~window_budget.pipeline.snap_back`). Works on the core's messages (leading
system messages already set aside).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import Any

from langchain_window_budget.counting import counter_kind
from langchain_window_budget.sizes import KeepRule, SizeTrigger
from window_budget.budget import prefix_tokens
from window_budget.contract import TokenCounter
from window_budget.messages import AgentMessage
from window_budget.pipeline import WindowCondenser, snap_back

__all__ = ["Measure", "UserSizes", "honoured_cut", "keep_cut"]


Measure = Callable[[int], int]
"""Tokens of the messages from an index on (a LangChain messages counter's own figure)."""


def keep_cut(
    messages: Sequence[AgentMessage],
    rule: KeepRule,
    counter: TokenCounter | None,
    measure: Measure | None = None,
) -> int:
    """The index before which ``messages`` are folded so that ``rule`` holds (0: nothing).

    ``measure`` (tokens of ``messages[i:]``) replaces the per-message sums, so a LangChain
    messages counter sizes the tail exactly as ``SummarizationMiddleware`` does.
    """
    n = len(messages)
    if rule.kind == "messages":
        return 0 if n <= rule.size else snap_back(messages, n - rule.size)
    if n == 0:
        return 0
    if measure is None:
        sums = prefix_tokens(messages, counter)
        total = sums[n]

        def measure(i: int) -> int:
            return total - sums[i]

    if measure(0) <= rule.size:
        return 0
    # The first index whose suffix fits (suffix sizes only shrink as the index grows).
    cut = bisect_left(range(n + 1), True, key=lambda i: measure(i) <= rule.size)
    if cut >= n:
        if n == 1:
            return 0
        cut = n - 1
    return snap_back(messages, cut)


def honoured_cut(
    condenser: WindowCondenser,
    core: Sequence[AgentMessage],
    rule: KeepRule | None,
    counter: TokenCounter | None,
    *,
    fired: bool,
    forced: bool,
    pinned_tokens: int,
    measure: Measure | None = None,
) -> int | None:
    """Where the user's ``keep`` cuts this run, or None to leave the cut to the core.

    A trigger that fired cuts where ``keep`` says (0: nothing older to fold, no-op, as
    ``SummarizationMiddleware`` returns None, unless the window itself is exceeded).
    Without one, ``keep`` is honoured when the window guard fires; when it would fold
    nothing there, the core makes the request fit (shortening what cannot fit).
    """
    if rule is None:
        return None
    cut = keep_cut(core, rule, counter, measure)
    if cut and (fired or forced):
        return cut
    decision = condenser.decide(core, pinned_tokens=pinned_tokens)
    if decision.result is not None and decision.result.reason == "under-budget":
        # Under the window: a fired trigger with nothing older to fold does nothing.
        return 0 if fired and not forced else None
    return cut or None  # over the window: keep's cut, else the core makes it fit


class UserSizes:
    """A user's ``trigger`` and ``keep``: when a run compacts, and where it cuts.

    ``blind``: a counter that gives one figure for every text (see ``size_blind``): it
    still decides the token trigger, asked once about the whole transcript as
    ``SummarizationMiddleware`` asks its counter (the higher of its figure and the
    estimate, which reported usage anchors, counts).
    ``messages_counter``: the user's counter, when it is a LangChain messages counter; it
    then sizes ``keep=("tokens", N)`` on the messages themselves.
    """

    def __init__(
        self,
        trigger: SizeTrigger | None,
        keep: KeepRule | None,
        *,
        blind: TokenCounter | None = None,
        messages_counter: object = None,
    ) -> None:
        self.trigger = trigger
        """The trigger's clauses; None: the policy's gate alone decides."""
        self.keep = keep
        """What stays verbatim; None: the core's own slice."""
        self._blind = blind
        self._count: Callable[[list[Any]], int] | None = None
        if callable(messages_counter) and counter_kind(messages_counter) == "messages":
            self._count = messages_counter

    def fired(self, messages: Sequence[Any], estimate: Callable[[], int]) -> bool:
        """True when the trigger holds for ``messages`` (``estimate``: their token figure)."""
        trigger = self.trigger
        if trigger is None:
            return False
        tokens = None
        if trigger.needs_tokens():
            tokens = estimate()
            if self._blind is not None:  # its own figure, the way the peer asks for it
                whole = (
                    self._count(list(messages))
                    if self._count is not None
                    else self._blind.count("\n".join(m.text for m in messages))
                )
                tokens = max(tokens, int(whole))
        return trigger.met(len(messages), tokens)

    def cut(
        self,
        condenser: WindowCondenser,
        core: Sequence[AgentMessage],
        natives: Sequence[Any],
        counter: TokenCounter | None,
        *,
        fired: bool,
        forced: bool,
        pinned_tokens: int,
    ) -> int | None:
        """Where this run cuts (see :func:`honoured_cut`); ``natives`` match ``core``."""
        count = self._count
        measure = None if count is None else (lambda i: int(count(list(natives[i:]))))
        return honoured_cut(
            condenser,
            core,
            self.keep,
            counter,
            fired=fired,
            forced=forced,
            pinned_tokens=pinned_tokens,
            measure=measure,
        )
