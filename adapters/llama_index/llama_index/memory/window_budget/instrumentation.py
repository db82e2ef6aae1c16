"""LlamaIndex instrumentation for the memory: its dispatcher, its events and the summary tag.

``get``/``aget`` and every compaction attempt run in a dispatcher span (visible to any span
handler on the root dispatcher, e.g. an OpenTelemetry or Arize integration). When a digest
is written, :class:`CompactionEvent` is emitted with what the compaction did and the digest
audit. The summary LLM call runs under the instrument tag ``{"window_budget": "summary"}``,
so its ``LLMChatStartEvent`` / ``LLMChatEndEvent`` (and any callback handler reading tags)
can be told from the application's own calls.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, Final

from llama_index.core.instrumentation.events import BaseEvent
from llama_index_instrumentation import get_dispatcher  # what llama_index.core re-exports
from llama_index_instrumentation.dispatcher import active_instrument_tags, instrument_tags

from window_budget.contract import DigestAudit

__all__ = ["SUMMARY_TAG", "Compaction", "CompactionEvent", "dispatcher", "summary_call"]

dispatcher = get_dispatcher(__name__)
"""The memory's dispatcher; its events and spans propagate to the root dispatcher."""

SUMMARY_TAG: Final = {"window_budget": "summary"}
"""The instrument tag every event of a summary LLM call carries."""


@dataclass(frozen=True, slots=True)
class Compaction:
    """What the last compaction did: how much was folded, and the digest's audit."""

    covered: int
    """Original messages the digest now stands for (earlier digests' included)."""
    folded: int
    """Messages folded by this compaction (moved to the archive, or an earlier digest)."""
    kept: int
    """Messages kept verbatim after the digest."""
    digest_tokens: int
    """Estimated tokens of the new digest."""
    fallback: bool
    """True when the network-free digest was written (no LLM, or it failed)."""
    fallback_reason: str | None
    """Why the fallback was used."""
    audit: DigestAudit | None
    """The audit of a model-written digest (see ``docs/memory.md``): facts in the ledger,
    key facts found in the model's text, how many were pinned back; None for a fallback."""
    ledger_facts: int | None
    """Facts in the ledger the digest carries (None: the digest carries none)."""
    committed: bool
    """True when the store was rewritten; False when only the view used the digest (a
    failing LLM leaves the store as it was)."""
    masked: int = 0
    """Old tool outputs replaced by a one-line placeholder. A compaction that only masked
    writes no digest (``covered``, ``folded`` and ``digest_tokens`` are 0); the originals
    are in the archive."""
    tokens_freed: int = 0
    """Estimated tokens the compaction took out of the history."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (the audit as its fields)."""
        audit = self.audit
        return {
            "covered": self.covered,
            "folded": self.folded,
            "kept": self.kept,
            "digest_tokens": self.digest_tokens,
            "fallback": self.fallback,
            "fallback_reason": self.fallback_reason,
            "ledger_facts": self.ledger_facts,
            "committed": self.committed,
            "masked": self.masked,
            "tokens_freed": self.tokens_freed,
            "audit": None if audit is None else asdict(audit),
        }


class CompactionEvent(BaseEvent):
    """Emitted when a compaction wrote a digest (inside the compaction's span)."""

    chat_store_key: str
    """The conversation compacted."""
    compaction: dict[str, Any]
    """:meth:`Compaction.as_dict`: counts, fallback, ledger size and the digest audit."""

    @classmethod
    def class_name(cls) -> str:
        """Name used in serialized forms."""
        return "WindowBudgetCompactionEvent"


@contextmanager
def summary_call() -> Iterator[None]:
    """Tag every event raised inside with :data:`SUMMARY_TAG` (keeping the caller's tags)."""
    with instrument_tags({**active_instrument_tags.get(), **SUMMARY_TAG}):
        yield
