"""The summarize path: how the dropped head is folded.

The prompt, the sans-I/O summarize flow, the fact ledger, the network-free digest and the audit
of a model-written digest.

The names below are this package's public face; the modules behind them are private. They load
on first use, so importing the package adds no import cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from window_budget._lazy import lazy_exports

if TYPE_CHECKING:
    from window_budget.pipeline._cut import cut_to_tokens as cut_to_tokens
    from window_budget.pipeline.summarize._audit import PINNED_HEADING as PINNED_HEADING
    from window_budget.pipeline.summarize._audit import DigestAudit as DigestAudit
    from window_budget.pipeline.summarize._audit import audit_digest as audit_digest
    from window_budget.pipeline.summarize._audit import check_digest as check_digest
    from window_budget.pipeline.summarize._audit import mentions as mentions
    from window_budget.pipeline.summarize._flow import SUMMARY_TAGS as SUMMARY_TAGS
    from window_budget.pipeline.summarize._flow import condense_scope as condense_scope
    from window_budget.pipeline.summarize._flow import (
        condense_scope_sync as condense_scope_sync,
    )
    from window_budget.pipeline.summarize._flow import (
        make_digest_message as make_digest_message,
    )
    from window_budget.pipeline.summarize._flow import summarize as summarize
    from window_budget.pipeline.summarize._flow import summarize_sync as summarize_sync
    from window_budget.pipeline.summarize._local import build_local_digest as build_local_digest
    from window_budget.pipeline.summarize._local import local_ledger as local_ledger
    from window_budget.pipeline.summarize._local import render_local_digest as render_local_digest
    from window_budget.pipeline.summarize._memory import resolve_ledger as resolve_ledger
    from window_budget.pipeline.summarize._prompt import CONDENSER_BRIEF as CONDENSER_BRIEF
    from window_budget.pipeline.summarize._prompt import DIGEST_TEMPLATE as DIGEST_TEMPLATE
    from window_budget.pipeline.summarize._prompt import FRAMING_LINES as FRAMING_LINES
    from window_budget.pipeline.summarize._prompt import (
        build_summary_prompt as build_summary_prompt,
    )
    from window_budget.pipeline.summarize._prompt import clamp_text as clamp_text
    from window_budget.pipeline.summarize._prompt import escape_block_tags as escape_block_tags
    from window_budget.pipeline.summarize._prompt import flatten_message as flatten_message
    from window_budget.pipeline.summarize._prompt import flatten_transcript as flatten_transcript
    from window_budget.pipeline.summarize._prompt import one_line as one_line
    from window_budget.pipeline.summarize.facts import FACT_KINDS as FACT_KINDS
    from window_budget.pipeline.summarize.facts import LEDGER_FORMAT as LEDGER_FORMAT
    from window_budget.pipeline.summarize.facts import Fact as Fact
    from window_budget.pipeline.summarize.facts import FactKind as FactKind
    from window_budget.pipeline.summarize.facts import FactLedger as FactLedger
    from window_budget.pipeline.summarize.facts import classify_tool_call as classify_tool_call
    from window_budget.pipeline.summarize.facts import extract_facts as extract_facts
    from window_budget.pipeline.summarize.facts import fact_line as fact_line
    from window_budget.pipeline.summarize.facts import is_floor_fact as is_floor_fact
    from window_budget.pipeline.summarize.facts import key_error_line as key_error_line
    from window_budget.pipeline.summarize.facts import ledger_from_json as ledger_from_json
    from window_budget.pipeline.summarize.facts import ledger_from_text as ledger_from_text
    from window_budget.pipeline.summarize.facts import ledger_of as ledger_of
    from window_budget.pipeline.summarize.facts import ledger_to_json as ledger_to_json
    from window_budget.pipeline.summarize.facts import merge_ledgers as merge_ledgers
    from window_budget.pipeline.summarize.facts import pin_lines as pin_lines
    from window_budget.pipeline.summarize.facts import pin_priority as pin_priority
    from window_budget.pipeline.summarize.facts import render_ledger as render_ledger

_EXPORTS: dict[str, str] = {
    "CONDENSER_BRIEF": "window_budget.pipeline.summarize._prompt",
    "DIGEST_TEMPLATE": "window_budget.pipeline.summarize._prompt",
    "DigestAudit": "window_budget.pipeline.summarize._audit",
    "FACT_KINDS": "window_budget.pipeline.summarize.facts",
    "FRAMING_LINES": "window_budget.pipeline.summarize._prompt",
    "Fact": "window_budget.pipeline.summarize.facts",
    "FactKind": "window_budget.pipeline.summarize.facts",
    "FactLedger": "window_budget.pipeline.summarize.facts",
    "LEDGER_FORMAT": "window_budget.pipeline.summarize.facts",
    "PINNED_HEADING": "window_budget.pipeline.summarize._audit",
    "SUMMARY_TAGS": "window_budget.pipeline.summarize._flow",
    "audit_digest": "window_budget.pipeline.summarize._audit",
    "build_local_digest": "window_budget.pipeline.summarize._local",
    "build_summary_prompt": "window_budget.pipeline.summarize._prompt",
    "check_digest": "window_budget.pipeline.summarize._audit",
    "clamp_text": "window_budget.pipeline.summarize._prompt",
    "classify_tool_call": "window_budget.pipeline.summarize.facts",
    "condense_scope": "window_budget.pipeline.summarize._flow",
    "condense_scope_sync": "window_budget.pipeline.summarize._flow",
    "cut_to_tokens": "window_budget.pipeline._cut",
    "escape_block_tags": "window_budget.pipeline.summarize._prompt",
    "extract_facts": "window_budget.pipeline.summarize.facts",
    "fact_line": "window_budget.pipeline.summarize.facts",
    "flatten_message": "window_budget.pipeline.summarize._prompt",
    "flatten_transcript": "window_budget.pipeline.summarize._prompt",
    "is_floor_fact": "window_budget.pipeline.summarize.facts",
    "key_error_line": "window_budget.pipeline.summarize.facts",
    "ledger_from_json": "window_budget.pipeline.summarize.facts",
    "ledger_from_text": "window_budget.pipeline.summarize.facts",
    "ledger_of": "window_budget.pipeline.summarize.facts",
    "resolve_ledger": "window_budget.pipeline.summarize._memory",
    "ledger_to_json": "window_budget.pipeline.summarize.facts",
    "local_ledger": "window_budget.pipeline.summarize._local",
    "make_digest_message": "window_budget.pipeline.summarize._flow",
    "mentions": "window_budget.pipeline.summarize._audit",
    "merge_ledgers": "window_budget.pipeline.summarize.facts",
    "one_line": "window_budget.pipeline.summarize._prompt",
    "pin_lines": "window_budget.pipeline.summarize.facts",
    "pin_priority": "window_budget.pipeline.summarize.facts",
    "render_ledger": "window_budget.pipeline.summarize.facts",
    "render_local_digest": "window_budget.pipeline.summarize._local",
    "summarize": "window_budget.pipeline.summarize._flow",
    "summarize_sync": "window_budget.pipeline.summarize._flow",
}

__all__ = [
    "CONDENSER_BRIEF",
    "DIGEST_TEMPLATE",
    "FACT_KINDS",
    "FRAMING_LINES",
    "LEDGER_FORMAT",
    "PINNED_HEADING",
    "SUMMARY_TAGS",
    "DigestAudit",
    "Fact",
    "FactKind",
    "FactLedger",
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
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
