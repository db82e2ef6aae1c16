"""Budget arithmetic: how many tokens, and how much room.

Estimates, counters, the content cache, the incremental ledger, model windows and prices (the
models.dev data), what a session cost, and calibration.
Nothing here imports the summarize path.

The names below are this package's public face; the modules behind them are private. They load
on first use, so importing the package adds no import cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from window_budget._lazy import lazy_exports

if TYPE_CHECKING:
    from window_budget.budget._cache import DEFAULT_MAX_BYTES as DEFAULT_MAX_BYTES
    from window_budget.budget._cache import ESTIMATES as ESTIMATES
    from window_budget.budget._cache import ContentCache as ContentCache
    from window_budget.budget._cache import cached_estimates as cached_estimates
    from window_budget.budget._cache import estimate_tokens as estimate_tokens
    from window_budget.budget._cache import fingerprint as fingerprint
    from window_budget.budget._cache import key_size as key_size
    from window_budget.budget._cache import prefix_tokens as prefix_tokens
    from window_budget.budget._calibrate import MAX_RATIO as MAX_RATIO
    from window_budget.budget._calibrate import MIN_RATIO as MIN_RATIO
    from window_budget.budget._calibrate import MIN_SAMPLES as MIN_SAMPLES
    from window_budget.budget._calibrate import Calibration as Calibration
    from window_budget.budget._calibrate import calibrate as calibrate
    from window_budget.budget._calibrate import calibrate_many as calibrate_many
    from window_budget.budget._calibrate import model_key as model_key
    from window_budget.budget._cost import CompactionSaving as CompactionSaving
    from window_budget.budget._cost import compaction_saving as compaction_saving
    from window_budget.budget._cost import session_cost as session_cost
    from window_budget.budget._counters import CallableCounter as CallableCounter
    from window_budget.budget._counters import EncodingUnavailable as EncodingUnavailable
    from window_budget.budget._counters import HeuristicCounter as HeuristicCounter
    from window_budget.budget._counters import TiktokenCounter as TiktokenCounter
    from window_budget.budget._counters import TokenizerFallbackWarning as TokenizerFallbackWarning
    from window_budget.budget._counters import load_encoding as load_encoding
    from window_budget.budget._counters import resolve_counter as resolve_counter
    from window_budget.budget._estimate import BLOCK_FRAMING_TOKENS as BLOCK_FRAMING_TOKENS
    from window_budget.budget._estimate import CHARS_PER_TOKEN as CHARS_PER_TOKEN
    from window_budget.budget._estimate import FLOOR_CHARS_PER_TOKEN as FLOOR_CHARS_PER_TOKEN
    from window_budget.budget._estimate import IMAGE_TOKENS as IMAGE_TOKENS
    from window_budget.budget._estimate import MESSAGE_FRAMING_TOKENS as MESSAGE_FRAMING_TOKENS
    from window_budget.budget._estimate import TOOL_FRAMING_TOKENS as TOOL_FRAMING_TOKENS
    from window_budget.budget._estimate import count_text as count_text
    from window_budget.budget._estimate import estimate_message_tokens as estimate_message_tokens
    from window_budget.budget._estimate import message_parts as message_parts
    from window_budget.budget._estimate import text_tokens as text_tokens
    from window_budget.budget._groups import ToolShape as ToolShape
    from window_budget.budget._ledger import TokenLedger as TokenLedger
    from window_budget.budget._models import ModelLimits as ModelLimits
    from window_budget.budget._models import context_window_for as context_window_for
    from window_budget.budget._models import lookup_model as lookup_model
    from window_budget.budget._models import model_data_version as model_data_version
    from window_budget.budget._models import model_for as model_for
    from window_budget.budget._models import prices_for as prices_for
    from window_budget.budget._prices import Cost as Cost
    from window_budget.budget._prices import ModelPrices as ModelPrices
    from window_budget.budget._prices import PriceTier as PriceTier
    from window_budget.budget._prices import format_usd as format_usd
    from window_budget.budget._usage import MAX_USAGE_TOKENS as MAX_USAGE_TOKENS
    from window_budget.budget._usage import read_count as read_count
    from window_budget.budget._usage import usage_from_anthropic as usage_from_anthropic
    from window_budget.budget._usage import usage_from_langchain as usage_from_langchain
    from window_budget.budget._usage import usage_from_openai as usage_from_openai

_EXPORTS: dict[str, str] = {
    "BLOCK_FRAMING_TOKENS": "window_budget.budget._estimate",
    "CHARS_PER_TOKEN": "window_budget.budget._estimate",
    "Calibration": "window_budget.budget._calibrate",
    "CallableCounter": "window_budget.budget._counters",
    "ContentCache": "window_budget.budget._cache",
    "DEFAULT_MAX_BYTES": "window_budget.budget._cache",
    "ESTIMATES": "window_budget.budget._cache",
    "EncodingUnavailable": "window_budget.budget._counters",
    "FLOOR_CHARS_PER_TOKEN": "window_budget.budget._estimate",
    "HeuristicCounter": "window_budget.budget._counters",
    "IMAGE_TOKENS": "window_budget.budget._estimate",
    "MAX_RATIO": "window_budget.budget._calibrate",
    "MESSAGE_FRAMING_TOKENS": "window_budget.budget._estimate",
    "MIN_RATIO": "window_budget.budget._calibrate",
    "MIN_SAMPLES": "window_budget.budget._calibrate",
    "ModelLimits": "window_budget.budget._models",
    "ModelPrices": "window_budget.budget._prices",
    "PriceTier": "window_budget.budget._prices",
    "Cost": "window_budget.budget._prices",
    "format_usd": "window_budget.budget._prices",
    "CompactionSaving": "window_budget.budget._cost",
    "compaction_saving": "window_budget.budget._cost",
    "session_cost": "window_budget.budget._cost",
    "model_data_version": "window_budget.budget._models",
    "prices_for": "window_budget.budget._models",
    "TOOL_FRAMING_TOKENS": "window_budget.budget._estimate",
    "TiktokenCounter": "window_budget.budget._counters",
    "TokenLedger": "window_budget.budget._ledger",
    "ToolShape": "window_budget.budget._groups",
    "TokenizerFallbackWarning": "window_budget.budget._counters",
    "cached_estimates": "window_budget.budget._cache",
    "calibrate": "window_budget.budget._calibrate",
    "calibrate_many": "window_budget.budget._calibrate",
    "context_window_for": "window_budget.budget._models",
    "count_text": "window_budget.budget._estimate",
    "estimate_message_tokens": "window_budget.budget._estimate",
    "estimate_tokens": "window_budget.budget._cache",
    "fingerprint": "window_budget.budget._cache",
    "key_size": "window_budget.budget._cache",
    "load_encoding": "window_budget.budget._counters",
    "lookup_model": "window_budget.budget._models",
    "message_parts": "window_budget.budget._estimate",
    "model_for": "window_budget.budget._models",
    "model_key": "window_budget.budget._calibrate",
    "prefix_tokens": "window_budget.budget._cache",
    "resolve_counter": "window_budget.budget._counters",
    "text_tokens": "window_budget.budget._estimate",
    "MAX_USAGE_TOKENS": "window_budget.budget._usage",
    "read_count": "window_budget.budget._usage",
    "usage_from_anthropic": "window_budget.budget._usage",
    "usage_from_langchain": "window_budget.budget._usage",
    "usage_from_openai": "window_budget.budget._usage",
}

__all__ = [
    "BLOCK_FRAMING_TOKENS",
    "CHARS_PER_TOKEN",
    "DEFAULT_MAX_BYTES",
    "ESTIMATES",
    "FLOOR_CHARS_PER_TOKEN",
    "IMAGE_TOKENS",
    "MAX_RATIO",
    "MAX_USAGE_TOKENS",
    "MESSAGE_FRAMING_TOKENS",
    "MIN_RATIO",
    "MIN_SAMPLES",
    "TOOL_FRAMING_TOKENS",
    "Calibration",
    "CallableCounter",
    "CompactionSaving",
    "ContentCache",
    "Cost",
    "EncodingUnavailable",
    "HeuristicCounter",
    "ModelLimits",
    "ModelPrices",
    "PriceTier",
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
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
