"""condense_messages, the engine and the LCEL transformer: pairing, identity, carry-over."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompt_values import ChatPromptValue
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from langchain_window_budget import (
    LangChainCondenser,
    WindowBudgetRunnable,
    acondense_messages,
    condense_messages,
    digest_record,
)
from langchain_window_budget._convert import usage_is_stale
from window_budget import BudgetPolicy
from window_budget.contract import Model
from window_budget.digest import SESSION_HEADER
from window_budget.errors import ConfigError, SummarizerError
from window_budget.pipeline import budget_limit
from window_budget.pipeline.summarize import CONDENSER_BRIEF

from .conftest import (
    DIGEST_REPLY,
    digest_model,
    provider_valid,
    request_tokens,
    snapshot,
    tool_loop,
)

SMALL = BudgetPolicy(keep_recent=1500, reserve_tokens=256)

LIMIT_4K = budget_limit(Model("m", 4000), BudgetPolicy.for_window(4000))
"""The default limit of a 4k window (the policy scales with the window)."""


def _engine(**kw: object) -> LangChainCondenser:
    return LangChainCondenser(
        digest_model(),
        context_window=kw.pop("window", 4000),  # type: ignore[arg-type]
        policy=kw.pop("policy", SMALL),
        **kw,
    )  # type: ignore[arg-type]


def _check_output(msgs: list[BaseMessage], out: list[BaseMessage]) -> None:
    assert provider_valid(out)
    ids = {id(m) for m in msgs}
    for m in out:
        if not digest_record(m):
            assert id(m) in ids  # the caller's own object, not a copy


# ----------------------------------------------------------------- identity


def test_under_budget_returns_the_same_list() -> None:
    msgs = tool_loop(2)
    assert condense_messages(msgs, model=digest_model(), context_window=100_000) is msgs


def test_kept_messages_are_the_callers_objects_and_input_untouched() -> None:
    msgs = [SystemMessage("be brief"), *tool_loop(30)]
    before = snapshot(msgs)
    copy = list(msgs)
    out = condense_messages(msgs, model=digest_model(), context_window=4000, policy=SMALL)
    assert out is not msgs
    assert msgs == copy
    assert all(a is b for a, b in zip(msgs, copy, strict=True))
    assert snapshot(msgs) == before
    assert out[0] is msgs[0]  # pinned system prompt
    assert out[1].text.startswith(SESSION_HEADER)
    assert all(m is msgs[len(msgs) - len(out) + 2 + i] for i, m in enumerate(out[2:]))
    _check_output(msgs, out)


def test_no_window_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="context_window"):
        condense_messages([HumanMessage("x")], model=digest_model())


def test_window_from_the_model_profile() -> None:
    model = GenericFakeChatModel(messages=iter([]), profile={"max_input_tokens": 12_345})
    assert LangChainCondenser(model).context_window == 12_345


# ------------------------------------------------------------------ pairing


def test_parallel_tool_calls_cut_between_their_results() -> None:
    msgs: list[BaseMessage] = []
    for i in range(12):
        msgs.append(HumanMessage(f"turn {i} " + "h" * 200))
        msgs.append(
            AIMessage(
                "",
                tool_calls=[
                    {"name": "a", "args": {}, "id": f"p{i}a", "type": "tool_call"},
                    {"name": "b", "args": {}, "id": f"p{i}b", "type": "tool_call"},
                    {"name": "c", "args": {}, "id": f"p{i}c", "type": "tool_call"},
                ],
            )
        )
        for x in "abc":
            msgs.append(ToolMessage("r" * 600, tool_call_id=f"p{i}{x}"))
    for keep in (300, 500, 700, 900, 1100, 1300):
        out = condense_messages(
            msgs,
            model=digest_model(),
            context_window=4000,
            policy=BudgetPolicy(keep_recent=keep, reserve_tokens=256),
        )
        _check_output(msgs, out)


def test_run_mixing_results_of_two_ai_messages() -> None:
    msgs: list[BaseMessage] = [*tool_loop(10)]
    msgs += [
        AIMessage("", tool_calls=[{"name": "x", "args": {}, "id": "m1", "type": "tool_call"}]),
        AIMessage("", tool_calls=[{"name": "y", "args": {}, "id": "m2", "type": "tool_call"}]),
        ToolMessage("r" * 900, tool_call_id="m1"),
        ToolMessage("r" * 900, tool_call_id="m2"),
        ToolMessage("r" * 900, tool_call_id="m1"),
        AIMessage("ok " * 100),
    ]
    for keep in range(200, 1600, 100):
        out = condense_messages(
            msgs,
            model=digest_model(),
            context_window=4000,
            policy=BudgetPolicy(keep_recent=keep, reserve_tokens=256),
        )
        _check_output(msgs, out)


def test_tool_call_without_result_and_leading_orphan() -> None:
    msgs: list[BaseMessage] = [ToolMessage("orphan " * 100, tool_call_id="gone"), *tool_loop(8)]
    msgs.insert(
        10,
        AIMessage(
            "", tool_calls=[{"name": "never", "args": {}, "id": "noresult", "type": "tool_call"}]
        ),
    )
    for keep in range(200, 1600, 150):
        out = condense_messages(
            msgs,
            model=digest_model(),
            context_window=3000,
            policy=BudgetPolicy(keep_recent=keep, reserve_tokens=256),
        )
        assert not isinstance(out[1], ToolMessage)
        _check_output(msgs, out)


def test_long_tool_loop_without_any_human_message() -> None:
    msgs = [SystemMessage("agent"), *tool_loop(60, human=False)]
    out = condense_messages(msgs, model=digest_model(), context_window=4000, policy=SMALL)
    assert len(out) > 3  # not collapsed to the system message alone
    assert out[1].text.startswith(SESSION_HEADER)
    _check_output(msgs, out)


@st.composite
def transcripts(draw: st.DrawFn) -> list[BaseMessage]:
    msgs: list[BaseMessage] = []
    pending: list[str] = []
    n = draw(st.integers(5, 60))
    for i in range(n):
        kind = draw(st.sampled_from(["human", "ai", "call", "result", "orphan"]))
        size = draw(st.integers(0, 1500))
        if kind == "human":
            msgs.append(HumanMessage("h" * size))
        elif kind == "ai":
            msgs.append(AIMessage("a" * size))
        elif kind == "call":
            k = draw(st.integers(1, 3))
            ids = [f"c{i}-{j}" for j in range(k)]
            pending += ids
            msgs.append(
                AIMessage(
                    "",
                    tool_calls=[
                        {"name": "t", "args": {}, "id": c, "type": "tool_call"} for c in ids
                    ],
                )
            )
        elif kind == "result" and pending:
            idx = draw(st.integers(0, len(pending) - 1))
            msgs.append(ToolMessage("r" * size, tool_call_id=pending.pop(idx)))
        else:
            msgs.append(ToolMessage("r" * size, tool_call_id=f"orphan{i}"))
    return msgs


@given(transcripts(), st.integers(100, 2000))
def test_output_is_always_provider_valid(msgs: list[BaseMessage], keep: int) -> None:
    before = snapshot(msgs)
    model = GenericFakeChatModel(messages=itertools.cycle([AIMessage(DIGEST_REPLY)]))
    out = condense_messages(
        msgs,
        model=model,
        context_window=6000,
        policy=BudgetPolicy(keep_recent=keep, reserve_tokens=256),
    )
    assert snapshot(msgs) == before
    if out is msgs:
        return
    if digest_record(out[0]) is None:  # no legal cut: oversized messages shortened in place
        assert len(out) == len(msgs)
        kept = list(out)
    else:
        # Orphans already at the head of the kept tail in the input are the only exception.
        assert not isinstance(out[1], ToolMessage)
        kept = out[1:]
    called: set[str] = set()
    for m in msgs[len(msgs) - len(kept) :]:
        if isinstance(m, AIMessage):
            called.update(str(c["id"]) for c in m.tool_calls)
    for m in kept:
        if isinstance(m, ToolMessage) and m.tool_call_id.startswith("c"):
            owner = next(
                x
                for x in msgs
                if isinstance(x, AIMessage) and any(c["id"] == m.tool_call_id for c in x.tool_calls)
            )
            assert any(o is owner for o in kept)


# ------------------------------------------------------- successive digests


def test_digest_carried_across_six_compactions() -> None:
    # Each reply states the objective: a reply with no key fact is rejected, not carried.
    objective = "question 0: " + "q" * 300
    replies = [f"# Objective\n{objective}\n\ndigest number {k}" for k in range(1, 20)]
    model = GenericFakeChatModel(messages=iter([AIMessage(r) for r in replies]))
    engine = LangChainCondenser(model, context_window=4000, policy=SMALL)
    history: list[BaseMessage] = [SystemMessage("rules")]
    seen = 0
    prompts: list[str] = []
    original = engine.condenser.deps.complete_sync
    assert original is not None

    def spy(m, context, options=None):  # type: ignore[no-untyped-def]
        prompts.append(context.messages[0].content)
        return original(m, context, options)

    engine.condenser.deps = engine.condenser.deps.__class__(
        **{
            **{
                f: getattr(engine.condenser.deps, f)
                for f in engine.condenser.deps.__dataclass_fields__
            },
            "complete_sync": spy,
        }
    )
    total = 0
    for round_ in range(6):
        new = tool_loop(12, start=round_ * 12)
        total += len(new)
        history = [*history, *new]
        first_call = len(prompts)
        prev_body = history[1].text.removeprefix(SESSION_HEADER).strip() if round_ else ""
        result = engine.run(history)
        assert result.changed
        history = list(result.messages)
        record = digest_record(history[1])
        assert record is not None
        assert record["compactions"] == round_ + 1
        seen += 1
        if round_ > 0:
            assert "<carried-digest>" in prompts[first_call]
            # The previous digest is carried: its own words (the audit may re-pin around them).
            assert prev_body.split("\n\n# Pinned facts")[0] in prompts[first_call]
        assert record["covered"] + record["kept"] == total
    assert seen == 6
    assert sum(1 for m in history if digest_record(m)) == 1


# ------------------------------------------------------ failing summarizer


class _Boom(GenericFakeChatModel):
    def _generate(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("provider down")


def test_raising_summarizer_falls_back_and_keeps_history() -> None:
    msgs = tool_loop(30)
    before = snapshot(msgs)
    engine = LangChainCondenser(_Boom(messages=iter([])), context_window=4000, policy=SMALL)
    result = engine.run(msgs)
    assert snapshot(msgs) == before
    assert result.digest is not None
    assert digest_record(result.digest)["fallback"] is True  # type: ignore[index]
    assert result.digest.text.startswith(SESSION_HEADER)
    assert len(result.dropped) + len(result.messages) - 1 == len(msgs)  # nothing lost


def test_raising_summarizer_propagates_when_asked() -> None:
    msgs = tool_loop(30)
    before = snapshot(msgs)
    policy = BudgetPolicy(keep_recent=1500, reserve_tokens=256, on_summarizer_error="raise")
    with pytest.raises(SummarizerError):
        condense_messages(msgs, model=_Boom(messages=iter([])), context_window=4000, policy=policy)
    assert snapshot(msgs) == before


# ------------------------------------------------------------------- LCEL


def test_runnable_invoke_ainvoke_batch_identity() -> None:
    runnable = condense_messages(model=digest_model(), context_window=4000, policy=SMALL)
    assert isinstance(runnable, WindowBudgetRunnable)
    small = tool_loop(1)
    big = tool_loop(30)
    assert runnable.invoke(small) is small
    assert asyncio.run(runnable.ainvoke(small)) is small
    outs = runnable.batch([small, big])
    assert outs[0] is small
    assert outs[1] is not big
    assert outs[1][0].text.startswith(SESSION_HEADER)
    _check_output(big, outs[1])


async def test_acondense_messages() -> None:
    msgs = tool_loop(30)
    out = await acondense_messages(msgs, model=digest_model(), context_window=4000, policy=SMALL)
    assert out[0].text.startswith(SESSION_HEADER)
    _check_output(msgs, list(out))


def test_prompt_pipe_condenser_pipe_model() -> None:
    seen: list[list[BaseMessage]] = []

    class Echo(GenericFakeChatModel):
        def _generate(self, messages, *args, **kwargs):  # type: ignore[no-untyped-def]
            seen.append(messages)
            return super()._generate(messages, *args, **kwargs)

    prompt = ChatPromptTemplate.from_messages(
        [("system", "you help"), MessagesPlaceholder("history"), ("human", "{input}")]
    )
    condenser = condense_messages(model=digest_model(), context_window=4000, policy=SMALL)
    chain = prompt | condenser | Echo(messages=itertools.cycle([AIMessage("hi")]))
    chain.invoke({"history": tool_loop(30), "input": "next?"})
    sent = seen[-1]
    assert isinstance(sent[0], SystemMessage)
    assert sent[1].text.startswith(SESSION_HEADER)
    assert sent[-1].text == "next?"
    # Under budget the prompt value passes through untouched.
    value = prompt.invoke({"history": [], "input": "x"})
    assert condenser.invoke(value) is value
    assert isinstance(
        condenser.invoke(prompt.invoke({"history": tool_loop(30), "input": "x"})), ChatPromptValue
    )


def test_oversized_tail_message_is_a_shortened_copy() -> None:
    msgs: list[BaseMessage] = [*tool_loop(10)]
    msgs += [
        AIMessage("", tool_calls=[{"name": "cat", "args": {}, "id": "big", "type": "tool_call"}]),
        ToolMessage("B" * 40_000, tool_call_id="big", id="bigresult"),
    ]
    before = snapshot(msgs)
    out = condense_messages(msgs, model=digest_model(), context_window=6000, policy=SMALL)
    assert snapshot(msgs) == before
    last = out[-1]
    assert isinstance(last, ToolMessage)
    assert last is not msgs[-1]
    assert last.tool_call_id == "big"
    assert last.id == "bigresult"
    assert "removed by window-budget" in last.text
    assert provider_valid(out)


def test_tiktoken_counter() -> None:
    msgs = tool_loop(30)
    out = condense_messages(
        msgs, model=digest_model(), context_window=4000, policy=SMALL, counter="tiktoken"
    )
    assert out[0].text.startswith(SESSION_HEADER)


def test_import_error_names_the_extra() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['langchain_core'] = None\n"
        "try:\n    import langchain_window_budget\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert 'pip install "window-budget[langchain]"' in out


# ------------------------------------------------------- review regressions


class _UsageModel(BaseChatModel):
    """Answers like a provider: reports the request's input tokens, records each size."""

    sizes: list[int] = []  # noqa: RUF012 - a pydantic field; pydantic copies defaults

    @property
    def _llm_type(self) -> str:
        return "usage-reporting"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        if messages[0].text == CONDENSER_BRIEF:
            return ChatResult(generations=[ChatGeneration(message=AIMessage("# Objective\nx"))])
        n = request_tokens(messages)
        self.sizes.append(n)
        usage = {"input_tokens": n, "output_tokens": 230, "total_tokens": n + 230}
        return ChatResult(
            generations=[
                ChatGeneration(message=AIMessage("answer " + "a" * 800, usage_metadata=usage))
            ]
        )  # type: ignore[arg-type]


