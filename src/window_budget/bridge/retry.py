"""Retries of a summary call: transient failures wait and retry, an overflow shrinks the request.

A rate limit, a timeout or a 5xx-like error is retried after a bounded wait (at most
:data:`ATTEMPTS` calls, never past the summary timeout); a context-overflow error is retried
at once with the middle of the scrollback cut out, as LangChain's ``SummarizationMiddleware``
does. Any other error (authentication, a bad request) propagates at the first attempt.

The checks read what providers and frameworks put on their exceptions, by duck typing (no
framework is imported): LangChain's ``ModelError.is_retryable`` and ``ContextOverflowError``,
an HTTP status on the exception or its ``response`` (OpenAI, Anthropic, httpx), and the
names and messages providers use.
"""

from __future__ import annotations

import re
import time
from typing import Final

from window_budget.contract import Context
from window_budget.messages import UserMessage, message_text

__all__ = ["ATTEMPTS", "RETRY_DELAYS", "is_overflow", "is_transient", "next_attempt"]

ATTEMPTS: Final = 3
"""Summary calls per request at most, the first included (``SummarizationMiddleware``: 3)."""

RETRY_DELAYS: tuple[float, ...] = (1.0, 4.0)
"""Seconds to wait before the second and the third call after a transient failure."""

OMITTED: Final = "\n\n[... middle of the conversation omitted ...]\n\n"
"""What stands for the scrollback cut out of a request that overflowed."""

_TRANSIENT_NAMES = re.compile(
    r"ratelimit|timeout|timedout|serviceunavailable|internalserver|apiconnection|overloaded"
    r"|connectionerror|badgateway|gatewaytimeout|toomanyrequests",
    re.IGNORECASE,
)
_OVERFLOW_NAMES = re.compile(r"contextoverflow|contextwindowexceeded", re.IGNORECASE)
_OVERFLOW_TEXT = re.compile(
    r"context[ _-]length|context window|maximum context|prompt is too long|too many tokens"
    r"|input is too long|context_length_exceeded",
    re.IGNORECASE,
)


def _status(exc: BaseException) -> int | None:
    for source in (exc, getattr(exc, "response", None)):
        code = getattr(source, "status_code", None)
        if isinstance(code, int) and not isinstance(code, bool):
            return code
    return None


def _named(exc: BaseException, pattern: re.Pattern[str]) -> bool:
    return any(pattern.search(t.__name__) for t in type(exc).__mro__)


def is_overflow(exc: BaseException) -> bool:
    """True when the summary request was too long for the summarizer's window."""
    return _named(exc, _OVERFLOW_NAMES) or bool(_OVERFLOW_TEXT.search(str(exc)[:2000]))


def is_transient(exc: BaseException) -> bool:
    """True for a failure that a later identical call may not meet (rate limit, 5xx, timeout)."""
    retryable = getattr(exc, "is_retryable", None)  # LangChain's ModelError says itself
    if isinstance(retryable, bool):
        return retryable
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    status = _status(exc)
    if status is not None:
        return status in (408, 409, 429) or status >= 500
    return _named(exc, _TRANSIENT_NAMES)


def _shrunk(context: Context) -> Context | None:
    """``context`` with the middle half of its scrollback cut out, or None when too short."""
    text = "\n\n".join(message_text(m) for m in context.messages)
    keep = len(text) // 2
    if keep < 200:
        return None
    front = keep // 4
    cut = f"{text[:front]}{OMITTED}{text[len(text) - (keep - front) :]}"
    return Context(system_prompt=context.system_prompt, messages=(UserMessage(cut),))


def next_attempt(
    context: Context,
    exc: BaseException,
    attempt: int,
    started: float,
    timeout: float | None,
) -> tuple[Context, float] | None:
    """The request to send after ``exc`` and the seconds to wait first; None: give up.

    ``attempt`` counts the calls made so far; ``started`` is the first call's
    ``time.monotonic()``; a wait that would end past ``timeout`` gives up instead.
    """
    if attempt >= ATTEMPTS:
        return None
    try:
        overflow, transient = is_overflow(exc), is_transient(exc)
    except Exception:  # an exception whose str() or attributes raise: not ours to retry
        return None
    if overflow:
        smaller = _shrunk(context)
        return None if smaller is None else (smaller, 0.0)
    if not transient:
        return None
    delay = RETRY_DELAYS[min(attempt - 1, len(RETRY_DELAYS) - 1)] if RETRY_DELAYS else 0.0
    if timeout is not None and time.monotonic() - started + delay >= timeout:
        return None
    return context, delay
