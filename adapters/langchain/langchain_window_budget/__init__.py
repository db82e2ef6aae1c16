"""LangChain adapter for window-budget: agent middleware, an LCEL transformer, a chat history.

Install with ``pip install "window-budget[langchain]"``.

- :class:`WindowBudgetMiddleware` for ``create_agent`` (LangChain v1).
- :func:`condense_messages` / :class:`WindowBudgetRunnable` for ``prompt | condenser | model``.
- :class:`CondensingChatMessageHistory` for ``RunnableWithMessageHistory`` chains.
- :func:`make_completers` turns any chat model into the core's completer pair.
- :class:`LangGraphMemoryStore` keeps digests' ledgers and folded messages in a LangGraph
  store; :func:`recall_tool` gives a chain the ``recall`` tool over it.

>>> from langchain_core.messages import HumanMessage
>>> from langchain_window_budget import condense_messages
>>> history = [HumanMessage("hi")]
>>> condense_messages(history, context_window=8_000) is history
True
"""

try:
    import langchain_core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        'langchain_window_budget needs LangChain; pip install "window-budget[langchain]"'
    ) from exc

from langchain_window_budget._digest import (
    DIGEST_KEY,
    digest_record,
    is_digest,
)
from langchain_window_budget.completer import make_completers, model_token_counter
from langchain_window_budget.condense import (
    LangChainCondenser,
    LangChainResult,
    WindowBudgetRunnable,
    acondense_messages,
    condense_messages,
)
from langchain_window_budget.history import (
    ArchiveChatMessageHistory,
    CondensingChatMessageHistory,
)
from langchain_window_budget.recall import recall_tool

__all__ = [
    "DIGEST_KEY",
    "ArchiveChatMessageHistory",
    "CondensingChatMessageHistory",
    "LangChainCondenser",
    "LangChainResult",
    "LangGraphMemoryStore",
    "WindowBudgetMiddleware",
    "WindowBudgetRunnable",
    "acondense_messages",
    "condense_messages",
    "digest_record",
    "is_digest",
    "make_completers",
    "model_token_counter",
    "recall_tool",
]


def __getattr__(name: str) -> object:
    # The middleware needs the ``langchain`` package (v1), not just langchain-core.
    if name == "WindowBudgetMiddleware":
        try:
            from langchain_window_budget.middleware import WindowBudgetMiddleware
        except ImportError as exc:
            raise ImportError(
                "WindowBudgetMiddleware needs langchain>=1.0 and langgraph; "
                'pip install "window-budget[langchain]"'
            ) from exc
        return WindowBudgetMiddleware
    if name == "LangGraphMemoryStore":  # needs langgraph's stores
        from langchain_window_budget.store import LangGraphMemoryStore

        return LangGraphMemoryStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
