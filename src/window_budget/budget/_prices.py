"""What a model call costs in dollars: per-token prices and the cost of reported usage.

Prices are US dollars per million tokens, one per part of the bill a provider reports:
uncached input, output, prompt tokens read from the cache and prompt tokens written to it
(:class:`~window_budget.Usage` keeps the same four parts). Some models charge more for every
token of a request whose prompt passes a size (Gemini 2.5 Pro above 200,000 tokens): those
are :class:`PriceTier` entries.

A price the data does not give is None, and a call that used a part whose price is None is
not priced at all: :class:`Cost` counts it under ``unpriced`` and its ``total`` is None —
"unknown", never a guess. Reasoning tokens are billed inside ``output_tokens`` at the output
price (the usage reports do not split them out).

>>> prices = ModelPrices(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
>>> cost = prices.cost_of(Usage(input_tokens=1_000, output_tokens=500, cache_read_tokens=9_000))
>>> round(cost.total, 6)
0.0132
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from window_budget.messages import Usage

__all__ = ["Cost", "ModelPrices", "PriceTier", "format_usd"]

_PER = 1_000_000
_PARTS = ("input", "output", "cache_read", "cache_write")
_TOKENS = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_read": "cache_read_tokens",
    "cache_write": "cache_creation_tokens",
}
_SAID = {
    "input": "input",
    "output": "output",
    "cache_read": "cache-read",
    "cache_write": "cache-write",
}


def _check_price(owner: str, name: str, value: object) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(
            f"{owner}.{name} must be a non-negative number of dollars per million tokens "
            f"or None, got {value!r}"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PriceTier:
    """Prices for every token of a request whose prompt is above ``above_tokens``."""

    above_tokens: int
    """The prompt size (input plus cache read and write) past which the tier applies."""
    input: float | None = None
    """Dollars per million uncached input tokens (None: the base price stands)."""
    output: float | None = None
    """Dollars per million output tokens (None: the base price stands)."""
    cache_read: float | None = None
    """Dollars per million cache-read tokens (None: the base price stands)."""
    cache_write: float | None = None
    """Dollars per million cache-write tokens (None: the base price stands)."""

    def __post_init__(self) -> None:
        if (
            isinstance(self.above_tokens, bool)
            or not isinstance(self.above_tokens, int)
            or self.above_tokens < 0
        ):
            raise ValueError(
                f"PriceTier.above_tokens must be a non-negative int, got {self.above_tokens!r}"
            )
        for name in _PARTS:
            _check_price("PriceTier", name, getattr(self, name))


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelPrices:
    """One model's prices, dollars per million tokens; None where the price is not known."""

    input: float | None = None
    """Uncached input tokens."""
    output: float | None = None
    """Output tokens (reasoning included)."""
    cache_read: float | None = None
    """Prompt tokens served from the provider's cache."""
    cache_write: float | None = None
    """Prompt tokens written to the provider's cache."""
    tiers: tuple[PriceTier, ...] = ()
    """Higher prices for requests with a large prompt, lowest threshold first."""

    def __post_init__(self) -> None:
        for name in _PARTS:
            _check_price("ModelPrices", name, getattr(self, name))
        if not isinstance(self.tiers, tuple) or not all(
            isinstance(t, PriceTier) for t in self.tiers
        ):
            raise ValueError("ModelPrices.tiers must be a tuple of PriceTier")
        object.__setattr__(self, "tiers", tuple(sorted(self.tiers, key=lambda t: t.above_tokens)))

    def for_prompt(self, prompt_tokens: int) -> ModelPrices:
        """The prices a request with a prompt of ``prompt_tokens`` is billed at."""
        tier = None
        for candidate in self.tiers:
            if prompt_tokens > candidate.above_tokens:
                tier = candidate
        if tier is None:
            return self
        changed = {n: getattr(tier, n) for n in _PARTS if getattr(tier, n) is not None}
        return replace(self, tiers=(), **changed)

    def bill(self, usage: Usage) -> tuple[float, float, float, float] | str:
        """Dollars for input, output, cache read and cache write, or why they are unknown."""
        prices = self.for_prompt(usage.prompt_tokens) if self.tiers else self
        dollars = []
        missing = []
        for name in _PARTS:
            tokens = getattr(usage, _TOKENS[name])
            price = getattr(prices, name)
            if not tokens:
                dollars.append(0.0)
            elif price is None:
                missing.append(f"no {_SAID[name]} price")
            else:
                dollars.append(tokens * price / _PER)
        if missing:
            return " and ".join(missing)
        return dollars[0], dollars[1], dollars[2], dollars[3]

    def cost_of(self, usage: Usage) -> Cost:
        """What one request that reported ``usage`` cost.

        A part with tokens and no price leaves the call unpriced (``Cost.total`` is None).
        """
        bill = self.bill(usage)
        if isinstance(bill, str):
            return Cost(unpriced=1, missing=(bill,))
        return Cost(calls=1, input=bill[0], output=bill[1], cache_read=bill[2], cache_write=bill[3])

    def cost_of_tokens(self, tokens: int, *, cached: bool) -> float | None:
        """Dollars for ``tokens`` prompt tokens at the input or the cache-read price."""
        price = self.cache_read if cached else self.input
        return None if price is None else tokens * price / _PER


