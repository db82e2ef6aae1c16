"""Which memory store an agent's run uses, one engine per store, and the agent's recall tool.

``WindowBudgetMiddleware(memory=...)`` takes a memory store, a LangGraph ``BaseStore``,
``"runtime"`` (the default) or None. ``"runtime"`` is the store the agent was compiled with
(``create_agent(..., store=...)``, ``runtime.store``); an agent without one gets the
middleware's own in-process store (:data:`LOCAL_CONVERSATIONS` threads and
:data:`LOCAL_ORIGINALS` folded messages at most, the least recently used thread forgotten;
sealed with the key digests carry without a store, so a restarted process reads them as
before). A run uses a store only when it has a ``thread_id``, which names its
conversation there; otherwise, and with None, the digest carries its bounded record alone.

One engine serves every thread of one store: a store's key seals the digests, so each store
gets its own engine (built on first use, a few kept), and runs without a store share one.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final, Literal

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.store.base import BaseStore

from langchain_window_budget._engine import LangChainCondenser
from langchain_window_budget.recall import RECALL_DESCRIPTION, RecallArgs, answer
from langchain_window_budget.store import LangGraphMemoryStore
from window_budget.contract import TokenCounter
from window_budget.digest import record_key
from window_budget.errors import ConfigError
from window_budget.memory import InProcessMemoryStore, MemoryStore

__all__ = [
    "LOCAL_CONVERSATIONS",
    "LOCAL_ORIGINALS",
    "MAX_STORES",
    "AgentMemory",
    "MemorySpec",
    "thread_id_of",
]

MemorySpec = MemoryStore | BaseStore | Literal["runtime"] | None
"""What ``WindowBudgetMiddleware(memory=...)`` takes (see the module docstring)."""

MAX_STORES: Final = 8
"""Stores one middleware keeps an engine for (the least recently used is forgotten)."""

LOCAL_CONVERSATIONS: Final = 256
"""Threads the in-process store of an agent without a store keeps (as ``Sessions`` does)."""

LOCAL_ORIGINALS: Final = 20_000
"""Folded messages that store keeps, all threads together: a default must not grow a
long-lived server without bound (a store given with ``create_agent(store=...)`` has no cap)."""


def thread_id_of(runtime: object) -> Any:
    """The ``thread_id`` of the run ``runtime`` (a graph's or a tool's) belongs to, or None."""
    info = getattr(runtime, "execution_info", None)
    thread = getattr(info, "thread_id", None)
    if thread is not None:
        return thread
    config = getattr(runtime, "config", None)
    if isinstance(config, dict):
        return (config.get("configurable") or {}).get("thread_id")
    try:
        from langgraph.config import get_config

        return (get_config().get("configurable") or {}).get("thread_id")
    except Exception:  # outside a graph run: no thread
        return None


class AgentMemory:
    """A middleware's memory: the store each run uses and the engine for that store.

    ``make_engine(store)`` builds an engine (``store`` None: without a memory store).
    """

    def __init__(
        self, spec: MemorySpec, make_engine: Callable[[MemoryStore | None], LangChainCondenser]
    ) -> None:
        self.runtime = spec == "runtime"
        """True when each run's ``runtime.store`` is used."""
        self.fixed: MemoryStore | None = None
        """The store given, when one was."""
        if isinstance(spec, MemoryStore):
            self.fixed = spec
        elif isinstance(spec, BaseStore):
            self.fixed = LangGraphMemoryStore(spec)
        elif spec is not None and not self.runtime:
            raise ConfigError(
                "memory must be a window_budget MemoryStore, a LangGraph BaseStore, "
                f'"runtime" (the agent\'s store) or None, not {spec!r:.60}'
            )
        self._make_engine = make_engine
        self.local: InProcessMemoryStore | None = None
        """The in-process store of runs whose agent has no store (``"runtime"`` only)."""
        if self.runtime:
            self.local = InProcessMemoryStore(
                key=record_key(),
                max_conversations=LOCAL_CONVERSATIONS,
                max_originals=LOCAL_ORIGINALS,
            )
        self.plain = make_engine(None)
        """The engine of runs without a store."""
        self._engines: OrderedDict[int, tuple[object, MemoryStore, LangChainCondenser]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    @property
    def default_engine(self) -> LangChainCondenser:
        """The engine of the store given, else of the in-process store, else of no store."""
        store = self.fixed if self.fixed is not None else self.local
        return self.plain if store is None else self._cached(store)[2]

    def _source(self, runtime_store: object, thread: Any) -> MemoryStore | BaseStore | None:
        """What a run of ``thread`` keeps its archive in: a store, or None."""
        if thread is None:
            return None
        if self.fixed is not None:
            return self.fixed
        if not self.runtime:
            return None
        if isinstance(runtime_store, MemoryStore | BaseStore):
            return runtime_store
        return self.local

    def store_for(self, runtime_store: object, thread: Any) -> MemoryStore | None:
        """The memory store a run of ``thread`` uses, given the agent's ``runtime.store``."""
        source = self._source(runtime_store, thread)
        return None if source is None else self._cached(source)[1]

    def engine_for(self, runtime_store: object, thread: Any) -> LangChainCondenser:
        """The engine a run of ``thread`` uses, given the agent's ``runtime.store``."""
        source = self._source(runtime_store, thread)
        return self.plain if source is None else self._cached(source)[2]

    def engines(self) -> list[LangChainCondenser]:
        """Every engine built so far: the one of runs without a store, then one per store."""
        with self._lock:
            return [self.plain, *(entry[2] for entry in self._engines.values())]

    def _cached(
        self, store: MemoryStore | BaseStore
    ) -> tuple[object, MemoryStore, LangChainCondenser]:
        """The store, its memory store and its engine, built once per store.

        The store is held with them, so its id is not reused while it is cached.
        """
        with self._lock:
            hit = self._engines.get(id(store))
            if hit is not None:
                self._engines.move_to_end(id(store))
                return hit
        memory = store if isinstance(store, MemoryStore) else LangGraphMemoryStore(store)
        entry: tuple[object, MemoryStore, LangChainCondenser] = (
            store,
            memory,
            self._make_engine(memory),
        )
        with self._lock:
            entry = self._engines.setdefault(id(store), entry)
            while len(self._engines) > MAX_STORES:
                self._engines.popitem(last=False)
        return entry

    def recall_tool(
        self, *, counter: TokenCounter | None = None, max_tokens: int = 1500
    ) -> BaseTool:
        """The agent's ``recall`` tool: the current thread's archive in the run's store."""

        def lookup(runtime: ToolRuntime, **args: Any) -> str:
            thread = thread_id_of(runtime)
            memory = self.store_for(runtime.store, thread)
            name = None if thread is None else str(thread)
            return answer(memory, name, args, max_tokens=max_tokens, counter=counter)

        async def alookup(runtime: ToolRuntime, **args: Any) -> str:
            return await asyncio.to_thread(lookup, runtime, **args)

        return StructuredTool.from_function(
            func=lookup,
            coroutine=alookup,
            name="recall",
            description=RECALL_DESCRIPTION,
            args_schema=RecallArgs,
        )
