"""JSON text decoded without surprises: every way it fails is a ``ValueError``.

Files, records and tool-call arguments are hostile: nesting past the recursion limit and
integers past Python's digit limit must read as bad data, never crash the caller.
"""

from __future__ import annotations

import gc
import json
import sys
from typing import Any

__all__ = ["JSONProblem", "loads"]


class JSONProblem(ValueError):
    """Text that is not readable JSON for a reason picking another format cannot fix."""


def loads(text: str) -> Any:
    """Decode one JSON value; every way it can fail is a ``ValueError`` with a short reason.

    Syntax errors stay :class:`json.JSONDecodeError` (they carry a line and column). Nesting
    deep enough to exhaust the recursion limit and integers too long to convert become
    :class:`JSONProblem`. Non-finite numbers (``NaN``, ``Infinity``, ``1e400``) are decoded
    as Python does; the readers' count fields reject them.
    """
    # No cyclic collection during the decode: on a deeply nested document the decoder runs
    # near the recursion limit, and a finalizer the collector ran there (some other object's
    # __del__) would fail with its own RecursionError, reported as an unraisable exception.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise JSONProblem(
            "nested too deeply to read (arrays or objects inside each other "
            "beyond Python's recursion limit)"
        ) from None
    except ValueError as exc:
        if "digits" in str(exc):
            raise JSONProblem(
                f"holds an integer with more than {_max_digits():,} digits, too long to read"
            ) from None
        raise JSONProblem(str(exc)) from None
    finally:
        if collecting:
            gc.enable()


def _max_digits() -> int:
    getter = getattr(sys, "get_int_max_str_digits", None)
    return int(getter()) if getter is not None else 4300
