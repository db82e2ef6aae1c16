"""What a session cost in dollars, and what its last compaction saves on every later call.

Both read the usage the provider reported on each assistant message (one message with usage
is one call) and the prices of :mod:`~window_budget.budget._models` — or prices the caller
gives. Nothing is guessed: a call whose model or price is not known leaves the total
unknown (:attr:`~window_budget.budget._prices.Cost.total` is None).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from window_budget.budget._cache import cached_estimates
from window_budget.budget._models import prices_for
from window_budget.budget._prices import Cost, ModelPrices
from window_budget.contract import TokenCounter
from window_budget.digest import is_digest
from window_budget.messages import AgentMessage, AssistantMessage

__all__ = ["CompactionSaving", "compaction_saving", "session_cost"]


def _shown(model: str) -> str:
    return repr(model if len(model) <= 60 else model[:59] + "…")


def _no_prices(model: str | None) -> str:
    return f"no prices for model {_shown(model)}" if model else "no model named"


def session_cost(
    messages: Sequence[AgentMessage],
    *,
    model: str | None = None,
    prices: ModelPrices | None = None,
) -> Cost:
    """What the calls recorded in ``messages`` cost.

    Each assistant message with usage is one call. It is priced at ``prices`` when given,
    else at the prices of the model it names, else of ``model``; a call with no tokens costs
    nothing whatever its model.

    >>> from window_budget import AssistantMessage, Usage
    >>> call = AssistantMessage("ok", usage=Usage(1_000_000, 0), model="gpt-4o")
    >>> session_cost([call]).total
    2.5
    """
    sums = [0.0, 0.0, 0.0, 0.0]
    calls = unpriced = 0
    missing: dict[str, None] = {}
    known: dict[str | None, ModelPrices | None] = {}
    for message in messages:
        if not isinstance(message, AssistantMessage) or message.usage is None:
            continue
        usage = message.usage
        if not usage.prompt_tokens and not usage.output_tokens:
            continue
        name = message.model or model
        found = prices
        if found is None:
            if name not in known:
                known[name] = prices_for(name)
            found = known[name]
        bill = found.bill(usage) if found is not None else _no_prices(name)
        if isinstance(bill, str):
            unpriced += 1
            reason = (
                bill
                if found is None or prices is not None or not name
                else (f"{bill} for model {_shown(name)}")
            )
            missing[reason] = None
            continue
        calls += 1
        for i, dollars in enumerate(bill):
            sums[i] += dollars
    return Cost(
        calls=calls,
        input=sums[0],
        output=sums[1],
        cache_read=sums[2],
        cache_write=sums[3],
        unpriced=unpriced,
        missing=tuple(missing),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionSaving:
    """What the last compaction keeps out of every call made after it."""

    folded_tokens: int
    """Estimated tokens of the messages it archived (earlier digests left out) less those
    of the digest that stands for them: what each later call would otherwise have resent.
    Negative when the digest is larger than what it folded."""
    calls: int
    """Calls with usage made since (those in the live context)."""
    per_call_uncached: float | None
    """Dollars ``folded_tokens`` cost at the input price (None: no price)."""
    per_call_cached: float | None
    """Dollars ``folded_tokens`` cost at the cache-read price, as if all of it had stayed
    in the provider's cache (None: no cache-read price)."""

    @property
    def so_far_uncached(self) -> float | None:
        """``per_call_uncached`` times ``calls``."""
        return None if self.per_call_uncached is None else self.per_call_uncached * self.calls

    @property
    def so_far_cached(self) -> float | None:
        """``per_call_cached`` times ``calls``."""
        return None if self.per_call_cached is None else self.per_call_cached * self.calls


def compaction_saving(
    archive: Sequence[AgentMessage],
    live: Sequence[AgentMessage],
    prices: ModelPrices | None,
    counter: TokenCounter | None = None,
) -> CompactionSaving | None:
    """What the compaction between ``archive`` and ``live`` saves; None when there was none.

    ``archive`` is what the last compaction took out of the context (a transcript's
    ``archive``), ``live`` what the model sees now, its digest included. Only the calls
    after the last compaction are counted, and at the prices of the digest's time: an
    earlier compaction's savings are in the archive, not here. The summary call that wrote
    the digest is not in the transcript and is not subtracted.
    """
    if not archive:
        return None
    kept = [m for m in archive if not is_digest(m)]
    digests = [m for m in live if is_digest(m)]
    folded = sum(cached_estimates(kept, counter)) - sum(cached_estimates(digests, counter))
    calls = sum(
        1
        for m in live
        if isinstance(m, AssistantMessage)
        and m.usage is not None
        and (m.usage.prompt_tokens or m.usage.output_tokens)
    )
    return CompactionSaving(
        folded_tokens=folded,
        calls=calls,
        per_call_uncached=None if prices is None else prices.cost_of_tokens(folded, cached=False),
        per_call_cached=None if prices is None else prices.cost_of_tokens(folded, cached=True),
    )
