"""``trigger=`` / ``keep=`` in the forms of LangChain's ``SummarizationMiddleware``."""

from __future__ import annotations

import itertools

import pytest
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_window_budget import WindowBudgetMiddleware, digest_record
from window_budget.errors import ConfigError
from window_budget.pipeline import budget_limit

from .conftest import digest_model, tool_loop

WINDOW = 8000


def _mw(**kw: object) -> WindowBudgetMiddleware:
    # No memory store: the engine is run directly, without a conversation to name.
    return WindowBudgetMiddleware(digest_model(), context_window=WINDOW, memory=None, **kw)  # type: ignore[arg-type]


def _limit(mw: WindowBudgetMiddleware) -> float:
    model = mw.engine.condenser.deps.model
    assert model is not None
    return budget_limit(model, mw.engine.policy)


def _chat(pairs: int, chars: int = 40) -> list[BaseMessage]:
    return [
        m
        for i in range(pairs)
        for m in (
            HumanMessage(f"q{i} " + "q" * chars, id=f"h{i}"),
            AIMessage(f"a{i} " + "a" * chars, id=f"a{i}"),
        )
    ]


def test_a_token_trigger_is_absolute_and_a_fraction_is_of_the_whole_window() -> None:
    mw = _mw(trigger=("tokens", 3000))
    assert mw.engine.sizes.trigger is not None
    assert mw.engine.sizes.trigger.clauses == ((None, 3000),)
    assert _mw(trigger=("fraction", 0.5)).engine.sizes.trigger.clauses == ((None, 4000),)  # type: ignore[union-attr]
    # A trigger the user gives replaces the default guard: what is left is the window itself.
    for trigger in [("tokens", 3000), ("fraction", 0.5), [("fraction", 0.5), ("tokens", 2500)]]:
        mw = _mw(trigger=trigger)
        assert _limit(mw) == WINDOW - (mw.engine.policy.reserve_tokens or 0)


def test_a_token_trigger_fires_where_it_says() -> None:
    mw = _mw(trigger=("tokens", 1500), keep=("tokens", 500))
    history = tool_loop(5, result_chars=500)
    assert 1500 < mw.engine.estimate(history) < 0.75 * WINDOW  # the default would not fire
    assert mw.engine.run(history).changed
    assert not _mw().engine.run(history).changed


def test_a_message_trigger_and_a_message_keep_match_summarization_middleware() -> None:
    history = _chat(8)  # 16 small messages: far under any token threshold
    mw = _mw(trigger=("messages", 12), keep=("messages", 5))
    result = mw.engine.run(history)
    assert result.changed
    assert digest_record(result.messages[0]) is not None
    theirs = SummarizationMiddleware(
        GenericFakeChatModel(messages=itertools.cycle([AIMessage("s")])),
        trigger=("messages", 12),
        keep=("messages", 5),
    )
    cut = theirs._determine_cutoff_index(history)
    assert list(result.messages[1:]) == history[cut:]
    assert not _mw(trigger=("messages", 20), keep=("messages", 5)).engine.run(history).changed


def test_a_dict_clause_needs_all_and_a_list_needs_any() -> None:
    history = _chat(8)
    assert (
        not _mw(trigger={"messages": 10, "tokens": 5000}, keep=("messages", 4))
        .engine.run(history)
        .changed
    )
    assert (
        _mw(trigger={"messages": 10, "tokens": 100}, keep=("messages", 4))
        .engine.run(history)
        .changed
    )
    assert (
        _mw(trigger=[("tokens", 7000), {"messages": len(history)}], keep=("messages", 4))
        .engine.run(history)
        .changed
    )


def test_keep_forms_map_onto_the_policy() -> None:
    assert _mw(keep=("tokens", 1234)).engine.policy.keep_recent == 1234
    policy = _mw(keep=("fraction", 0.25)).engine.policy
    assert (policy.keep_unit, policy.keep_recent) == ("tokens", 2000)
    policy = _mw(keep=("messages", 20)).engine.policy
    assert (policy.keep_unit, policy.keep_recent) == ("messages", 20)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"trigger": ("tokens", 0)}, "tokens must be a positive int"),
        ({"trigger": ("fraction", 1.5)}, r"fraction must be in \(0, 1\]"),
        ({"trigger": ("pages", 3)}, "unsupported kind 'pages'"),
        ({"trigger": 4000}, "is not a"),
        ({"trigger": [("tokens", 10), "x"]}, "is not a"),
        ({"trigger": {"messages": True}}, "must be a number"),
        ({"keep": [("messages", 3)]}, "must be one"),
        ({"keep": ("messages", 2.5)}, "messages must be a positive int"),
    ],
)
def test_malformed_sizes_are_refused_in_one_sentence(kw: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        _mw(**kw)
