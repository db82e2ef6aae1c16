"""The message kinds the core reads and writes.

These types are pure values: frozen dataclasses with a ``role`` discriminator.
Content is either a ``str`` or a tuple of blocks (any sequence given to a
constructor is stored as a tuple). Every field is type-checked at construction: a
wrong type raises :class:`~window_budget.errors.MessageError` naming the class and the
field, so junk (``TextBlock(None)``) is refused where it is made instead of crashing
the estimator later. Consumers dispatch on ``role`` and keep a
generic fallback for objects they do not know, so an unknown message is
estimated from its serialized form and flattened, never dropped or crashed on.

>>> msg = UserMessage("fix the failing test in tests/test_io.py")
>>> msg.role
'user'
>>> call = ToolCallBlock("c1", "bash", {"cmd": "pytest"})
>>> message_text(AssistantMessage([TextBlock("on it"), call]))
'on it'
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Literal, Protocol, TypeAlias, runtime_checkable

from window_budget.errors import MessageError

__all__ = [
    "AgentMessage",
    "AssistantMessage",
    "BashExecutionMessage",
    "Block",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "Content",
    "CustomMessage",
    "DigestMessage",
    "ImageBlock",
    "ProviderCompactionBlock",
    "RoleMessage",
    "TextBlock",
    "ThinkingBlock",
    "ToolCallBlock",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "message_from_dict",
    "message_text",
    "message_to_dict",
    "tool_call_ids",
]


# ----------------------------------------------------------------- validation


_ARTICLES = {"NoneType": "None", "int": "an int", "Mapping": "a mapping"}


def _type_names(types: tuple[type, ...]) -> str:
    names = [
        _ARTICLES.get(t.__name__, f"a {t.__name__}")
        for t in types
        if not (t is dict and Mapping in types)
    ]  # dict is listed only for speed
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _check(owner: object, name: str, *types: type) -> None:
    """Refuse a field whose value is not one of ``types`` (a bool is never taken as a number)."""
    value = getattr(owner, name)
    kind = type(value)
    if isinstance(value, types) and not (isinstance(value, bool) and bool not in types):
        return
    # Type names only, never the value: a wrong field may hold 50 MB or a secret.
    raise MessageError(
        f"{type(owner).__name__}.{name} must be {_type_names(types)}, not {kind.__name__}"
    )


def _check_count(owner: object, name: str, *, optional: bool = False) -> None:
    """Refuse a field that is not a non-negative int (or None, when ``optional``)."""
    value = getattr(owner, name)
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        shown = (
            "a negative int"
            if isinstance(value, int) and not isinstance(value, bool)
            else type(value).__name__
        )
        raise MessageError(
            f"{type(owner).__name__}.{name} must be a non-negative int"
            f"{' or None' if optional else ''}, not {shown}"
        )


# Field kinds; each check first compares the exact type, so a valid field costs one lookup.
_TIME = (float, int, type(None))
_OPT_STR = (str, type(None))
_OPT_INT = (int, type(None))
_MAP = (dict, Mapping)
_OPT_MAP = (dict, Mapping, type(None))


# --------------------------------------------------------------------- blocks


@dataclass(frozen=True, slots=True)
class TextBlock:
    """Plain text inside a message."""

    text: str
    """The text itself."""
    type: ClassVar[Literal["text"]] = "text"

    def __post_init__(self) -> None:
        if type(self.text) is not str:
            _check(self, "text", str)


@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    """A model's reasoning, kept so it can be counted and flattened as a plan."""

    thinking: str
    """The reasoning text."""
    signature: str | None = None
    """Provider signature that must travel with the block, if any."""
    type: ClassVar[Literal["thinking"]] = "thinking"

    def __post_init__(self) -> None:
        if type(self.thinking) is not str:
            _check(self, "thinking", str)
        if type(self.signature) not in _OPT_STR:
            _check(self, "signature", *_OPT_STR)


