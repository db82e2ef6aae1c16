"""Retries of a summary call, for every framework: which failures are retried, how, how often."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.providers import APIStatusError, RateLimitError
from window_budget.bridge import make_completers, retry
from window_budget.cancel import CancelledByToken, CancelToken
from window_budget.contract import CompleteOptions, Context, Model
from window_budget.messages import AssistantMessage, TextBlock, UserMessage, message_text

MODEL = Model("m", 10_000)


def _context(chars: int = 2000) -> Context:
    return Context(system_prompt="brief", messages=(UserMessage("x" * chars),))


class Calls:
    """Model calls that raise ``errors`` in turn, then answer; each request is recorded."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.prompts: list[str] = []

    def prompt(self, context: Context) -> str:
        return "\n\n".join(message_text(m) for m in context.messages)

    def call(self, prompt: str, options: CompleteOptions | None) -> str:
        self.prompts.append(prompt)
        if self.errors:
            raise self.errors.pop(0)
        return "# Objective\ndone"

    async def acall(self, prompt: str, options: CompleteOptions | None) -> str:
        return self.call(prompt, options)

    def reply(self, reply: str, model: Model) -> AssistantMessage:
        return AssistantMessage((TextBlock(reply),), model=model.id)


@pytest.fixture(autouse=True)
def _no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "RETRY_DELAYS", (0.0, 0.0))


class ModelRateLimitError(Exception):
    is_retryable = True


class ModelAuthenticationError(Exception):
    is_retryable = False


class APITimeoutError(Exception):
    """Named as providers name a timeout, with no status."""


class ContextOverflowError(Exception):
    """Named as LangChain names an overflow, whatever its message."""


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (RateLimitError("slow down"), True),
        (RateLimitError("overloaded", status_code=529), True),
        (RateLimitError("server", status_code=500), True),
        (RateLimitError("timeout", status_code=408), True),
        (RateLimitError("conflict", status_code=409), True),
        (RateLimitError("bad key", status_code=401), False),
        (RateLimitError("bad request", status_code=400), False),
        (APIStatusError("busy", status_code=503), True),
        (APIStatusError("gone", status_code=404), False),
        (TimeoutError("read timed out"), True),
        (ConnectionError("reset"), True),
        (APITimeoutError("no status"), True),
        (ModelRateLimitError("429"), True),
        (ModelAuthenticationError("timeout in the name is not enough"), False),
        (ValueError("bad arguments"), False),
        (RuntimeError("summarizer is down"), False),
    ],
)
def test_which_failures_are_transient(exc: Exception, transient: bool) -> None:
    assert retry.is_transient(exc) is transient


@pytest.mark.parametrize(
    ("exc", "overflow"),
    [
        (RuntimeError("This model's maximum context length is 8192 tokens"), True),
        (RuntimeError("prompt is too long: 210000 tokens > 200000 maximum"), True),
        (RuntimeError("Error code: 400 - context_length_exceeded"), True),
        (ContextOverflowError("400"), True),
        (RateLimitError("slow down"), False),
        (RuntimeError("bad key"), False),
    ],
)
def test_which_failures_are_overflows(exc: Exception, overflow: bool) -> None:
    assert retry.is_overflow(exc) is overflow


def test_an_overflow_is_retried_at_once_with_the_middle_cut_out() -> None:
    text = "".join(f"{i:05d}" for i in range(400))  # 2,000 characters, each place told apart
    context = Context(system_prompt="brief", messages=(UserMessage(text),))
    step = retry.next_attempt(context, _overflow(), 1, 0.0, None)
    assert step is not None
    smaller, delay = step
    assert delay == 0.0
    assert smaller.system_prompt == "brief"
    (only,) = smaller.messages
    shrunk = message_text(only)
    assert retry.OMITTED in shrunk
    front, _, back = shrunk.partition(retry.OMITTED)
    assert text.startswith(front)
    assert text.endswith(back)
    assert len(front) + len(back) == len(text) // 2
    assert len(front) < len(back)  # the recent end is the larger part kept


def _overflow() -> Exception:
    return RuntimeError("maximum context length exceeded")


def test_a_request_too_short_to_shrink_is_given_up() -> None:
    assert retry.next_attempt(_context(300), _overflow(), 1, 0.0, None) is None


