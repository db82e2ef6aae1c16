"""Trimming by message category, without a model: the condenser's ``strategy="trim"``.

Every message falls into one of five categories (``SYSTEM``, ``CONTEXT``, ``DIALOG``,
``SYSTEM_OUTPUT``, ``ERROR``), each with a share of the budget; trimming swaps old images
for placeholders, then drops the oldest messages of each category over its allowance,
never a tool call without its results and never a ``SYSTEM`` message. The work is the
pipeline's (the condenser trims with it); this module is where a caller finds it.
"""

from window_budget.pipeline._categories import (
    CLAMP_NOTICE_TYPE,
    DEFAULT_SHARES,
    SYSTEM_CUSTOM_TYPES,
    TRIM_ORDER,
    Classifier,
    MessageCategory,
    allocate_budgets,
    classify_message,
    resolve_shares,
)
from window_budget.pipeline._images import ImageReplacement, replace_old_images
from window_budget.pipeline._trim import TrimResult, trim_by_category, trim_messages_by_category

__all__ = [
    "CLAMP_NOTICE_TYPE",
    "DEFAULT_SHARES",
    "SYSTEM_CUSTOM_TYPES",
    "TRIM_ORDER",
    "Classifier",
    "ImageReplacement",
    "MessageCategory",
    "TrimResult",
    "allocate_budgets",
    "classify_message",
    "replace_old_images",
    "resolve_shares",
    "trim_by_category",
    "trim_messages_by_category",
]