@dataclass(frozen=True, slots=True)
class ToolCallBlock:
    """A request from the assistant to run a tool."""

    id: str
    """Provider id of the call; the matching ``ToolResultMessage`` carries it."""
    name: str
    """Name of the tool."""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    """Arguments as parsed JSON. A raw, unparsable string is kept under ``"_raw"``."""
    type: ClassVar[Literal["toolCall"]] = "toolCall"

    def __post_init__(self) -> None:
        if type(self.id) is not str:
            _check(self, "id", str)
        if type(self.name) is not str:
            _check(self, "name", str)
        if type(self.arguments) not in _MAP:
            _check(self, "arguments", *_MAP)


@dataclass(frozen=True, slots=True)
class ImageBlock:
    """An image; counted at a flat rate whatever its resolution."""

    data: str
    """Base64 payload or a URL."""
    mime_type: str = "image/png"
    """MIME type of the payload."""
    type: ClassVar[Literal["image"]] = "image"

    def __post_init__(self) -> None:
        if type(self.data) is not str:
            _check(self, "data", str)
        if type(self.mime_type) is not str:
            _check(self, "mime_type", str)


@dataclass(frozen=True, slots=True)
class ProviderCompactionBlock:
    """A provider's own compaction of everything before it, carried through unchanged.

    Anthropic's server-side compaction returns a ``compaction`` content block (a readable
    summary in ``content``); OpenAI's Responses API a ``compaction`` item (an opaque
    ``encrypted_content``). Either must go back to the provider verbatim on the next
    request, and the provider drops what came before it: the message carrying it is a
    boundary (``window_budget.pipeline.provider_boundary``), never split, shortened or
    summarized again.

    >>> item = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAB"}
    >>> ProviderCompactionBlock("openai", None, item).text
    'gAAB'
    """

    provider: str
    """``"anthropic"``, ``"openai"`` or another provider's name."""
    summary: str | None = None
    """The summary text the provider shows (Anthropic's ``content``); None when opaque."""
    payload: Mapping[str, Any] = field(default_factory=dict)
    """The block or item exactly as the provider sent it (JSON), to send back verbatim."""
    type: ClassVar[Literal["providerCompaction"]] = "providerCompaction"
    made: ClassVar[bool] = False
    """True once one was made in this process: until then no transcript holds one, and the
    boundary search (a scan of the whole transcript) is skipped."""

    def __post_init__(self) -> None:
        ProviderCompactionBlock.made = True
        _check(self, "provider", str)
        _check(self, "summary", *_OPT_STR)
        _check(self, "payload", *_MAP)

    @classmethod
    def from_provider(
        cls, raw: Mapping[str, Any], provider: str | None = None
    ) -> ProviderCompactionBlock | None:
        """The core block for a provider's ``compaction`` block or item; None for others.

        LangChain's standard-content wrapper (``{"type": "non_standard", "value": {...}}``)
        is looked through. Without ``provider``, a block with Anthropic's ``content`` or
        ``signature`` field is Anthropic's, any other OpenAI's.
        """
        inner = raw.get("value") if raw.get("type") == "non_standard" else raw
        if not isinstance(inner, Mapping) or inner.get("type") != "compaction":
            return None
        if provider is None:
            provider = "anthropic" if "content" in inner or "signature" in inner else "openai"
        summary = inner.get("content")
        return cls(provider, summary if isinstance(summary, str) else None, dict(inner))

    @property
    def text(self) -> str:
        """What it is billed for: the summary, else the opaque payload's characters.

        The provider expands an opaque ``encrypted_content`` into tokens of its own that
        no client can see; its length is the only size a client has, so it is counted.
        """
        if self.summary is not None:
            return self.summary
        opaque = self.payload.get("encrypted_content")
        if isinstance(opaque, str):
            return opaque
        return json.dumps(dict(self.payload), ensure_ascii=False, default=repr, sort_keys=True)


Block: TypeAlias = TextBlock | ThinkingBlock | ToolCallBlock | ImageBlock | ProviderCompactionBlock
"""Any block a message's content may hold."""

Content: TypeAlias = str | tuple[Block, ...]
"""Message content: text, or a tuple of blocks."""

