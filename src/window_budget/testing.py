r"""Test doubles for the completer seam, public so users can test their own wiring offline.

:class:`ScriptedCompleter` replays replies in order, records every call, and fails
loudly when it runs out — unlike a fake that silently wraps around.

>>> from window_budget import AssistantMessage, Model

>>> from window_budget.contract import SummarizeDeps

>>> from window_budget.pipeline.summarize import summarize_sync
>>> fake = ScriptedCompleter(["# Objective\nship it"])
>>> s = summarize_sync([UserMessage("ship it")], SummarizeDeps(complete_sync=fake.sync,
...                    model=Model("fake", 8192)))
>>> s.fallback, len(fake.calls)
(False, 1)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from window_budget.contract import CompleteOptions, Context, Model
from window_budget.errors import WindowBudgetError
from window_budget.messages import AssistantMessage, TextBlock, UserMessage

__all__ = ["CompleterCall", "ScriptExhausted", "ScriptedCompleter"]

Reply = str | AssistantMessage | BaseException | Callable[[Context], AssistantMessage | str]


class ScriptExhausted(WindowBudgetError):
    """A scripted completer was called more often than it has replies."""


@dataclass(frozen=True, slots=True)
class CompleterCall:
    """One recorded call."""

    model: Model
    """The model it was asked to run."""
    context: Context
    """The system prompt and messages it received."""
    options: CompleteOptions | None
    """The options it received."""

    @property
    def prompt(self) -> str:
        """The text of the (single) user turn of the call."""
        msg = self.context.messages[-1]
        if isinstance(msg, UserMessage) and isinstance(msg.content, str):
            return msg.content
        return ""


@dataclass
class ScriptedCompleter:
    """Replays ``replies`` in order; an exception in the script is raised at that call.

    A callable in the script is called with the context and its result is the reply.
    Use the instance itself as an async ``CompleteFn`` and ``.sync`` as a ``SyncCompleteFn``.
    """

    replies: Iterable[Reply] = ()
    """The script."""
    calls: list[CompleterCall] = field(default_factory=list)
    """Every call received, in order."""

    def __post_init__(self) -> None:
        self._queue = list(self.replies)
        self._lock = threading.Lock()

    def enqueue(self, *replies: Reply) -> None:
        """Add replies at the end of the script."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def remaining(self) -> int:
        """Replies not used yet."""
        return len(self._queue)

    def sync(
        self, model: Model, context: Context, options: CompleteOptions | None = None
    ) -> AssistantMessage:
        """Sync completer: record the call and return the next reply."""
        with self._lock:
            self.calls.append(CompleterCall(model, context, options))
            if not self._queue:
                raise ScriptExhausted(
                    f"scripted completer has no reply left for call {len(self.calls)}; "
                    "enqueue more replies"
                )
            reply = self._queue.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply) and not isinstance(reply, AssistantMessage):
            reply = reply(context)
        if isinstance(reply, str):
            return AssistantMessage((TextBlock(reply),), model=model.id)
        return reply

    async def __call__(
        self, model: Model, context: Context, options: CompleteOptions | None = None
    ) -> AssistantMessage:
        """Async completer: same as :meth:`sync`."""
        return self.sync(model, context, options)
