"""The memory store's shape: the protocol every store implements and the ledger version it keeps.

Part of the contract (``window_budget.contract`` re-exports both names); a module of its own so
the contract stays one screenful per concern.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["LedgerVersion", "MemoryStore"]


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
