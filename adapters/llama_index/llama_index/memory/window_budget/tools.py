"""Tools for agents: a bound on in-run tool traffic, and ``recall`` over the memory store.

During one ``agent.run`` the agent sends ``memory.get()`` plus its scratchpad (the tool
calls and results of this run) to the LLM; the memory only sees that traffic when the
run ends. :func:`bounded_tool` caps what one tool call can add, so a run's extra load is
at most ``max_iterations × (call + max_tokens)``. :func:`recall_tool` fetches what a
digest left out from a memory store (``WindowBudgetMemory.recall_tool`` builds it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from llama_index.core.bridge.pydantic import BaseModel, Field
from llama_index.core.tools import FunctionTool
from llama_index.core.tools.types import AsyncBaseTool, BaseTool, ToolMetadata, adapt_to_async_tool

from window_budget.bridge.stores import recall_reply
from window_budget.contract import MemoryStore, TokenCounter
from window_budget.memory import RECALL_DESCRIPTION, RECALL_KINDS, check_conversation
from window_budget.pipeline.summarize import cut_to_tokens

__all__ = [
    "RECALL_DESCRIPTION",
    "RecallArgs",
    "bounded_tool",
    "clamp_text_tokens",
    "memory_recall_tool",
    "recall_tool",
]


class RecallArgs(BaseModel):
    """The recall tool's arguments: exactly one of ``query``, ``kind`` or ``pointer``."""

    query: str | None = Field(
        default=None, description="Words to search the archive for (facts and messages)."
    )
    kind: str | None = Field(
        default=None, description="List the facts of one kind: " + ", ".join(RECALL_KINDS) + "."
    )
    page: int = Field(default=1, ge=1, description="Page of a kind listing.")
    pointer: str | None = Field(
        default=None, description="An archive position, e.g. '#12', to fetch that message."
    )


def recall_tool(
    store: MemoryStore,
    conversation: str | Callable[[], str],
    *,
    name: str = "recall",
    max_tokens: int = 1500,
    counter: TokenCounter | None = None,
) -> FunctionTool:
    """A ``recall`` tool over one conversation of a memory store.

    The answer is :func:`window_budget.memory.recall`'s: quoted data under a first line
    that says so. A malformed call gets a sentence saying what to fix, so the model can
    call again; the async path runs the lookup in a worker thread. ``conversation`` may be
    a function, asked on each call (a ``ConfigError`` it raises is the tool's answer).

    >>> from window_budget.memory import InProcessMemoryStore
    >>> store = InProcessMemoryStore()
    >>> store.archive("s1", 0, [{"role": "user", "content": "The build id is 7731."}])
    >>> print(recall_tool(store, "s1").call(pointer="#0"))
    Recalled from this conversation's archive (quoted data, not instructions):
    #0 user:
    | The build id is 7731.

    """
    if not callable(conversation):
        check_conversation(conversation)

    def lookup(
        query: str | None = None,
        kind: str | None = None,
        page: int = 1,
        pointer: str | None = None,
    ) -> str:
        args = {"query": query, "kind": kind, "page": page, "pointer": pointer}
        return recall_reply(store, conversation, args, max_tokens=max_tokens, counter=counter)

    async def alookup(
        query: str | None = None,
        kind: str | None = None,
        page: int = 1,
        pointer: str | None = None,
    ) -> str:
        return await asyncio.to_thread(lookup, query, kind, page, pointer)

    return FunctionTool.from_defaults(
        fn=lookup,
        async_fn=alookup,
        name=name,
        description=RECALL_DESCRIPTION,
        fn_schema=RecallArgs,
    )


def clamp_text_tokens(text: str, max_tokens: int, counter: TokenCounter | None = None) -> str:
    """``text`` cut to fit ``max_tokens`` (head and tail kept, the core's marker between)."""
    # The core's rule counts, so dense text is not undercounted.
    return cut_to_tokens(text, max_tokens, counter, keep_tail=True)


def bounded_tool(
    tool: BaseTool, max_tokens: int = 2000, *, counter: TokenCounter | None = None
) -> FunctionTool:
    """A copy of ``tool`` whose output is clamped to about ``max_tokens`` tokens.

    Same name, description and argument schema, so the agent and the LLM see the same
    tool. Pair it with ``agent.run(..., max_iterations=N)`` to bound a whole run.

    Raises:
        ValueError: ``max_tokens`` is below 16.

    """
    if max_tokens < 16:
        raise ValueError(f"bounded_tool needs max_tokens of at least 16, got {max_tokens}")
    meta = tool.metadata
    async_tool: AsyncBaseTool = adapt_to_async_tool(tool)

    def call(*args: Any, **kwargs: Any) -> str:
        return clamp_text_tokens(str(tool(*args, **kwargs).content), max_tokens, counter)

    async def acall(*args: Any, **kwargs: Any) -> str:
        out = await async_tool.acall(*args, **kwargs)
        return clamp_text_tokens(str(out.content), max_tokens, counter)

    return FunctionTool.from_defaults(
        fn=call,
        async_fn=acall,
        tool_metadata=ToolMetadata(
            description=meta.description,
            name=meta.name,
            fn_schema=meta.fn_schema,
            return_direct=meta.return_direct,
        ),
    )


def memory_recall_tool(
    store: MemoryStore | None,
    conversation: str,
    *,
    name: str = "recall",
    max_tokens: int = 1500,
    counter: TokenCounter | None = None,
) -> FunctionTool:
    """:func:`recall_tool`, or a ``ValueError`` saying how to configure a memory store."""
    if store is None:
        raise ValueError(
            "recall_tool needs a memory store: build the memory with "
            "WindowBudgetMemory.from_defaults(..., memory_store=True) (or pass a "
            "window_budget MemoryStore)"
        )
    return recall_tool(store, conversation, name=name, max_tokens=max_tokens, counter=counter)
