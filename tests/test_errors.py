"""``provider_error``: a ``SummarizerError`` handed back as the provider's own exception too."""

from __future__ import annotations

import traceback
from typing import Any

import pytest

from tests.providers import RateLimitError
from window_budget.errors import BudgetError, SummarizerError, provider_error


def _raised(cause: BaseException | None) -> SummarizerError:
    """A ``SummarizerError`` raised from ``cause``, as the core raises it."""
    try:
        try:
            if cause is not None:
                raise cause
            raise SummarizerError("summary call failed")
        except SummarizerError:
            raise
        except BaseException as exc:
            raise SummarizerError(f"summary call failed: {exc}") from exc
    except SummarizerError as error:
        return error


def test_it_is_caught_as_the_providers_type_and_as_ours() -> None:
    error = _raised(RateLimitError("429 slow down", status_code=429))
    with pytest.raises(RateLimitError, match="429 slow down") as caught:
        raise provider_error(error) from error.__cause__
    got: Any = caught.value
    assert isinstance(got, SummarizerError)
    assert got.status_code == 429  # the provider error's attributes ride along
    assert got.args == ("429 slow down",)
    assert type(got).__name__ == "RateLimitError"
    assert str(error) in got.__notes__  # our sentence, as a note
    # The traceback is the provider call's, not this test's raise only.
    assert "_raised" in "".join(traceback.format_tb(got.__traceback__))


def test_one_combined_class_per_provider_class() -> None:
    first = provider_error(_raised(RateLimitError("a")))
    second = provider_error(_raised(RateLimitError("b")))
    assert type(first) is type(second)
    assert type(provider_error(_raised(TimeoutError("t")))) is not type(first)


def test_without_a_provider_cause_it_is_the_error_itself() -> None:
    bare = _raised(None)
    assert provider_error(bare) is bare
    ours = _raised(BudgetError("no room"))  # our own error as the cause: not a provider's
    assert provider_error(ours) is ours


def test_a_class_that_cannot_be_combined_leaves_ours() -> None:
    class Sealed(Exception):
        def __init_subclass__(cls, **kwargs: Any) -> None:
            raise TypeError("Sealed cannot be subclassed")

    cause = Sealed("sealed failure")
    error = _raised(cause)
    got = provider_error(error)
    assert got is error  # still a SummarizerError: code catching ours keeps working
    assert got.__cause__ is cause
    assert not getattr(cause, "__notes__", None)  # the provider's exception is not touched
