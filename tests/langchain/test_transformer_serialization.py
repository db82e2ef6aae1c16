"""The LCEL transformer is a serializable Runnable with typed input and output schemas."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.load import dumpd, dumps, loads
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.prompt_values import ChatPromptValue
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from langchain_window_budget import WindowBudgetRunnable, condense_messages
from window_budget import BudgetPolicy

pytestmark = pytest.mark.filterwarnings(
    "ignore::langchain_core._api.beta_decorator.LangChainBetaWarning"
)


class SavableFakeModel(FakeListChatModel):
    """LangChain's fake list model, declared serializable as provider models are."""

    @classmethod
    def is_lc_serializable(cls) -> bool:
        return True

    @classmethod
    def get_lc_namespace(cls) -> list[str]:
        return cls.__module__.split(".")


def _load(text: str, *extra: type) -> Any:
    return loads(
        text,
        allowed_objects=[WindowBudgetRunnable, *extra],
        valid_namespaces=["langchain_window_budget", "tests"],
    )


def _history() -> list[Any]:
    return [
        SystemMessage("be terse"),
        *[HumanMessage(f"note {i}: " + "x" * 400) for i in range(60)],
    ]


def test_the_transformer_round_trips_through_dumps_and_loads() -> None:
    # The digest states the objective (the first note): a reply naming no fact of the folded
    # turns is a failed summary, which on_summarizer_error="raise" would raise.
    model = SavableFakeModel(responses=["# Objective\nnote 0: " + "x" * 400] * 10)
    runnable = condense_messages(
        model=model,
        context_window=4000,
        policy=BudgetPolicy.for_window(4000),
        trigger=None,
        on_summarizer_error="raise",
    )
    assert WindowBudgetRunnable.is_lc_serializable()
    assert runnable.lc_id() == ["langchain_window_budget", "condense", "WindowBudgetRunnable"]
    text = dumps(runnable)
    assert json.loads(text)["type"] == "constructor"
    loaded = _load(text, SavableFakeModel)
    assert isinstance(loaded, WindowBudgetRunnable)
    assert loaded.engine.policy == runnable.engine.policy
    assert loaded.engine.context_window == 4000
    assert loaded.engine.policy.on_summarizer_error == "raise"
    assert dumpd(loaded) == dumpd(runnable)
    history = _history()
    assert loaded.invoke(history) == runnable.invoke(history)


def test_sizes_survive_the_json_round_trip() -> None:
    runnable = WindowBudgetRunnable(
        context_window=8000, trigger=[("tokens", 3000), {"messages": 40}], keep=("messages", 10)
    )
    loaded = _load(dumps(runnable))
    assert loaded.engine.policy == runnable.engine.policy
    assert loaded.keep == ("messages", 10)


def test_a_callable_counter_is_reported_not_serializable() -> None:
    runnable = WindowBudgetRunnable(context_window=8000, counter=lambda t: len(t) // 4)
    assert dumpd(runnable)["type"] == "not_implemented"


def test_input_and_output_schemas_are_typed() -> None:
    runnable = condense_messages(context_window=8000)
    for schema in (runnable.get_input_schema(), runnable.get_output_schema()):
        text = json.dumps(schema.model_json_schema())
        assert "HumanMessage" in text
        assert "ChatPromptValue" in text
    prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("history")])
    chain = prompt | runnable
    assert "ChatPromptValue" in json.dumps(chain.get_output_schema().model_json_schema())
    value = prompt.invoke({"history": _history()})
    assert isinstance(chain.invoke({"history": _history()}), ChatPromptValue)
    assert runnable.get_input_schema().model_validate(value.to_messages())


@pytest.mark.parametrize("bad", [{"keep_recent": -1}, {"no_such_field": 1}])
def test_a_malformed_saved_policy_is_one_clear_error(bad: dict[str, Any]) -> None:
    from window_budget.errors import ConfigError

    with pytest.raises(ConfigError, match="is not a BudgetPolicy"):
        WindowBudgetRunnable(context_window=8000, policy=bad)
