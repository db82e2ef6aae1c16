"""The budget policy: when to condense and how much to keep, validated on construction.

It sits on the bottom floor beside :mod:`window_budget.contract` (which re-exports it): a
value every layer reads, with no behaviour beyond checking its own fields and scaling the
default to a window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = ["PROMPT_CEILING", "BudgetPolicy", "KeepUnit", "Strategy", "SummaryRequestShape"]

KeepUnit: TypeAlias = Literal["tokens", "turns", "messages"]
"""What ``BudgetPolicy.keep_recent`` counts."""

Strategy: TypeAlias = Literal["summarize", "trim"]

SummaryRequestShape: TypeAlias = Literal["scrollback", "prefix"]
"""How a summary call is built: the flattened scrollback, or the agent's own request prefix."""
"""How the condenser reduces the head: a digest (model or network-free), or category trimming."""


def _check_int(name: str, value: object, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"BudgetPolicy.{name} must be a non-negative int, got {value!r}")


PROMPT_CEILING = 16_000
"""Tokens of conversation the default policy lets grow before it fires, beside the system
prompt and the digest's record (1 % of the window): the ``prompt_ceiling`` of
:meth:`BudgetPolicy.for_window` wherever it comes before 75 % of the window. Chosen with
``bench/bench_session_cost.py`` (``docs/benchmarks.md``): the cheapest of the ceilings tried
at 128k and 200k, and with the record beside it no compaction loop at 1M."""

