"""window-budget: keep long LLM conversations inside the model's context window.

Three questions, in order: **when** is the transcript over budget (the gate), **where**
do we cut (the slice), **how** do we fold the dropped head into one digest (summarize).

>>> from window_budget import Model, UserMessage, create_condenser
>>> condenser = create_condenser(model=Model("my-model", context_window=32_768))
>>> history = [UserMessage("hello")]
>>> condenser.sync(history) is history   # under budget: the same list comes back
True
"""

from window_budget.budget import estimate_tokens
from window_budget.contract import BudgetPolicy, CondenseResult, Model
from window_budget.errors import BudgetError, ConfigError, WindowBudgetError
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    DigestMessage,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from window_budget.pipeline import condense, create_condenser, is_over_budget, plan_slice
from window_budget.testing import ScriptedCompleter
from window_budget.tools import display as _display  # noqa: F401 (registers how results show)

__version__ = "0.1.0"

__all__ = [
    "AgentMessage",
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryMessage",
    "BudgetError",
    "BudgetPolicy",
    "CompactionSummaryMessage",
    "CondenseResult",
    "ConfigError",
    "CustomMessage",
    "DigestMessage",
    "ImageBlock",
    "Model",
    "ScriptedCompleter",
    "TextBlock",
    "ThinkingBlock",
    "ToolCallBlock",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "WindowBudgetError",
    "condense",
    "create_condenser",
    "estimate_tokens",
    "is_over_budget",
    "plan_slice",
]
