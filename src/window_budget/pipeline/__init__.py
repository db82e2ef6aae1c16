"""The pipeline: gate, slice, mask, summarize, fit.

In order: the gate (when), the slice (where), masking, summarize (how, in
``pipeline.summarize``) and the finishing fit; the condenser ties them together.
"""

from __future__ import annotations

from window_budget.pipeline._ahead import AheadCompactor, AheadState
from window_budget.pipeline._boundary import counted_head, provider_boundary
from window_budget.pipeline._categories import CLAMP_NOTICE_TYPE as CLAMP_NOTICE_TYPE
from window_budget.pipeline._categories import DEFAULT_SHARES as DEFAULT_SHARES
from window_budget.pipeline._categories import SYSTEM_CUSTOM_TYPES as SYSTEM_CUSTOM_TYPES
from window_budget.pipeline._categories import TRIM_ORDER as TRIM_ORDER
from window_budget.pipeline._categories import Classifier as Classifier
from window_budget.pipeline._categories import MessageCategory, classify_message
from window_budget.pipeline._categories import allocate_budgets as allocate_budgets
from window_budget.pipeline._categories import resolve_shares as resolve_shares
from window_budget.pipeline._condenser import (
    DEFAULT_POLICY,
    WindowCondenser,
    condense,
    create_condenser,
)
from window_budget.pipeline._condenser import condense_sync as condense_sync
from window_budget.pipeline._cut import SHORTENED_MARKER as SHORTENED_MARKER
from window_budget.pipeline._cut import cut_text as cut_text
from window_budget.pipeline._decision import CondenseDecision as CondenseDecision
from window_budget.pipeline._fit import fit_messages as fit_messages
from window_budget.pipeline._fit import shorten_message as shorten_message
from window_budget.pipeline._fit import water_level as water_level
from window_budget.pipeline._gate import MIN_DIGEST_TOKENS as MIN_DIGEST_TOKENS
from window_budget.pipeline._gate import (
    budget_limit,
    check_window,
    estimate_context,
    is_over_budget,
)
from window_budget.pipeline._gate import digest_budget as digest_budget
from window_budget.pipeline._images import ImageReplacement as ImageReplacement
from window_budget.pipeline._images import replace_old_images as replace_old_images
from window_budget.pipeline._mask import MASK_MARKER, is_masked
from window_budget.pipeline._mask import mask_tool_outputs as mask_tool_outputs
from window_budget.pipeline._slice import blocked_cuts, plan_slice, snap_back
from window_budget.pipeline._slice import last_user_turn_start as last_user_turn_start
from window_budget.pipeline._slice import plan_at as plan_at
from window_budget.pipeline._slice import plan_force_slice as plan_force_slice
from window_budget.pipeline._slice import turn_start as turn_start
from window_budget.pipeline._trim import TrimResult, trim_by_category
from window_budget.pipeline._trim import trim_messages_by_category as trim_messages_by_category
from window_budget.pipeline._view import ViewPlan, plan_view

__all__ = [
    "DEFAULT_POLICY",
    "MASK_MARKER",
    "AheadCompactor",
    "AheadState",
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
]
