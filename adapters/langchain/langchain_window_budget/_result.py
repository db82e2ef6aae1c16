"""One run's account in LangChain terms: :class:`LangChainResult`, and what a run prepares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage, HumanMessage

from langchain_window_budget._convert import Converted
from window_budget.contract import CondenseResult, DigestAudit

__all__ = ["HeadView", "LangChainResult", "Prepared"]


@dataclass(frozen=True, slots=True)
class LangChainResult:
    """One run of :class:`LangChainCondenser`, in LangChain terms."""

    messages: Sequence[BaseMessage]
    """The output: the input object itself when nothing was done, else a new list of
    ``[*pinned system messages, digest, *kept tail]``."""
    dropped: list[BaseMessage]
    """The caller's messages that left the transcript (folded into the digest, or the
    originals of masked tool outputs)."""
    digest: HumanMessage | None
    """The digest message, when one was written."""
    core: CondenseResult
    """The core's full account (estimates, limit, reason, plan)."""
    replaced: list[BaseMessage] = field(default_factory=list)
    """The caller's originals of the messages the output carries *shortened* copies of;
    with ``dropped``, every word of the input that the output lacks."""
    reused: bool = False
    """True when a digest written earlier for the same head was put in its place (no
    summary call for that head; see ``remember_digests``)."""

    @property
    def masked(self) -> int:
        """How many old tool outputs this run replaced by a placeholder (no digest then).

        The output holds copies of those tool messages (same id, ``tool_call_id`` and
        name, the placeholder as content); their originals are in :attr:`dropped`.
        """
        return len(self.core.masked)

    @property
    def tokens_freed(self) -> int:
        """Estimated tokens this run took out of the transcript."""
        return self.core.tokens_freed

    @property
    def changed(self) -> bool:
        """True when the output differs from the input."""
        return self.reused or self.core.changed

    @property
    def audit(self) -> DigestAudit | None:
        """The audit of this run's model-written digest (also in the digest's record)."""
        return self.core.audit


@dataclass(frozen=True, slots=True)
class HeadView:
    """A transcript as the engine runs it when digests are remembered."""

    view: Sequence[BaseMessage]
    """The transcript, or it with a remembered digest in place of its head."""
    pinned: int
    """Leading system messages."""
    chain: list[int]
    """Fingerprints of the original body's prefixes."""
    length: int
    """How many body messages the remembered digest stands for (0: none used)."""
    digest: HumanMessage | None
    """The remembered digest put in, if any."""
    head: list[BaseMessage] = field(default_factory=list)
    """The originals it stands for."""
    canon: Sequence[BaseMessage] = ()
    """``view`` with the engine's stand-ins for unchanged messages (what is converted)."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """A run's input made ready for the core (shared by the sync and async drivers)."""

    view: Sequence[BaseMessage]
    """What the caller's objects are mapped back onto (with a remembered digest, if any)."""
    converted: Sequence[BaseMessage]
    """The equal stand-ins the engine converted."""
    conv: Converted
    """Their core messages and pinned tokens."""
    recall: HeadView | None
    """The remembered digest used, if any."""
    force: bool
    """Whether the run compacts whatever the gate says."""
    pinned_tokens: int
    """Pinned system messages plus the caller's extra pinned tokens."""
    cut: int | None = None
    """Where the user's ``keep`` cuts (None: the core's own slice)."""
