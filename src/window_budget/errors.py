"""Every exception the library raises, under one base class.

The tree::

    WindowBudgetError
    ├── MessageError        (also a ValueError) a message or transcript is malformed
    │   ├── ReadError       a transcript file, line or record cannot be read
    │   └── UsageError      a provider usage report holds an invalid count
    ├── BudgetError         the result cannot fit the window; says what does not fit
    ├── SummarizerError     the model call failed and the policy asked to propagate it
    ├── ConfigError         (also a ValueError) a WINDOW_BUDGET_* variable is invalid
    ├── StoreError          a store did not keep what was written to it
    └── CancelledByToken    a ``CancelToken`` was cancelled (window_budget.cancel)

Each message is one sentence that carries the numbers and how to fix the call.
:func:`provider_error` gives a ``SummarizerError`` back as the provider's own exception too.
"""

from __future__ import annotations

__all__ = [
    "BudgetError",
    "ConfigError",
    "MessageError",
    "ReadError",
    "StoreError",
    "SummarizerError",
    "UsageError",
    "WindowBudgetError",
    "provider_error",
]


class WindowBudgetError(Exception):
    """Base class of every error window-budget raises on purpose."""


class MessageError(WindowBudgetError, ValueError):
    """A message, block or transcript is malformed; nothing was changed."""


class ReadError(MessageError):
    """A transcript file (or one line or record of it) cannot be read.

    The message names the file, the line or record and what is wrong, and how to go on.
    """

    def __init__(self, message: str, *, path: str = "", line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        """The file being read."""
        self.line = line
        """1-based line (JSONL) or record (JSON list) number, when known."""


class UsageError(MessageError):
    """A usage report holds a count that is not a non-negative integer."""


class BudgetError(WindowBudgetError):
    """The transcript cannot be brought under the limit; the message names what does not fit."""

    def __init__(self, message: str, *, needed: int = 0, available: int = 0) -> None:
        super().__init__(message)
        self.needed = needed
        """Tokens the part that does not fit needs."""
        self.available = available
        """Tokens that were available for it."""


class SummarizerError(WindowBudgetError):
    """The summarizer failed and the policy says to propagate instead of falling back."""


class ConfigError(WindowBudgetError, ValueError):
    """A configuration value (argument or environment variable) is invalid."""


class StoreError(WindowBudgetError):
    """A store read back something other than what was written; the message names the store.

    Raised instead of going on with a store that multiplies or drops messages: nothing more
    is written to it by that call.
    """


_BOTH: dict[type[BaseException], type[BaseException]] = {}
"""Per provider exception class, its combination with :class:`SummarizerError`."""


def provider_error(error: SummarizerError) -> BaseException:
    """The provider's own exception behind ``error``, catchable as its type *and* as ours.

    With ``on_summarizer_error="raise"``, code that catches ``openai.RateLimitError`` (or
    LangChain's ``ModelRateLimitError``) around an agent or a chat engine catches it as it
    would without window-budget, and code that catches ``SummarizerError`` keeps working:
    the result is an instance of a class deriving from both, carrying the provider error's
    arguments, attributes (``status_code``, ``response``, ...) and traceback, with
    ``error``'s sentence as a note. Always a ``SummarizerError``: ``error`` itself when it
    has no provider exception as its cause or that exception's class cannot be combined.
    Raise it ``from error.__cause__``.
    """
    cause = error.__cause__
    if not isinstance(cause, Exception) or isinstance(cause, WindowBudgetError):
        return error
    kind = type(cause)
    try:
        both = _BOTH.get(kind)
        if both is None:
            both = _BOTH[kind] = type(
                kind.__name__,
                (kind, SummarizerError),
                {"__module__": kind.__module__, "__doc__": kind.__doc__},
            )
        combined = both.__new__(both, *cause.args)
        combined.__dict__.update(getattr(cause, "__dict__", {}))
        combined.args = cause.args
    except TypeError:  # a class that refuses the mix (a C-level layout, a sealed class)
        return error
    combined.add_note(str(error))
    combined.__cause__ = cause.__cause__
    combined.__traceback__ = cause.__traceback__
    return combined
