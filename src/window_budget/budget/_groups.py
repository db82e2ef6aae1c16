"""Tool-call groups, computed once: which assistant message each tool result answers.

A *tool group* is an assistant message with one or more (parallel) tool calls and every
result that answers them, wherever those results fall after it. The slice (which cuts
would split a group), the ledger (the same, kept up to date as messages are appended),
masking and the fact ledger (which call a result answers) and category trimming (which
messages leave together) all read one :class:`ToolGroups` instead of pairing ids each
their own way.

The pairing rules, the same for every reader:

- a result answers the **nearest earlier** call with its id. Providers and transcript
  formats reuse ids (counters restarted per turn, ``call_0`` on every reply), and a
  result always answers the request that was just made, never an older one with the
  same name;
- a result whose call is not earlier in the transcript is an *orphan*: it answers
  nothing and forms no group, though a cut still never starts at it;
- a call whose result never came ends its group at the assistant message;
- several results for one call (a retried tool) all join its group.

An adapter that has not converted its messages yet indexes :class:`ToolShape` values instead
(the calls a message makes, the call it answers): the same rules, the same answers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from window_budget.messages import AgentMessage, AssistantMessage, ToolCallBlock, ToolResultMessage

__all__ = ["ToolGroups", "ToolShape"]


@dataclass(frozen=True, slots=True)
class ToolShape:
    """What the tool pairing reads of one message, in no framework's terms.

    An adapter builds one per native message when it needs the groups before (or without)
    converting; :class:`ToolGroups` pairs shapes exactly as it pairs core messages.
    """

    calls: tuple[str, ...] = ()
    """Ids of the tool calls the message makes (an assistant message)."""
    result: bool = False
    """True for a tool result, matched or not (a cut never starts at one)."""
    answers: str | None = None
    """Id of the call a result answers (None: it names none and answers nothing)."""


class ToolGroups:
    """The tool groups of a transcript, indexed once as its messages are appended.

    :meth:`extend` costs what it appends: each message is looked at once, and each cut
    position is marked blocked at most once however many parallel results reach over it
    (a group of 20,000 parallel calls is linear, not quadratic).

    >>> from window_budget.messages import UserMessage
    >>> call = AssistantMessage([ToolCallBlock("c1", "bash", {"cmd": "ls"})])
    >>> result = ToolResultMessage("c1", "bash", "ok")
    >>> groups = ToolGroups([UserMessage("go"), call, UserMessage("hm"), result])
    >>> groups.owner(3), groups.results(1), groups.units()
    (1, (3,), [[0], [1, 3], [2]])
    >>> groups.blocked   # no cut inside the group, none at a result
    [False, False, True, True]
    """

    __slots__ = ("_answers", "_calls", "_left", "_results", "blocked", "steps")

    def __init__(self, messages: Iterable[AgentMessage | ToolShape] = ()) -> None:
        self._calls: dict[str, tuple[int, ToolCallBlock | None]] = {}
        # Per matched result: the index of the assistant message and the call it answers
        # (None for a call indexed from a shape, which carries only its id).
        self._answers: dict[int, tuple[int, ToolCallBlock | None]] = {}
        self._results: dict[int, list[int]] = {}
        # ``_left[k] == k`` while position k is not yet inside a group; once it is, a link
        # to the left over positions already inside one, so blocking a group's span skips
        # what earlier results blocked (a union-find over positions, path-compressed).
        self._left: list[int] = []
        self.blocked: list[bool] = []
        """Per message, True when cutting just before it would split a tool group or start
        the kept tail at a tool result. Treat as read-only."""
        self.steps = 0
        """Positions walked while blocking spans (for tests that check the work stays linear)."""
        self.extend(messages)

    def __len__(self) -> int:
        """How many messages are indexed."""
        return len(self.blocked)

    def extend(self, messages: Iterable[AgentMessage | ToolShape]) -> None:
        """Index messages (or their shapes) appended to the transcript (each is looked at once)."""
        calls, answers, results = self._calls, self._answers, self._results
        blocked, left = self.blocked, self._left
        j = len(blocked)
        for msg in messages:
            blocked.append(False)
            left.append(j)
            answered: str | None = None
            if isinstance(msg, AssistantMessage):
                for call in msg.tool_calls:
                    calls[call.id] = (j, call)
            elif isinstance(msg, ToolResultMessage):
                blocked[j] = True
                answered = msg.tool_call_id
            elif isinstance(msg, ToolShape):
                for call_id in msg.calls:
                    calls[call_id] = (j, None)
                blocked[j] = msg.result
                answered = msg.answers if msg.result else None
            if answered is not None:
                hit = calls.get(answered)
                if hit is not None:
                    owner = hit[0]
                    answers[j] = hit
                    if owner in results:
                        results[owner].append(j)
                    else:
                        results[owner] = [j]
                    if owner < j - 1:  # a result right after its call blocks nothing more
                        self._block_span(owner, j)
            j += 1

    def _block_span(self, owner: int, result: int) -> None:
        """Block every cut strictly between ``owner`` and ``result``, skipping blocked runs."""
        left, blocked = self._left, self.blocked
        k, steps = result - 1, 0
        while k > owner:
            steps += 1
            nxt = left[k]
            if nxt == k:
                blocked[k] = True
                k -= 1
            else:
                k = nxt
        # Everything after ``k`` up to ``result`` is inside a group now: walk the same path
        # again pointing each position straight at ``k`` (path compression), so no later
        # walk crosses it again.
        w = result - 1
        while w > k:
            nxt = left[w]
            left[w] = k
            w = w - 1 if nxt == w else nxt
        self.steps += steps

    def owner(self, index: int) -> int | None:
        """Index of the assistant message whose call the result at ``index`` answers.

        None for an orphaned result and for any message that is not a tool result.
        """
        hit = self._answers.get(index)
        return None if hit is None else hit[0]

    def call(self, index: int) -> ToolCallBlock | None:
        """The call block the result at ``index`` answers.

        None when it answers none, and when the call was indexed from a :class:`ToolShape`.
        """
        hit = self._answers.get(index)
        return None if hit is None else hit[1]

    def results(self, index: int) -> tuple[int, ...]:
        """Indexes of the results answering the calls of the assistant message at ``index``."""
        return tuple(self._results.get(index, ()))

    def units(self) -> list[list[int]]:
        """Indexes that leave together, in order of their first message.

        Each message is a unit of its own, except that every matched result joins the
        unit of the message whose call it answers.
        """
        answers = self._answers
        unit_of: dict[int, int] = {}
        units: list[list[int]] = []
        for j in range(len(self.blocked)):
            hit = answers.get(j)
            if hit is not None:
                units[unit_of[hit[0]]].append(j)
            else:
                unit_of[j] = len(units)
                units.append([j])
        return units
