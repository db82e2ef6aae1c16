from __future__ import annotations

import subprocess
import sys

import window_budget

SEED_SURFACE = {
    "create_condenser", "condense", "condense_scope", "summarize", "DEFAULT_POLICY",
    "estimate_tokens", "estimate_message_tokens", "prefix_tokens", "is_over_budget",
    "budget_limit", "plan_slice", "build_summary_prompt", "flatten_transcript", "CONDENSER_BRIEF",
    "BudgetPolicy", "TokenEstimate", "CondensePlan", "Summary", "CondenserDeps", "SummarizeDeps",
    "CompleteFn", "Condenser", "CondenseScope", "AgentMessage",
}
CALLER_NAMES = {
    "UserMessage", "AssistantMessage", "ToolResultMessage", "BashExecutionMessage",
    "CustomMessage", "BranchSummaryMessage", "CompactionSummaryMessage", "TextBlock",
    "ThinkingBlock", "ToolCallBlock", "ImageBlock", "Model", "Usage", "CancelToken",
    "CancelledByToken", "BudgetError",
}


def test_every_seed_name_imports_from_the_barrel() -> None:
    for name in SEED_SURFACE | CALLER_NAMES:
        assert hasattr(window_budget, name), name
        assert name in window_budget.__all__, name


def test_all_is_exactly_what_the_barrel_exports() -> None:
    exported = set(window_budget.__all__)
    assert len(exported) == len(window_budget.__all__)
    for name in exported:
        assert getattr(window_budget, name) is not None
    public = {n for n in vars(window_budget) if not n.startswith("_")}
    submodules = {n for n in public if type(getattr(window_budget, n)).__name__ == "module"}
    assert public - submodules - exported == set()


def test_importing_the_core_loads_no_framework_and_no_tokenizer() -> None:
    code = ("import sys, window_budget; "
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            "('langchain_core', 'langchain', 'llama_index', 'tiktoken', 'click', 'rich', "
            "'matplotlib', 'pydantic')]; print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_core_source_has_no_framework_imports() -> None:
    from pathlib import Path

    root = Path(window_budget.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for framework in ("langchain", "llama_index"):
            assert f"import {framework}" not in text, path
            assert f"from {framework}" not in text, path
