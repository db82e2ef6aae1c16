"""The message kinds, their usage figures, and the table that reads every kind alike."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from window_budget.errors import MessageError
from window_budget.messages._blocks import Content, ToolCallBlock, normalize_content
from window_budget.messages._checks import (
    OPT_INT,
    OPT_MAP,
    OPT_STR,
    TIME,
    check,
    check_count,
    set_field,
)

# -------------------------------------------------------------------- usage


@dataclass(frozen=True, slots=True)
class Usage:
    """Token figures a provider reported for one request: the library's one usage type.

    The transcript readers, the meter and the adapters all produce it, through one parser
    per provider (``window_budget.budget.usage_from_anthropic``, ``usage_from_openai``,
    ``usage_from_langchain``).
    """

    input_tokens: int
    """Uncached prompt tokens."""
    output_tokens: int = 0
    """Tokens the model generated."""
    cache_read_tokens: int = 0
    """Prompt tokens served from the provider's cache."""
    cache_creation_tokens: int = 0
    """Prompt tokens written to the provider's cache."""

    def __post_init__(self) -> None:
        for f in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens"):
            value = getattr(self, f)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise MessageError(f"Usage.{f} must be a non-negative int, got {value!r}")

    @property
    def prompt_tokens(self) -> int:
        """The whole prompt the request carried: input plus cache read and creation."""
        return self.input_tokens + self.cache_read_tokens + self.cache_creation_tokens

    @property
    def used_tokens(self) -> int:
        """The meter's name for :attr:`prompt_tokens`: what the request put into the window."""
        return self.prompt_tokens

    @property
    def context_tokens(self) -> int:
        """The transcript's size once this reply is appended: prompt plus output."""
        return self.prompt_tokens + self.output_tokens


# ------------------------------------------------------------------ messages


@dataclass(frozen=True, slots=True)
class UserMessage:
    """A user turn (also the carrier of digests, which are synthetic user turns)."""

    content: Content
    """Text or blocks."""
    timestamp: float | None = None
    """Seconds since the epoch, when known."""
    role: Literal["user"] = field(default="user", init=False)

    def __post_init__(self) -> None:
        set_field(self, "content", normalize_content(type(self).__name__, self.content))
        if type(self.timestamp) not in TIME:
            check(self, "timestamp", *TIME)


@dataclass(frozen=True, slots=True)
class DigestMessage(UserMessage):
    """A digest written by window-budget: a user turn that knows what it stands for.

    Everything that handles a ``UserMessage`` handles it; the extra fields let the next
    compaction and the usage anchor tell the digest and the turns kept with it apart.
    """

    covered_count: int = 0
    """How many messages the digest replaced (carried-in digests included once)."""
    kept_count: int | None = None
    """How many verbatim messages followed it when it was written; their usage figures
    measured the old, longer transcript and must not anchor the estimate."""
    fallback: bool = False
    """True when it is the network-free digest."""
    facts: dict[str, Any] | None = field(default=None, hash=False)
    """The fact ledger the digest carries, JSON-safe, with its format version inside
    (``window_budget.pipeline.summarize.facts.ledger_to_json``); the next compaction merges it."""

    def __post_init__(self) -> None:
        # Named base call: zero-argument super() does not work in slotted dataclasses.
        UserMessage.__post_init__(self)
        check_count(self, "covered_count")
        check_count(self, "kept_count", optional=True)
        if type(self.fallback) is not bool:
            check(self, "fallback", bool)
        if self.facts is not None and not isinstance(self.facts, dict):
            raise MessageError(
                "DigestMessage.facts must be a dict (a serialized ledger) or "
                f"None, not {type(self.facts).__name__}"
            )


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """A model reply: text, thinking and tool-call blocks, with the usage it reported."""

    content: Content
    """Text or blocks."""
    usage: Usage | None = None
    """What the provider reported for this turn; anchors the token estimate."""
    model: str | None = None
    """Id of the model that wrote it; a usage figure from another model is not trusted."""
    stop_reason: str | None = None
    """Why generation stopped (``"stop"``, ``"toolUse"``, ``"error"``, ...)."""
    timestamp: float | None = None
    """Seconds since the epoch, when known."""
    role: Literal["assistant"] = field(default="assistant", init=False)

    def __post_init__(self) -> None:
        set_field(self, "content", normalize_content("AssistantMessage", self.content))
        if self.usage is not None and not isinstance(self.usage, Usage):
            raise MessageError(
                f"AssistantMessage.usage must be a Usage, not {type(self.usage).__name__}"
            )
        if type(self.model) not in OPT_STR:
            check(self, "model", *OPT_STR)
        if type(self.stop_reason) not in OPT_STR:
            check(self, "stop_reason", *OPT_STR)
        if type(self.timestamp) not in TIME:
            check(self, "timestamp", *TIME)

    @property
    def tool_calls(self) -> tuple[ToolCallBlock, ...]:
        """The tool-call blocks, in order."""
        if isinstance(self.content, str):
            return ()
        return tuple(b for b in self.content if isinstance(b, ToolCallBlock))


