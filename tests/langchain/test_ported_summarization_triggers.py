"""``SummarizationMiddleware``'s trigger tests, ported (see the middleware port's docstring)."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from langchain_core.language_models import LangSmithParams
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from pydantic import Field

from langchain_window_budget import WindowBudgetMiddleware
from langchain_window_budget._usage import other_provider
from window_budget.errors import ConfigError

from .ported_summarization_support import (
    SKIP_PRIVATE,
    MockChatModel,
    ProfileChatModel,
    ProfileProviderChatModel,
    _const,
    _numbered,
    _per_message,
    _rt,
)


def test_trigger_copies_mutable_inputs() -> None:
    clause: dict[str, int] = {"tokens": 1000}
    trigger: list[Any] = [clause]
    mw = WindowBudgetMiddleware(
        MockChatModel(), trigger=trigger, keep=("messages", 2), counter=_const(500)
    )
    clause["messages"] = 1
    trigger.append(("messages", 1))
    assert mw.engine.sizes.trigger is not None
    assert mw.engine.sizes.trigger.clauses == ((None, 1000),)
    assert mw.before_model({"messages": _numbered(2)}, _rt()) is None  # type: ignore[arg-type]


def test_trigger_clauses_are_canonical_representation() -> None:
    mw = WindowBudgetMiddleware(
        MockChatModel(),
        trigger=[("messages", 5), {"tokens": 1000}, {"tokens": 2000, "messages": 10}],
    )
    assert mw.engine.sizes.trigger is not None
    assert mw.engine.sizes.trigger.clauses == ((5, None), (None, 1000), (10, 2000))


@pytest.mark.skip(reason=SKIP_PRIVATE + " (_trigger_conditions, the legacy view)")
def test_trigger_conditions_legacy_tuple_view_remove_in_2_0() -> None:
    """n/a."""


@pytest.mark.skip(reason=SKIP_PRIVATE + " (_trigger_conditions, the legacy view)")
def test_compound_trigger_has_no_legacy_tuple_projection() -> None:
    """n/a."""


def _fires(trigger: Any, tokens: int, messages: list[AnyMessage], *, aio: bool = False) -> bool:
    mw = WindowBudgetMiddleware(
        MockChatModel(), trigger=trigger, keep=("messages", 2), counter=_const(tokens)
    )
    state = {"messages": messages}
    if aio:
        return asyncio.run(mw.abefore_model(state, _rt())) is not None  # type: ignore[arg-type]
    return mw.before_model(state, _rt()) is not None  # type: ignore[arg-type]


@pytest.mark.parametrize("aio", [False, True])
def test_and_trigger_conditions(aio: bool) -> None:
    trigger = {"tokens": 1000, "messages": 5}
    assert not _fires(trigger, 1500, _numbered(3), aio=aio)
    assert not _fires(trigger, 500, _numbered(6), aio=aio)
    assert _fires(trigger, 1500, _numbered(6), aio=aio)


@pytest.mark.parametrize("aio", [False, True])
def test_or_trigger_conditions_with_and_clauses(aio: bool) -> None:
    trigger = [{"tokens": 5000, "messages": 3}, {"tokens": 3000, "messages": 6}]
    assert _fires(trigger, 5500, _numbered(4), aio=aio)
    assert _fires(trigger, 3500, _numbered(7), aio=aio)
    assert not _fires(trigger, 4500, _numbered(4), aio=aio)


def test_backward_compatibility_tuple_trigger() -> None:
    mw = WindowBudgetMiddleware(
        MockChatModel(), trigger=("tokens", 1000), keep=("messages", 1), counter=_const(1500)
    )
    assert mw.before_model({"messages": _numbered(3)}, _rt()) is not None  # type: ignore[arg-type]
    assert _fires([("tokens", 1000), ("messages", 5)], 1500, _numbered(3))
    assert _fires([("tokens", 1000), ("messages", 5)], 100, _numbered(6))


def test_mixed_and_or_conditions() -> None:
    trigger = [{"tokens": 4000, "messages": 10}, ("messages", 50)]
    assert _fires(trigger, 4500, _numbered(12))
    assert _fires(trigger, 1000, _numbered(55))
    assert not _fires(trigger, 1000, _numbered(8))


def test_fraction_in_and_trigger() -> None:
    mw = WindowBudgetMiddleware(
        ProfileChatModel(),
        trigger={"fraction": 0.8, "messages": 5},
        keep=("messages", 2),
        counter=_per_message(200),
    )
    assert mw.before_model({"messages": _numbered(5)}, _rt()) is not None  # type: ignore[arg-type]
    assert mw.before_model({"messages": _numbered(3)}, _rt()) is None  # type: ignore[arg-type]
    assert mw.before_model({"messages": _numbered(4)}, _rt()) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "trigger",
    [
        {"invalid_metric": 100},
        {"fraction": 1.5},
        {"fraction": 0},
        {"tokens": 0},
        {"messages": -5},
        {"fraction": "invalid"},
        {"tokens": 1000.5},
        {"messages": "10"},
        {"messages": True},
        ["invalid"],
        "foo",
    ],
)
def test_trigger_validation_errors(trigger: Any) -> None:
    # DIFFERS in one point: the peer raises TypeError for ["invalid"] and "foo"; every
    # malformed size is a ConfigError here (a ValueError), one sentence naming it.
    with pytest.raises(ConfigError, match="trigger"):
        WindowBudgetMiddleware(MockChatModel(), context_window=8000, trigger=trigger)


def test_empty_and_condition() -> None:
    for trigger in ({}, [{"tokens": 1000}, {}]):
        with pytest.raises(ValueError, match="trigger"):
            WindowBudgetMiddleware(MockChatModel(), context_window=8000, trigger=trigger)  # type: ignore[arg-type]


def test_empty_list_trigger_never_summarizes() -> None:
    # Ours: no trigger, only the window guard (DIFFERS for a transcript past the window).
    mw = WindowBudgetMiddleware(
        ProfileChatModel(), context_window=8000, trigger=[], counter=_const(10_000)
    )
    assert mw.before_model({"messages": _numbered(50)}, _rt()) is None  # type: ignore[arg-type]


def _reported(total: int, provider: str = "mock") -> list[AnyMessage]:
    return [
        HumanMessage("hello"),
        AIMessage(
            "hi",
            response_metadata={"model_provider": provider},
            usage_metadata={
                "input_tokens": total - 1001,
                "output_tokens": 1001,
                "total_tokens": total,
            },
        ),
    ]


def test_reported_tokens_satisfy_tokens_within_and_clause() -> None:
    mw = WindowBudgetMiddleware(
        ProfileProviderChatModel(),
        context_window=100_000,
        trigger={"tokens": 10_000, "messages": 2},
        keep=("messages", 1),
        counter=_const(0),
    )
    assert mw.before_model({"messages": _reported(10_001)}, _rt()) is not None  # type: ignore[arg-type]
    mw = WindowBudgetMiddleware(
        ProfileProviderChatModel(),
        context_window=100_000,
        trigger={"tokens": 10_000, "messages": 2},
        keep=("messages", 1),
        counter=_const(0),
    )
    assert mw.before_model({"messages": _reported(1_100)}, _rt()) is None  # type: ignore[arg-type]


def test_three_metric_and_clause() -> None:
    mw = WindowBudgetMiddleware(
        ProfileChatModel(),
        trigger={"tokens": 100, "messages": 5, "fraction": 0.8},
        keep=("messages", 2),
    )
    trigger = mw.engine.sizes.trigger
    assert trigger is not None
    assert trigger.met(5, 800)
    assert not trigger.met(5, 500)
    assert not trigger.met(4, 800)


def test_tokens_and_fraction_and_clause() -> None:
    mw = WindowBudgetMiddleware(
        ProfileChatModel(), trigger={"tokens": 300, "fraction": 0.5}, keep=("messages", 2)
    )
    trigger = mw.engine.sizes.trigger
    assert trigger is not None
    assert trigger.met(1, 500)
    assert not trigger.met(1, 400)
    assert not trigger.met(1, 200)


class PromptCapturingModel(MockChatModel):
    captured_inputs: list[list[BaseMessage]] = Field(default_factory=list, exclude=True)
    captured_configs: list[RunnableConfig | None] = Field(default_factory=list, exclude=True)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        self.captured_inputs.append(input)
        self.captured_configs.append(config)
        return super().invoke(input, config, **kwargs)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        self.captured_inputs.append(input)
        self.captured_configs.append(config)
        return await super().ainvoke(input, config, **kwargs)


def _weather() -> list[AnyMessage]:
    return [
        HumanMessage("What is the weather in NYC?"),
        AIMessage(
            "Let me check the weather for you.",
            tool_calls=[{"name": "get_weather", "args": {"city": "NYC"}, "id": "call_123"}],
            usage_metadata={"input_tokens": 50, "output_tokens": 30, "total_tokens": 80},
            response_metadata={"model": "gpt-5.5", "finish_reason": "tool_calls"},
        ),
        ToolMessage("72F and sunny", tool_call_id="call_123", name="get_weather"),
        AIMessage(
            "It is 72F and sunny in NYC!",
            usage_metadata={"input_tokens": 100, "output_tokens": 25, "total_tokens": 125},
            response_metadata={"model": "gpt-5.5", "finish_reason": "stop"},
        ),
        HumanMessage("thanks"),
    ]


def test_create_summary_uses_get_buffer_string_format() -> None:
    model = PromptCapturingModel()
    mw = WindowBudgetMiddleware(model, context_window=8000, trigger=("messages", 5),
                                keep=("messages", 1))  # fmt: skip
    messages = _weather()
    mw.before_model({"messages": messages}, _rt())  # type: ignore[arg-type]
    request = model.captured_inputs[0][-1].text
    assert "72F and sunny" in request
    assert "usage_metadata" not in request
    assert "finish_reason" not in request
    assert len(request) < len(str(messages)) + len(model.captured_inputs[0][0].text)


@pytest.mark.parametrize("use_async", [False, True])
def test_create_summary_preserves_image_urls(use_async: bool) -> None:
    model = PromptCapturingModel()
    mw = WindowBudgetMiddleware(model, context_window=8000, trigger=("messages", 3),
                                keep=("messages", 1))  # fmt: skip
    image_url = "https://example.com/shared-image.png"
    state = {
        "messages": [
            HumanMessage(
                [
                    {"type": "text", "text": "What is in this image?"},
                    {"type": "image_url", "image_url": {"url": image_url}},
                ]
            ),
            AIMessage("The image shows a cat."),
            HumanMessage("thanks"),
        ]
    }
    if use_async:
        asyncio.run(mw.abefore_model(state, _rt()))  # type: ignore[arg-type]
    else:
        mw.before_model(state, _rt())  # type: ignore[arg-type]
    assert image_url in model.captured_inputs[0][-1].text


class _Anthropic(MockChatModel):
    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        return LangSmithParams(ls_provider="anthropic", ls_model_type="chat")


def test_usage_metadata_trigger() -> None:
    # The peer's test needs langchain_anthropic; a fake model tracing as "anthropic" here.
    def usage(total: int) -> dict[str, Any]:
        return {"input_tokens": total - 1000, "output_tokens": 1000, "total_tokens": total}

    def ai(text: str, total: int, provider: str = "anthropic", **kw: Any) -> AIMessage:
        return AIMessage(
            text, response_metadata={"model_provider": provider}, usage_metadata=usage(total), **kw
        )  # type: ignore[arg-type]

    messages: list[AnyMessage] = [
        HumanMessage("msg1"),
        ai("msg2", 6000, tool_calls=[{"name": "tool", "args": {}, "id": "call1"}]),
        ToolMessage("result", tool_call_id="call1"),
        ai("msg3", 7000),
        HumanMessage("msg4"),
        ai("msg5", 10_001),
    ]

    def fires(history: list[AnyMessage]) -> bool:
        mw = WindowBudgetMiddleware(
            _Anthropic(), context_window=200_000, trigger=("tokens", 10_000),
            keep=("messages", 4), counter=_const(0),
        )  # fmt: skip
        return mw.engine.sizes.fired(history, lambda: mw.engine.estimate(history))

    assert fires(messages)
    messages += [HumanMessage("msg6"), ai("msg7", 10_001, provider="not-anthropic")]
    # DIFFERS: the peer reads only the last reply; ours anchors on the newest reply whose
    # figure it trusts (msg5's 10,001), so a foreign reply does not hide the earlier figure.
    assert fires(messages)
    messages += [HumanMessage("msg8"), ai("msg9", 9999)]
    assert not fires(messages)


def test_provider_matches() -> None:
    def matches(said: str, provider: str | None) -> bool:
        return not other_provider(AIMessage("x", response_metadata={"model_provider": said}),
                                  provider) and provider is not None  # fmt: skip

    assert matches("anthropic", "anthropic")
    assert matches("openai", "openai")
    assert matches("bedrock", "amazon_bedrock")
    assert matches("bedrock_converse", "amazon_bedrock")
    assert not matches("openai", "anthropic")
    assert not matches("bedrock", "anthropic")
    assert not matches("anthropic", None)


class _MockBedrockChatModel(MockChatModel):
    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        return LangSmithParams(ls_provider="amazon_bedrock", ls_model_type="chat")


def test_reported_tokens_trigger_for_bedrock_converse() -> None:
    def fires(provider: str) -> bool:
        mw = WindowBudgetMiddleware(
            _MockBedrockChatModel(), context_window=200_000, trigger=("tokens", 10_000),
            keep=("messages", 4), counter=_const(0),
        )  # fmt: skip
        history = _reported(10_001, provider)
        return mw.engine.sizes.fired(history, lambda: mw.engine.estimate(history))

    assert fires("bedrock_converse")
    assert not fires("anthropic")


def test_reported_tokens_trigger_for_fraction() -> None:
    mw = WindowBudgetMiddleware(
        ProfileProviderChatModel(), trigger=("fraction", 0.8), keep=("messages", 4),
        counter=_const(0),
    )  # fmt: skip
    history = _reported(1_101)
    assert mw.engine.sizes.fired(history, lambda: mw.engine.estimate(history))


@pytest.mark.parametrize("use_async", [False, True])
def test_create_summary_passes_lc_source_metadata(use_async: bool) -> None:
    model = PromptCapturingModel()
    mw = WindowBudgetMiddleware(model, context_window=8000, trigger=("messages", 2),
                                keep=("messages", 1))  # fmt: skip
    state = {"messages": [HumanMessage("Hello"), AIMessage("Hi")]}
    if use_async:
        asyncio.run(mw.abefore_model(state, _rt()))  # type: ignore[arg-type]
    else:
        mw.before_model(state, _rt())  # type: ignore[arg-type]
    assert len(model.captured_configs) == 1
    config = model.captured_configs[0]
    assert config is not None
    assert config["metadata"]["lc_source"] == "summarization"


_ = (itertools, GenericFakeChatModel)
