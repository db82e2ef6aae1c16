"""The table of well-known models' windows, matched on the ids people actually pass."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from window_budget import ConfigError, Model
from window_budget.budget import KNOWN_MODELS, context_window_for, lookup_model, model_for


@pytest.mark.parametrize(
    ("model_id", "window", "output"),
    [
        ("claude-sonnet-4-5-20250929", 200_000, 64_000),
        ("anthropic/claude-sonnet-4-5", 200_000, 64_000),
        ("claude-sonnet-4-20250514", 200_000, 64_000),
        ("claude-opus-4-1-20250805", 200_000, 32_000),
        ("us.anthropic.claude-3-5-sonnet-20240620-v1:0", 200_000, 8_192),
        ("claude-3-5-sonnet@20240620", 200_000, 8_192),
        ("claude-3-5-haiku-latest", 200_000, 8_192),
        ("gpt-4o-2024-08-06", 128_000, 16_384),
        ("gpt-4o-mini-2024-07-18", 128_000, 16_384),
        ("openrouter/openai/gpt-4.1-mini", 1_047_576, 32_768),
        ("GPT-4-0613", 8_192, 8_192),
        ("gpt-4-turbo-2024-04-09", 128_000, 4_096),
        ("gpt-3.5-turbo-0125", 16_385, 4_096),
        ("o3-mini-2025-01-31", 200_000, 100_000),
        ("gpt-5", 400_000, 128_000),
        ("gemini/gemini-2.5-pro", 1_048_576, 65_536),
    ],
)
def test_dated_aliases_and_provider_prefixes_find_their_family(
    model_id: str, window: int, output: int
) -> None:
    limits = lookup_model(model_id)
    assert limits is not None
    assert (limits.context_window, limits.max_output_tokens) == (window, output)
    assert context_window_for(model_id) == window


@pytest.mark.parametrize(
    "model_id",
    [
        None,
        "",
        "   ",
        "<synthetic>",
        "my-local-llama",
        "gpt-4.5-preview",
        "gpt-40",
        "o10",
        "claude",
        "claude-sonnet",
    ],
)
def test_unknown_models_are_not_guessed(model_id: str | None) -> None:
    assert lookup_model(model_id) is None
    assert context_window_for(model_id) is None


def test_a_longer_family_wins_over_its_prefix() -> None:
    assert lookup_model("gpt-4o-mini") is KNOWN_MODELS["gpt-4o-mini"]
    assert lookup_model("gpt-4-32k-0613") is KNOWN_MODELS["gpt-4-32k"]
    assert lookup_model("claude-sonnet-4-5") is KNOWN_MODELS["claude-sonnet-4-5"]
    assert lookup_model("o1-mini-2024-09-12") is KNOWN_MODELS["o1-mini"]


def test_model_for_takes_the_window_from_the_table_unless_given() -> None:
    assert model_for("claude-haiku-4-5-20251001") == Model(
        "claude-haiku-4-5-20251001", 200_000, 64_000
    )
    assert model_for("claude-sonnet-4-5", context_window=1_000_000).context_window == 1_000_000
    assert model_for("my-model", context_window=8_000) == Model("my-model", 8_000, None)


def test_an_unknown_model_asks_for_the_window_in_one_sentence() -> None:
    with pytest.raises(
        ConfigError,
        match=r"model 'my-model' is not known; give it "
        r"\(--window N.*context_window=N",
    ):
        model_for("my-model")
    with pytest.raises(ConfigError, match="no model is named"):
        model_for(None)


@given(st.text(max_size=60))
def test_any_id_is_looked_up_without_raising(model_id: str) -> None:
    limits = lookup_model(model_id)
    assert limits is None or limits.context_window >= limits.max_output_tokens