@dataclass(frozen=True, slots=True)
class ToolResultMessage:
    """The output of one tool call."""

    tool_call_id: str
    """Id of the ``ToolCallBlock`` this answers."""
    tool_name: str
    """Name of the tool that ran."""
    content: Content
    """Output text or blocks (images allowed)."""
    is_error: bool = False
    """True when the tool failed."""
    timestamp: float | None = None
    """Seconds since the epoch, when known."""
    role: Literal["toolResult"] = field(default="toolResult", init=False)

    def __post_init__(self) -> None:
        if type(self.tool_call_id) is not str:
            check(self, "tool_call_id", str)
        if type(self.tool_name) is not str:
            check(self, "tool_name", str)
        set_field(self, "content", normalize_content("ToolResultMessage", self.content))
        if type(self.is_error) is not bool:
            check(self, "is_error", bool)
        if type(self.timestamp) not in TIME:
            check(self, "timestamp", *TIME)


@dataclass(frozen=True, slots=True)
class BashExecutionMessage:
    """A shell command the user ran themselves, with its output."""

    command: str
    """The command line."""
    output: str
    """Combined output."""
    exit_code: int | None = None
    """Exit status; ``None`` when unknown or cancelled."""
    cancelled: bool = False
    """True when the command was interrupted."""
    truncated: bool = False
    """True when ``output`` was already shortened upstream."""
    timestamp: float | None = None
    """Seconds since the epoch, when known."""
    role: Literal["bashExecution"] = field(default="bashExecution", init=False)

    def __post_init__(self) -> None:
        if type(self.command) is not str:
            check(self, "command", str)
        if type(self.output) is not str:
            check(self, "output", str)
        if type(self.exit_code) not in OPT_INT:
            check(self, "exit_code", *OPT_INT)
        if type(self.cancelled) is not bool:
            check(self, "cancelled", bool)
        if type(self.truncated) is not bool:
            check(self, "truncated", bool)
        if type(self.timestamp) not in TIME:
            check(self, "timestamp", *TIME)


@dataclass(frozen=True, slots=True)
class CustomMessage:
    """An application-defined note injected into the transcript."""

    custom_type: str
    """The application's own kind tag."""
    content: Content
    """Text or blocks."""
    display: bool = True
    """Whether a UI shows it."""
    details: Mapping[str, Any] | None = None
    """Free-form data the application attached (counted, never interpreted)."""
    timestamp: float | None = None
    """Seconds since the epoch, when known."""
    role: Literal["custom"] = field(default="custom", init=False)

    def __post_init__(self) -> None:
        if type(self.custom_type) is not str:
            check(self, "custom_type", str)
        set_field(self, "content", normalize_content("CustomMessage", self.content))
        if type(self.display) is not bool:
            check(self, "display", bool)
        if type(self.details) not in OPT_MAP:
            check(self, "details", *OPT_MAP)
        if type(self.timestamp) not in TIME:
            check(self, "timestamp", *TIME)


@dataclass(frozen=True, slots=True)
class BranchSummaryMessage:
    """A digest of a branch the conversation did not take."""

    summary: str
    """The digest text."""
    from_id: str | None = None
    """Id of the entry the branch left from, when known."""
    timestamp: float | None = None
    """Seconds since the epoch, when known."""
    role: Literal["branchSummary"] = field(default="branchSummary", init=False)

    def __post_init__(self) -> None:
        if type(self.summary) is not str:
            check(self, "summary", str)
        if type(self.from_id) not in OPT_STR:
            check(self, "from_id", *OPT_STR)
        if type(self.timestamp) not in TIME:
            check(self, "timestamp", *TIME)


@dataclass(frozen=True, slots=True)
class CompactionSummaryMessage:
    """A digest written by an earlier compaction (this library's or another tool's)."""

    summary: str
    """The digest text."""
    tokens_before: int = 0
    """Size of the transcript the digest replaced, when known."""
    timestamp: float | None = None
    """Seconds since the epoch, when known."""
    kept_count: int | None = None
    """How many verbatim messages the compaction kept after it (pi keeps the newest turns);
    their usage figures measured the longer transcript and must not anchor the estimate."""
    role: Literal["compactionSummary"] = field(default="compactionSummary", init=False)

    def __post_init__(self) -> None:
        if type(self.summary) is not str:
            check(self, "summary", str)
        check_count(self, "tokens_before")
        check_count(self, "kept_count", optional=True)
        if type(self.timestamp) not in TIME:
            check(self, "timestamp", *TIME)


