"""Named token counters both adapters resolve (``counter="tiktoken"``, a framework's own)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from window_budget.budget import resolve_counter
from window_budget.contract import TokenCounter
from window_budget.errors import ConfigError

CounterFactory = Callable[[Any], TokenCounter | None]
"""Builds a named counter; receives the adapter's context (its chat model or LLM)."""

_COUNTERS: dict[str, CounterFactory] = {
    "heuristic": lambda context: None,
    "tiktoken": lambda context: resolve_counter("tiktoken"),
}
_COUNTERS_LOCK = threading.Lock()


def register_counter(name: str, factory: CounterFactory) -> None:
    """Make ``counter=name`` mean ``factory(context)`` in every adapter."""
    with _COUNTERS_LOCK:
        _COUNTERS[name] = factory


CounterRecogniser = Callable[[Callable[..., Any]], TokenCounter | None]
"""Turns a framework's own counting function into a counter, or None when it is not one."""

_RECOGNISERS: list[CounterRecogniser] = []


def register_counter_kind(recognise: CounterRecogniser) -> None:
    """Teach every adapter a kind of counting callable (e.g. LangChain's message counters).

    ``resolve_counter_spec`` asks each recogniser, in registration order, about a callable
    that is not a :class:`~window_budget.contract.TokenCounter`; one that returns a counter claims
    it,
    and a recogniser that knows the callable is of its kind but unusable raises
    ``ConfigError``. Unclaimed callables are ``str -> int`` functions.
    """
    with _COUNTERS_LOCK:
        if recognise not in _RECOGNISERS:
            _RECOGNISERS.append(recognise)


def resolve_counter_spec(spec: object, context: Any = None) -> tuple[TokenCounter | None, str]:
    """The counter a spec names and the name it serializes under.

    ``spec`` is None or a registered name (``"heuristic"``, ``"tiktoken"``, and what the
    adapters register, e.g. ``"model"``), ``"tiktoken:<encoding>"``, a
    :class:`~window_budget.contract.TokenCounter` or a ``str -> int`` callable.

    Raises:
        ConfigError: a name that is neither registered nor a tiktoken encoding.

    """
    if spec is None:
        return None, "heuristic"
    if isinstance(spec, str):
        factory = _COUNTERS.get(spec)
        if factory is not None:
            return factory(context), spec
        if not spec.startswith("tiktoken:"):
            raise ConfigError(
                f"unknown counter {spec!r}; use one of {sorted(_COUNTERS)}, "
                "'tiktoken:<encoding>', a TokenCounter or a str -> int function"
            )
    if callable(spec) and not hasattr(spec, "count"):
        with _COUNTERS_LOCK:
            recognisers = list(_RECOGNISERS)
        for recognise in recognisers:
            claimed = recognise(spec)
            if claimed is not None:
                return claimed, claimed.name
    counter = resolve_counter(spec)  # type: ignore[arg-type]
    if isinstance(spec, str):
        return counter, spec
    return counter, str(getattr(counter, "name", "custom"))
