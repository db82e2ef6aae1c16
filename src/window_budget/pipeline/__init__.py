"""The pipeline: gate, slice, mask, summarize, fit.

In order: the gate (when), the slice (where), masking, summarize (how, in
``pipeline.summarize``) and the finishing fit; the condenser ties them together.

The names below are this package's public face; the modules behind them are private. They load
on first use, so importing the package adds no import cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from window_budget._lazy import lazy_exports

if TYPE_CHECKING:
    from window_budget.pipeline._ahead import AheadCompactor as AheadCompactor
    from window_budget.pipeline._boundary import counted_head as counted_head
    from window_budget.pipeline._boundary import provider_boundary as provider_boundary
    from window_budget.pipeline._condenser import DEFAULT_POLICY as DEFAULT_POLICY
    from window_budget.pipeline._condenser import MIN_DIGEST_TOKENS as MIN_DIGEST_TOKENS
    from window_budget.pipeline._condenser import WindowCondenser as WindowCondenser
    from window_budget.pipeline._condenser import check_window as check_window
    from window_budget.pipeline._condenser import condense as condense
    from window_budget.pipeline._condenser import condense_sync as condense_sync
    from window_budget.pipeline._condenser import create_condenser as create_condenser
    from window_budget.pipeline._cut import SHORTENED_MARKER as SHORTENED_MARKER
    from window_budget.pipeline._cut import cut_text as cut_text
    from window_budget.pipeline._decision import CondenseDecision as CondenseDecision
    from window_budget.pipeline._fit import fit_messages as fit_messages
    from window_budget.pipeline._fit import shorten_message as shorten_message
    from window_budget.pipeline._fit import water_level as water_level
    from window_budget.pipeline._gate import budget_limit as budget_limit
    from window_budget.pipeline._gate import digest_budget as digest_budget
    from window_budget.pipeline._gate import estimate_context as estimate_context
    from window_budget.pipeline._gate import is_over_budget as is_over_budget
    from window_budget.pipeline._mask import MASK_MARKER as MASK_MARKER
    from window_budget.pipeline._mask import is_masked as is_masked
    from window_budget.pipeline._mask import mask_tool_outputs as mask_tool_outputs
    from window_budget.pipeline._slice import blocked_cuts as blocked_cuts
    from window_budget.pipeline._slice import last_user_turn_start as last_user_turn_start
    from window_budget.pipeline._slice import plan_at as plan_at
    from window_budget.pipeline._slice import plan_force_slice as plan_force_slice
    from window_budget.pipeline._slice import plan_slice as plan_slice
    from window_budget.pipeline._slice import snap_back as snap_back
    from window_budget.pipeline._slice import turn_start as turn_start
    from window_budget.pipeline._view import ViewPlan as ViewPlan
    from window_budget.pipeline._view import plan_view as plan_view

_EXPORTS: dict[str, str] = {
    "AheadCompactor": "window_budget.pipeline._ahead",
    "counted_head": "window_budget.pipeline._boundary",
    "provider_boundary": "window_budget.pipeline._boundary",
    "CondenseDecision": "window_budget.pipeline._decision",
    "DEFAULT_POLICY": "window_budget.pipeline._condenser",
    "MASK_MARKER": "window_budget.pipeline._mask",
    "MIN_DIGEST_TOKENS": "window_budget.pipeline._condenser",
    "SHORTENED_MARKER": "window_budget.pipeline._cut",
    "cut_text": "window_budget.pipeline._cut",
    "WindowCondenser": "window_budget.pipeline._condenser",
    "blocked_cuts": "window_budget.pipeline._slice",
    "budget_limit": "window_budget.pipeline._gate",
    "check_window": "window_budget.pipeline._condenser",
    "digest_budget": "window_budget.pipeline._gate",
    "condense": "window_budget.pipeline._condenser",
    "condense_sync": "window_budget.pipeline._condenser",
    "create_condenser": "window_budget.pipeline._condenser",
    "estimate_context": "window_budget.pipeline._gate",
    "fit_messages": "window_budget.pipeline._fit",
    "is_masked": "window_budget.pipeline._mask",
    "is_over_budget": "window_budget.pipeline._gate",
    "last_user_turn_start": "window_budget.pipeline._slice",
    "mask_tool_outputs": "window_budget.pipeline._mask",
    "plan_at": "window_budget.pipeline._slice",
    "plan_force_slice": "window_budget.pipeline._slice",
    "plan_slice": "window_budget.pipeline._slice",
    "snap_back": "window_budget.pipeline._slice",
    "shorten_message": "window_budget.pipeline._fit",
    "turn_start": "window_budget.pipeline._slice",
    "ViewPlan": "window_budget.pipeline._view",
    "plan_view": "window_budget.pipeline._view",
    "water_level": "window_budget.pipeline._fit",
}

__all__ = [
    "DEFAULT_POLICY",
    "MASK_MARKER",
    "MIN_DIGEST_TOKENS",
    "SHORTENED_MARKER",
    "AheadCompactor",
    "CondenseDecision",
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
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