def _lcel_chain(model: _UsageModel, window: int) -> Any:
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are terse."), MessagesPlaceholder("history"), ("human", "{input}")]
    )
    return prompt | condense_messages(model=model, context_window=window) | model


def test_lcel_transformer_never_anchors_on_replies_to_condensed_requests() -> None:
    # Review bug 1: the transformer does not store its result, so each reply's usage
    # measured a condensed list; anchoring on it let the next request grow unchecked.
    model = _UsageModel(sizes=[])
    chain = _lcel_chain(model, 4000)
    history: list[BaseMessage] = []
    for i in range(40):
        question = f"question {i} " + "q" * 800
        reply = chain.invoke({"history": history, "input": question})
        history += [HumanMessage(question), reply]
    assert len(model.sizes) == 40
    assert max(model.sizes) <= LIMIT_4K + 50


async def test_lcel_transformer_never_anchors_async() -> None:
    model = _UsageModel(sizes=[])
    chain = _lcel_chain(model, 4000)
    history: list[BaseMessage] = []
    for i in range(20):
        question = f"question {i} " + "q" * 800
        reply = await chain.ainvoke({"history": history, "input": question})
        history += [HumanMessage(question), reply]
    assert max(model.sizes) <= LIMIT_4K + 50


def _trim_transcript() -> list[BaseMessage]:
    msgs: list[BaseMessage] = []
    n = 0
    for i in range(6):
        n += 700
        usage = {"input_tokens": n, "output_tokens": 290, "total_tokens": n + 290}
        msgs += [
            HumanMessage(f"q{i} " + "x" * 1000),
            AIMessage(f"a{i} " + "y" * 1000, usage_metadata=usage),
        ]  # type: ignore[arg-type]
    return msgs


