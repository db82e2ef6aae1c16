"""Shapes and seams only: the dataclasses, protocols and aliases every module is written against.

Nothing here has behaviour beyond validating its own fields.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, runtime_checkable

from window_budget._policy import BudgetPolicy, KeepUnit, Strategy, SummaryRequestShape
from window_budget._shown import Shown
from window_budget.messages import AgentMessage, AssistantMessage, UserMessage

if TYPE_CHECKING:
    from window_budget.cancel import CancelToken

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
    "DigestAudit",
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
class DigestAudit:
    """What the audit of one model-written digest found."""

    in_ledger: int
    """Facts in the ledger."""
    checked: int
    """High-priority facts checked against the model's text."""
    found: int
    """Of those, how many the model's text holds."""
    appended: int
    """How many were appended under ``# Pinned facts``."""
    left_out: int = 0
    """Omitted facts that did not fit the budget (they stay in the ledger)."""
    copied: int = 0
    """Key facts held only by lines the model copied from the carried digest: kept, not pinned
    again, and not counted as found."""
    invented: tuple[str, ...] = ()
    """Paths and identifiers the model wrote that the folded turns and the carried digest never
    name (a near miss of a real path, typically); marked in the digest."""
    objective_replaced: bool = False
    """True when the model's ``# Objective`` disagreed with the ledger's and was replaced by it
    (counted under ``appended``)."""
    invented_rules: tuple[str, ...] = ()
    """Lines the model wrote under ``# Guardrails`` that no rule the user typed backs; dropped
    from the digest (see ``_guardrails``)."""

    def __str__(self) -> str:
        left = f", {self.left_out} left out for room" if self.left_out else ""
        copied = f", {self.copied} only in lines copied from the carried digest" * bool(self.copied)
        goal = ", the objective put back from the ledger" if self.objective_replaced else ""
        names = ", ".join(self.invented[:5]) + (" …" if len(self.invented) > 5 else "")
        invented = f"; not in the transcript: {names}" if self.invented else ""
        rules = len(self.invented_rules)
        plural = "s" * (rules > 1)
        dropped = f"; {rules} guardrail{plural} the user never gave dropped" * bool(rules)
        return (
            f"{self.in_ledger} facts in the ledger; {self.found} of {self.checked} key facts "
            f"found in the model's digest, {self.appended} pinned{left}{copied}{goal}{invented}"
            f"{dropped}"
        )


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


@dataclass(frozen=True, kw_only=True, slots=True)
class LedgerVersion:
    """One stored version of a conversation's fact ledger."""

    version: int
    """1 for the first compaction's ledger, then one more per write."""
    ledger: Mapping[str, Any]
    """The ledger as ``ledger_to_json`` wrote it."""
    seal: str
    """The seal of the digest this version belongs to: a record must carry the same."""


@runtime_checkable
class MemoryStore(Protocol):
    """Where a conversation's archived originals and ledger versions live (thread-safe).

    Positions are the fact ledger's archive numbering: the first message folded is 0.
    """

    @property
    def key(self) -> bytes:
        """The store's own secret: digest records are sealed with it (see ``seal``)."""

    def archive(
        self, conversation: str, start: int, originals: Sequence[Mapping[str, Any]]
    ) -> None:
        """Keep ``originals`` at ``start``, ``start + 1``, …; kept positions are left alone."""

    def archived(self, conversation: str) -> int:
        """One more than the highest position kept (0 for a new conversation)."""

    def original(self, conversation: str, position: int) -> Mapping[str, Any] | None:
        """The original at ``position``, or None."""

    def originals(self, conversation: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
        """Every original, by position."""

    def save_ledger(self, conversation: str, ledger: Mapping[str, Any], *, seal: str) -> int:
        """Store a new ledger version for the digest sealed ``seal``; returns its number."""

    def ledger(self, conversation: str, version: int | None = None) -> LedgerVersion | None:
        """A stored version (the newest when ``version`` is None), or None."""


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
class CondenseResult(Shown):
    """Everything one condense run decided, for callers that need more than the list."""

    messages: Sequence[AgentMessage]
    """The output: the input object itself on a no-op, else ``[digest, *kept]`` — or
    ``[*head, digest, *kept]`` after a provider's compaction block, the head ending with it
    (``window_budget.pipeline.provider_boundary``)."""
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


Condenser: TypeAlias = Callable[[list[AgentMessage]], Awaitable[list[AgentMessage]]]
"""Transcript in, transcript out (the same list object when there is nothing to do)."""
