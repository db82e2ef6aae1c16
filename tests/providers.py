"""Exceptions shaped as provider SDKs raise them (no SDK is installed for the tests)."""

from __future__ import annotations


class RateLimitError(Exception):
    """A provider SDK's own error, shaped as ``openai.RateLimitError`` is."""

    def __init__(self, message: str, *, status_code: int = 429) -> None:
        super().__init__(message)
        self.status_code = status_code


class _Response:
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code


class APIStatusError(Exception):
    """An error carrying its HTTP status on ``.response``, as ``httpx.HTTPStatusError`` does."""

    def __init__(self, message: str, *, status_code: int) -> None:
        super().__init__(message)
        self.response = _Response(status_code)