WEAK_CACHE_READ = 0.3
"""A cached input token priced at this share of an uncached one or more (OpenAI's gpt-4o
family: 0.5) makes a weak cache: :meth:`BudgetPolicy.for_window` then gives the record 0.6 %
of the window beside :data:`PROMPT_CEILING` instead of 1 %, since there a prompt re-sent from
the cache still costs half, and a lower ceiling pays for its extra compactions. Measured with
``bench/bench_session_cost.py`` at cache reads of 0.1 and 0.5 only (``docs/benchmarks.md``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetPolicy:
    """When to condense and how much to keep; validated on construction.

    >>> BudgetPolicy()
    BudgetPolicy(trigger_ratio=0.75, keep_recent=6000, reserve_tokens=2048, ...)

    Raises:
        ValueError: a field is out of range; the message names the field.

    """

    trigger_ratio: float = 0.75
    """Fraction of the usable window (window minus reserve) at which the gate fires; in (0, 1]."""
    keep_recent: int = 6000
    """Size of the verbatim tail: tokens, turns or messages, as ``keep_unit`` says."""
    reserve_tokens: int | None = 2048
    """Headroom carved off the window before the ratio applies (room for the reply)."""
    keep_unit: KeepUnit = "tokens"
    """What ``keep_recent`` counts: ``"tokens"``; ``"turns"`` (a user message and everything
    answering it: replies, tool calls and their results); or ``"messages"`` (any message, the
    unit of LangChain's ``keep=("messages", N)``). A tool call is never split from its result."""
    strategy: Strategy = "summarize"
    """``"summarize"`` folds the head into a digest; ``"trim"`` drops by category, no model."""
    digest_max_tokens: int | None = None
    """Upper bound for a digest; None scales it with the window (``pipeline.digest_budget``)."""
    tool_output_chars: int = 2000
    """Each tool output in the summarizer's scrollback is clamped to this many characters."""
    max_summary_calls: int = 4
    """A head too long for one call is split across at most this many (each carrying the
    digest before); beyond that, the longest entries are clamped first."""
    on_summarizer_error: Literal["fallback", "raise"] = "fallback"
    """On a failing model: write the network-free digest (default) or raise ``SummarizerError``."""
    summary_timeout: float | None = None
    """Seconds one summary call may take before it counts as failed; None waits. A sync
    completer with a timeout runs in a worker thread; a late reply is discarded."""
    mask_keep_outputs: int | None = 3
    """Masking, tried before any summary call when the gate fires: tool outputs outside the
    kept tail, other than the ``mask_keep_outputs`` most recent, longer than
    ``mask_min_chars``, become a one-line placeholder; the originals go to ``plan.dropped``.
    The digest is written only if that is not enough. 3 as LangChain's ``ClearToolUsesEdit``
    keeps (see ``docs/memory.md``); ``None`` turns masking off."""
    mask_min_chars: int = 2000
    """Tool outputs of at most this many characters are never masked."""
    summary_request: SummaryRequestShape = "scrollback"
    """``"scrollback"``: the summary call is the brief plus the flattened, escaped turns.
    ``"prefix"``: the agent's own system prompt and messages as sent, then one instruction, so
    the provider's prompt cache serves the prefix (``docs/summary-calls.md``)."""
    precompact_ratio: float | None = None
    """With ``AheadCompactor``: the fraction of the usable window (below ``trigger_ratio``) at
    which the next digest starts in the background; None never starts one early."""
    prompt_ceiling: int | None = None
    """The gate also fires once the transcript, beyond the pinned system prompt, passes this
    many tokens, whatever the window: every request re-sends the prompt, billed even where
    the provider's cache serves it, so the working prompt need not grow with the window.
    None: only ``trigger_ratio`` (``for_window`` sets one unless ``cache_aware=False``)."""

    def __post_init__(self) -> None:
        ratio = self.trigger_ratio
        if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 < ratio <= 1:
            raise ValueError(f"BudgetPolicy.trigger_ratio must be in (0, 1], got {ratio!r}")
        _check_int("keep_recent", self.keep_recent)
        _check_int("reserve_tokens", self.reserve_tokens, allow_none=True)
        _check_int("digest_max_tokens", self.digest_max_tokens, allow_none=True)
        _check_int("tool_output_chars", self.tool_output_chars)
        _check_int("mask_keep_outputs", self.mask_keep_outputs, allow_none=True)
        _check_int("mask_min_chars", self.mask_min_chars)
        _check_int("prompt_ceiling", self.prompt_ceiling, allow_none=True)
        if self.prompt_ceiling is not None and self.prompt_ceiling < 128:
            raise ValueError(
                f"BudgetPolicy.prompt_ceiling must be at least 128, got {self.prompt_ceiling}"
            )
        if (
            isinstance(self.max_summary_calls, bool)
            or not isinstance(self.max_summary_calls, int)
            or self.max_summary_calls < 1
        ):
            raise ValueError(
                "BudgetPolicy.max_summary_calls must be an int of at least 1, "
                f"got {self.max_summary_calls!r}"
            )
        if self.keep_unit not in ("tokens", "turns", "messages"):
            raise ValueError(
                "BudgetPolicy.keep_unit must be 'tokens', 'turns' or 'messages', "
                f"got {self.keep_unit!r}"
            )
        if self.strategy not in ("summarize", "trim"):
            raise ValueError(
                f"BudgetPolicy.strategy must be 'summarize' or 'trim', got {self.strategy!r}"
            )
        if self.on_summarizer_error not in ("fallback", "raise"):
            raise ValueError(
                "BudgetPolicy.on_summarizer_error must be 'fallback' or 'raise', "
                f"got {self.on_summarizer_error!r}"
            )
        if self.summary_request not in ("scrollback", "prefix"):
            raise ValueError(
                "BudgetPolicy.summary_request must be 'scrollback' or 'prefix', "
                f"got {self.summary_request!r}"
            )
        early = self.precompact_ratio
        if early is not None and (
            isinstance(early, bool)
            or not isinstance(early, int | float)
            or not 0 < early < self.trigger_ratio
        ):
            raise ValueError(
                "BudgetPolicy.precompact_ratio must be None or in (0, trigger_ratio), "
                f"got {early!r} with trigger_ratio {self.trigger_ratio}"
            )
        timeout = self.summary_timeout
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 < timeout < math.inf
        ):
            raise ValueError(
                "BudgetPolicy.summary_timeout must be None or a positive, finite "
                f"number of seconds, got {timeout!r}"
            )
        if self.digest_max_tokens is not None and self.digest_max_tokens < 64:
            raise ValueError(
                f"BudgetPolicy.digest_max_tokens must be at least 64, got {self.digest_max_tokens}"
            )

    @classmethod
    def for_window(
        cls,
        context_window: int,
        *,
        output_reserved: bool = False,
        cache_aware: bool = True,
        cache_read: float | None = None,
    ) -> BudgetPolicy:
        """The default policy scaled to ``context_window``, for both adapters when none is given.

        It fires at 75 % of the usable window, or once the transcript passes
        :data:`PROMPT_CEILING` tokens plus 1 % of the window (room for the digest's record)
        beside the system prompt (``prompt_ceiling``), whichever comes first: a long session
        is billed for the prompt it re-sends on every call, cached or not, so in a large window
        it fires rarely and lands low rather than filling the window (1.04-1.18x the cheapest
        strategy at 32k-1M windows under Anthropic's prices, 1.04-1.27x under OpenAI's 0.5x, in
        ``bench/bench_session_cost.py``, where filling 75 % of the window cost 1.35-6.19x;
        ``docs/benchmarks.md``). The tail is about a third of the
        limit and the digest at most a fifth, so the history has room to grow before the next
        compaction. The facts many compactions would push out of a small digest stay in the
        memory store (the adapters keep one by default), which renders the next digest and
        answers ``recall``.

        ``cache_aware=False``: no ceiling, 75 % of any window (fewer compactions, a larger
        prompt on every call). ``output_reserved``: nothing more reserved. ``cache_read``: the
        price of a cached input token as a share of an uncached one, when known (the adapters
        take it from the model's prices); from :data:`WEAK_CACHE_READ` up the ceiling is lower.

        >>> [BudgetPolicy.for_window(w).prompt_ceiling for w in (4096, 1_000_000)]
        [None, 26000]
        >>> BudgetPolicy.for_window(1_000_000, cache_read=0.5).prompt_ceiling
        22000
        >>> BudgetPolicy.for_window(1_000_000, cache_aware=False).prompt_ceiling is None
        True
        """
        window = context_window
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
            raise ValueError(f"context_window must be a positive int, got {context_window!r}")
        if cache_read is not None and (
            isinstance(cache_read, bool)
            or not isinstance(cache_read, int | float)
            or not 0 <= cache_read <= 1
        ):
            raise ValueError(f"cache_read must be a share between 0 and 1, got {cache_read!r}")
        reserve = 0 if output_reserved else min(2048, context_window // 8)
        usable = max(1, context_window - reserve)
        # The digest's record takes 1 % of the window (``record_budget``): room beside it;
        # under a weak cache less of it, so that the prompt re-sent on every call is smaller.
        weak = cache_read is not None and cache_read >= WEAK_CACHE_READ
        room = PROMPT_CEILING + (context_window * 6 // 1000 if weak else context_window // 100)
        ceiling = None if not cache_aware or usable * 0.75 <= room else room
        limit = usable * 0.75 if ceiling is None else min(usable * 0.75, room)
        return cls(
            trigger_ratio=0.75,
            prompt_ceiling=ceiling,
            reserve_tokens=reserve,
            keep_recent=max(1, min(6000, int(limit * 0.35))),
            # A fifth of a small limit; in larger windows the window-scaled default.
            digest_max_tokens=max(64, int(limit * 0.2)) if limit * 0.2 < 2000 else None,
        )

    @classmethod
    def turns(
        cls, keep_recent: int = 8, *, trigger_ratio: float = 0.8, reserve_tokens: int | None = None
    ) -> BudgetPolicy:
        """Keep the last ``keep_recent`` turns verbatim; fire at 80 % of the usable window.

        A turn is a user message and everything answering it (replies, tool calls and their
        results); a digest is not a turn.

        >>> BudgetPolicy.turns(4).keep_unit
        'turns'
        """
        return cls(
            trigger_ratio=trigger_ratio,
            keep_recent=keep_recent,
            reserve_tokens=reserve_tokens,
            keep_unit="turns",
        )
