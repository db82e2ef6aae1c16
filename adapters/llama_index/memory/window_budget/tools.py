"""A bound on an agent's in-run tool traffic, which lives in its scratchpad, not in memory.

During one ``agent.run`` the agent sends ``memory.get()`` plus its scratchpad (the tool
calls and results of this run) to the LLM; the memory only sees that traffic when the
run ends. :func:`bounded_tool` caps what one tool call can add, so a run's extra load is
at most ``max_iterations × (call + max_tokens)``.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.tools import FunctionTool
from llama_index.core.tools.types import AsyncBaseTool, BaseTool, ToolMetadata, adapt_to_async_tool

from window_budget.contract import TokenCounter
from window_budget.pipeline.summarize import cut_to_tokens

__all__ = ["bounded_tool", "clamp_text_tokens"]


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
