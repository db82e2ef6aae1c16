from __future__ import annotations

import warnings
from typing import Any

import pytest

from window_budget import BudgetPolicy, ConfigError, Model
from window_budget.budget import TiktokenCounter, TokenizerFallbackWarning
from window_budget.tools.config import (
    ENV_VARS,
    counter_from_env,
    describe_env,
    env_name,
    model_from_env,
    policy_from_env,
    read_env,
    read_raw,
    read_setting,
    settings_from_env,
    unknown_env_vars,
)


def test_env_name() -> None:
    assert env_name("keep-recent") == "WINDOW_BUDGET_KEEP_RECENT"
    assert env_name("strategy") == "WINDOW_BUDGET_STRATEGY"
    assert env_name("WINDOW_BUDGET_STRATEGY") == "WINDOW_BUDGET_STRATEGY"


def test_read_env_and_raw() -> None:
    env = {"WINDOW_BUDGET_STRATEGY": " trim ", "WINDOW_BUDGET_KEEP_RECENT": "  ", "HOME": "/h"}
    assert read_env("strategy", environ=env) == "trim"
    assert read_env("keep_recent", environ=env) is None  # blank counts as unset
    assert read_raw("HOME", environ=env) == "/h"


def test_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WINDOW_BUDGET_KEEP_RECENT", "1234")
    assert policy_from_env().keep_recent == 1234


def test_no_environment_gives_the_defaults() -> None:
    assert policy_from_env(environ={}) == BudgetPolicy()


def test_every_policy_variable() -> None:
    env = {
        "WINDOW_BUDGET_TRIGGER_RATIO": "80%",
        "WINDOW_BUDGET_KEEP_RECENT": "4_000",
        "WINDOW_BUDGET_RESERVE_TOKENS": "1,024",
        "WINDOW_BUDGET_KEEP_UNIT": "tokens",
        "WINDOW_BUDGET_STRATEGY": "TRIM",
        "WINDOW_BUDGET_DIGEST_MAX_TOKENS": "900",
        "WINDOW_BUDGET_TOOL_OUTPUT_CHARS": "500",
        "WINDOW_BUDGET_ON_SUMMARIZER_ERROR": "raise",
    }
    assert policy_from_env(environ=env) == BudgetPolicy(
        trigger_ratio=0.8,
        keep_recent=4000,
        reserve_tokens=1024,
        keep_unit="tokens",
        strategy="trim",
        digest_max_tokens=900,
        tool_output_chars=500,
        on_summarizer_error="raise",
    )


def test_reserve_none() -> None:
    policy = policy_from_env(environ={"WINDOW_BUDGET_RESERVE_TOKENS": "none"})
    assert policy.reserve_tokens is None


def test_explicit_arguments_win() -> None:
    env = {"WINDOW_BUDGET_TRIGGER_RATIO": "0.9", "WINDOW_BUDGET_STRATEGY": "trim"}
    policy = policy_from_env(environ=env, trigger_ratio=0.5, keep_recent=None)
    assert policy.trigger_ratio == 0.5
    assert policy.strategy == "trim"
    assert policy.keep_recent == 6000  # None means "not given"


def test_base_policy_fills_what_is_unset() -> None:
    base = BudgetPolicy(keep_recent=100, strategy="trim")
    policy = policy_from_env(base, environ={"WINDOW_BUDGET_KEEP_RECENT": "200"})
    assert policy.keep_recent == 200
    assert policy.strategy == "trim"


def test_turns_get_the_turn_policy_defaults() -> None:
    assert policy_from_env(environ={"WINDOW_BUDGET_KEEP_UNIT": "messages"}).keep_unit == "messages"
    policy = policy_from_env(environ={"WINDOW_BUDGET_KEEP_UNIT": "turns"})
    assert policy == BudgetPolicy.turns()
    custom = policy_from_env(
        environ={"WINDOW_BUDGET_KEEP_UNIT": "turns", "WINDOW_BUDGET_KEEP_RECENT": "3"}
    )
    assert custom.keep_recent == 3
    assert custom.trigger_ratio == 0.8


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("WINDOW_BUDGET_TRIGGER_RATIO", "1.5"),
        ("WINDOW_BUDGET_TRIGGER_RATIO", "0"),
        ("WINDOW_BUDGET_TRIGGER_RATIO", "lots"),
        ("WINDOW_BUDGET_TRIGGER_RATIO", "nan"),
        ("WINDOW_BUDGET_KEEP_RECENT", "-3"),
        ("WINDOW_BUDGET_KEEP_RECENT", "1e3"),
        ("WINDOW_BUDGET_RESERVE_TOKENS", "many"),
        ("WINDOW_BUDGET_KEEP_UNIT", "pages"),
        ("WINDOW_BUDGET_STRATEGY", "drop"),
        ("WINDOW_BUDGET_ON_SUMMARIZER_ERROR", "ignore"),
        ("WINDOW_BUDGET_COUNTER", "bpe"),
    ],
)
def test_bad_values_name_the_variable(var: str, value: str) -> None:
    with pytest.raises(ConfigError, match=var) as info:
        settings_from_env(environ={var: value})
    assert repr(value) in str(info.value)
    if var != "WINDOW_BUDGET_COUNTER":
        with pytest.raises(ConfigError, match=var):
            policy_from_env(environ={var: value})
    else:
        with pytest.raises(ConfigError, match=var):
            counter_from_env(environ={var: value})


