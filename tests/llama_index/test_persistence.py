"""Persistence as in LlamaIndex's memories: ``to_string``/``from_string``, pickling a memory
with an unpicklable tokenizer, and ``initial_token_count`` above the limit."""

from __future__ import annotations

import logging
import pickle
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import ChatMemoryBuffer, ChatSummaryMemoryBuffer

from llama_index.memory.window_budget import WindowBudgetMemory, is_digest_message
from window_budget.errors import BudgetError

from .conftest import ScriptedLLM


def fill(memory: Any, turns: int) -> None:
    for i in range(turns):
        memory.put(ChatMessage(role="user", content=f"question {i} " + "please " * 30))
        memory.put(ChatMessage(role="assistant", content=f"answer {i} " + "sure " * 30))


def test_to_string_from_string_round_trip() -> None:
    llm = ScriptedLLM()
    memory = WindowBudgetMemory.from_defaults(llm=llm, context_window=2000, digest_role="pair")
    fill(memory, 30)
    text = memory.to_string()
    assert isinstance(text, str)
    again = WindowBudgetMemory.from_string(text, llm=llm)
    assert again.llm is llm
    assert again.digest_role == "pair"
    assert again.policy == memory.policy
    assert [m.model_dump() for m in again.get_all(include_archived=True)] == [
        m.model_dump() for m in memory.get_all(include_archived=True)
    ]
    assert [m.model_dump() for m in again.get()] == [m.model_dump() for m in memory.get()]
    assert is_digest_message(again.get_all()[0])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not a WindowBudgetMemory string: invalid JSON"),
        ('{"class_name": "ChatMemoryBuffer"}', "not a WindowBudgetMemory"),
        ('{"context_window": -5}', "context_window must be a positive int, got -5"),
        ('{"context_window": 2000, "digest_role": "tool"}', "digest_role must be one of"),
    ],
)
def test_bad_strings_are_one_clear_sentence(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        WindowBudgetMemory.from_string(text)


def test_string_from_before_digest_role_keeps_the_user_digest() -> None:
    memory = WindowBudgetMemory.from_defaults(context_window=2000)
    data = memory.to_dict()
    del data["digest_role"]
    assert WindowBudgetMemory.from_dict(data).digest_role == "user"


def test_pickling_a_lambda_counter_drops_it_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    memory = WindowBudgetMemory.from_defaults(
        context_window=2000, counter=lambda text: len(text) // 3
    )
    fill(memory, 5)
    with caplog.at_level(logging.WARNING):
        data = pickle.dumps(memory)
    assert "unpicklable counter" in caplog.text
    again = pickle.loads(data)
    assert [m.content for m in again.get_all()] == [m.content for m in memory.get_all()]
    heuristic = WindowBudgetMemory.from_defaults(context_window=2000)
    assert again.count_tokens(again.get_all()) == heuristic.count_tokens(memory.get_all())
    again.put(ChatMessage(role="user", content="still works"))
    assert again.get()[-1].content == "still works"


def test_pickling_a_tokenizer_fn_that_does_not_pickle(caplog: pytest.LogCaptureFixture) -> None:
    memory = WindowBudgetMemory.from_defaults(
        context_window=2000, tokenizer_fn=lambda text: text.split()
    )
    fill(memory, 2)
    with caplog.at_level(logging.WARNING):
        again = pickle.loads(pickle.dumps(memory))
    assert "unpicklable counter" in caplog.text
    assert len(again.get_all()) == 4


@pytest.mark.parametrize("peer", [ChatMemoryBuffer, ChatSummaryMemoryBuffer])
def test_initial_token_count_above_the_limit_raises_value_error_like_the_peers(peer: Any) -> None:
    kwargs = {"count_initial_tokens": True} if peer is ChatSummaryMemoryBuffer else {}
    theirs = peer.from_defaults(token_limit=500, **kwargs)
    fill(theirs, 1)
    with pytest.raises(ValueError, match="exceeds token limit"):
        theirs.get(initial_token_count=501)
    ours = WindowBudgetMemory.from_defaults(token_limit=500)
    fill(ours, 1)
    with pytest.raises(ValueError, match="initial_token_count 501 exceeds the token limit 500"):
        ours.get(initial_token_count=501)
    with pytest.raises(BudgetError):
        ours.get(initial_token_count=501)
    assert ours.get(initial_token_count=300)


async def test_async_initial_token_count_above_the_limit() -> None:
    ours = WindowBudgetMemory.from_defaults(token_limit=500)
    with pytest.raises(ValueError, match="exceeds the token limit"):
        await ours.aget(initial_token_count=10_000)