@runtime_checkable
class RoleMessage(Protocol):
    """Anything with a ``role``: the shape an unknown message must at least have."""

    @property
    def role(self) -> str:
        """The discriminator."""
        ...


AgentMessage: TypeAlias = (
    UserMessage
    | AssistantMessage
    | ToolResultMessage
    | BashExecutionMessage
    | CustomMessage
    | BranchSummaryMessage
    | CompactionSummaryMessage
    | RoleMessage
)
"""Every message the core accepts: the seven known kinds or any object with a ``role``."""


# ------------------------------------------------------------ the kinds, in one table


@dataclass(frozen=True, slots=True)
class MessageKind:
    """What one message kind carries, for code that treats every kind alike.

    Estimating, flattening to text and shortening ask the same questions of every kind:
    which field holds the main text, what is read before it, what names or links the
    message. :data:`MESSAGE_KINDS` answers them once; :func:`message_kind` looks a message
    up. A consumer that renders each kind its own way (the summary prompt, category
    trimming) still matches on the classes, and falls back for an unknown object.
    """

    role: str
    """The ``role`` discriminator of the kind."""
    body: str
    """The field holding the main text: ``"content"`` (text or blocks) or a plain string
    (a shell's ``output``, a digest's ``summary``). Shortening a message cuts this field."""
    lead: tuple[str, ...] = ()
    """String fields read before the body as part of the text (a shell's ``command``)."""
    labels: tuple[str, ...] = ()
    """String fields that name or link the message: billed, but not part of its text."""
    extras: tuple[str, ...] = ()
    """Mapping fields billed as compact JSON when set (a note's ``details``)."""
    heads: tuple[str, ...] = field(init=False, repr=False, compare=False)
    """``labels`` then ``lead``: the string fields billed before the body."""
    has_blocks: bool = field(init=False, repr=False, compare=False)
    """True when the body is ``content``: text or a tuple of blocks."""

    def __post_init__(self) -> None:
        # Derived once: the estimator reads them for every message on a cold turn.
        set_field(self, "heads", (*self.labels, *self.lead))
        set_field(self, "has_blocks", self.body == "content")


MESSAGE_KINDS: Mapping[type, MessageKind] = {
    UserMessage: MessageKind("user", "content"),
    AssistantMessage: MessageKind("assistant", "content"),
    ToolResultMessage: MessageKind("toolResult", "content", labels=("tool_name", "tool_call_id")),
    BashExecutionMessage: MessageKind("bashExecution", "output", lead=("command",)),
    CustomMessage: MessageKind("custom", "content", labels=("custom_type",), extras=("details",)),
    BranchSummaryMessage: MessageKind("branchSummary", "summary"),
    CompactionSummaryMessage: MessageKind("compactionSummary", "summary"),
}
"""Every message kind the core knows, and what each carries. Adding a kind means one
entry here, plus the consumers that treat it in a way of their own."""

KNOWN_MESSAGE_TYPES: tuple[type, ...] = tuple(MESSAGE_KINDS)
"""The classes of :data:`MESSAGE_KINDS` (their subclasses, such as ``DigestMessage``,
are known through them)."""

# Subclasses (DigestMessage, an application's own) resolve through their MRO once.
_KIND_OF_TYPE: dict[type, MessageKind | None] = dict(MESSAGE_KINDS)
_MAX_CACHED_TYPES = 256


def message_kind(message: object) -> MessageKind | None:
    """What the message's kind carries; None for an object the core does not know.

    A subclass of a known kind (``DigestMessage`` is a ``UserMessage``) is that kind.

    >>> message_kind(ToolResultMessage("c1", "bash", "ok")).labels
    ('tool_name', 'tool_call_id')
    >>> message_kind({"role": "system"}) is None
    True
    """
    tp = type(message)
    try:
        return _KIND_OF_TYPE[tp]
    except KeyError:
        kind = next((MESSAGE_KINDS[t] for t in tp.__mro__ if t in MESSAGE_KINDS), None)
        if len(_KIND_OF_TYPE) < _MAX_CACHED_TYPES:  # classes made on the fly must not pile up
            _KIND_OF_TYPE[tp] = kind
        return kind