_BLOCK_TYPES = (TextBlock, ThinkingBlock, ToolCallBlock, ImageBlock, ProviderCompactionBlock)


def _normalize_content(owner: str, content: object) -> Content:
    if isinstance(content, str):
        return content
    # tuple and list first: the ABC check is slow and runs for every message built.
    if type(content) in (tuple, list) or (
        isinstance(content, Sequence) and not isinstance(content, bytes | bytearray)
    ):
        blocks: tuple[Any, ...] = tuple(content)  # type: ignore[arg-type]
        for i, block in enumerate(blocks):
            if type(block) not in _BLOCK_TYPES and not isinstance(block, _BLOCK_TYPES):
                raise MessageError(
                    f"{owner} content block {i} is a {type(block).__name__}; expected "
                    "TextBlock, ThinkingBlock, ToolCallBlock, ImageBlock or ProviderCompactionBlock"
                )
        return blocks
    raise MessageError(
        f"{owner} content must be a str or a sequence of blocks, not {type(content).__name__}"
    )


def _set(obj: object, name: str, value: object) -> None:
    # Frozen dataclasses normalise their own fields once, at construction.
    object.__setattr__(obj, name, value)


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
        _set(self, "content", _normalize_content(type(self).__name__, self.content))
        if type(self.timestamp) not in _TIME:
            _check(self, "timestamp", *_TIME)


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
        _check_count(self, "covered_count")
        _check_count(self, "kept_count", optional=True)
        if type(self.fallback) is not bool:
            _check(self, "fallback", bool)
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
        _set(self, "content", _normalize_content("AssistantMessage", self.content))
        if self.usage is not None and not isinstance(self.usage, Usage):
            raise MessageError(
                f"AssistantMessage.usage must be a Usage, not {type(self.usage).__name__}"
            )
        if type(self.model) not in _OPT_STR:
            _check(self, "model", *_OPT_STR)
        if type(self.stop_reason) not in _OPT_STR:
            _check(self, "stop_reason", *_OPT_STR)
        if type(self.timestamp) not in _TIME:
            _check(self, "timestamp", *_TIME)

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
            _check(self, "tool_call_id", str)
        if type(self.tool_name) is not str:
            _check(self, "tool_name", str)
        _set(self, "content", _normalize_content("ToolResultMessage", self.content))
        if type(self.is_error) is not bool:
            _check(self, "is_error", bool)
        if type(self.timestamp) not in _TIME:
            _check(self, "timestamp", *_TIME)


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
            _check(self, "command", str)
        if type(self.output) is not str:
            _check(self, "output", str)
        if type(self.exit_code) not in _OPT_INT:
            _check(self, "exit_code", *_OPT_INT)
        if type(self.cancelled) is not bool:
            _check(self, "cancelled", bool)
        if type(self.truncated) is not bool:
            _check(self, "truncated", bool)
        if type(self.timestamp) not in _TIME:
            _check(self, "timestamp", *_TIME)


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
            _check(self, "custom_type", str)
        _set(self, "content", _normalize_content("CustomMessage", self.content))
        if type(self.display) is not bool:
            _check(self, "display", bool)
        if type(self.details) not in _OPT_MAP:
            _check(self, "details", *_OPT_MAP)
        if type(self.timestamp) not in _TIME:
            _check(self, "timestamp", *_TIME)


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
            _check(self, "summary", str)
        if type(self.from_id) not in _OPT_STR:
            _check(self, "from_id", *_OPT_STR)
        if type(self.timestamp) not in _TIME:
            _check(self, "timestamp", *_TIME)


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
            _check(self, "summary", str)
        _check_count(self, "tokens_before")
        _check_count(self, "kept_count", optional=True)
        if type(self.timestamp) not in _TIME:
            _check(self, "timestamp", *_TIME)


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
        _set(self, "heads", (*self.labels, *self.lead))
        _set(self, "has_blocks", self.body == "content")


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


# ------------------------------------------------------------------ helpers