def test_second_run_on_a_trimmed_result_is_a_no_op() -> None:
    # Review bug 2: the kept replies' usage measured the untrimmed list.
    trim = BudgetPolicy(strategy="trim")
    first = LangChainCondenser(None, context_window=6000, policy=trim).run(_trim_transcript())
    assert first.core.reason == "trimmed"
    kept_ai = [m for m in first.messages if isinstance(m, AIMessage)]
    assert kept_ai
    assert all(usage_is_stale(m) for m in kept_ai)
    assert all(m.usage_metadata for m in kept_ai)  # kept for cost accounting
    again = LangChainCondenser(None, context_window=6000, policy=trim).run(first.messages)
    assert again.messages is first.messages
    assert not again.changed


def test_summarizer_window_sizes_the_summary_requests() -> None:
    # Review bug 3: a small summarizer got the whole head in one request and failed.
    class Small(BaseChatModel):
        sizes: list[int] = []  # noqa: RUF012

        @property
        def _llm_type(self) -> str:
            return "small"

        def _generate(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: Any = None,
            **kwargs: Any,
        ) -> ChatResult:
            n = request_tokens(messages)
            self.sizes.append(n)
            if n > 8000:
                raise ValueError(f"context_length_exceeded: {n} > 8000")
            # The digest states the user's first words (the objective).
            reply = AIMessage("# Objective\nu0 " + "x" * 1000)
            return ChatResult(generations=[ChatGeneration(message=reply)])

    small = Small(sizes=[], profile={"max_input_tokens": 8000})
    engine = LangChainCondenser(None, context_window=100_000, summarizer=small)
    result = engine.run([HumanMessage(f"u{i} " + "x" * 1000) for i in range(400)])
    assert result.digest is not None
    assert digest_record(result.digest)["fallback"] is False  # type: ignore[index]
    assert len(small.sizes) > 1
    assert max(small.sizes) <= 8000


