"""LlamaIndex memory backed by window-budget: gate → slice → summarize for chat engines and agents.

``WindowBudgetMemory`` is a memory of its own; ``WindowBudgetMemoryBlock`` brings the digest,
the fact ledger and recall into LlamaIndex's ``Memory(memory_blocks=[...])``.

>>> from llama_index.memory.window_budget import WindowBudgetMemory, WindowBudgetMemoryBlock
"""

try:
    import llama_index.core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "llama_index.memory.window_budget needs llama-index-core; "
        'pip install "window-budget[llama-index]"'
    ) from exc

from llama_index.memory.window_budget.base import InitialTokenCountError, WindowBudgetMemory
from llama_index.memory.window_budget.block import WindowBudgetMemoryBlock
from llama_index.memory.window_budget.building import DigestRole, default_policy
from llama_index.memory.window_budget.completer import completers_from_llm
from llama_index.memory.window_budget.conversation import ARCHIVE_SUFFIX
from llama_index.memory.window_budget.convert import (
    RECORD_KEY,
    is_digest,
    to_core,
)
from llama_index.memory.window_budget.counters import CounterSpec
from llama_index.memory.window_budget.instrumentation import (
    SUMMARY_TAG,
    Compaction,
    CompactionEvent,
)
from llama_index.memory.window_budget.jsonl_store import JsonlChatStore
from llama_index.memory.window_budget.memory_store import ChatStoreMemoryStore
from llama_index.memory.window_budget.tools import bounded_tool, clamp_text_tokens, recall_tool

__all__ = [
    "ARCHIVE_SUFFIX",
    "RECORD_KEY",
    "SUMMARY_TAG",
    "ChatStoreMemoryStore",
    "Compaction",
    "CompactionEvent",
    "CounterSpec",
    "DigestRole",
    "InitialTokenCountError",
    "JsonlChatStore",
    "WindowBudgetMemory",
    "WindowBudgetMemoryBlock",
    "bounded_tool",
    "clamp_text_tokens",
    "completers_from_llm",
    "default_policy",
    "is_digest",
    "recall_tool",
    "to_core",
]