def test_three_calls_at_most() -> None:
    exc = RateLimitError("slow down")
    assert retry.next_attempt(_context(), exc, 2, time.monotonic(), None) is not None
    assert retry.next_attempt(_context(), exc, 3, time.monotonic(), None) is None


def test_a_wait_past_the_timeout_gives_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "RETRY_DELAYS", (1.0, 4.0))
    exc, now = RateLimitError("slow down"), time.monotonic()
    assert retry.next_attempt(_context(), exc, 1, now, 2.0) == (_context(), 1.0)
    assert retry.next_attempt(_context(), exc, 2, now, 2.0) is None  # 4 s would pass the 2 s
    assert retry.next_attempt(_context(), exc, 1, now - 1.5, 2.0) is None


@given(
    attempt=st.integers(1, 10),
    status=st.integers(100, 599),
    chars=st.integers(0, 5000),
    overflow=st.booleans(),
)
def test_a_retry_never_grows_the_request_nor_exceeds_three_calls(
    attempt: int, status: int, chars: int, overflow: bool
) -> None:
    exc = (
        RuntimeError("maximum context length")
        if overflow
        else RateLimitError("x", status_code=status)
    )
    step = retry.next_attempt(_context(chars), exc, attempt, time.monotonic(), None)
    if attempt >= retry.ATTEMPTS:
        assert step is None
    if step is not None:
        size = sum(len(message_text(m)) for m in step[0].messages)
        assert size <= chars


# -- the completer pair drives it ---------------------------------------------------------


@pytest.mark.parametrize("use_async", [False, True])
def test_the_completers_retry_a_transient_failure(use_async: bool) -> None:
    calls = Calls(RateLimitError("slow down"), APIStatusError("busy", status_code=503))
    reply = _complete(calls, _context(), use_async=use_async)
    assert message_text(reply) == "# Objective\ndone"
    assert len(calls.prompts) == 3
    assert len(set(calls.prompts)) == 1


@pytest.mark.parametrize("use_async", [False, True])
def test_the_completers_give_up_after_three_calls(use_async: bool) -> None:
    calls = Calls(*(RateLimitError(f"slow down {i}") for i in range(5)))
    with pytest.raises(RateLimitError, match="slow down 2"):
        _complete(calls, _context(), use_async=use_async)
    assert len(calls.prompts) == 3


@pytest.mark.parametrize("use_async", [False, True])
def test_the_completers_do_not_retry_a_bad_request(use_async: bool) -> None:
    calls = Calls(RateLimitError("bad key", status_code=401))
    with pytest.raises(RateLimitError):
        _complete(calls, _context(), use_async=use_async)
    assert len(calls.prompts) == 1


@pytest.mark.parametrize("use_async", [False, True])
def test_the_completers_shrink_an_overflowing_request(use_async: bool) -> None:
    calls = Calls(_overflow())
    _complete(calls, _context(4000), use_async=use_async)
    first, second = calls.prompts
    assert len(first) == 4000
    assert len(second) < 2100


def test_a_cancelled_run_makes_no_further_call() -> None:
    token = CancelToken()

    class Cancelling(Calls):
        def call(self, prompt: str, options: CompleteOptions | None) -> str:
            token.cancel("user left")
            return super().call(prompt, options)

    calls = Cancelling(RateLimitError("slow down"))
    _, complete_sync = make_completers(calls)
    with pytest.raises(CancelledByToken):
        complete_sync(MODEL, _context(), CompleteOptions(signal=token))
    assert len(calls.prompts) == 1


def _complete(calls: Any, context: Context, *, use_async: bool) -> AssistantMessage:
    complete, complete_sync = make_completers(calls, timeout=60.0)
    if use_async:
        return asyncio.run(complete(MODEL, context))
    return complete_sync(MODEL, context)


class Unprintable(Exception):
    """A provider error whose message and attributes raise when read."""

    def __str__(self) -> str:
        raise RuntimeError("no message")

    @property
    def is_retryable(self) -> bool:
        raise RuntimeError("no flag")


def test_an_error_that_cannot_be_read_is_raised_as_it_is() -> None:
    calls = Calls(Unprintable())
    with pytest.raises(Unprintable):
        _complete(calls, _context(), use_async=False)
    assert len(calls.prompts) == 1
