"""The usage meter: how full the window is, from the provider's own usage figures.

:class:`ContextBudget` is fed every event an agent loop sees and keeps the latest
usage report: Claude Code stream-json ``result`` events (usage at the top level or
under ``usage``), LangChain ``usage_metadata`` dicts (or any object carrying one),
OpenAI and Anthropic usage dicts, and this library's own :class:`~window_budget.Usage`
or :class:`~window_budget.AssistantMessage`. ``used_tokens`` is what the last request
put into the window: input + cache creation + cache read tokens.

``cost`` adds up what those requests cost in dollars, each report priced as one request at
the prices given (``prices=``) or at the models.dev prices of ``model=`` (an
:class:`~window_budget.AssistantMessage` fed to it is priced at the model it names);
``cost.total`` is None — unknown — when a report could not be priced.

Two latched flags tell the loop what to do at the next turn boundary: ``should_warn``
(70 % by default) and ``should_compact`` (78 %). Once set, a flag stays set until the
caller clears it; crossing the compaction threshold sets both.

Malformed usage (a count that is a string, a float with a fraction, a bool, not
finite, negative, or above :data:`MAX_USAGE_TOKENS`) is never taken: by default the
event is ignored with a :class:`MalformedUsageWarning` and the previous figures
stay, because one garbled event must not stop an agent loop; ``strict=True`` raises
:class:`UsageError` instead. Events without usage (``system``, ``assistant`` deltas, ``user``) are
ignored silently.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, Final

from window_budget.budget import (
    MAX_USAGE_TOKENS,
    Cost,
    ModelPrices,
    read_count,
    session_cost,
    usage_from_anthropic,
    usage_from_langchain,
    usage_from_openai,
)
from window_budget.errors import ConfigError, UsageError
from window_budget.messages import AssistantMessage, Usage

__all__ = [
    "DEFAULT_COMPACT_RATIO",
    "DEFAULT_METER_WINDOW",
    "DEFAULT_WARN_RATIO",
    "MAX_USAGE_TOKENS",
    "ContextBudget",
    "MalformedUsageWarning",
    "UsageError",
    "parse_usage",
]

DEFAULT_METER_WINDOW: Final = 200_000
"""Window the meter measures against when none is given."""
DEFAULT_WARN_RATIO: Final = 0.70
"""Utilization at which ``should_warn`` latches."""
DEFAULT_COMPACT_RATIO: Final = 0.78
"""Utilization at which ``should_compact`` (and ``should_warn``) latch."""

_ANTHROPIC_KEYS: Final = ("cache_creation_input_tokens", "cache_read_input_tokens")


class MalformedUsageWarning(UserWarning):
    """A usage report was malformed and ignored; the meter kept its previous figures."""


def _from_mapping(raw: Mapping[str, Any], where: str) -> Usage | None:
    # Which provider wrote it is told by its keys; each provider has one parser.
    if any(k in raw for k in _ANTHROPIC_KEYS) or (
        "input_tokens" in raw and "input_token_details" not in raw and "total_tokens" not in raw
    ):
        return usage_from_anthropic(raw, strict=True, where=where)
    if "input_tokens" in raw:
        return usage_from_langchain(raw, strict=True, where=where)
    if "prompt_tokens" in raw:
        return usage_from_openai(raw, strict=True, where=where)
    return None


def parse_usage(event: object) -> Usage | None:
    """The usage an event reports, or None when it reports none.

    Accepts a Claude Code stream-json ``result`` event (usage at the top level or under
    ``usage``), a bare usage dict (Anthropic, OpenAI, LangChain ``usage_metadata``), a
    mapping or object with a ``usage_metadata`` or ``usage`` field, a :class:`Usage`
    or an :class:`AssistantMessage`. Other stream events (``system``, ``user``,
    ``assistant``, ``stream_event``) report none.

    Raises:
        UsageError: the event has usage but a count is not a non-negative integer of at
            most :data:`MAX_USAGE_TOKENS`.

    >>> parse_usage({"type": "result", "usage": {"input_tokens": 10,
    ...     "cache_read_input_tokens": 90}}).used_tokens
    100

    """
    if isinstance(event, Usage):
        # Usage checks its types and signs; the bound is checked here.
        for name in ("input_tokens", "cache_creation_tokens", "cache_read_tokens", "output_tokens"):
            read_count({name: getattr(event, name)}, name, strict=True, where="Usage")
        return event
    if isinstance(event, AssistantMessage):
        return parse_usage(event.usage) if event.usage is not None else None
    if isinstance(event, Mapping):
        kind = event.get("type")
        if kind is not None and kind != "result":
            return None  # only a turn's final result event carries the window's usage
        where = "result event" if kind == "result" else "usage dict"
        for key in ("usage", "usage_metadata"):
            nested = event.get(key)
            if nested is not None:
                if not isinstance(nested, Mapping):
                    raise UsageError(f"{where}: {key} is {type(nested).__name__}, not a mapping")
                reading = _from_mapping(nested, f"{where} {key}")
                if reading is not None:
                    return reading
        return _from_mapping(event, where)
    for attr in ("usage_metadata", "usage"):  # LangChain AIMessage, provider response objects
        nested = getattr(event, attr, None)
        if nested is None:
            continue
        if isinstance(nested, Usage):
            return parse_usage(nested)
        dump = getattr(nested, "model_dump", None)  # a provider SDK's pydantic usage object
        if callable(dump):
            nested = dump()
        if isinstance(nested, Mapping):
            return _from_mapping(nested, f"{type(event).__name__}.{attr}")
    return None


class ContextBudget:
    """How full the context window is, from provider usage reports, with latched thresholds.

    Feed it every event with :meth:`update`; read ``should_warn`` / ``should_compact``
    at turn boundaries and clear them once acted upon.

    >>> meter = ContextBudget(context_window=100_000)
    >>> meter.update({"type": "result", "input_tokens": 5_000,
    ...               "cache_read_input_tokens": 75_000})
    True
    >>> meter.used_tokens, meter.should_warn, meter.should_compact
    (80000, True, True)
    """

    __slots__ = (
        "_cost",
        "_last",
        "_should_compact",
        "_should_warn",
        "compact_ratio",
        "context_window",
        "model",
        "prices",
        "strict",
        "updates",
        "warn_ratio",
    )

    def __init__(
        self,
        context_window: int = DEFAULT_METER_WINDOW,
        *,
        warn_ratio: float = DEFAULT_WARN_RATIO,
        compact_ratio: float = DEFAULT_COMPACT_RATIO,
        strict: bool = False,
        model: str | None = None,
        prices: ModelPrices | None = None,
    ) -> None:
        if (
            isinstance(context_window, bool)
            or not isinstance(context_window, int)
            or context_window <= 0
        ):
            raise ConfigError(f"context_window must be a positive int, got {context_window!r}")
        if model is not None and not isinstance(model, str):
            raise ConfigError(f"model must be a model id (str) or None, got {type(model).__name__}")
        if prices is not None and not isinstance(prices, ModelPrices):
            raise ConfigError(f"prices must be a ModelPrices or None, got {type(prices).__name__}")
        if not 0 < warn_ratio <= compact_ratio:
            raise ConfigError(
                f"thresholds must satisfy 0 < warn_ratio <= compact_ratio, got "
                f"warn_ratio={warn_ratio} and compact_ratio={compact_ratio}"
            )
        self.context_window = context_window
        """Tokens the window holds."""
        self.warn_ratio = warn_ratio
        """Utilization at which ``should_warn`` latches."""
        self.compact_ratio = compact_ratio
        """Utilization at which ``should_compact`` latches (and implies the warning)."""
        self.strict = strict
        """Raise :class:`UsageError` on malformed usage instead of warning and ignoring it."""
        self.updates = 0
        """Number of usage reports taken."""
        self.model = model
        """The model whose models.dev prices the reports are priced at, when ``prices`` is None."""
        self.prices = prices
        """The prices reports are priced at (None: the models.dev prices of ``model``)."""
        self._cost = Cost()
        self._last: Usage | None = None
        self._should_warn = False
        self._should_compact = False

    def __repr__(self) -> str:
        return (
            f"ContextBudget(used_tokens={self.used_tokens}, context_window="
            f"{self.context_window}, should_warn={self._should_warn}, "
            f"should_compact={self._should_compact})"
        )

    @property
    def last_usage(self) -> Usage | None:
        """The latest usage report taken, normalised."""
        return self._last

    @property
    def input_tokens(self) -> int:
        """Uncached input tokens of the latest report."""
        return self._last.input_tokens if self._last else 0

    @property
    def cache_creation_tokens(self) -> int:
        """Cache-creation tokens of the latest report."""
        return self._last.cache_creation_tokens if self._last else 0

    @property
    def cache_read_tokens(self) -> int:
        """Cache-read tokens of the latest report."""
        return self._last.cache_read_tokens if self._last else 0

    @property
    def used_tokens(self) -> int:
        """Input + cache creation + cache read tokens of the latest report."""
        return self._last.prompt_tokens if self._last else 0

    @property
    def utilization(self) -> float:
        """``used_tokens / context_window`` (can exceed 1.0)."""
        return self.used_tokens / self.context_window

    @property
    def cost(self) -> Cost:
        """What the reports taken cost, each priced as one request; ``total`` None: unknown.

        >>> meter = ContextBudget(model="claude-sonnet-4-5")
        >>> meter.update({"input_tokens": 1_000, "output_tokens": 100})
        True
        >>> round(meter.cost.total, 6)  # 1,000 x $3 + 100 x $15 per million
        0.0045
        """
        return self._cost

    @property
    def should_warn(self) -> bool:
        """Latched: utilization reached ``warn_ratio`` since the last :meth:`clear_warning`."""
        return self._should_warn

    @property
    def should_compact(self) -> bool:
        """Latched: utilization reached ``compact_ratio`` since the last :meth:`clear_compact`."""
        return self._should_compact

    def update(self, event: object) -> bool:
        """Take the usage an event reports; returns True when it reported usage.

        The latest report replaces the previous one (it measures the whole request, not
        an increment). Crossing a threshold latches its flag.

        Raises:
            UsageError: malformed usage and ``strict=True``.

        """
        try:
            reading = parse_usage(event)
        except UsageError as exc:
            if self.strict:
                raise
            warnings.warn(
                f"ignored a malformed usage report ({exc}); the meter keeps "
                f"{self.used_tokens} used tokens",
                MalformedUsageWarning,
                stacklevel=2,
            )
            return False
        if reading is None:
            return False
        self._last = reading
        self.updates += 1
        named = event.model if isinstance(event, AssistantMessage) else None
        call = AssistantMessage("", usage=reading, model=named or self.model)
        self._cost = self._cost + session_cost([call], prices=self.prices)
        utilization = self.utilization
        if utilization >= self.compact_ratio:
            self._should_compact = True
            self._should_warn = True
        elif utilization >= self.warn_ratio:
            self._should_warn = True
        return True

    def clear_warning(self) -> None:
        """Lower ``should_warn`` (it latches again at the next report over the threshold)."""
        self._should_warn = False

    def clear_compact(self) -> None:
        """Lower ``should_compact`` once compaction was requested."""
        self._should_compact = False

    def build_compact_prompt(self, task: str, state: str, scratch_path: str | None = None) -> str:
        """The ``/compact`` command to inject into the agent's next input.

        ``task`` tells the built-in compaction what to preserve; ``state`` is where the
        workflow stands; ``scratch_path`` points the agent to the scratch file written
        by :class:`~window_budget.tools.scratch.ScratchWriter`. Line breaks in ``task`` and
        ``state`` are folded, since a slash command ends at the first one.

        >>> print(ContextBudget().build_compact_prompt("the TOML port", "testing",
        ...                                            ".context/scratch.md"))
        /compact focus on the TOML port -- current state is testing
        After compaction, read .context/scratch.md for preserved context.
        """
        task_line = " ".join(str(task).split())
        state_line = " ".join(str(state).split())
        if not task_line:
            raise ConfigError(
                "build_compact_prompt needs a non-empty task to focus the compaction on"
            )
        prompt = f"/compact focus on {task_line} -- current state is {state_line or 'unknown'}"
        if scratch_path:
            prompt += f"\nAfter compaction, read {scratch_path} for preserved context."
        return prompt