def content_text(content: Content) -> str:
    """The text blocks of ``content`` joined with newlines (thinking and calls excluded)."""
    if isinstance(content, str):
        return content
    return "\n".join(b.text for b in content if isinstance(b, TextBlock))


def message_text(message: AgentMessage) -> str:
    """The human-readable text of a message: text content, summary, or command output."""
    kind = message_kind(message)
    if kind is None:
        return serialize_unknown(message)
    body = getattr(message, kind.body)
    text: str = content_text(body) if kind.has_blocks else body
    if kind.lead:
        return "\n".join([*(getattr(message, name) for name in kind.lead), text])
    return text


def message_blocks(message: object) -> tuple[Block, ...]:
    """The content blocks of a message; empty when its content is plain text or it has none.

    >>> message_blocks(UserMessage([TextBlock("look"), ImageBlock("aGk=")]))[1].mime_type
    'image/png'
    >>> message_blocks(BashExecutionMessage("ls", "a.txt"))
    ()
    """
    kind = message_kind(message)
    if kind is None or not kind.has_blocks:
        return ()
    content: Content = getattr(message, kind.body)
    return () if isinstance(content, str) else content


def tool_calls(message: object) -> tuple[ToolCallBlock, ...]:
    """The tool calls a message makes, in order (empty for every kind but an assistant reply)."""
    return message.tool_calls if isinstance(message, AssistantMessage) else ()


def tool_call_ids(message: AgentMessage) -> tuple[str, ...]:
    """Ids of the tool calls an assistant message makes (empty for every other message)."""
    return tuple(c.id for c in tool_calls(message))


def serialize_unknown(message: object) -> str:
    """A stable text form of an object the core does not know, for counting and flattening."""
    payload: object
    if dataclasses.is_dataclass(message) and not isinstance(message, type):
        payload = {f.name: getattr(message, f.name) for f in dataclasses.fields(message)}
    elif isinstance(message, Mapping):
        payload = dict(message)
    elif hasattr(message, "__dict__"):
        payload = {k: v for k, v in vars(message).items() if not k.startswith("_")}
    else:
        payload = repr(message)
    try:
        return json.dumps(payload, ensure_ascii=False, default=repr, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(payload)


# ------------------------------------------------------------ (de)serialize


def _block_to_dict(block: Block) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ThinkingBlock):
        out: dict[str, Any] = {"type": "thinking", "thinking": block.thinking}
        if block.signature is not None:
            out["signature"] = block.signature
        return out
    if isinstance(block, ToolCallBlock):
        return {
            "type": "toolCall",
            "id": block.id,
            "name": block.name,
            "arguments": dict(block.arguments),
        }
    if isinstance(block, ProviderCompactionBlock):
        return {
            "type": "providerCompaction",
            "provider": block.provider,
            "summary": block.summary,
            "payload": dict(block.payload),
        }
    return {"type": "image", "data": block.data, "mimeType": block.mime_type}


def _block_from_dict(raw: Mapping[str, Any], where: str) -> Block:
    kind = raw.get("type")
    try:
        if kind == "text":
            return TextBlock(str(raw["text"]))
        if kind == "thinking":
            return ThinkingBlock(str(raw["thinking"]), raw.get("signature"))
        if kind == "toolCall":
            args = raw.get("arguments") or {}
            if not isinstance(args, Mapping):
                args = {"_raw": args}
            return ToolCallBlock(str(raw["id"]), str(raw["name"]), dict(args))
        if kind == "image":
            return ImageBlock(str(raw["data"]), str(raw.get("mimeType", "image/png")))
        if kind == "providerCompaction":
            payload = raw.get("payload")
            return ProviderCompactionBlock(
                str(raw["provider"]),
                raw.get("summary") if isinstance(raw.get("summary"), str) else None,
                dict(payload) if isinstance(payload, Mapping) else {},
            )
    except KeyError as exc:
        raise MessageError(f"{where}: {kind} block is missing {exc.args[0]!r}") from None
    raise MessageError(f"{where}: unknown block type {kind!r}")


