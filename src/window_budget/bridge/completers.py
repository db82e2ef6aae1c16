"""The completer pair (async and sync) built from a framework's model calls, with retries."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol, TypeVar

from window_budget.bridge.retry import next_attempt
from window_budget.contract import CompleteFn, CompleteOptions, Context, Model, SyncCompleteFn
from window_budget.messages import AssistantMessage

P = TypeVar("P")
"""A framework's prompt (its list of messages)."""
R = TypeVar("R")
"""A framework's reply object."""


class ModelCalls(Protocol[P, R]):
    """How one framework's model is called for a summary: the part an adapter writes."""

    def prompt(self, context: Context) -> P:
        """The summary request in the framework's messages."""
        ...

    def call(self, prompt: P, options: CompleteOptions | None) -> R:
        """Call the model, blocking (tags, output cap: the framework's business)."""
        ...

    async def acall(self, prompt: P, options: CompleteOptions | None) -> R:
        """Call the model on the event loop."""
        ...

    def reply(self, reply: R, model: Model) -> AssistantMessage:
        """The core's view of the model's reply (its text, its usage when trusted)."""
        ...


def make_completers(
    calls: ModelCalls[P, R], *, timeout: float | None = None
) -> tuple[CompleteFn, SyncCompleteFn]:
    """The core's ``(complete, complete_sync)`` pair over a framework's model calls.

    Both check the run's cancel token before calling out (a cancelled run makes no model
    call). A transient failure (rate limit, timeout, 5xx) is retried after a bounded wait
    that never ends past ``timeout`` (the policy's ``summary_timeout``), and a context
    overflow at once with a smaller request (:mod:`window_budget.bridge.retry`); anything
    else propagates. The core's summarizer applies the timeout and watches the token during
    the call, and falls back to the network-free digest on an empty or failed reply.
    """

    async def complete(
        model: Model, context: Context, options: CompleteOptions | None = None
    ) -> AssistantMessage:
        started, attempt = time.monotonic(), 0
        while True:
            if options is not None and options.signal is not None:
                options.signal.raise_if_cancelled()
            attempt += 1
            try:
                return calls.reply(await calls.acall(calls.prompt(context), options), model)
            except Exception as exc:
                step = next_attempt(context, exc, attempt, started, timeout)
                if step is None:
                    raise
                context, delay = step
                await asyncio.sleep(delay)

    def complete_sync(
        model: Model, context: Context, options: CompleteOptions | None = None
    ) -> AssistantMessage:
        started, attempt = time.monotonic(), 0
        while True:
            if options is not None and options.signal is not None:
                options.signal.raise_if_cancelled()
            attempt += 1
            try:
                return calls.reply(calls.call(calls.prompt(context), options), model)
            except Exception as exc:
                step = next_attempt(context, exc, attempt, started, timeout)
                if step is None:
                    raise
                context, delay = step
                time.sleep(delay)

    return complete, complete_sync
