"""Cooperative cancellation: a one-shot, thread-safe token shared across callers.

Nothing is killed: holders poll ``cancelled`` or register a callback. The core
forwards the token to the completer and checks it around the model call; a
cancelled condense raises :class:`CancelledByToken` and leaves the input as it was.

>>> token = CancelToken()
>>> token.cancel("user pressed esc")
>>> token.cancelled, token.reason
(True, 'user pressed esc')
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from window_budget.errors import WindowBudgetError

__all__ = ["Callback", "CancelToken", "CancelledByToken"]

Callback = Callable[[], None]
"""A cancellation listener."""


class CancelledByToken(WindowBudgetError):
    """Raised by :meth:`CancelToken.raise_if_cancelled`; carries the token's ``reason``.

    A plain ``Exception`` subclass, deliberately not ``asyncio.CancelledError``: code that
    catches task cancellation must not swallow this, and the reverse.
    """

    def __init__(self, reason: str | None = None) -> None:
        super().__init__(reason or "cancelled")
        self.reason = reason
        """The reason given to ``cancel()``, if any."""


class CancelToken:
    """A queryable, multi-listener, chainable cancellation flag."""

    __slots__ = ("_callbacks", "_cancelled", "_lock", "_reason")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._reason: str | None = None
        self._callbacks: list[Callback] = []

    @property
    def cancelled(self) -> bool:
        """Whether ``cancel()`` has been called."""
        return self._cancelled

    @property
    def reason(self) -> str | None:
        """The reason passed to ``cancel()``, if any."""
        return self._reason

    def cancel(self, reason: str | None = None) -> None:
        """Cancel once (later calls do nothing), then notify every listener.

        A listener that raises is ignored so it cannot stop the others from hearing.
        """
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            self._reason = reason
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            try:
                cb()
            except Exception:
                continue

    def add_callback(self, cb: Callback) -> Callable[[], None]:
        """Register ``cb``; returns a disposer. On a cancelled token ``cb`` runs at once."""
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(cb)

                def dispose() -> None:
                    with self._lock:
                        if cb in self._callbacks:
                            self._callbacks.remove(cb)

                return dispose
        cb()
        return lambda: None

    def child(self) -> CancelToken:
        """A token cancelled when this one is, but not the other way round."""
        child = CancelToken()
        self.add_callback(lambda: child.cancel(self._reason))
        return child

    def raise_if_cancelled(self) -> None:
        """Raise :class:`CancelledByToken` when cancelled, else return."""
        if self._cancelled:
            raise CancelledByToken(self._reason)

    def __repr__(self) -> str:
        state = f"cancelled, reason={self._reason!r}" if self._cancelled else "active"
        return f"CancelToken({state})"