def _content_to_json(content: Content) -> str | list[dict[str, Any]]:
    return content if isinstance(content, str) else [_block_to_dict(b) for b in content]


def _content_from_json(raw: object, where: str) -> Content:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        blocks = []
        for i, b in enumerate(raw):
            if not isinstance(b, Mapping):
                raise MessageError(f"{where}: content block {i} is not an object")
            blocks.append(_block_from_dict(b, f"{where} block {i}"))
        return tuple(blocks)
    raise MessageError(f"{where}: content must be a string or a list of blocks")


def _digest_fields(message: DigestMessage) -> dict[str, Any]:
    """What a digest adds to a user message, as JSON."""
    out: dict[str, Any] = {
        "covered": message.covered_count,
        "kept": message.kept_count,
        "fallback": message.fallback,
    }
    if message.facts is not None:
        out["facts"] = message.facts
    return out


def _assistant_to_dict(message: AssistantMessage) -> dict[str, Any]:
    """An assistant message as JSON; usage, model and stop reason only when known."""
    out: dict[str, Any] = {"role": "assistant", "content": _content_to_json(message.content)}
    if message.usage is not None:
        u = message.usage
        out["usage"] = {
            "input": u.input_tokens,
            "output": u.output_tokens,
            "cacheRead": u.cache_read_tokens,
            "cacheWrite": u.cache_creation_tokens,
        }
    if message.model is not None:
        out["model"] = message.model
    if message.stop_reason is not None:
        out["stopReason"] = message.stop_reason
    return out


def message_to_dict(message: AgentMessage) -> dict[str, Any]:
    """A JSON-ready dict for a message; unknown messages keep their serialized form.

    >>> message_to_dict(UserMessage("hi"))
    {'role': 'user', 'content': 'hi'}
    """
    out: dict[str, Any]
    if isinstance(message, UserMessage):
        out = {"role": "user", "content": _content_to_json(message.content)}
        if isinstance(message, DigestMessage):
            out["digest"] = _digest_fields(message)
    elif isinstance(message, AssistantMessage):
        out = _assistant_to_dict(message)
    elif isinstance(message, ToolResultMessage):
        out = {
            "role": "toolResult",
            "toolCallId": message.tool_call_id,
            "toolName": message.tool_name,
            "content": _content_to_json(message.content),
            "isError": message.is_error,
        }
    elif isinstance(message, BashExecutionMessage):
        out = {
            "role": "bashExecution",
            "command": message.command,
            "output": message.output,
            "exitCode": message.exit_code,
            "cancelled": message.cancelled,
            "truncated": message.truncated,
        }
    elif isinstance(message, CustomMessage):
        out = {
            "role": "custom",
            "customType": message.custom_type,
            "content": _content_to_json(message.content),
            "display": message.display,
        }
        if message.details is not None:
            out["details"] = dict(message.details)
    elif isinstance(message, BranchSummaryMessage):
        out = {"role": "branchSummary", "summary": message.summary}
        if message.from_id is not None:
            out["fromId"] = message.from_id
    elif isinstance(message, CompactionSummaryMessage):
        out = {
            "role": "compactionSummary",
            "summary": message.summary,
            "tokensBefore": message.tokens_before,
        }
        if message.kept_count is not None:
            out["keptCount"] = message.kept_count
    else:
        role = getattr(message, "role", None)
        return {"role": str(role), "serialized": serialize_unknown(message)}
    timestamp = getattr(message, "timestamp", None)
    if timestamp is not None:
        out["timestamp"] = timestamp
    return out


