"""Budget arithmetic: how many tokens, and how much room.

Estimates, counters, the content cache, the incremental ledger, model windows and prices (the
models.dev data), what a session cost, and calibration.
Nothing here imports the summarize path.
"""

from __future__ import annotations

from window_budget.budget._anchor import anchor_index as anchor_index
from window_budget.budget._cache import DEFAULT_MAX_BYTES as DEFAULT_MAX_BYTES
from window_budget.budget._cache import ESTIMATES as ESTIMATES
from window_budget.budget._cache import (
    ContentCache,
    cached_estimates,
    estimate_tokens,
    prefix_tokens,
)
from window_budget.budget._cache import fingerprint as fingerprint
from window_budget.budget._cache import key_size as key_size
from window_budget.budget._calibrate import MAX_RATIO as MAX_RATIO
from window_budget.budget._calibrate import MIN_RATIO as MIN_RATIO
from window_budget.budget._calibrate import MIN_SAMPLES as MIN_SAMPLES
from window_budget.budget._calibrate import Calibration, calibrate, calibrate_many, model_key
from window_budget.budget._cost import CompactionSaving as CompactionSaving
from window_budget.budget._cost import compaction_saving as compaction_saving
from window_budget.budget._cost import session_cost
from window_budget.budget._counters import DEFAULT_ENCODING as DEFAULT_ENCODING
from window_budget.budget._counters import LOCAL_SPECS as LOCAL_SPECS
from window_budget.budget._counters import (
    CallableCounter,
    EncodingUnavailable,
    HeuristicCounter,
    TiktokenCounter,
    TokenizerFallbackWarning,
    load_encoding,
    resolve_counter,
)
from window_budget.budget._estimate import BLOCK_FRAMING_TOKENS as BLOCK_FRAMING_TOKENS
from window_budget.budget._estimate import CHARS_PER_TOKEN as CHARS_PER_TOKEN
from window_budget.budget._estimate import FLOOR_CHARS_PER_TOKEN as FLOOR_CHARS_PER_TOKEN
from window_budget.budget._estimate import IMAGE_TOKENS as IMAGE_TOKENS
from window_budget.budget._estimate import MESSAGE_FRAMING_TOKENS as MESSAGE_FRAMING_TOKENS
from window_budget.budget._estimate import TOOL_FRAMING_TOKENS as TOOL_FRAMING_TOKENS
from window_budget.budget._estimate import (
    count_text,
    estimate_message_tokens,
    message_parts,
    text_tokens,
)
from window_budget.budget._groups import ToolGroups as ToolGroups
from window_budget.budget._groups import ToolShape
from window_budget.budget._keyed import KeyedCounts
from window_budget.budget._ledger import TokenLedger
from window_budget.budget._models import (
    ModelLimits,
    cache_read_share,
    context_window_for,
    lookup_model,
    model_data_version,
    model_for,
    prices_for,
)
from window_budget.budget._prices import Cost, ModelPrices, PriceTier
from window_budget.budget._prices import format_usd as format_usd
from window_budget.budget._usage import MAX_USAGE_TOKENS as MAX_USAGE_TOKENS
from window_budget.budget._usage import read_count as read_count
from window_budget.budget._usage import usage_from_anthropic as usage_from_anthropic
from window_budget.budget._usage import usage_from_langchain
from window_budget.budget._usage import usage_from_openai as usage_from_openai

__all__ = [
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
]
