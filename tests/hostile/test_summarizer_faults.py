"""A summarizer that returns junk, hangs, or is cancelled mid-call never breaks a condense.

Junk and timeouts fall back to the network-free digest (``Summary.fallback_reason`` says
why) or raise ``SummarizerError`` under ``on_summarizer_error="raise"``; a cancelled token
raises ``CancelledByToken`` promptly, from the sync path too. The caller's list is never
touched. Stuck completers block on an event the test releases: no real waiting. "Promptly"
is checked by order, not by the clock: the condense has returned while the stuck call has
not (a wall-clock bound fails whenever the machine is busy).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import Any

import pytest

from window_budget import (
    AssistantMessage,
    BudgetPolicy,
    Model,
    TextBlock,
    UserMessage,
    create_condenser,
)
from window_budget.cancel import CancelledByToken, CancelToken
from window_budget.contract import CompleteOptions, CondenseResult, Context
from window_budget.errors import SummarizerError

MODEL = Model("m", 8_000)
FAST = 0.05  # seconds: the timeout the tests use
GUARD = 30.0  # seconds: how long a stuck call blocks at most, so a broken fix fails, not hangs


def _transcript() -> list[Any]:
    msgs: list[Any] = []
    for i in range(12):
        msgs.append(UserMessage(f"step {i}: rename module_{i}.py " + "detail " * 150))
        msgs.append(AssistantMessage(f"done with module_{i}.py " + "note " * 150))
    return msgs


def _bypassed(**fields: object) -> AssistantMessage:
    """A message whose fields were changed behind its validation, as a careless SDK might."""
    msg = AssistantMessage([TextBlock("placeholder")])
    for name, value in fields.items():
        object.__setattr__(msg, name, value)
    return msg


def _bad_block() -> AssistantMessage:
    block = TextBlock("x")
    object.__setattr__(block, "text", None)
    return AssistantMessage([block])


JUNK: list[tuple[str, Callable[[], object], str]] = [
    ("none", lambda: None, "reply is a NoneType"),
    ("dict", lambda: {"content": "a digest"}, "reply is a dict"),
    ("int", lambda: 42, "reply is a int"),
    ("list", lambda: ["a", "digest"], "reply is a list"),
    ("text-block-none", _bad_block, "text block whose text is not a str"),
    ("content-none", lambda: _bypassed(content=None), "reply content is a NoneType"),
    ("error-stop", lambda: AssistantMessage("half", stop_reason="error"), "reply held no text"),
    ("blank", lambda: "  \n\t ", "empty reply"),
    ("50MB", lambda: "junk " * 10_000_000, "characters is far beyond"),
]


def _sync_completer(make: Callable[[], object]) -> Callable[..., Any]:
    def complete(model: Model, context: Context, options: CompleteOptions | None = None) -> Any:
        return make()

    return complete


def _async_completer(make: Callable[[], object]) -> Callable[..., Any]:
    async def complete(
        model: Model, context: Context, options: CompleteOptions | None = None
    ) -> Any:
        return make()

    return complete


def _run(mode: str, msgs: list[Any], **deps: Any) -> CondenseResult:
    condenser = create_condenser(model=MODEL, **deps)
    if mode == "sync":
        return condenser.run_sync(msgs)
    return asyncio.run(condenser.run(msgs))


def _check_untouched(msgs: list[Any], before: list[Any]) -> None:
    assert len(msgs) == len(before)
    assert all(a is b for a, b in zip(msgs, before, strict=True))


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(("name", "make", "reason"), JUNK, ids=[j[0] for j in JUNK])
def test_junk_replies_fall_back_to_the_local_digest(
    mode: str, name: str, make: Callable[[], object], reason: str
) -> None:
    msgs = _transcript()
    before = list(msgs)
    completer = (
        {"complete_sync": _sync_completer(make)}
        if mode == "sync"
        else {"complete": _async_completer(make)}
    )
    result = _run(mode, msgs, **completer)
    assert result.summary is not None
    assert result.summary.fallback
    assert reason in (result.summary.fallback_reason or "")
    assert "module_0.py" in result.summary.text  # the local digest kept the facts
    assert len(result.plan.dropped) + len(result.plan.kept) == len(msgs)
    assert result.tokens_after <= result.limit
    _check_untouched(msgs, before)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_junk_under_raise_is_a_summarizer_error(mode: str) -> None:
    msgs = _transcript()
    before = list(msgs)
    with pytest.raises(SummarizerError, match="reply is a dict"):
        _run(
            mode,
            msgs,
            complete_sync=_sync_completer(dict),
            policy=BudgetPolicy(on_summarizer_error="raise"),
        )
    _check_untouched(msgs, before)


def test_a_coroutine_from_the_sync_completer_is_closed_and_reported() -> None:
    async def reply() -> AssistantMessage:
        return AssistantMessage("never")

    # filterwarnings=error: an un-closed coroutine would fail this test with a RuntimeWarning.
    result = _run("sync", _transcript(), complete_sync=_sync_completer(reply))
    assert result.summary is not None
    assert "pass an async function as complete=" in (result.summary.fallback_reason or "")


# ------------------------------------------------------------------- stuck calls


class Stuck:
    """A completer that blocks until released (or ``GUARD``, so a broken fix fails, not hangs).

    ``finished`` is set when the call returns: a condense that returned while it is still
    unset did not wait for the call.
    """

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()

    def sync(
        self,
        model: Model,
        context: Context,
        options: CompleteOptions | None = None,
    ) -> AssistantMessage:
        self.started.set()
        self.release.wait(GUARD)
        self.finished.set()
        return AssistantMessage("late digest")

    async def async_(
        self, model: Model, context: Context, options: CompleteOptions | None = None
    ) -> AssistantMessage:
        self.started.set()
        for _ in range(int(GUARD / 0.005)):
            if self.release.is_set():
                break
            await asyncio.sleep(0.005)
        self.finished.set()  # not reached when the call is cancelled
        return AssistantMessage("late digest")

    async def blocking_async(
        self, model: Model, context: Context, options: CompleteOptions | None = None
    ) -> AssistantMessage:
        """An ``async def`` that blocks its own loop with a sync call (a common mistake)."""
        return self.sync(model, context, options)


@pytest.fixture
def stuck() -> Any:
    s = Stuck()
    yield s
    s.release.set()  # let the abandoned worker thread end


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", ["complete_sync", "complete"])
def test_a_stuck_summarizer_times_out_into_the_fallback(stuck: Stuck, mode: str, kind: str) -> None:
    msgs = _transcript()
    before = list(msgs)
    fn = stuck.sync if kind == "complete_sync" else stuck.async_
    result = _run(mode, msgs, policy=BudgetPolicy(summary_timeout=FAST), **{kind: fn})
    assert not stuck.finished.is_set()  # it returned without waiting for the stuck call
    assert result.summary is not None
    assert result.summary.fallback
    assert "no reply within 0.05 s" in (result.summary.fallback_reason or "")
    _check_untouched(msgs, before)


def test_an_async_completer_blocking_its_loop_still_times_out(stuck: Stuck) -> None:
    result = _run(
        "sync",
        _transcript(),
        complete=stuck.blocking_async,
        policy=BudgetPolicy(summary_timeout=FAST),
    )
    assert not stuck.finished.is_set()
    assert result.summary is not None
    assert "no reply within" in (result.summary.fallback_reason or "")


async def test_run_sync_inside_a_running_loop_honours_the_timeout(stuck: Stuck) -> None:
    condenser = create_condenser(
        model=MODEL, complete=stuck.blocking_async, policy=BudgetPolicy(summary_timeout=FAST)
    )
    result = condenser.run_sync(_transcript())  # a notebook cell calling the sync API
    assert not stuck.finished.is_set()
    assert result.summary is not None
    assert result.summary.fallback


def test_a_timeout_under_raise_is_a_summarizer_error(stuck: Stuck) -> None:
    msgs = _transcript()
    with pytest.raises(SummarizerError, match="TimeoutError: no reply within"):
        _run(
            "sync",
            msgs,
            complete_sync=stuck.sync,
            policy=BudgetPolicy(summary_timeout=FAST, on_summarizer_error="raise"),
        )


def test_the_late_reply_is_discarded_and_the_worker_ends(stuck: Stuck) -> None:
    result = _run(
        "sync", _transcript(), complete_sync=stuck.sync, policy=BudgetPolicy(summary_timeout=FAST)
    )
    stuck.release.set()
    assert stuck.finished.wait(GUARD)
    assert result.summary is not None
    assert "late digest" not in result.summary.text


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", ["complete_sync", "complete"])
def test_cancel_returns_promptly_while_the_call_is_stuck(
    stuck: Stuck, mode: str, kind: str
) -> None:
    msgs = _transcript()
    before = list(msgs)
    token = CancelToken()

    def cancel_when_started() -> None:
        if stuck.started.wait(GUARD):
            token.cancel("user pressed esc")

    canceller = threading.Thread(target=cancel_when_started)
    canceller.start()
    fn = stuck.sync if kind == "complete_sync" else stuck.async_
    with pytest.raises(CancelledByToken, match="user pressed esc"):
        _run(mode, msgs, signal=token, **{kind: fn})  # no timeout: only the token stops it
    assert not stuck.finished.is_set()  # it returned before the provider call did
    canceller.join()
    _check_untouched(msgs, before)


def test_a_fast_summarizer_is_unaffected_by_the_timeout() -> None:
    result = _run(
        "sync",
        _transcript(),
        complete_sync=_sync_completer(lambda: "the digest: step 0, rename module_0.py"),
        policy=BudgetPolicy(summary_timeout=30),
        signal=CancelToken(),
    )
    assert result.summary is not None
    assert not result.summary.fallback
    assert "the digest" in result.summary.text


def test_the_callers_context_reaches_the_worker_thread() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("trace", default="lost")
    seen: list[str] = []

    def complete(
        model: Model,
        context: Context,
        options: CompleteOptions | None = None,
    ) -> AssistantMessage:
        seen.append(var.get())
        return AssistantMessage("digest")

    reset = var.set("run-42")
    try:
        _run("sync", _transcript(), complete_sync=complete, policy=BudgetPolicy(summary_timeout=5))
    finally:
        var.reset(reset)
    assert seen
    assert set(seen) == {"run-42"}


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), True, "5", [5]])
def test_summary_timeout_is_validated(value: object) -> None:
    with pytest.raises(ValueError, match=r"^BudgetPolicy\.summary_timeout must be None or a "):
        BudgetPolicy(summary_timeout=value)  # type: ignore[arg-type]


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no")


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (RuntimeError("echo: " + "the whole prompt " * 300_000), "RuntimeError: echo: the whole"),
        (Unprintable(), "Unprintable: <its message could not be read>"),
        (
            ValueError("line one\nline two\r\n# Objective"),
            "ValueError: line one line two # Objective",
        ),
    ],
)
@pytest.mark.parametrize("mode", ["fallback", "raise"])
def test_a_hostile_exception_is_reported_bounded(
    error: Exception, expected: str, mode: str
) -> None:
    def complete(model: Model, context: Context, options: CompleteOptions | None = None) -> Any:
        raise error

    policy = BudgetPolicy(on_summarizer_error=mode)  # type: ignore[arg-type]
    if mode == "raise":
        with pytest.raises(SummarizerError) as info:
            _run("sync", _transcript(), complete_sync=complete, policy=policy)
        reason = str(info.value)
    else:
        result = _run("sync", _transcript(), complete_sync=complete, policy=policy)
        assert result.summary is not None
        reason = result.summary.fallback_reason or ""
    assert expected in reason
    assert len(reason) < 700
    assert "\n" not in reason
