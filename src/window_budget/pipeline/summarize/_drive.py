"""The drivers of the summary flow: the model call, sync or async, with timeout and cancellation.

:func:`~window_budget.pipeline.summarize._flow._summary_flow` holds the logic and no I/O;
it yields a :class:`SummaryRequest` per model call. :func:`drive_async` and :func:`drive_sync`
make the call with the completer the caller gave (async or sync, whichever there is), stop
waiting when ``BudgetPolicy.summary_timeout`` passes or the token is cancelled, and send the
reply (or the exception) back into the flow.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any

from window_budget.cancel import CancelledByToken
from window_budget.contract import CompleteOptions, Context, Model, SummarizeDeps, Summary

__all__ = ["SummaryRequest", "drive_async", "drive_sync"]


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """One model call the summary flow asks for."""

    model: Model
    """The summarizer model."""
    context: Context
    """The brief and the prompt."""
    options: CompleteOptions
    """The output cap, reasoning level, cancel token and tags."""


def _nothing() -> None:
    return None


def _timed_out(timeout: float) -> TimeoutError:
    return TimeoutError(f"no reply within {timeout:g} s (BudgetPolicy.summary_timeout)")


async def _await_with_signal(awaitable: Awaitable[Any], deps: SummarizeDeps) -> Any:
    """Await the model call until it answers, the token is cancelled or the timeout passes."""
    signal = deps.signal
    timeout = deps.policy.summary_timeout
    if signal is None and timeout is None:
        return await awaitable
    task = asyncio.ensure_future(awaitable)
    waiters: set[asyncio.Future[Any]] = {task}
    dispose: Callable[[], None] = _nothing
    if signal is not None:
        loop = asyncio.get_running_loop()
        cancelled = asyncio.Event()

        def on_cancel() -> None:
            loop.call_soon_threadsafe(cancelled.set)

        dispose = signal.add_callback(on_cancel)
        waiters.add(asyncio.ensure_future(cancelled.wait()))
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result()
        if signal is not None and signal.cancelled:
            raise CancelledByToken(signal.reason)
        assert timeout is not None
        raise _timed_out(timeout)
    finally:
        dispose()
        for waiter in waiters:
            waiter.cancel()  # the call too, when we stopped waiting for it (or were cancelled)


def _start_in_thread(call: Callable[[], Any], on_done: Callable[[dict[str, Any]], None]) -> None:
    """Run a sync completer call in a daemon thread, then hand ``on_done`` its outcome.

    Its own daemon thread, not an executor's: a call stuck in a provider must not keep the
    interpreter (or ``asyncio.run``'s executor shutdown) waiting after we gave up on it.
    The caller's context variables (framework callbacks, tracing) travel with it.
    """
    context = contextvars.copy_context()

    def runner() -> None:
        box: dict[str, Any] = {}
        try:
            box["value"] = context.run(call)
        except BaseException as exc:
            box["error"] = exc
        on_done(box)

    threading.Thread(target=runner, name="window-budget-summary", daemon=True).start()


async def _call_sync_completer_async(call: Callable[[], Any], deps: SummarizeDeps) -> Any:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(box: dict[str, Any]) -> None:
        if future.done():
            return  # we stopped waiting (timeout, cancel): the late reply is discarded
        if "error" in box:
            future.set_exception(box["error"])
        else:
            future.set_result(box["value"])

    def on_done(box: dict[str, Any]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
            loop.call_soon_threadsafe(settle, box)

    _start_in_thread(call, on_done)
    return await _await_with_signal(future, deps)


async def _call_async(request: SummaryRequest, deps: SummarizeDeps) -> Any:
    if deps.complete is not None:
        return await _await_with_signal(
            deps.complete(request.model, request.context, request.options), deps
        )
    assert deps.complete_sync is not None
    sync = deps.complete_sync
    return await _call_sync_completer_async(
        lambda: sync(request.model, request.context, request.options), deps
    )


def _call_sync_completer(
    call: Callable[[], Any], deps: SummarizeDeps, *, in_thread: bool = False
) -> Any:
    """Call a sync completer; with a timeout or a token, stop waiting when either fires."""
    signal = deps.signal
    timeout = deps.policy.summary_timeout
    if signal is None and timeout is None and not in_thread:
        return call()  # nothing could interrupt the wait: call on this thread, as before
    settled = threading.Event()
    outcome: dict[str, Any] = {}

    def on_done(box: dict[str, Any]) -> None:
        outcome.update(box)
        settled.set()

    dispose = signal.add_callback(settled.set) if signal is not None else _nothing
    try:
        _start_in_thread(call, on_done)
        finished = settled.wait(timeout)
    finally:
        dispose()
    if signal is not None and signal.cancelled:
        raise CancelledByToken(signal.reason)
    if not finished:
        assert timeout is not None
        raise _timed_out(timeout)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _call_sync(request: SummaryRequest, deps: SummarizeDeps) -> Any:
    if deps.complete_sync is not None:
        sync = deps.complete_sync
        return _call_sync_completer(
            lambda: sync(request.model, request.context, request.options), deps
        )
    assert deps.complete is not None
    complete = deps.complete

    async def coro_factory() -> Any:
        return await _await_with_signal(
            complete(request.model, request.context, request.options), deps
        )

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        in_loop = False
    else:
        in_loop = True
    # A private loop, in a worker thread when called from inside a running loop (a notebook)
    # or when a timeout or token must be able to stop the wait: an async completer that
    # blocks its loop (a sync call inside ``async def``) would stall the loop's own timers.
    return _call_sync_completer(lambda: asyncio.run(coro_factory()), deps, in_thread=in_loop)


def drive_sync(flow: Generator[SummaryRequest, Any, Summary], deps: SummarizeDeps) -> Summary:
    """Run ``flow`` to its summary, making each model call with the sync driver."""
    try:
        request = next(flow)
        while True:
            try:
                reply = _call_sync(request, deps)
            except CancelledByToken:
                raise
            except Exception as exc:
                request = flow.throw(exc)
                continue
            request = flow.send(reply)
    except StopIteration as done:
        result: Summary = done.value
        return result


async def drive_async(
    flow: Generator[SummaryRequest, Any, Summary], deps: SummarizeDeps
) -> Summary:
    """Run ``flow`` to its summary, making each model call with the async driver."""
    try:
        request = next(flow)
        while True:
            try:
                reply = await _call_async(request, deps)
            except CancelledByToken:
                raise
            except Exception as exc:
                request = flow.throw(exc)
                continue
            request = flow.send(reply)
    except StopIteration as done:
        result: Summary = done.value
        return result