def test_cross_field_check_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="WINDOW_BUDGET_DIGEST_MAX_TOKENS"):
        policy_from_env(environ={"WINDOW_BUDGET_DIGEST_MAX_TOKENS": "10"})


def test_bad_explicit_argument_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="argument trigger_ratio"):
        policy_from_env(environ={}, trigger_ratio=2.0)
    with pytest.raises(ConfigError, match="not BudgetPolicy fields"):
        policy_from_env(environ={}, keep_last=3)


def test_counter_from_env() -> None:
    assert counter_from_env(environ={}) is None
    assert counter_from_env(environ={"WINDOW_BUDGET_COUNTER": "heuristic"}) is None
    counter = counter_from_env(environ={"WINDOW_BUDGET_COUNTER": "tiktoken"})
    assert isinstance(counter, TiktokenCounter)
    # An explicit argument wins over the variable.
    assert counter_from_env("heuristic", environ={"WINDOW_BUDGET_COUNTER": "tiktoken"}) is None


def test_counter_unknown_encoding_is_a_config_error_naming_the_variable() -> None:
    pytest.importorskip("tiktoken")
    env = {"WINDOW_BUDGET_COUNTER": "tiktoken", "WINDOW_BUDGET_ENCODING": "no_such_enc_x"}
    with pytest.raises(ConfigError, match="WINDOW_BUDGET_ENCODING='no_such_enc_x'"):
        counter_from_env(environ=env)


def test_counter_known_encoding_that_cannot_load_falls_back_with_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("tiktoken")
    from window_budget.budget import _counters as counters

    def unavailable(name: str, **_: object) -> None:
        raise counters.EncodingUnavailable(f"{name} cannot be loaded here")

    monkeypatch.setattr(counters, "load_encoding", unavailable)
    monkeypatch.setattr(counters, "_warned", set())
    env = {"WINDOW_BUDGET_COUNTER": "tiktoken", "WINDOW_BUDGET_ENCODING": "o200k_base"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert counter_from_env(environ=env) is None
    assert any(issubclass(w.category, TokenizerFallbackWarning) for w in caught)


def test_encoding_name_is_not_checked_without_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_tiktoken(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "tiktoken" or name.startswith("tiktoken."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tiktoken)
    assert (
        read_setting("ENCODING", environ={"WINDOW_BUDGET_ENCODING": "custom_enc"}) == "custom_enc"
    )


def test_model_from_env() -> None:
    assert model_from_env(environ={}) is None
    env = {"WINDOW_BUDGET_MODEL": "llama-3-8b", "WINDOW_BUDGET_CONTEXT_WINDOW": "8192"}
    assert model_from_env(environ=env) == Model("llama-3-8b", 8192)
    assert model_from_env("mine", 4096, environ=env) == Model("mine", 4096)
    with pytest.raises(ConfigError, match="WINDOW_BUDGET_CONTEXT_WINDOW"):
        model_from_env(environ={"WINDOW_BUDGET_CONTEXT_WINDOW": "big"})
    with pytest.raises(ConfigError, match="context_window"):
        model_from_env(context_window=0, environ={})


def test_settings_unknown_and_describe() -> None:
    env = {"WINDOW_BUDGET_STRATEGY": "trim", "WINDOW_BUDGET_KEEP_RECNT": "5", "PATH": "/bin"}
    assert settings_from_env(environ=env) == {"STRATEGY": "trim"}
    assert unknown_env_vars(environ=env) == ["WINDOW_BUDGET_KEEP_RECNT"]
    text = describe_env()
    for var in ENV_VARS:
        assert var.name in text
    with pytest.raises(ConfigError, match="not a window-budget setting"):
        read_setting("keep_recnt", environ=env)
