"""The slice: where to cut so the tail stays verbatim and no tool call loses its result.

``plan_slice`` builds forward prefix sums, binary-searches the first index whose tail
fits ``keep_recent``, then snaps the cut forward to the next *legal* cut. A cut is
illegal inside a tool group — an assistant message with one or more (parallel) tool
calls, through the last of their results — and at any tool result, matched or
orphaned, so the kept tail never starts with a result a provider would reject.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from window_budget.budget import ToolGroups, ToolShape, prefix_tokens
from window_budget.contract import BudgetPolicy, CondensePlan, TokenCounter
from window_budget.digest import is_digest
from window_budget.messages import AgentMessage, ToolResultMessage, UserMessage

__all__ = [
    "blocked_cuts",
    "last_user_turn_start",
    "plan_at",
    "plan_force_slice",
    "plan_slice",
    "snap_back",
    "turn_start",
]


def blocked_cuts(messages: Sequence[AgentMessage | ToolShape]) -> list[bool]:
    """``result[i]`` is True when cutting before ``messages[i]`` would split a tool group.

    Also True at every tool result, so a tail never begins with one. Calls that never
    got a result and results whose call is missing are tolerated: the first ends its
    group at the assistant message, the second is just a position the cut skips. The
    groups are the shared ``ToolGroups``; the list has ``n + 1`` entries (cutting after
    the last message is always legal).

    The one answer to "where may this list be cut" for the core and both adapters: an
    adapter that has not converted its messages passes one :class:`ToolShape` per message.

    >>> from window_budget.budget import ToolShape
    >>> blocked_cuts([ToolShape(("c1",)), ToolShape(), ToolShape(result=True, answers="c1")])
    [False, True, True, False]
    """
    return [*ToolGroups(messages).blocked, False]


def snap_back(messages: Sequence[AgentMessage | ToolShape], cut: int) -> int:
    """``cut`` moved back so the tool group it falls in stays whole in the kept tail.

    For a caller that keeps "the last N": a cut at a tool result (or inside a group) moves
    back to the assistant message whose call the result answers — the nearest, when a run
    of results answers several — and on, past any group that one sits inside. A run of
    results that answers no call is skipped forward instead (no call to keep them with).
    The pairing is :class:`~window_budget.budget._groups.ToolGroups`'s, as in
    :func:`blocked_cuts`; the answer is a legal cut, or 0.

    >>> from window_budget.budget import ToolShape
    >>> call, result = ToolShape(("c1",)), ToolShape(result=True, answers="c1")
    >>> snap_back([ToolShape(), call, result, ToolShape()], 2)
    1
    >>> snap_back([ToolShape(), ToolShape(result=True, answers="gone"), ToolShape()], 1)
    2
    """
    groups = ToolGroups(messages)
    blocked, n = groups.blocked, len(groups)
    if cut >= n or not blocked[cut]:
        return cut
    end = cut
    while end < n and _is_result(messages[end]):
        end += 1
    owners = [o for o in map(groups.owner, range(cut, end)) if o is not None]
    if end > cut and not owners:  # results that answer no call: past them
        while end < n and blocked[end]:
            end += 1
        return end
    back = max(owners, default=cut)
    while back > 0 and blocked[back]:
        back -= 1
    return back


def _is_result(message: AgentMessage | ToolShape) -> bool:
    if isinstance(message, ToolShape):
        return message.result
    return isinstance(message, ToolResultMessage)


def plan_at(messages: Sequence[AgentMessage], cut: int) -> CondensePlan:
    """The plan for cutting before ``messages[cut]`` (0 means nothing dropped)."""
    return CondensePlan(cut, tuple(messages[cut:]), tuple(messages[:cut]))


def _snap(blocked: Sequence[bool], start: int, n: int) -> int:
    cut = start
    while cut < n and blocked[cut]:
        cut += 1
    if cut < n:
        return cut
    # Snapping forward ate the whole transcript: the newest group alone is larger than the
    # tail budget. Keep that group (the caller shortens it to fit) rather than folding
    # the latest turn into the digest or giving up.
    cut = min(start, n) - 1
    while cut > 0 and blocked[cut]:
        cut -= 1
    return max(cut, 0)


def plan_slice(
    messages: Sequence[AgentMessage],
    policy: BudgetPolicy,
    *,
    counter: TokenCounter | None = None,
    prefix: Sequence[int] | None = None,
    tail_budget: int | None = None,
    blocked: Sequence[bool] | None = None,
) -> CondensePlan:
    """Split ``messages`` into a dropped head and a verbatim tail of about ``keep_recent``.

    Args:
        messages: the transcript (not modified).
        policy: ``keep_recent`` and ``keep_unit`` decide the tail's size.
        counter: exact counter for the prefix sums (heuristic when None).
        prefix: precomputed prefix sums (e.g. from a ``TokenLedger``), length n + 1.
        tail_budget: overrides ``keep_recent`` (the condenser lowers it to make room).
        blocked: precomputed :func:`blocked_cuts` (e.g. from a ``TokenLedger``).

    Returns:
        ``CondensePlan`` with ``cut == 0`` when the transcript fits in the tail or has no
        legal cut.

    >>> from window_budget.messages import UserMessage
    >>> msgs = [UserMessage("x" * 60) for _ in range(10)]   # 21 tokens each
    >>> plan_slice(msgs, BudgetPolicy(keep_recent=64)).cut
    7

    """
    n = len(messages)
    budget = policy.keep_recent if tail_budget is None else tail_budget
    if policy.keep_unit == "turns":
        start = turn_start(messages, budget)
    elif policy.keep_unit == "messages":
        start = n - budget
    else:
        sums = prefix if prefix is not None else prefix_tokens(messages, counter)
        if len(sums) != n + 1:
            raise ValueError(f"prefix has {len(sums)} entries; expected {n + 1}")
        total = sums[n]
        start = 0 if total <= budget else bisect_left(sums, total - budget)
    if start <= 0 or n == 0:
        return plan_at(messages, 0)
    if blocked is None:
        blocked = blocked_cuts(messages)
    return plan_at(messages, _snap(blocked, start, n))


def turn_start(messages: Sequence[AgentMessage], turns: int) -> int:
    """Index where the last ``turns`` turns begin: a turn is a user message and all that answers it.

    A digest is not a user turn. Fewer user messages than ``turns`` (or ``turns == 0`` with
    none after the last one) keep everything: 0. ``turns == 0`` cuts after the last message.
    """
    if turns <= 0:
        return len(messages)
    seen = 0
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if isinstance(msg, UserMessage) and not is_digest(msg):
            seen += 1
            if seen == turns:
                return i
    return 0


def last_user_turn_start(messages: Sequence[AgentMessage]) -> int:
    """Index of the last real user message (a digest does not count), or -1."""
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if isinstance(msg, UserMessage) and not is_digest(msg):
            return i
    return -1


def plan_force_slice(
    messages: Sequence[AgentMessage],
    *,
    blocked: Sequence[bool] | None = None,
    policy: BudgetPolicy | None = None,
    prefix: Sequence[int] | None = None,
    counter: TokenCounter | None = None,
) -> CondensePlan:
    """The manual ``/compact`` plan: fold everything before the kept tail.

    With a ``policy``, the tail is its ``keep_recent`` (like :func:`plan_slice`), so an
    agent session with one user prompt and a hundred tool steps still folds. When that
    tail holds the whole transcript (or no policy is given), everything before the last
    user turn is folded instead. Cutting at a legal cut keeps every tool call with its
    result. ``cut == 0`` when there is nothing to fold. ``blocked`` and ``prefix`` are
    precomputed :func:`blocked_cuts` and prefix sums (e.g. from a ``TokenLedger``).
    """
    blocked = blocked_cuts(messages) if blocked is None else blocked
    if policy is not None:
        plan = plan_slice(messages, policy, counter=counter, prefix=prefix, blocked=blocked)
        if plan.cut > 0 and not all(is_digest(m) for m in messages[: plan.cut]):
            return plan
    cut = last_user_turn_start(messages)
    if cut > 0 and blocked[cut]:
        # A user message inside a tool group (unusual, but seen in aborted runs).
        cut = _snap(blocked, cut, len(messages))
    return plan_at(messages, max(cut, 0))
