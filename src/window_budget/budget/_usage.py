"""Provider usage reports as the core's :class:`~window_budget.Usage`: one parser per provider.

Each provider splits the prompt differently, and every place that reads a usage report (the
transcript readers, the meter, the LangChain adapter) goes through the parser here:

- **Anthropic** reports the three parts separately: ``input_tokens`` (uncached),
  ``cache_read_input_tokens`` and ``cache_creation_input_tokens``.
- **OpenAI** reports the whole prompt in ``prompt_tokens`` (Responses API: ``input_tokens``)
  with the cached part inside it, under ``prompt_tokens_details.cached_tokens``
  (``input_tokens_details``).
- **LangChain** ``usage_metadata`` reports the whole prompt in ``input_tokens`` with
  ``input_token_details.cache_read`` and ``cache_creation`` inside it.

The parsers read plain mappings (no provider SDK, no framework) and return None for anything
that is not one. Two callers want different things from a garbled count: a transcript reader
keeps going (``strict=False``: a missing, non-numeric or negative count reads as 0), the meter
refuses the report (``strict=True``: :class:`~window_budget.errors.UsageError` naming the field).
A count that is not finite or above :data:`MAX_USAGE_TOKENS` is corrupt either way and raises.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from window_budget.errors import UsageError
from window_budget.messages import Usage

__all__ = [
    "MAX_USAGE_TOKENS",
    "read_count",
    "usage_from_anthropic",
    "usage_from_langchain",
    "usage_from_openai",
]

MAX_USAGE_TOKENS: Final = 10**9
"""The largest count one usage field may report. No model's window comes near a billion
tokens, so a bigger figure is a garbled event (``1e300``), not a measurement."""


def read_count(
    raw: Mapping[str, Any], key: str, *, strict: bool = False, where: str = "usage"
) -> int:
    """The token count ``raw[key]`` holds, checked.

    A missing key or None is 0. With ``strict=False`` a value that is not a number (a bool, a
    string) or is negative also reads as 0 and a fraction is truncated; with ``strict=True``
    each of those raises.

    Raises:
        UsageError: the count is not finite or above :data:`MAX_USAGE_TOKENS` (in either
            mode), or, when ``strict``, not a non-negative whole number. The message names
            ``where`` and ``key``.

    """
    value = raw.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        if not strict:
            return 0
        raise UsageError(
            f"{where}: {key} is {value!r}; usage counts must be non-negative "
            "integers — pass the provider's numbers, not strings"
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise UsageError(f"{where}: {key} is {value!r}; usage counts must be finite numbers")
    if abs(value) > MAX_USAGE_TOKENS:
        # str() of a huge int is slow and, past 4,300 digits, refused by Python itself;
        # and int(1e300) is a 300-digit number, so the bound is checked first.
        shown = f"{value:,}" if abs(value) < 10**30 else "a number of more than 30 digits"
        raise UsageError(
            f"{where}: {key} is {shown}, more than the {MAX_USAGE_TOKENS:,} "
            "tokens any usage report can hold"
        )
    if strict and isinstance(value, float) and not value.is_integer():
        raise UsageError(f"{where}: {key} is {value!r}; usage counts must be whole numbers")
    if value < 0:
        if not strict:
            return 0
        raise UsageError(
            f"{where}: {key} is {value}; usage counts cannot be negative — check the event source"
        )
    return int(value)


def _details(
    raw: Mapping[str, Any], keys: tuple[str, ...], strict: bool, where: str
) -> Mapping[str, Any]:
    """The first of ``keys`` that is present, as a mapping ({} when absent or, leniently, junk)."""
    for key in keys:
        value = raw.get(key)
        if value is None:
            continue
        if isinstance(value, Mapping):
            return value
        if strict:
            raise UsageError(f"{where}: {key} is {value!r}, not a mapping")
        return {}
    return {}


def usage_from_anthropic(
    raw: object, *, strict: bool = False, where: str = "usage"
) -> Usage | None:
    """An Anthropic (or Claude Code) ``usage`` object as core usage; None when not a mapping.

    >>> usage_from_anthropic({"input_tokens": 10, "cache_read_input_tokens": 90}).prompt_tokens
    100

    """
    if not isinstance(raw, Mapping):
        return None
    return Usage(
        input_tokens=read_count(raw, "input_tokens", strict=strict, where=where),
        output_tokens=read_count(raw, "output_tokens", strict=strict, where=where),
        cache_read_tokens=read_count(raw, "cache_read_input_tokens", strict=strict, where=where),
        cache_creation_tokens=read_count(
            raw, "cache_creation_input_tokens", strict=strict, where=where
        ),
    )


def usage_from_openai(raw: object, *, strict: bool = False, where: str = "usage") -> Usage | None:
    """An OpenAI ``usage`` object (Chat Completions or Responses) as core usage.

    The cached part the provider reports inside the prompt becomes ``cache_read_tokens``; a
    cached figure larger than the prompt is capped at the prompt. None when not a mapping.

    >>> usage_from_openai({"prompt_tokens": 100, "completion_tokens": 5,
    ...     "prompt_tokens_details": {"cached_tokens": 80}})
    Usage(input_tokens=20, output_tokens=5, cache_read_tokens=80, cache_creation_tokens=0)

    """
    if not isinstance(raw, Mapping):
        return None
    prompt_key = "prompt_tokens" if "prompt_tokens" in raw else "input_tokens"
    output_key = "completion_tokens" if "completion_tokens" in raw else "output_tokens"
    prompt = read_count(raw, prompt_key, strict=strict, where=where)
    details = _details(raw, ("prompt_tokens_details", "input_tokens_details"), strict, where)
    cached = min(prompt, read_count(details, "cached_tokens", strict=strict, where=where))
    return Usage(
        input_tokens=prompt - cached,
        output_tokens=read_count(raw, output_key, strict=strict, where=where),
        cache_read_tokens=cached,
    )


def usage_from_langchain(
    raw: object, *, strict: bool = False, where: str = "usage_metadata"
) -> Usage | None:
    """A LangChain ``usage_metadata`` dict as core usage; None when not a mapping.

    LangChain's ``input_tokens`` already includes the cached parts; the core's does not, so
    they are taken out. Cache figures larger than ``input_tokens`` are a contradiction: with
    ``strict`` they raise, otherwise the uncached part reads as 0.

    >>> usage_from_langchain({"input_tokens": 100, "output_tokens": 5,
    ...     "input_token_details": {"cache_read": 60}})
    Usage(input_tokens=40, output_tokens=5, cache_read_tokens=60, cache_creation_tokens=0)

    """
    if not isinstance(raw, Mapping):
        return None
    details = _details(raw, ("input_token_details",), strict, where)
    total = read_count(raw, "input_tokens", strict=strict, where=where)
    read = read_count(details, "cache_read", strict=strict, where=where)
    created = read_count(details, "cache_creation", strict=strict, where=where)
    if strict and read + created > total:
        raise UsageError(
            f"{where}: cache tokens ({read + created}) exceed input_tokens "
            f"({total}); usage_metadata counts cached tokens inside input_tokens"
        )
    return Usage(
        input_tokens=max(total - read - created, 0),
        output_tokens=read_count(raw, "output_tokens", strict=strict, where=where),
        cache_read_tokens=read,
        cache_creation_tokens=created,
    )
