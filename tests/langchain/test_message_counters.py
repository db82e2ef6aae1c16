"""``counter=`` takes LangChain's message-based token counters and counts right with them."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately

from langchain_window_budget import WindowBudgetMiddleware, condense_messages
from langchain_window_budget.condense import LangChainCondenser
from langchain_window_budget.counting import counter_kind
from window_budget.errors import ConfigError

from .conftest import tool_loop


class CountingModel(GenericFakeChatModel):
    """A fake chat model whose ``get_num_tokens_from_messages`` works offline."""

    def get_num_tokens_from_messages(
        self, messages: list[BaseMessage], tools: Sequence[Any] | None = None
    ) -> int:
        return count_tokens_approximately(messages)


def _history() -> list[BaseMessage]:
    return [
        m
        for i in range(20)
        for m in (
            HumanMessage(f"question {i} " + "word " * 60),
            AIMessage(f"answer {i} " + "word " * 60),
        )
    ]


def test_count_tokens_approximately_counts_messages_not_characters() -> None:
    history = _history()
    truth = count_tokens_approximately(history)
    engine = LangChainCondenser(None, context_window=128_000, counter=count_tokens_approximately)
    # One message is counted as one HumanMessage per text block: a little framing over.
    assert truth <= engine.count_messages(history) <= truth * 1.2
    assert engine.counter is not None
    assert "count_tokens_approximately" in engine.counter.name


def test_a_chat_models_own_counter_and_a_partial_of_langchains() -> None:
    model = CountingModel(messages=itertools.cycle([AIMessage("ok")]))
    history = _history()
    truth = count_tokens_approximately(history)
    for counter in (
        model.get_num_tokens_from_messages,
        functools.partial(count_tokens_approximately, chars_per_token=4.0),
    ):
        engine = LangChainCondenser(model, context_window=128_000, counter=counter)
        assert truth <= engine.count_messages(history) <= truth * 1.2


def test_the_middleware_accepts_a_message_counter() -> None:
    model = CountingModel(messages=itertools.cycle([AIMessage("ok")]))
    middleware = WindowBudgetMiddleware(
        model, context_window=8000, counter=count_tokens_approximately
    )
    history = tool_loop(3)
    assert middleware.engine.count_messages(history) <= count_tokens_approximately(history) * 1.2


def test_text_counters_still_count_text() -> None:
    history = _history()
    per_text = LangChainCondenser(None, context_window=128_000, counter=lambda t: len(t) // 4)
    assert per_text.count_messages(history) < count_tokens_approximately(history)
    assert counter_kind(lambda t: len(t) // 4) == "text"

    def by_annotation(value: str) -> int:
        return len(value)

    def by_messages(items: list[BaseMessage]) -> int:
        return 7 * len(items)

    assert counter_kind(by_annotation) == "text"
    assert counter_kind(by_messages) == "messages"
    assert condense_messages(history, context_window=128_000, counter=by_messages) is history


@pytest.mark.parametrize(
    "counter",
    [
        lambda x: "many",
        lambda x: len(x) * 3,  # more tokens than characters: not a tokenizer of text
    ],
)
def test_a_callable_of_neither_kind_is_refused_in_one_sentence(counter: Any) -> None:
    with pytest.raises(ConfigError, match=r"cannot tell what counter .* counts"):
        LangChainCondenser(None, context_window=8000, counter=counter)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=200), min_size=1, max_size=8))
def test_a_message_counter_never_reads_a_text_as_characters(texts: list[str]) -> None:
    engine = LangChainCondenser(None, context_window=128_000, counter=count_tokens_approximately)
    history = [HumanMessage(t) for t in texts]
    counted = engine.count_messages(history)
    truth = count_tokens_approximately(history)
    # Characters-as-messages would give ~3 tokens per character; framing adds at most a few
    # tokens per message.
    assert counted <= truth + 8 * len(texts)
