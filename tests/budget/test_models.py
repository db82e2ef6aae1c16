"""Models' windows, output limits and prices from the models.dev data, matched on real ids."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from window_budget import ConfigError, Model
from window_budget.budget import (
    ModelPrices,
    context_window_for,
    lookup_model,
    model_data_version,
    model_for,
    model_key,
    prices_for,
)
from window_budget.budget._model_data import MAX_ID_CHARS, DataIndex, data_index


@pytest.mark.parametrize(
    ("model_id", "window", "output"),
    [
        ("claude-sonnet-4-5-20250929", 200_000, 64_000),
        ("claude-sonnet-4-5", 200_000, 64_000),
        ("anthropic/claude-sonnet-4-5", 200_000, 64_000),
        ("anthropic:claude-sonnet-4-5", 200_000, 64_000),
        ("anthropic/claude-sonnet-4.5", 200_000, 64_000),
        ("claude-sonnet-4-20250514", 200_000, 64_000),
        ("claude-opus-4-1-20250805", 200_000, 32_000),
        ("us.anthropic.claude-3-5-sonnet-20240620-v1:0", 200_000, 8_192),
        ("claude-3-5-sonnet@20240620", 200_000, 8_192),
        ("claude-3-5-haiku-latest", 200_000, 8_192),
        ("gpt-4o", 128_000, 16_384),
        ("openai:gpt-4o", 128_000, 16_384),
        ("gpt-4o-2024-08-06", 128_000, 16_384),
        ("gpt-4o-mini-2024-07-18", 128_000, 16_384),
        ("openrouter/openai/gpt-4.1-mini", 1_047_576, 32_768),
        ("GPT-4-0613", 8_192, 8_192),
        ("gpt-4-turbo-2024-04-09", 128_000, 4_096),
        ("gpt-3.5-turbo-0125", 16_385, 4_096),
        ("o3-mini-2025-01-31", 200_000, 100_000),
        ("gemini/gemini-2.5-pro", 1_048_576, 65_536),
        ("google_genai:gemini-2.5-pro", 1_048_576, 65_536),
        ("models/gemini-2.5-pro", 1_048_576, 65_536),
        ("meta-llama/llama-4-maverick", 1_048_576, 16_384),
        ("openrouter/meta-llama/llama-4-maverick", 1_048_576, 16_384),
    ],
)
def test_exact_dated_and_prefixed_ids_are_found(model_id: str, window: int, output: int) -> None:
    limits = lookup_model(model_id)
    assert limits is not None
    assert (limits.context_window, limits.max_output_tokens) == (window, output)
    assert context_window_for(model_id) == window


def test_a_provider_in_front_picks_that_providers_listing() -> None:
    assert lookup_model("openai:gpt-4o").provider == "openai"
    assert lookup_model("anthropic/claude-sonnet-4-5-20250929").provider == "anthropic"
    routed = lookup_model("openrouter/openai/gpt-4.1-mini")
    assert (routed.provider, routed.model_id) == ("openrouter", "openai/gpt-4.1-mini")
    # A bare id goes to the lab that makes the model, not to a gateway that also lists it.
    assert lookup_model("gpt-4o").provider == "openai"
    assert lookup_model("claude-haiku-4-5").provider == "anthropic"


def test_a_dated_id_keeps_its_own_figures() -> None:
    # The 2024-05-13 snapshot of gpt-4o has its own price and output cap in the data.
    old = lookup_model("gpt-4o-2024-05-13")
    assert old.model_id == "gpt-4o-2024-05-13"
    assert (old.max_output_tokens, old.prices.input) == (4_096, 5.0)
    assert lookup_model("gpt-4o").prices.input == 2.5
    # Clouds spell the lab's dated id their way; the same snapshot is found.
    assert lookup_model("claude-3-5-sonnet@20240620").model_id == "claude-3-5-sonnet-20240620"
    bedrock = lookup_model("us.anthropic.claude-3-5-sonnet-20240620-v1:0")
    assert bedrock.model_id == "claude-3-5-sonnet-20240620"


def test_the_gate_measures_against_the_input_limit_where_there_is_one() -> None:
    gpt5 = lookup_model("gpt-5")
    assert (gpt5.context_window, gpt5.max_context_tokens) == (272_000, 400_000)
    assert model_for("gpt-5").context_window == 272_000


def test_the_family_keys_calibrations_as_before() -> None:
    assert lookup_model("anthropic/claude-sonnet-4-5-20250929").family == "claude-sonnet-4-5"
    assert lookup_model("gpt-4o-mini-2024-07-18").family == "gpt-4o-mini"
    assert model_key("anthropic/claude-sonnet-4-5-20250929") == "claude-sonnet-4-5"


def test_prices_come_with_the_model() -> None:
    prices = prices_for("claude-sonnet-4-5-20250929")
    assert prices == ModelPrices(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    assert prices_for("replay") is None
    tiered = prices_for("gemini-2.5-pro")
    assert tiered.tiers
    assert tiered.for_prompt(300_000).input > tiered.input


@pytest.mark.parametrize(
    "model_id",
    [
        None,
        "",
        "   ",
        "<synthetic>",
        "replay",
        "my-local-llama",
        "gpt-4.5-preview",
        "gpt-40",
        "o10",
        "claude",
        "claude-sonnet",
        "claude-sonnet-4-7",  # a version the data does not have is not its neighbour
        "qwen2.5:7b",  # an Ollama size tag is not dropped to find another model
    ],
)
def test_unknown_models_are_not_guessed(model_id: str | None) -> None:
    assert lookup_model(model_id) is None
    assert context_window_for(model_id) is None
    assert prices_for(model_id) is None


@pytest.mark.parametrize(
    "model_id",
    [
        "gpt-4o\x1b]0;title\x07",
        "\x1b[2J\x1b[Hclaude-sonnet-4-5",
        "gpt-4o" + "-x" * 200_000,
        "a" * 10_000_000,
        "claude-sonnet-4-5\n" * 1000,
        "openai:" * 10_000 + "gpt-4o",
        "\x00\ud800",
    ],
)
def test_hostile_ids_are_unknown_quickly(model_id: str) -> None:
    assert lookup_model(model_id) is None
    with pytest.raises(ConfigError) as raised:
        model_for(model_id)
    message = str(raised.value)
    assert "\x1b" not in message
    assert "\x07" not in message
    assert "\n" not in message
    assert len(message) < 300


def test_an_id_over_the_length_bound_is_not_looked_up() -> None:
    assert lookup_model("gpt-4o" + " " * 10) is not None  # surrounding space is not the id
    assert lookup_model("x" * (MAX_ID_CHARS - 6) + "gpt-4o") is None


def test_model_for_takes_the_window_from_the_data_unless_given() -> None:
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


def test_the_data_is_indexed_once_and_is_large() -> None:
    index = data_index()
    assert data_index() is index
    assert index.models > 4_000
    assert len(index.providers) > 100
    assert model_data_version()


def test_junk_in_the_data_is_left_out() -> None:
    raw = {
        "acme": {
            "models": {
                "good": {"limit": {"context": 1000, "output": 5000}, "cost": {"input": 1}},
                "no-window": {"limit": {"context": 0}},
                "bad-window": {"limit": {"context": "lots"}},
                "no-limit": {"cost": {"input": 1}},
                "bad-price": {"limit": {"context": 10}, "cost": {"input": -1, "output": "x"}},
                "x" * (MAX_ID_CHARS + 1): {"limit": {"context": 10}},
            }
        },
        "broken": ["not", "a", "provider"],
    }
    index = DataIndex(raw)
    assert index.models == 2
    good = index.entry(index.by_key["good"][0])
    assert (good.context, good.output) == (1000, 1000)  # an output cap above the context is cut
    bad = index.entry(index.by_key["bad-price"][0])
    assert bad.prices is None
    assert DataIndex({}).models == 0


@given(st.text(max_size=80))
def test_any_id_is_looked_up_without_raising(model_id: str) -> None:
    limits = lookup_model(model_id)
    assert limits is None or (
        0 < limits.context_window <= limits.max_context_tokens
        and (limits.max_output_tokens or 0) <= limits.max_context_tokens
    )


def test_without_the_data_no_model_is_known(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.resources

    from window_budget.budget import _model_data

    def missing(package: str) -> object:
        raise ModuleNotFoundError(f"No module named {package!r}")

    monkeypatch.setattr(importlib.resources, "files", missing)
    assert _model_data._read_raw() == {}
    assert DataIndex(_model_data._read_raw()).models == 0
