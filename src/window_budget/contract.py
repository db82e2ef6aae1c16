"""Shapes and seams only: the dataclasses, protocols and aliases every module is written against.

Nothing here has behaviour beyond validating its own fields.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, runtime_checkable

from window_budget._store_contract import LedgerVersion, MemoryStore
from window_budget.messages import AgentMessage, AssistantMessage, UserMessage

if TYPE_CHECKING:
    from window_budget.cancel import CancelToken
    from window_budget.pipeline.summarize._audit import DigestAudit

__all__ = [
    "BudgetPolicy",
    "CompleteFn",
    "CompleteOptions",
    "CondensePlan",
    "CondenseResult",
    "CondenseScope",
    "Condenser",
    "CondenserDeps",
    "Context",
    "KeepUnit",
    "LedgerVersion",
    "MemoryStore",
    "Model",
    "Strategy",
    "SummarizeDeps",
    "Summary",
    "SummaryRequestShape",
    "SyncCompleteFn",
    "TokenCounter",
    "TokenEstimate",
]

CondenseScope: TypeAlias = Literal["session", "branch"]
"""Which digest to write: the live session's older turns, or an abandoned branch."""

KeepUnit: TypeAlias = Literal["tokens", "turns", "messages"]
"""What ``BudgetPolicy.keep_recent`` counts."""

SummaryRequestShape: TypeAlias = Literal["scrollback", "prefix"]
"""How a summary call is built: the flattened scrollback, or the agent's own request prefix."""

Strategy: TypeAlias = Literal["summarize", "trim"]
"""How the condenser reduces the head: a digest (model or network-free), or category trimming."""


@dataclass(frozen=True, slots=True)
class Model:
    """The model whose window the gate measures against."""

    id: str
    """Model id, used to tell whether a reported usage figure came from this model."""
    context_window: int
    """Total tokens the model accepts (prompt plus output)."""
    max_output_tokens: int | None = None
    """The model's output cap, when known."""

    def __post_init__(self) -> None:
        if (
            isinstance(self.context_window, bool)
            or not isinstance(self.context_window, int)
            or self.context_window <= 0
        ):
            raise ValueError(
                f"Model.context_window must be a positive int, got {self.context_window!r}"
            )


