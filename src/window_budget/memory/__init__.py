"""The memory beside the conversation: the store, its embedded defaults, recall.

The digest in the window is bounded; the fact ledger's versions and every folded original
live in a :class:`MemoryStore` keyed by conversation, and :func:`recall` brings back what the
digest left out — by words, by kind, or by pointer — as quoted data.

>>> from window_budget.memory import InProcessMemoryStore, recall
>>> store = InProcessMemoryStore()
>>> store.archive("c1", 0, [{"role": "user", "content": "Port the loader to tomllib."}])
>>> "tomllib" in recall(store, "c1", "tomllib")
True
"""

from window_budget.memory._sqlite import SQLiteMemoryStore
from window_budget.memory._store import (
    InProcessMemoryStore,
    LedgerVersion,
    MemoryStore,
    check_conversation,
)
from window_budget.memory.recall import PAGE_SIZE as PAGE_SIZE
from window_budget.memory.recall import RECALL_DESCRIPTION, RECALL_KINDS, recall, recall_text
from window_budget.memory.recall import Recalled as Recalled

__all__ = [
    "RECALL_DESCRIPTION",
    "RECALL_KINDS",
    "InProcessMemoryStore",
    "LedgerVersion",
    "MemoryStore",
    "SQLiteMemoryStore",
    "check_conversation",
    "recall",
    "recall_text",
]
