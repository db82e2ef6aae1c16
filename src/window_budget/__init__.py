"""window-budget: keep long LLM conversations inside the model's context window.

Three questions, in order: **when** is the transcript over budget (the gate), **where**
do we cut (the slice), **how** do we fold the dropped head into one digest (summarize).

>>> from window_budget import Model, UserMessage, create_condenser
>>> condenser = create_condenser(model=Model("my-model", context_window=32_768))
>>> history = [UserMessage("hello")]
>>> condenser.sync(history) is history   # under budget: the same list comes back
True
"""

from window_budget.assemble import AssembledPrompt, Section, assemble_prompt
from window_budget.budget.counters import (
    CallableCounter,
    EncodingUnavailable,
    HeuristicCounter,
    TiktokenCounter,
    TokenizerFallbackWarning,
    load_encoding,
    resolve_counter,
)
from window_budget.budget.estimate import (
    estimate_message_tokens,
    estimate_tokens,
    prefix_tokens,
)
from window_budget.budget.gate import budget_limit, estimate_context, is_over_budget
from window_budget.budget.ledger import TokenLedger
from window_budget.budget.slice import plan_force_slice, plan_slice
from window_budget.cancel import CancelledByToken, CancelToken
from window_budget.categories import (
    DEFAULT_SHARES,
    MessageCategory,
    TrimResult,
    classify_message,
    trim_by_category,
    trim_messages_by_category,
)
from window_budget.condenser import (
    DEFAULT_POLICY,
    CondenseDecision,
    WindowCondenser,
    condense,
    condense_sync,
    create_condenser,
)
from window_budget.config import counter_from_env, model_from_env, policy_from_env
from window_budget.contract import (
    BudgetPolicy,
    CompleteFn,
    CompleteOptions,
    CondensePlan,
    Condenser,
    CondenserDeps,
    CondenseResult,
    CondenseScope,
    Context,
    Model,
    SummarizeDeps,
    Summary,
    SyncCompleteFn,
    TokenCounter,
    TokenEstimate,
)
from window_budget.digest import BRANCH_HEADER, SESSION_HEADER, digest_body, is_digest
from window_budget.errors import (
    BudgetError,
    ConfigError,
    MessageError,
    ReadError,
    StoreError,
    SummarizerError,
    UsageError,
    WindowBudgetError,
)
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
    message_from_dict,
    message_text,
    message_to_dict,
)
from window_budget.meter import ContextBudget, MalformedUsageWarning, UsageReading, parse_usage
from window_budget.report import UsageReport, analyze, format_report, format_report_rich
from window_budget.scratch import ScratchModel, ScratchWriter, StateChange
from window_budget.shorten import SHORTENED_MARKER, fit_messages, shorten_message
from window_budget.subagent import clamp_subagent
from window_budget.summarize.condense import (
    condense_scope,
    condense_scope_sync,
    summarize,
    summarize_sync,
)
from window_budget.summarize.extract import build_local_digest
from window_budget.summarize.prompt import (
    CONDENSER_BRIEF,
    build_summary_prompt,
    flatten_transcript,
)

__version__ = "0.1.0"

__all__ = [
    "BRANCH_HEADER",
    "CONDENSER_BRIEF",
    "DEFAULT_POLICY",
    "DEFAULT_SHARES",
    "SESSION_HEADER",
    "SHORTENED_MARKER",
    "AgentMessage",
    "AssembledPrompt",
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryMessage",
    "BudgetError",
    "BudgetPolicy",
    "CallableCounter",
    "CancelToken",
    "CancelledByToken",
    "CompactionSummaryMessage",
    "CompleteFn",
    "CompleteOptions",
    "CondenseDecision",
    "CondensePlan",
    "CondenseResult",
    "CondenseScope",
    "Condenser",
    "CondenserDeps",
    "ConfigError",
    "Context",
    "ContextBudget",
    "CustomMessage",
    "DigestMessage",
    "EncodingUnavailable",
    "HeuristicCounter",
    "ImageBlock",
    "MalformedUsageWarning",
    "MessageCategory",
    "MessageError",
    "Model",
    "ReadError",
    "ScratchModel",
    "ScratchWriter",
    "Section",
    "StateChange",
    "StoreError",
    "SummarizeDeps",
    "SummarizerError",
    "Summary",
    "SyncCompleteFn",
    "TextBlock",
    "ThinkingBlock",
    "TiktokenCounter",
    "TokenCounter",
    "TokenEstimate",
    "TokenLedger",
    "TokenizerFallbackWarning",
    "ToolCallBlock",
    "ToolResultMessage",
    "TrimResult",
    "Usage",
    "UsageError",
    "UsageReading",
    "UsageReport",
    "UserMessage",
    "WindowBudgetError",
    "WindowCondenser",
    "analyze",
    "assemble_prompt",
    "budget_limit",
    "build_local_digest",
    "build_summary_prompt",
    "clamp_subagent",
    "classify_message",
    "condense",
    "condense_scope",
    "condense_scope_sync",
    "condense_sync",
    "counter_from_env",
    "create_condenser",
    "digest_body",
    "estimate_context",
    "estimate_message_tokens",
    "estimate_tokens",
    "fit_messages",
    "flatten_transcript",
    "format_report",
    "format_report_rich",
    "is_digest",
    "is_over_budget",
    "load_encoding",
    "message_from_dict",
    "message_text",
    "message_to_dict",
    "model_from_env",
    "parse_usage",
    "plan_force_slice",
    "plan_slice",
    "policy_from_env",
    "prefix_tokens",
    "resolve_counter",
    "shorten_message",
    "summarize",
    "summarize_sync",
    "trim_by_category",
    "trim_messages_by_category",
]