def _check_int(name: str, value: object, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"BudgetPolicy.{name} must be a non-negative int, got {value!r}")


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
    def for_window(cls, context_window: int, *, output_reserved: bool = False) -> BudgetPolicy:
        """The default policy scaled to ``context_window``, for both adapters when none is given.

        The tail is about a third of the limit and the digest at most a fifth, so the history
        has room to grow before the next compaction; ``output_reserved``: nothing more reserved.

        >>> BudgetPolicy.for_window(4096).keep_recent
        940
        """
        if isinstance(context_window, bool) or not isinstance(context_window, int):
            raise ValueError(f"context_window must be a positive int, got {context_window!r}")
        if context_window <= 0:
            raise ValueError(f"context_window must be a positive int, got {context_window!r}")
        reserve = 0 if output_reserved else min(2048, context_window // 8)
        ratio = 0.75
        limit = max(0, context_window - reserve) * ratio
        return cls(
            trigger_ratio=ratio,
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


@dataclass(frozen=True, slots=True)
class TokenEstimate:
    """The measured size of a transcript against a window."""

    context_tokens: int
    """Estimated tokens of the transcript (plus anything pinned)."""
    context_window: int
    """The window it is measured against."""
    anchored: bool
    """True when built on a provider's reported usage, False for a pure estimate."""

    @property
    def utilization(self) -> float:
        """``context_tokens / context_window``."""
        return self.context_tokens / self.context_window if self.context_window else 0.0


@dataclass(frozen=True, slots=True)
class CondensePlan:
    """Where the transcript is cut: ``dropped == messages[:cut]``, ``kept == messages[cut:]``."""

    cut: int
    """Index of the first kept message; 0 means nothing to condense."""
    kept: tuple[AgentMessage, ...]
    """The verbatim tail."""
    dropped: tuple[AgentMessage, ...]
    """The head to fold into the digest (handed back so nothing is lost)."""


@dataclass(frozen=True, slots=True)
class Summary:
    """What summarize produced: one digest message standing for ``covered_count`` messages."""

    message: UserMessage
    """The digest, a synthetic user message beginning with the scope's header."""
    covered_count: int
    """How many source messages it replaces."""
    fallback: bool = False
    """True when the network-free digest was used instead of a model's."""
    fallback_reason: str | None = None
    """Why the fallback was used (no model, the error, an empty reply)."""
    scope: CondenseScope = "session"
    """Which header the digest carries."""
    audit: DigestAudit | None = None
    """A model digest's audit (key facts found, pinned back); None for the network-free one."""

    @property
    def text(self) -> str:
        """The digest's full text, header included."""
        content = self.message.content
        return (
            content
            if isinstance(content, str)
            else "".join(getattr(b, "text", "") for b in content)
        )


@dataclass(frozen=True, slots=True)
class Context:
    """What a completer is asked to continue: a system prompt and messages."""

    system_prompt: str
    """The instructions."""
    messages: tuple[AgentMessage, ...]
    """The conversation, here one user message holding the summary prompt."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CompleteOptions:
    """Per-call options handed to the completer."""

    max_tokens: int | None = None
    """Output cap for the call."""
    reasoning: Literal["low", "medium", "high"] | None = None
    """Reasoning-effort hint; summaries ask for ``"high"``."""
    signal: CancelToken | None = None
    """Cancellation token; a completer should stop when it fires."""
    tags: tuple[str, ...] = ()
    """Tags a framework completer attaches to the call (keeps it out of streamed output)."""


@runtime_checkable
class CompleteFn(Protocol):
    """The injected model call, async: ``(model, context, options) -> AssistantMessage``."""

    def __call__(
        self, model: Model, context: Context, options: CompleteOptions | None = None
    ) -> Awaitable[AssistantMessage]:
        """Run the model once and return its reply."""
        ...


@runtime_checkable
class SyncCompleteFn(Protocol):
    """The sync twin of :class:`CompleteFn`, for callers without an event loop."""

    def __call__(
        self, model: Model, context: Context, options: CompleteOptions | None = None
    ) -> AssistantMessage:
        """Run the model once and return its reply."""
        ...


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a piece of text (a tokenizer, a framework's counter, a heuristic)."""

    @property
    def name(self) -> str:
        """Short name shown in reports (``"heuristic"``, ``"tiktoken:cl100k_base"``, ...)."""
        ...

    def count(self, text: str) -> int:
        """Tokens in ``text``."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SummarizeDeps:
    """What summarize needs; every field optional (no model means the network-free digest)."""

    complete: CompleteFn | None = None
    """Async model call."""
    complete_sync: SyncCompleteFn | None = None
    """Sync model call, used by the sync drivers (and by async ones, in a worker thread)."""
    model: Model | None = None
    """The summarizer's model; its window bounds each summary call."""
    scope: CondenseScope = "session"
    """Which header and framing line to use."""
    prior_digest: str | None = None
    """A previous digest to carry in (found automatically at the head of the messages too)."""
    masked_total: int = 0
    """Placeholders of masked tool outputs in the whole transcript (folded part and kept
    tail). With the carried ledger's ``masked_kept`` it tells how many masked originals were
    handed back since that digest — they sit in the archive ahead of the messages folded
    now, so the ledger's pointers skip them."""
    masked_kept: int = 0
    """Placeholders in the tail kept after this digest (recorded in its ledger)."""
    signal: CancelToken | None = None
    """Cancellation token forwarded to the completer."""
    max_tokens: int | None = None
    """Output cap for the digest; the policy's ``digest_max_tokens`` by default."""
    policy: BudgetPolicy = field(default_factory=BudgetPolicy)
    """Supplies the clamp for tool output and the error behaviour."""
    counter: TokenCounter | None = None
    """Counter used to keep the digest within ``max_tokens``; heuristic when None."""
    memory: MemoryStore | None = None
    """Where the full ledger and the folded originals go; None: the record alone carries it."""
    conversation: str = "default"
    """The conversation's key in ``memory``."""
    record_tokens: int = 200
    """Room for the digest's record (its bounded ledger and the pointer into ``memory``)."""
    recall_offered: bool = False
    """The model can call ``recall``: the digest's last line says what it reaches."""
    system_prompt: str = ""
    """The agent's system prompt as sent, for ``BudgetPolicy(summary_request="prefix")``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CondenserDeps:
    """Optional dependencies of :func:`create_condenser`; a bare one yields a no-op condenser."""

    complete: CompleteFn | None = None
    """Async model call for the digest."""
    complete_sync: SyncCompleteFn | None = None
    """Sync model call for the digest."""
    model: Model | None = None
    """The model whose window is guarded; without it the condenser does nothing."""
    policy: BudgetPolicy = field(default_factory=BudgetPolicy)
    """Thresholds and strategy."""
    counter: TokenCounter | None = None
    """Exact token counter; the heuristic when None. ``create_condenser`` also takes a
    ``str -> int`` function, ``"tiktoken"`` or ``"heuristic"`` (see ``resolve_counter``)."""
    summarizer_model: Model | None = None
    """A different model for summaries (defaults to ``model``)."""
    signal: CancelToken | None = None
    """Cancellation token forwarded to every summary call."""
    memory: MemoryStore | None = None
    """Where the full ledger and folded originals go (``window_budget.memory``), for recall."""
    conversation: str = "default"
    """The conversation's key in ``memory`` (a run may name another)."""
    recall_offered: bool = True
    """With ``memory``, the model is offered ``recall`` (the digest then points at it)."""


@dataclass(frozen=True, slots=True)
class CondenseResult:
    """Everything one condense run decided, for callers that need more than the list."""

    messages: Sequence[AgentMessage]
    """The output: the input object itself on a no-op, else ``[digest, *kept]``."""
    plan: CondensePlan
    """The cut; ``plan.dropped`` holds every message that left the transcript."""
    summary: Summary | None
    """The digest, when one was written."""
    tokens_before: int
    """Estimate of the input (pinned tokens included)."""
    tokens_after: int
    """Estimate of the output (pinned tokens included)."""
    limit: float
    """The budget limit the gate used."""
    reason: str
    """``"condensed"``, ``"trimmed"``, ``"forced"``, ``"masked"`` (old tool outputs replaced
    by placeholders, no digest needed; the originals are in ``plan.dropped``),
    ``"shortened"`` (no legal cut, oversized messages cut down instead) or why nothing
    happened (``"no-model"``, ``"under-budget"``,
    ``"nothing-condensable"``)."""
    shortened: tuple[int, ...] = ()
    """Indexes into ``messages`` of tail messages shortened with a visible marker to fit."""
    masked: tuple[int, ...] = ()
    """Indexes into ``messages`` of tool results whose output masking replaced by a
    placeholder (``reason == "masked"``); their originals are ``plan.dropped``, in order."""

    @property
    def tokens_freed(self) -> int:
        """Estimated tokens this run took out of the transcript (0 on a no-op)."""
        return max(0, self.tokens_before - self.tokens_after) if self.changed else 0

    @property
    def changed(self) -> bool:
        """True when the output differs from the input."""
        return self.plan.cut > 0 or bool(self.shortened) or self.reason in ("trimmed", "masked")

    @property
    def audit(self) -> DigestAudit | None:
        """The audit of a model-written digest (see :attr:`Summary.audit`), else None."""
        return self.summary.audit if self.summary is not None else None

    def _repr_html_(self) -> str:
        from window_budget.tools.display import condense_result_html  # lazy: only notebooks need it

        return condense_result_html(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        from window_budget.tools.display import condense_result_text

        printer.text(condense_result_text(self))


Condenser: TypeAlias = Callable[[list[AgentMessage]], Awaitable[list[AgentMessage]]]
"""Transcript in, transcript out (the same list object when there is nothing to do)."""
