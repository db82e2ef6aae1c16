"""The window: refused when too small for the reserve, taken from the model table, and the
default policy scaled to it."""

from __future__ import annotations

import itertools

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from langchain_window_budget import WindowBudgetMiddleware, condense_messages
from langchain_window_budget.condense import LangChainCondenser
from window_budget import BudgetPolicy
from window_budget.errors import ConfigError
from window_budget.memory import InProcessMemoryStore

from .conftest import digest_model


class NamedModel(GenericFakeChatModel):
    """A fake chat model that names a real model, as provider integrations do."""

    model_name: str = "gpt-4o-mini"


def _named(name: str) -> NamedModel:
    return NamedModel(messages=itertools.cycle([AIMessage("ok")]), model_name=name)


@pytest.mark.parametrize("window", [1000, 2048, 2100])
def test_a_window_smaller_than_the_reserve_is_refused_at_construction(window: int) -> None:
    with pytest.raises(ConfigError, match=r"context_window=.*reserve_tokens=2,048") as info:
        WindowBudgetMiddleware(digest_model(), context_window=window, policy=BudgetPolicy())
    assert str(info.value).count(". ") == 0  # one sentence
    with pytest.raises(ConfigError, match="reserve_tokens"):
        condense_messages(context_window=window, policy=BudgetPolicy())


def test_the_default_policy_scales_with_the_window() -> None:
    for window in (1000, 4096, 32_000, 200_000):
        engine = LangChainCondenser(None, context_window=window)
        # Without a memory store, no prompt ceiling: 75 % of the window.
        assert engine.policy == BudgetPolicy.for_window(window, cache_aware=False)
        stored = LangChainCondenser(None, context_window=window, memory=InProcessMemoryStore())
        assert stored.policy == BudgetPolicy.for_window(window)
    assert BudgetPolicy.for_window(200_000).prompt_ceiling == 18_000
    # A small window works out of the box (the fixed default reserved 2,048 of it).
    assert LangChainCondenser(None, context_window=1000).policy.reserve_tokens == 125


def test_a_named_model_takes_its_window_from_the_table() -> None:
    assert LangChainCondenser(_named("gpt-4o-mini")).context_window == 128_000
    mw = WindowBudgetMiddleware(_named("claude-haiku-4-5-20251001"))
    assert mw.engine.context_window == 200_000
    # An explicit window still wins.
    assert LangChainCondenser(_named("gpt-4o-mini"), context_window=9000).context_window == 9000


def test_an_unknown_model_asks_for_the_window_in_one_sentence() -> None:
    with pytest.raises(
        ConfigError,
        match=r"model 'my-finetune' is not in window-budget's "
        r"table .* pass context_window=",
    ) as info:
        LangChainCondenser(_named("my-finetune"))
    assert "--window" not in str(info.value)


def test_a_model_whose_cache_is_weak_gets_the_lower_ceiling() -> None:
    # gpt-4o's cached input costs half its input; Claude's a tenth (the model table's prices).
    store = InProcessMemoryStore()
    weak = LangChainCondenser(_named("gpt-4o"), memory=store)
    assert weak.policy == BudgetPolicy.for_window(weak.context_window, cache_read=0.5)
    strong = LangChainCondenser(_named("claude-sonnet-4-5"), memory=store)
    assert strong.policy == BudgetPolicy.for_window(strong.context_window)
    middleware = WindowBudgetMiddleware(_named("gpt-4o"))
    assert middleware.engine.policy.prompt_ceiling == 16_000 + 128_000 * 6 // 1000
    # A policy given is used as given; without a store there is no ceiling at all.
    assert LangChainCondenser(_named("gpt-4o")).policy.prompt_ceiling is None
    given = BudgetPolicy.for_window(128_000)
    assert LangChainCondenser(_named("gpt-4o"), memory=store, policy=given).policy == given
    # A model whose cache read the data prices above its input builds too (no discount).
    odd = LangChainCondenser(_named("gpt-3.5-turbo"), memory=store)
    assert odd.policy == BudgetPolicy.for_window(odd.context_window, cache_read=1.0)
