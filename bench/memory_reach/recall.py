"""Recall as the bench uses it: the library's own ``recall_text``, checked against its plain path.

The in-process store answers recall's word search from texts it keeps per archived message
(``InProcessMemoryStore.search``), as a store with an index does. Recall without that
(``_Plain``) ranks the whole archive itself on every search (0.2–1 s a query here, and a run
makes thousands): every run checks on a few queries that both answer the same.
"""

from __future__ import annotations

from collections.abc import Iterable

from memory_reach.names import CONVERSATION
from window_budget.memory import InProcessMemoryStore, recall_text


class _Plain:
    """A view of a store without ``search``: recall ranks the archive itself."""

    def __init__(self, store: InProcessMemoryStore) -> None:
        self.original, self.originals, self.ledger = store.original, store.originals, store.ledger


def verify_recall(store: InProcessMemoryStore, queries: Iterable[str]) -> None:
    """The store's word index answers exactly as the library's plain recall path does."""
    for query in queries:
        mine = recall_text(store, CONVERSATION, query=query).text
        theirs = recall_text(_Plain(store), CONVERSATION, query=query).text  # type: ignore[arg-type]
        assert mine == theirs, f"recall {query!r}: the store's index answers differently"


def quoted(recalled: str) -> str:
    """The data lines of a recall answer (``| …``): not its header, which echoes the query."""
    return "\n".join(line[2:] for line in recalled.splitlines() if line.startswith("| "))


def kind_pages(store: InProcessMemoryStore, kind: str, pages: int = 3) -> list[str]:
    """The quoted lines of the first ``pages`` pages listing ``kind``."""
    return [
        quoted(recall_text(store, CONVERSATION, kind=kind, page=p).text)
        for p in range(1, pages + 1)
    ]


def searched(store: InProcessMemoryStore, query: str) -> str:
    """The quoted lines a word search for ``query`` returns (5 facts, 5 messages)."""
    return quoted(recall_text(store, CONVERSATION, query=query).text)
