"""Issue 24, LangChain: a trigger that only triggers, a keep that keeps, summarizers of every
kind, retries, counted sizes without a window, and the smaller conventions of
``SummarizationMiddleware`` — each on the real framework classes."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.exceptions import (
    ContextOverflowError,
    ModelAuthenticationError,
    ModelRateLimitError,
)
from langchain_core.language_models import BaseChatModel, LangSmithParams
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableLambda
from langgraph.runtime import Runtime

from langchain_window_budget import WindowBudgetMiddleware, digest_record
from window_budget.errors import ConfigError, SummarizerError

GOOD = (
    "# Objective\nfix the parser in src/parse.py\n# Status\nShipped: read src/parse.py\n"
    "# Plan\nrun the tests"
)


def _model(reply: str = GOOD) -> BaseChatModel:
    return GenericFakeChatModel(messages=itertools.cycle([AIMessage(reply)]))


def _chat(n: int, chars: int = 200) -> list[BaseMessage]:
    """``n`` alternating turns; the first states the objective and a file."""
    out: list[BaseMessage] = [HumanMessage("fix the parser in src/parse.py", id="m0")]
    for i in range(1, n):
        kind = AIMessage if i % 2 else HumanMessage
        out.append(kind(f"turn {i} " + "w " * (chars // 2), id=f"m{i}"))
    return out


def _kept(update: dict[str, Any] | None) -> list[BaseMessage]:
    assert update is not None
    assert isinstance(update["messages"][0], RemoveMessage)
    assert digest_record(update["messages"][1]) is not None
    return list(update["messages"][2:])


class FlakyModel(BaseChatModel):
    """Raises ``errors`` in turn, then replies ``reply``; records each request."""

    errors: list[Exception] = []  # noqa: RUF012 - a pydantic field
    reply: str = GOOD
    requests: list[list[BaseMessage]] = []  # noqa: RUF012

    @property
    def _llm_type(self) -> str:
        return "flaky"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.requests.append(list(messages))
        if self.errors:
            raise self.errors.pop(0)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self.reply))])


@pytest.fixture(autouse=True)
def _no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    # No waiting between retries here (the delays themselves are not what is tested).
    from window_budget.bridge import retry

    monkeypatch.setattr(retry, "RETRY_DELAYS", (0.0, 0.0))


# -- 1. a trigger only decides when ------------------------------------------


def test_a_token_trigger_does_not_cut_a_message_that_fits_the_window() -> None:
    mw = WindowBudgetMiddleware(
        _model(),
        context_window=100_000,
        trigger=("tokens", 1000),
        keep=("messages", 1),
        counter=count_tokens_approximately,
    )
    state = {"messages": [HumanMessage("word " * 1500, id="h")]}
    theirs = SummarizationMiddleware(_model(), trigger=("tokens", 1000), keep=("messages", 1))
    assert theirs.before_model(state, Runtime()) is None  # type: ignore[arg-type]
    assert mw.before_model(state, Runtime()) is None  # type: ignore[arg-type]


def test_a_fired_trigger_keeps_the_tail_whole_when_it_fits_the_window() -> None:
    mw = WindowBudgetMiddleware(
        _model(), context_window=100_000, trigger=("tokens", 1000), keep=("messages", 1)
    )
    history = [*_chat(3), HumanMessage("word " * 1500, id="big")]
    kept = _kept(mw.before_model({"messages": history}, Runtime()))  # type: ignore[arg-type]
    assert kept == history[-1:]
    assert kept[0].text == "word " * 1500


# -- 2. keep is honoured as the peer honours it --------------------------------


@pytest.mark.parametrize(
    ("trigger", "keep", "n"),
    [
        (("messages", 5), ("messages", 5), 5),
        (("messages", 5), ("messages", 5), 9),
        (("messages", 4), ("messages", 2), 7),
        (("messages", 4), ("tokens", 300), 8),
        (("messages", 4), ("tokens", 1), 6),
    ],
)
def test_keep_cuts_where_summarization_middleware_cuts(
    trigger: tuple[str, int], keep: tuple[str, int], n: int
) -> None:
    history = _chat(n)
    theirs = SummarizationMiddleware(_model(), trigger=trigger, keep=keep)  # type: ignore[arg-type]
    expected = theirs.before_model({"messages": history}, Runtime())  # type: ignore[arg-type]
    mw = WindowBudgetMiddleware(
        _model(),
        context_window=10_000,
        trigger=trigger,  # type: ignore[arg-type]
        keep=keep,  # type: ignore[arg-type]
        counter=count_tokens_approximately,
    )
    ours = mw.before_model({"messages": history}, Runtime())  # type: ignore[arg-type]
    if expected is None:
        assert ours is None
    else:
        assert _kept(ours) == list(expected["messages"][2:])


def test_token_and_message_keep_in_a_10k_window_under_the_default_trigger() -> None:
    big = [(HumanMessage if i % 2 == 0 else AIMessage)("w " * 4000, id=f"b{i}") for i in range(6)]
    for keep, count in ((("tokens", 6100), 3), (("messages", 3), 3), (("messages", 2), 2)):
        mw = WindowBudgetMiddleware(
            _model(), context_window=10_000, keep=keep, counter=count_tokens_approximately
        )  # type: ignore[arg-type]
        kept = _kept(mw.before_model({"messages": big}, Runtime()))  # type: ignore[arg-type]
        assert kept == big[-count:]
        assert all(len(m.text) == 8000 for m in kept)  # nothing that fits is shortened


def test_a_cut_on_a_tool_result_moves_back_to_its_call() -> None:
    history: list[BaseMessage] = [
        HumanMessage("H" * 1200, id="h0"),
        AIMessage("A" * 800, id="a1", tool_calls=[{"name": "t", "args": {}, "id": "c1"}]),
        ToolMessage("T" * 200, tool_call_id="c1", id="t1"),
        HumanMessage("H" * 720, id="h2"),
        HumanMessage("H" * 640, id="h3"),
    ]
    mw = WindowBudgetMiddleware(
        _model(),
        context_window=10_000,
        trigger=("messages", 5),
        keep=("messages", 3),
    )
    assert _kept(mw.before_model({"messages": history}, Runtime())) == history[1:]  # type: ignore[arg-type]


# -- 3. a user trigger replaces the default guard -------------------------------


def test_an_explicit_trigger_does_not_fire_at_the_default_guard() -> None:
    history = _chat(24, chars=600)  # about 8,500 tokens of a 10k window
    mw = WindowBudgetMiddleware(_model(), context_window=10_000, trigger=("messages", 100))
    assert 0.75 * 8750 < mw.engine.estimate(history) < 8750
    assert mw.before_model({"messages": history}, Runtime()) is None  # type: ignore[arg-type]
    # The default (no trigger) fires there.
    default = WindowBudgetMiddleware(_model(), context_window=10_000)
    assert default.before_model({"messages": history}, Runtime()) is not None  # type: ignore[arg-type]


def test_an_explicit_trigger_replaces_a_cache_aware_policys_ceiling() -> None:
    from window_budget import BudgetPolicy

    policy = BudgetPolicy.for_window(200_000, cache_aware=True)
    history = _chat(120, chars=600)  # about 40k tokens: past the ceiling, short of the trigger
    mw = WindowBudgetMiddleware(
        _model(), context_window=200_000, policy=policy, trigger=("tokens", 100_000)
    )
    assert policy.prompt_ceiling is not None
    assert policy.prompt_ceiling < mw.engine.estimate(history) < 100_000
    assert mw.before_model({"messages": history}, Runtime()) is None  # type: ignore[arg-type]
    capped = WindowBudgetMiddleware(_model(), context_window=200_000, policy=policy)
    assert capped.before_model({"messages": history}, Runtime()) is not None  # type: ignore[arg-type]


def test_an_empty_trigger_list_leaves_only_the_window() -> None:
    mw = WindowBudgetMiddleware(_model(), context_window=10_000, trigger=[])
    assert mw.before_model({"messages": _chat(24, chars=600)}, Runtime()) is None  # type: ignore[arg-type]
    assert mw.before_model({"messages": _chat(30, chars=900)}, Runtime()) is not None  # type: ignore[arg-type]


# -- 4. summarizers of every kind -------------------------------------------------


def _folding(summarizer: object, **options: Any) -> WindowBudgetMiddleware:
    """A middleware that folds ``_chat(8)`` to a digest and two messages with ``summarizer``."""
    return WindowBudgetMiddleware(
        _model(),
        context_window=10_000,
        trigger=("messages", 6),
        keep=("messages", 2),
        summarizer=summarizer,  # type: ignore[arg-type]
        **options,
    )


def _run(mw: WindowBudgetMiddleware, *, use_async: bool = False) -> list[BaseMessage]:
    state = {"messages": _chat(8)}
    if use_async:
        update = asyncio.run(mw.abefore_model(state, Runtime()))  # type: ignore[arg-type]
    else:
        update = mw.before_model(state, Runtime())  # type: ignore[arg-type]
    assert update is not None
    return list(update["messages"][1:])


@pytest.mark.parametrize("use_async", [False, True])
def test_a_function_a_runnable_and_an_async_function_write_the_digest(use_async: bool) -> None:
    calls: list[list[BaseMessage]] = []

    def plain(messages: list[BaseMessage]) -> str:
        calls.append(messages)
        return GOOD

    async def coroutine(messages: list[BaseMessage]) -> str:
        calls.append(messages)
        return GOOD

    for summarizer in (plain, RunnableLambda(plain), coroutine):
        calls.clear()
        mw = WindowBudgetMiddleware(
            _model("unused"),
            context_window=10_000,
            trigger=("messages", 6),
            keep=("messages", 2),
            summarizer=summarizer,
        )
        digest = _run(mw, use_async=use_async)[0]
        assert len(calls) == 1
        assert "src/parse.py" in calls[0][-1].text
        record = digest_record(digest)
        assert record is not None
        assert not record["fallback"]
        assert "run the tests" in digest.text


def test_a_summarizer_of_no_known_kind_is_refused_at_construction() -> None:
    with pytest.raises(ConfigError, match="summarizer must be"):
        WindowBudgetMiddleware(_model(), context_window=10_000, summarizer=42)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="summarizer='nosuchprovider:x'"):
        WindowBudgetMiddleware(_model(), context_window=10_000, summarizer="nosuchprovider:x")


# -- 5. retries ---------------------------------------------------------------------


def test_a_rate_limited_summarizer_is_retried_and_writes_the_digest() -> None:
    flaky = FlakyModel(errors=[ModelRateLimitError("429"), ModelRateLimitError("429")])
    mw = _folding(flaky)
    digest = _run(mw)[0]
    assert len(flaky.requests) == 3
    record = digest_record(digest)
    assert record is not None
    assert not record["fallback"]


def test_an_async_summarizer_is_retried_too() -> None:
    flaky = FlakyModel(errors=[TimeoutError("read timed out")])
    mw = _folding(flaky)
    digest = _run(mw, use_async=True)[0]
    assert len(flaky.requests) == 2
    assert not digest_record(digest)["fallback"]  # type: ignore[index]


def test_a_permanent_failure_is_not_retried() -> None:
    flaky = FlakyModel(errors=[ModelAuthenticationError("bad key")])
    mw = _folding(flaky)
    digest = _run(mw)[0]
    assert len(flaky.requests) == 1
    assert digest_record(digest)["fallback"]  # type: ignore[index]


def test_an_overflowing_summary_request_is_retried_smaller() -> None:
    flaky = FlakyModel(errors=[ContextOverflowError("prompt is too long")])
    mw = _folding(flaky)
    _run(mw)
    first, second = (r[-1].text for r in flaky.requests)
    assert len(second) < len(first)
    assert "middle of the conversation omitted" in second


# -- 6. counted sizes need no window --------------------------------------------


def test_a_model_without_a_profile_takes_counted_triggers() -> None:
    plain = FakeListChatModel(responses=[GOOD])
    for trigger in (("messages", 6), ("tokens", 50), {"messages": 6, "tokens": 50}):
        mw = WindowBudgetMiddleware(plain, trigger=trigger, keep=("messages", 2))  # type: ignore[arg-type]
        assert not mw.engine.window_known
        assert _kept(mw.before_model({"messages": _chat(8)}, Runtime())) == _chat(8)[-2:]  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="context_window"):
        WindowBudgetMiddleware(plain, trigger=("fraction", 0.8))
    with pytest.raises(ConfigError, match="context_window"):
        WindowBudgetMiddleware(plain)


# -- 7. the smaller conventions ----------------------------------------------------


class _Provider(GenericFakeChatModel):
    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        return LangSmithParams(ls_provider="amazon_bedrock", ls_model_type="chat")


def test_usage_from_another_provider_does_not_anchor() -> None:
    model = _Provider(messages=itertools.cycle([AIMessage(GOOD)]))
    mw = WindowBudgetMiddleware(model, context_window=10_000)

    def reply(provider: str) -> list[BaseMessage]:
        usage = {"input_tokens": 9000, "output_tokens": 10, "total_tokens": 9010}
        return [
            HumanMessage("hello", id="h"),
            AIMessage(
                "hi",
                id="a",
                usage_metadata=usage,  # type: ignore[arg-type]
                response_metadata={"model_provider": provider},
            ),
        ]

    assert mw.engine.estimate(reply("bedrock_converse")) > 9000  # an alias: anchors
    assert mw.engine.estimate(reply("anthropic")) < 100  # another provider: does not


def test_image_urls_reach_the_summary_request() -> None:
    flaky = FlakyModel()
    url = "https://example.com/shared-image.png"
    mw = WindowBudgetMiddleware(
        _model(),
        context_window=10_000,
        trigger=("messages", 3),
        keep=("messages", 1),
        summarizer=flaky,
    )
    history = [
        HumanMessage(
            [
                {"type": "text", "text": "What is in this image?"},
                {"type": "image_url", "image_url": {"url": url}},
            ],
            id="h",
        ),
        AIMessage("The image shows a cat.", id="a"),
        HumanMessage("thanks", id="h2"),
    ]
    mw.before_model({"messages": history}, Runtime())  # type: ignore[arg-type]
    assert url in flaky.requests[0][-1].text


def test_the_digest_carries_langchains_summary_mark() -> None:
    mw = WindowBudgetMiddleware(
        _model(), context_window=10_000, trigger=("messages", 6), keep=("messages", 2)
    )
    digest = _run(mw)[0]
    assert digest.additional_kwargs["lc_source"] == "summarization"


def test_raise_gives_the_providers_own_exception() -> None:
    flaky = FlakyModel(errors=[ModelAuthenticationError("bad key")])
    mw = _folding(flaky, on_summarizer_error="raise")
    with pytest.raises(ModelAuthenticationError, match="bad key") as caught:
        _run(mw)
    assert isinstance(caught.value, SummarizerError)  # still catchable as before


@pytest.mark.parametrize("figure", [1, 1500, 10_000])
def test_a_constant_counter_does_not_empty_the_digest(figure: int) -> None:
    mw = WindowBudgetMiddleware(
        _model(),
        context_window=100_000,
        trigger=("messages", 6),
        keep=("messages", 2),
        counter=lambda messages: figure,
    )
    digest = _run(mw)[0]
    assert "src/parse.py" in digest.text


def test_a_fired_trigger_with_nothing_to_fold_still_keeps_the_window() -> None:
    mw = WindowBudgetMiddleware(
        _model(), context_window=4_000, trigger=("tokens", 1000), keep=("messages", 1)
    )
    update = mw.before_model({"messages": [HumanMessage("word " * 6000, id="h")]}, Runtime())  # type: ignore[arg-type]
    assert update is not None  # 30,000 characters do not fit a 4k window: shortened
    assert len(update["messages"][-1].text) < 30_000
    assert mw.last_result is not None
    assert mw.last_result.replaced[0].text == "word " * 6000  # the original, kept aside
