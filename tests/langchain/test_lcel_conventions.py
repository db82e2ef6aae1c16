"""The LCEL transformer and ``acondense_messages`` take what the middleware takes."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableLambda

from langchain_window_budget import acondense_messages, condense_messages, digest_record
from window_budget.errors import ConfigError

from .test_conventions_round2 import GOOD, _chat, _model


def test_the_transformer_takes_a_function_summarizer_and_calls_it() -> None:
    calls: list[list[BaseMessage]] = []

    def plain(messages: list[BaseMessage]) -> str:
        calls.append(messages)
        return GOOD

    chain = condense_messages(
        model=_model("unused"),
        context_window=10_000,
        trigger=("messages", 6),
        keep=("messages", 2),
        summarizer=RunnableLambda(plain),
    )
    history = _chat(8)
    out = chain.invoke(history)
    assert len(calls) == 1
    record = digest_record(out[0])
    assert record is not None
    assert not record["fallback"]
    assert out[-2:] == history[-2:]  # keep=("messages", 2), the caller's own objects


def test_the_transformer_refuses_a_summarizer_of_no_known_kind_in_one_sentence() -> None:
    with pytest.raises(ConfigError, match="summarizer must be"):
        condense_messages(model=_model(), context_window=10_000, summarizer=42)


def test_acondense_messages_takes_trigger_and_keep() -> None:
    history = _chat(8)
    # Under a 10k window nothing needs folding; the message trigger asks for it anyway.
    assert asyncio.run(acondense_messages(history, context_window=10_000)) is history
    out = asyncio.run(
        acondense_messages(
            history,
            model=_model(),
            context_window=10_000,
            trigger=("messages", 6),
            keep=("messages", 3),
        )
    )
    assert digest_record(out[0]) is not None
    assert out[-3:] == history[-3:]