@dataclass(frozen=True, slots=True, kw_only=True)
class Cost:
    """Dollars spent on model calls, by part of the bill; add two with ``+``."""

    calls: int = 0
    """Calls priced."""
    input: float = 0.0
    """Dollars for uncached input tokens."""
    output: float = 0.0
    """Dollars for output tokens."""
    cache_read: float = 0.0
    """Dollars for cache-read tokens."""
    cache_write: float = 0.0
    """Dollars for cache-write tokens."""
    unpriced: int = 0
    """Calls with usage that could not be priced (their model or a price is not known)."""
    missing: tuple[str, ...] = ()
    """Why, one phrase per reason (``no prices for model 'replay'``), each said once."""

    @property
    def total(self) -> float | None:
        """Dollars of every call, or None ("unknown") when any call could not be priced."""
        if self.unpriced:
            return None
        return self.input + self.output + self.cache_read + self.cache_write

    @property
    def priced(self) -> float:
        """Dollars of the calls that could be priced (all of them when ``total`` is known)."""
        return self.input + self.output + self.cache_read + self.cache_write

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(
            calls=self.calls + other.calls,
            input=self.input + other.input,
            output=self.output + other.output,
            cache_read=self.cache_read + other.cache_read,
            cache_write=self.cache_write + other.cache_write,
            unpriced=self.unpriced + other.unpriced,
            missing=tuple(dict.fromkeys((*self.missing, *other.missing))),
        )

    @classmethod
    def unknown(cls, reason: str, calls: int = 1) -> Cost:
        """``calls`` calls that could not be priced, for ``reason``."""
        return cls(unpriced=calls, missing=(reason,))

    @classmethod
    def sum(cls, costs: Iterable[Cost]) -> Cost:
        """The costs added up (an empty one for none)."""
        total = cls()
        for cost in costs:
            total = total + cost
        return total

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready dict: dollars rounded to the micro-dollar, None for unknown."""
        total = self.total
        return {
            "total_usd": None if total is None else round(total, 6),
            "priced_usd": round(self.priced, 6),
            "input_usd": round(self.input, 6),
            "output_usd": round(self.output, 6),
            "cache_read_usd": round(self.cache_read, 6),
            "cache_write_usd": round(self.cache_write, 6),
            "priced_calls": self.calls,
            "unpriced_calls": self.unpriced,
            "missing": list(self.missing),
        }

    def describe(self) -> str:
        """One line for people: the total and its parts, or "unknown" and why."""
        total = self.total
        if total is None:
            why = "; ".join(self.missing) or "no prices"
            known = (
                f"; the {self.calls:,} priced calls cost {format_usd(self.priced)}"
                if self.calls
                else ""
            )
            return f"unknown ({why}: {self.unpriced:,} calls unpriced{known})"
        if not self.calls:
            return f"{format_usd(0.0)} (no call reported usage)"
        return (
            f"{format_usd(total)} over {self.calls:,} calls (input {format_usd(self.input)}, "
            f"cache read {format_usd(self.cache_read)}, cache write "
            f"{format_usd(self.cache_write)}, output {format_usd(self.output)})"
        )


def format_usd(dollars: float) -> str:
    """Dollars for people: cents above a dollar, four places below (``$0.0132``)."""
    sign, amount = ("-", -dollars) if dollars < 0 else ("", dollars)
    return f"{sign}${amount:,.2f}" if amount >= 1 else f"{sign}${amount:.4f}"
