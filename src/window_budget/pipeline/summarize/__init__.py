"""The summarize path: how the dropped head is folded.

The prompt, the sans-I/O summarize flow, the fact ledger, the network-free digest and the audit
of a model-written digest.
"""

from __future__ import annotations

from window_budget.pipeline._cut import cut_to_tokens
from window_budget.pipeline.summarize._audit import PINNED_HEADING as PINNED_HEADING
from window_budget.pipeline.summarize._audit import audit_digest as audit_digest
from window_budget.pipeline.summarize._audit import check_digest as check_digest
from window_budget.pipeline.summarize._audit import mentions as mentions
from window_budget.pipeline.summarize._flow import (
    SUMMARY_TAGS,
    condense_scope,
    condense_scope_sync,
    make_digest_message,
    summarize,
    summarize_sync,
)
from window_budget.pipeline.summarize._local import build_local_digest, local_ledger
from window_budget.pipeline.summarize._local import render_local_digest as render_local_digest
from window_budget.pipeline.summarize._memory import record_budget as record_budget
from window_budget.pipeline.summarize._memory import resolve_ledger
from window_budget.pipeline.summarize._prompt import CONDENSER_BRIEF
from window_budget.pipeline.summarize._prompt import DIGEST_TEMPLATE as DIGEST_TEMPLATE
from window_budget.pipeline.summarize._prompt import FRAMING_LINES as FRAMING_LINES
from window_budget.pipeline.summarize._prompt import build_summary_prompt as build_summary_prompt
from window_budget.pipeline.summarize._prompt import clamp_text as clamp_text
from window_budget.pipeline.summarize._prompt import escape_block_tags as escape_block_tags
from window_budget.pipeline.summarize._prompt import flatten_message as flatten_message
from window_budget.pipeline.summarize._prompt import flatten_transcript as flatten_transcript
from window_budget.pipeline.summarize._prompt import one_line as one_line
from window_budget.pipeline.summarize.facts import FACT_KINDS as FACT_KINDS
from window_budget.pipeline.summarize.facts import LEDGER_FORMAT as LEDGER_FORMAT
from window_budget.pipeline.summarize.facts import Fact as Fact
from window_budget.pipeline.summarize.facts import FactKind as FactKind
from window_budget.pipeline.summarize.facts import (
    FactLedger,
    ledger_from_json,
    ledger_of,
    render_ledger,
)
from window_budget.pipeline.summarize.facts import classify_tool_call as classify_tool_call
from window_budget.pipeline.summarize.facts import extract_facts as extract_facts
from window_budget.pipeline.summarize.facts import fact_line as fact_line
from window_budget.pipeline.summarize.facts import is_floor_fact as is_floor_fact
from window_budget.pipeline.summarize.facts import key_error_line as key_error_line
from window_budget.pipeline.summarize.facts import ledger_from_text as ledger_from_text
from window_budget.pipeline.summarize.facts import ledger_to_json as ledger_to_json
from window_budget.pipeline.summarize.facts import merge_ledgers as merge_ledgers
from window_budget.pipeline.summarize.facts import pin_lines as pin_lines
from window_budget.pipeline.summarize.facts import pin_priority as pin_priority

__all__ = [
    "CONDENSER_BRIEF",
    "SUMMARY_TAGS",
    "FactLedger",
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
]
