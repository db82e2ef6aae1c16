"""View planning: what of a stored conversation fits a limit when no digest can be shown.

A memory that hands an LLM a *view* of its store (the store keeps every message) shows
``[pinned, digest, tail]`` when it can. When a caller's prefix leaves no room for a digest,
or the digest would crowd out verbatim messages, the view is the largest **verbatim
suffix** that fits, as a plain buffer memory would show; when not even the newest message
fits verbatim, the newest turn (its tool group whole) is cut down to fit. :func:`plan_view`
answers which, on the core's messages; the adapter builds its framework's messages from
the plan. Planning only: nothing is modified, nothing is counted twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from window_budget.budget import estimate_message_tokens
from window_budget.contract import TokenCounter
from window_budget.digest import is_digest
from window_budget.errors import BudgetError
from window_budget.messages import AgentMessage, UserMessage
from window_budget.pipeline._fit import fit_messages
from window_budget.pipeline._slice import blocked_cuts

__all__ = ["ViewPlan", "plan_view"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewPlan:
    """Which messages of a body a view shows when it shows no digest (see :func:`plan_view`)."""

    start: int
    """Index in the body of the first message shown."""
    suffix: bool
    """True: ``body[start:]`` verbatim fits (the largest such suffix). False: nothing fits
    verbatim; the newest turn is shown, cut down where :attr:`shortened` says (the caller
    checks the result: it may still not fit)."""
    resumed: bool
    """True when the shown messages do not open with a user message: the caller puts its
    resumed marker first (its cost is counted in the plan)."""
    messages: tuple[AgentMessage, ...] = ()
    """What is shown of ``body[start:]``: the body's own messages, cut-down copies at
    :attr:`shortened`."""
    shortened: tuple[int, ...] = ()
    """Indexes in :attr:`messages` of the cut-down copies."""
    length: int = 0
    """How many messages the body has."""
    newest_user: int | None = None
    """Index in the body of its newest user message (None: it has none)."""

    def crowds_out(self, verbatim: int) -> bool:
        """True when this verbatim suffix shows more than ``verbatim`` messages.

        A digest view that keeps fewer verbatim messages than the suffix would (and not
        the newest user turn whole) is *squeezed*: the suffix is the better view.
        """
        return self.suffix and len(self.messages) > verbatim

    def squeezed_by(self, cut: int) -> bool:
        """True when a digest view cutting the body at ``cut`` is squeezed (see :meth:`crowds_out`).

        Decided from the plan alone, before any summary call: the cut folds the newest user
        message, and the tail it keeps is shorter than this verbatim suffix.
        """
        newest = self.newest_user
        return newest is not None and cut > newest and self.crowds_out(self.length - cut)


def plan_view(
    body: Sequence[AgentMessage],
    room: int,
    *,
    counter: TokenCounter | None = None,
    resumed_tokens: int = 0,
) -> ViewPlan:
    """The largest verbatim suffix of ``body`` that fits ``room``, else the newest turn cut down.

    Args:
        body: the stored conversation after its pinned system messages (not modified).
        room: tokens the shown messages may take (the limit less the pinned messages and
            the caller's prefix).
        counter: the memory's counter (the heuristic when None).
        resumed_tokens: what the caller's resumed marker costs; a view that does not
            open with a user message is counted with it.

    Returns:
        A :class:`ViewPlan`. The suffix never opens inside a tool group or on a tool
        result (:func:`~window_budget.pipeline.blocked_cuts`) and never reaches back past
        a digest; the newest turn starts at the last legal cut before the last message.

    >>> from window_budget.messages import AssistantMessage
    >>> body = [UserMessage("x" * 360), AssistantMessage("ok"), UserMessage("and now?")]
    >>> plan = plan_view(body, 20)
    >>> plan.start, plan.suffix, plan.resumed
    (1, True, True)

    """
    blocked = blocked_cuts(body)
    n = len(body)
    newest_user = next((i for i in range(n - 1, -1, -1) if isinstance(body[i], UserMessage)), None)
    best: int | None = None
    total = 0
    for i in range(n - 1, -1, -1):
        if is_digest(body[i]):
            break
        total += estimate_message_tokens(body[i], counter)
        if total > room:
            break
        if blocked[i]:
            continue
        lead = 0 if isinstance(body[i], UserMessage) else resumed_tokens
        if total + lead <= room:
            best = i
    if best is not None:
        return ViewPlan(
            start=best,
            suffix=True,
            resumed=not isinstance(body[best], UserMessage),
            messages=tuple(body[best:]),
            length=n,
            newest_user=newest_user,
        )
    if not body:
        return ViewPlan(start=0, suffix=False, resumed=False)
    start = n - 1
    while start > 0 and blocked[start]:
        start -= 1  # a tool result needs the call that asked for it
    turn = list(body[start:])
    resumed = not isinstance(turn[0], UserMessage)
    try:
        fitted, shortened = fit_messages(
            turn, max(room - (resumed_tokens if resumed else 0), 0), counter
        )
    except BudgetError:
        fitted, shortened = [], ()
    if not fitted:  # nothing can be cut to fit: the turn as it is (the caller says why)
        fitted, shortened = turn, ()
    return ViewPlan(
        start=start,
        suffix=False,
        resumed=resumed,
        messages=tuple(fitted),
        shortened=tuple(shortened),
        length=n,
        newest_user=newest_user,
    )