def test_dicts_tuples_and_strings_are_converted() -> None:
    # Review bug 8: non-message inputs were billed as opaque JSON and passed through raw.
    raw: list[Any] = []
    for i in range(30):
        raw += [
            ("user", f"question {i}: " + "q" * 400),
            {"role": "assistant", "content": f"answer {i}: " + "a" * 400},
        ]
    raw.append("the last word")
    engine = LangChainCondenser(
        digest_model(), context_window=4000, policy=BudgetPolicy(keep_recent=800)
    )
    result = engine.run(raw)
    assert result.changed
    assert all(isinstance(m, BaseMessage) for m in result.messages)
    assert isinstance(result.messages[-1], HumanMessage)
    assert result.messages[-1].text == "the last word"
    assert all(isinstance(m, BaseMessage) for m in result.dropped)
    with pytest.raises(TypeError, match="list of messages"):
        engine.run("just a string")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cannot read these messages"):
        engine.run([{"no": "role"}])
    assert condense_messages([("user", "hi")], context_window=8000) == [("user", "hi")]


def test_lcel_transformer_counts_every_message_even_with_plausible_usage() -> None:
    # A reply's usage that looks plausible (within the core's sanity bounds) but measured
    # a condensed request must still not let an over-limit input through.
    history: list[BaseMessage] = []
    for i in range(12):
        history += [HumanMessage(f"q{i} " + "q" * 420), AIMessage(f"a{i} " + "a" * 420)]
    engine = LangChainCondenser(None, context_window=4000)
    full = engine.count_messages(history)
    assert full > LIMIT_4K
    usage = {"input_tokens": int(full * 0.7), "output_tokens": 0, "total_tokens": int(full * 0.7)}
    history[-1] = AIMessage(history[-1].content, usage_metadata=usage)  # type: ignore[arg-type]
    history.append(HumanMessage("go"))
    assert engine.estimate(history) < LIMIT_4K  # anchored: looks under budget
    transformer = condense_messages(model=digest_model(), context_window=4000)
    assert transformer.engine.use_usage is False
    assert transformer.invoke(history) is not history


def test_a_digest_deeper_in_the_head_is_counted_as_what_it_covered() -> None:
    from langchain_window_budget._digest import build_digest, digest_record

    older = build_digest("older digest", covered=10, kept=0, compactions=2, fallback=True)
    deeper = build_digest("written elsewhere", covered=5, kept=0, compactions=3, fallback=True)
    body = [HumanMessage(f"question {i} " + "q" * 400) for i in range(30)]
    thread = [older, *body[:4], deeper, *body[4:]]
    engine = LangChainCondenser(context_window=8_000, policy=BudgetPolicy(keep_recent=800))
    out = engine.run(thread, force=True)
    assert out.digest is not None
    assert deeper in out.dropped
    record = digest_record(out.digest)
    assert record is not None
    plain = sum(1 for m in out.dropped if digest_record(m) is None)
    assert record["covered"] == 10 + 5 + plain
    assert record["compactions"] == 4