def _whole(value: object, where: str, name: str) -> int:
    """A count read from JSON: an int, a whole finite float, or a short string of digits.

    ``int()`` alone would raise a bare ``OverflowError`` on ``1e400`` (JSON reads it as
    infinity) and a bare ``ValueError`` on a 5,000-digit string.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 18:
        return int(value)
    shown = repr(value) if isinstance(value, float) else type(value).__name__
    raise MessageError(f"{where}: {name} must be a whole number, not {shown}")


@dataclass(frozen=True, slots=True)
class _OpaqueMessage:
    """A message of a role the core does not know, restored from its serialized form."""

    role: str
    serialized: str


def parse_timestamp(raw: object) -> float | None:
    """Seconds since the epoch from a number or an ISO 8601 string; None for anything else.

    Timestamps are metadata: a record whose time cannot be read keeps its content.
    """
    if type(raw) in (int, float):
        value = float(raw)  # type: ignore[arg-type]
        return value if math.isfinite(value) else None
    if isinstance(raw, str) and len(raw) <= 64:
        try:
            return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _facts_or_none(raw: object) -> dict[str, Any] | None:
    """A digest's ledger as read from a file: a mapping, or None (the text still holds it)."""
    return dict(raw) if isinstance(raw, Mapping) else None


def message_from_dict(raw: Mapping[str, Any]) -> AgentMessage:
    """Rebuild a message from :func:`message_to_dict` output.

    Raises:
        MessageError: the record is not a message; the sentence names what is wrong.

    """
    if not isinstance(raw, Mapping):
        raise MessageError(f"a message must be a JSON object, not {type(raw).__name__}")
    role = raw.get("role")
    ts = parse_timestamp(raw.get("timestamp"))
    where = f"{role} message"
    try:
        if role == "user":
            content = _content_from_json(raw["content"], where)
            info = raw.get("digest")
            if isinstance(info, Mapping):
                kept = info.get("kept")
                return DigestMessage(
                    content,
                    timestamp=ts,
                    covered_count=_whole(info.get("covered", 0), where, "digest.covered"),
                    kept_count=None if kept is None else _whole(kept, where, "digest.kept"),
                    fallback=bool(info.get("fallback", False)),
                    facts=_facts_or_none(info.get("facts")),
                )
            return UserMessage(content, timestamp=ts)
        if role == "assistant":
            usage = None
            if isinstance(raw.get("usage"), Mapping):
                u = raw["usage"]
                usage = Usage(
                    *(
                        _whole(u.get(k, 0), where, f"usage.{k}")
                        for k in ("input", "output", "cacheRead", "cacheWrite")
                    )
                )
            return AssistantMessage(
                _content_from_json(raw["content"], where),
                usage=usage,
                model=raw.get("model"),
                stop_reason=raw.get("stopReason"),
                timestamp=ts,
            )
        if role == "toolResult":
            return ToolResultMessage(
                str(raw["toolCallId"]),
                str(raw.get("toolName", "")),
                _content_from_json(raw["content"], where),
                is_error=bool(raw.get("isError", False)),
                timestamp=ts,
            )
        if role == "bashExecution":
            return BashExecutionMessage(
                str(raw["command"]),
                str(raw.get("output", "")),
                exit_code=raw.get("exitCode"),
                cancelled=bool(raw.get("cancelled", False)),
                truncated=bool(raw.get("truncated", False)),
                timestamp=ts,
            )
        if role == "custom":
            return CustomMessage(
                str(raw.get("customType", "custom")),
                _content_from_json(raw.get("content", ""), where),
                display=bool(raw.get("display", True)),
                details=raw.get("details"),
                timestamp=ts,
            )
        if role == "branchSummary":
            return BranchSummaryMessage(
                str(raw["summary"]), from_id=raw.get("fromId"), timestamp=ts
            )
        if role == "compactionSummary":
            kept = raw.get("keptCount")
            return CompactionSummaryMessage(
                str(raw["summary"]),
                _whole(raw.get("tokensBefore", 0), where, "tokensBefore"),
                timestamp=ts,
                kept_count=kept
                if isinstance(kept, int) and not isinstance(kept, bool) and kept >= 0
                else None,
            )
    except KeyError as exc:
        raise MessageError(f"{where} is missing {exc.args[0]!r}") from None
    if not isinstance(role, str) or not role:
        raise MessageError("a message needs a non-empty string 'role'")
    return _OpaqueMessage(role, str(raw.get("serialized", json.dumps(dict(raw), default=repr))))
