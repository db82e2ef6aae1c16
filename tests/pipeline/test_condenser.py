from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies import transcripts
from window_budget import (
    AgentMessage,
    AssistantMessage,
    BudgetError,
    BudgetPolicy,
    ImageBlock,
    Model,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    Usage,
    UserMessage,
    create_condenser,
    estimate_tokens,
)
from window_budget.cancel import CancelledByToken, CancelToken
from window_budget.contract import CondenserDeps
from window_budget.digest import SESSION_HEADER, is_digest
from window_budget.errors import MessageError, SummarizerError
from window_budget.messages import ProviderCompactionBlock, message_from_dict, message_text
from window_budget.pipeline import (
    DEFAULT_POLICY,
    budget_limit,
    estimate_context,
    is_masked,
    shorten_message,
)
from window_budget.testing import ScriptedCompleter

WINDOW = Model("m", 32_768)


def long_session(turns: int = 60, size: int = 1900) -> list:
    # Outputs under the default mask_min_chars: these tests are about folding, not masking.
    msgs: list = []
    for i in range(turns):
        msgs.append(UserMessage(f"step {i}: please continue"))
        msgs.append(
            AssistantMessage(
                [TextBlock("running"), ToolCallBlock(f"c{i}", "bash", {"command": f"make {i}"})]
            )
        )
        msgs.append(ToolResultMessage(f"c{i}", "bash", "x" * size, is_error=i % 5 == 0))
    return msgs


def test_default_policy_is_the_seeds() -> None:
    assert BudgetPolicy(trigger_ratio=0.75, keep_recent=6000, reserve_tokens=2048) == DEFAULT_POLICY
    assert BudgetPolicy() == DEFAULT_POLICY  # one set of defaults, the dataclass's own


async def test_identity_no_op_without_a_model() -> None:
    condenser = create_condenser(CondenserDeps())
    msgs = long_session()
    assert await condenser(msgs) is msgs
    assert condenser.sync(msgs) is msgs
    assert (await condenser.run(msgs)).reason == "no-model"


async def test_identity_no_op_under_budget() -> None:
    condenser = create_condenser(model=WINDOW)
    msgs = long_session(turns=2)
    assert await condenser(msgs) is msgs
    result = condenser.run_sync(msgs)
    assert result.reason == "under-budget"
    assert not result.changed


async def test_identity_no_op_when_nothing_is_condensable() -> None:
    # One tool group holding everything: no legal cut.
    msgs = [
        AssistantMessage([ToolCallBlock("a", "t", {}), ToolCallBlock("b", "t", {})]),
        ToolResultMessage("a", "t", "x" * 100),
        ToolResultMessage("b", "t", "y" * 100),
    ]
    condenser = create_condenser(
        model=Model("m", 300), policy=BudgetPolicy(reserve_tokens=0, keep_recent=10)
    )
    out = await condenser(msgs)
    assert out is msgs


async def test_stub_completer_produces_digest_then_tail() -> None:
    fake = ScriptedCompleter(["# Objective\nstep 0: please continue, port budgeting"])
    condenser = create_condenser(
        CondenserDeps(
            complete=fake,
            model=WINDOW,
            policy=DEFAULT_POLICY,
            summarizer_model=Model("big", 200_000),
        )
    )
    msgs = long_session()
    out = await condenser(msgs)
    assert out is not msgs
    digest, *tail = out
    assert digest.role == "user"
    assert digest.content.startswith(SESSION_HEADER)
    assert "port budgeting" in digest.content
    n = len(tail)
    assert all(a is b for a, b in zip(tail, msgs[-n:], strict=True))
    assert estimate_tokens(out) <= budget_limit(WINDOW, DEFAULT_POLICY)
    assert len(fake.calls) == 1


async def test_sync_and_async_agree() -> None:
    msgs = long_session()
    a = await create_condenser(model=WINDOW).run(msgs)
    b = create_condenser(model=WINDOW).run_sync(msgs)
    assert a.messages == b.messages
    assert a.plan == b.plan


def test_dropped_plus_kept_is_the_input_and_the_input_is_untouched() -> None:
    msgs = long_session()
    snapshot = list(msgs)
    result = create_condenser(model=WINDOW).run_sync(msgs)
    assert msgs == snapshot
    assert list(result.plan.dropped) + list(result.plan.kept) == msgs
    assert result.summary is not None
    assert result.summary.covered_count == len(result.plan.dropped)


def test_pinned_system_prompt_is_counted_and_too_big_one_is_a_budget_error() -> None:
    msgs = long_session(turns=3)
    condenser = create_condenser(model=WINDOW)
    assert condenser.run_sync(msgs).reason == "under-budget"
    assert condenser.run_sync(msgs, pinned_tokens=22_000).reason == "condensed"
    with pytest.raises(BudgetError, match=r"system prompt\) need 40,000 tokens.*window"):
        condenser.run_sync(msgs, pinned_tokens=40_000)


def test_oversized_newest_message_is_shortened_with_a_marker() -> None:
    msgs = [
        UserMessage("hello " * 500),
        AssistantMessage([ToolCallBlock("c", "read", {})]),
        ToolResultMessage("c", "read", "HEAD" + "z" * 200_000 + "TAIL"),
    ]
    result = create_condenser(model=WINDOW).run_sync(msgs)
    assert result.shortened == (2,)
    shortened = result.messages[2]
    assert isinstance(shortened, ToolResultMessage)
    assert shortened.tool_call_id == "c"
    assert "removed by window-budget" in shortened.content
    assert shortened.content.startswith("HEAD")
    assert shortened.content.endswith("TAIL")
    assert result.tokens_after <= result.limit
    assert result.messages[1] is msgs[1]


def test_images_in_the_tail_become_placeholders_when_they_cannot_fit() -> None:
    msgs = [
        UserMessage("old " * 5000),
        UserMessage([TextBlock("look"), *[ImageBlock("AA") for _ in range(40)]]),
    ]
    result = create_condenser(model=WINDOW).run_sync(msgs)
    assert result.tokens_after <= result.limit
    assert "removed by window-budget" in str(result.messages[-1].content)


def test_force_compaction_keeps_only_the_last_user_turn() -> None:
    msgs = long_session(turns=3, size=10)
    result = create_condenser().run_sync(msgs, force=True)
    assert result.reason == "forced"
    assert result.messages[1] is msgs[-3]
    assert len(result.messages) == 4


def test_turn_policy_keeps_n_turns_when_they_fit() -> None:
    msgs = long_session()  # each turn: the user's step, a tool call, its result
    result = create_condenser(model=WINDOW, policy=BudgetPolicy.turns(6)).run_sync(msgs)
    assert len(result.messages) == 1 + 6 * 3
    assert result.messages[1] is msgs[-18]


def test_anchored_usage_drives_the_gate() -> None:
    msgs = [
        UserMessage("hi"),
        AssistantMessage("ok", usage=Usage(30_000, 10), model="m"),
        UserMessage("and?"),
    ]
    result = create_condenser(model=WINDOW).run_sync(msgs)
    assert result.tokens_before > 30_000
    assert result.reason == "condensed"


# Each generation's digest states the latest ask in a line of its own (a line copied from
# the carried digest does not count as found: a reply of nothing else is a failed summary).
OBJECTIVE = "# Objective\nstep 0: please continue"
ASK = "step 44: please continue"


def test_six_successive_compactions_carry_the_digest() -> None:
    fake = ScriptedCompleter(
        [lambda ctx, i=i: f"{OBJECTIVE}\n# Status\ngeneration {i}: {ASK}" for i in range(6)]
    )
    condenser = create_condenser(
        model=WINDOW, complete_sync=fake.sync, summarizer_model=Model("big", 200_000)
    )
    history: list = []
    for _ in range(6):
        history = history + long_session(turns=45)
        history = condenser.sync(history)
        assert is_digest(history[0])
        assert sum(is_digest(m) for m in history) == 1
    assert len(fake.calls) == 6
    for i, call in enumerate(fake.calls[1:]):
        # The model's last digest, then the key facts the audit pinned back into it.
        digest = f"{OBJECTIVE}\n# Status\ngeneration {i}: {ASK}\n\n# Pinned facts\n"
        assert f"<carried-digest>\n{digest}" in call.prompt


def test_failing_summarizer_keeps_every_message_or_raises_cleanly() -> None:
    msgs = long_session()
    snapshot = list(msgs)
    fake = ScriptedCompleter([RuntimeError("503")])
    result = create_condenser(model=WINDOW, complete_sync=fake.sync).run_sync(msgs)
    assert result.summary is not None
    assert result.summary.fallback
    assert "503" in (result.summary.fallback_reason or "")
    assert list(result.plan.dropped) + list(result.plan.kept) == snapshot
    failing = ScriptedCompleter([RuntimeError("x")])
    strict = create_condenser(
        model=WINDOW, complete_sync=failing.sync, policy=BudgetPolicy(on_summarizer_error="raise")
    )
    with pytest.raises(SummarizerError):
        strict.run_sync(msgs)
    assert msgs == snapshot


async def test_cancellation_leaves_the_input_intact() -> None:
    token = CancelToken()
    token.cancel()
    msgs = long_session()
    snapshot = list(msgs)
    condenser = create_condenser(model=WINDOW, complete=ScriptedCompleter(["x"]), signal=token)
    with pytest.raises(CancelledByToken):
        await condenser(msgs)
    assert msgs == snapshot


def test_regating_after_an_append_estimates_one_message() -> None:
    condenser = create_condenser(model=Model("m", 10_000_000))
    msgs = long_session(turns=300, size=50)
    condenser.run_sync(msgs)
    before = condenser.estimated
    msgs.append(UserMessage("one more"))
    condenser.run_sync(msgs)
    assert condenser.estimated == before + 1


failing = st.sampled_from(
    [
        RuntimeError("boom"),
        TimeoutError("slow"),
        ValueError("bad json"),
        "",
        "   ",
        AssistantMessage([ToolCallBlock("z", "q", {})]),
        "# Objective\nfine",
    ]
)


@pytest.mark.slow
@given(
    transcripts(max_groups=40),
    st.integers(2_000, 60_000),
    st.integers(0, 4000),
    st.integers(0, 8_000),
    failing,
)
def test_result_fits_or_budget_error_and_nothing_is_lost(
    msgs: list, window: int, reserve: int, keep: int, reply: object
) -> None:
    model = Model("m", window)
    policy = BudgetPolicy(reserve_tokens=reserve, keep_recent=keep)
    fake = ScriptedCompleter([reply])  # type: ignore[list-item]
    condenser = create_condenser(model=model, policy=policy, complete_sync=fake.sync)
    snapshot = list(msgs)
    try:
        result = condenser.run_sync(msgs)
    except BudgetError:
        assert msgs == snapshot
        return
    assert msgs == snapshot
    limit = budget_limit(model, policy)
    plan = result.plan
    if result.reason == "masked":  # same length, placeholders in place, originals dropped
        assert result.tokens_after <= limit
        assert len(result.messages) == len(msgs)
        assert result.summary is None
        assert list(plan.dropped) == [msgs[i] for i in result.masked]
        for i, (out, src) in enumerate(zip(result.messages, msgs, strict=True)):
            if i in result.masked:
                assert is_masked(out)
                assert out.tool_call_id == src.tool_call_id
            else:  # the usage a reply reported measured the unmasked transcript
                assert out == (
                    replace(src, usage=None) if isinstance(src, AssistantMessage) else src
                )
        return
    assert list(plan.dropped) + list(plan.kept) == msgs
    if result.messages is msgs:
        assert result.reason in ("under-budget", "nothing-condensable")
        return
    assert result.tokens_after <= limit
    assert estimate_tokens(result.messages) <= limit
    if result.reason == "shortened":  # no legal cut: the messages themselves were cut down
        tail, offset = list(result.messages), 0
    else:
        digest, *tail = result.messages
        assert is_digest(digest)
        offset = 1
    assert len(tail) == len(plan.kept)
    for i, (out, src) in enumerate(zip(tail, plan.kept, strict=True), start=offset):
        if i not in result.shortened:
            assert out is src
        else:
            assert type(out) is type(src)
    assert not isinstance(plan.kept[0], ToolResultMessage) if plan.kept else True


def test_async_condenser_is_usable_as_a_plain_callable() -> None:
    condenser = create_condenser(model=WINDOW)
    out = asyncio.run(condenser(long_session()))
    assert is_digest(out[0])


@pytest.mark.parametrize("bad", ["just a string", {"content": "no role"}, 42, None])
def test_a_non_message_is_a_clear_error_and_loses_nothing(bad: object) -> None:
    msgs = [*long_session(), bad]
    snapshot = list(msgs)
    condenser = create_condenser(model=WINDOW)
    with pytest.raises(MessageError, match=r"message 180 is a \w+ with no string 'role'"):
        condenser.run_sync(msgs)
    assert msgs == snapshot
    msgs.pop()
    assert condenser.run_sync(msgs).reason == "condensed"


def test_usage_on_turns_kept_with_a_digest_does_not_anchor_the_next_check() -> None:
    # Every assistant turn reports the (large) context it saw before the compaction.
    msgs: list = []
    for i in range(80):
        msgs.append(UserMessage(f"step {i} " + "u" * 600))
        msgs.append(AssistantMessage("a" * 600, usage=Usage(400 * (i + 1), 50), model="m"))
    condenser = create_condenser(model=WINDOW)
    out = condenser.sync(msgs)
    assert is_digest(out[0])
    assert out[0].kept_count == len(out) - 1
    # The kept turns still carry pre-compaction figures; they must not re-trigger compaction.
    again = condenser.run_sync(out)
    assert again.reason == "under-budget"
    assert again.messages is out
    fresh = create_condenser(model=WINDOW).run_sync(out)
    assert fresh.reason == "under-budget"
    # A new turn after the digest is trusted again.
    grown = [*out, UserMessage("next"), AssistantMessage("ok", usage=Usage(30_000, 10), model="m")]
    assert condenser.run_sync(grown).reason == "condensed"


def test_counter_given_by_name_or_function_is_resolved() -> None:
    huge = [UserMessage("x" * 400_000), UserMessage("tail")]
    by_name = create_condenser(model=Model("m", 8192), counter="heuristic").run_sync(huge)
    assert by_name.tokens_before > 100_000
    by_fn = create_condenser(model=Model("m", 8192), counter=len).run_sync(huge)
    assert by_fn.tokens_before > 400_000
    with pytest.raises(TypeError, match="is a string"):
        estimate_tokens(huge, "tiktoken")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "msgs",
    [
        [UserMessage("z" * 200_000)],
        [
            AssistantMessage([ToolCallBlock("a", "b", {})]),
            ToolResultMessage("a", "b", "z" * 200_000),
        ],
        [UserMessage([ImageBlock("xx")] * 10)],
    ],
)
def test_no_legal_cut_but_over_budget_shortens_or_raises(msgs: list) -> None:
    model = Model("m", 8192)
    result = create_condenser(model=model).run_sync(msgs)
    assert result.reason == "shortened"
    assert result.tokens_after <= result.limit
    assert estimate_tokens(result.messages) <= result.limit
    assert result.shortened
    assert result.plan.kept == tuple(msgs)


def test_a_small_window_compacts_with_headroom_not_every_turn() -> None:
    model = Model("m", 8192)
    fake = ScriptedCompleter()
    condenser = create_condenser(model=model, complete_sync=fake.sync)
    history: list = []
    compactions = 0
    for i in range(200):
        fake.enqueue("# Objective\n" + "word " * 600)  # a digest that fills its budget
        history = [*history, UserMessage(f"turn {i} " + "q" * 300), AssistantMessage("a" * 300)]
        result = condenser.run_sync(history)
        if result.summary is not None:
            compactions += 1
            assert result.tokens_after < 0.75 * result.limit
        history = list(result.messages)
    assert compactions <= 30


def test_a_reserve_larger_than_the_window_is_named_as_the_cause() -> None:
    with pytest.raises(BudgetError, match="lower reserve_tokens"):
        create_condenser(model=Model("m", 2048)).run_sync([UserMessage("hi " * 100)])


def test_negative_pinned_tokens_are_rejected() -> None:
    with pytest.raises(ValueError, match="pinned_tokens"):
        create_condenser(model=WINDOW).run_sync([], pinned_tokens=-5)


def test_a_trimmed_transcript_is_not_trimmed_again_by_stale_usage() -> None:
    msgs: list = []
    for i in range(12):
        msgs.append(UserMessage(f"q{i} " + "u" * 700))
        msgs.append(AssistantMessage("a" * 700, usage=Usage(450 * (i + 1), 20), model="m"))
    condenser = create_condenser(model=Model("m", 8192), policy=BudgetPolicy(strategy="trim"))
    first = condenser.run_sync(msgs)
    assert first.reason == "trimmed"
    assert all(getattr(m, "usage", None) is None for m in first.messages)
    again = create_condenser(model=Model("m", 8192), policy=BudgetPolicy(strategy="trim")).run_sync(
        list(first.messages)
    )
    assert again.reason == "under-budget"


def test_an_implausibly_small_usage_figure_does_not_anchor() -> None:
    # The figure measured a condensed request, not this (much longer) transcript.
    msgs = [UserMessage("x" * 3600) for _ in range(40)]
    msgs.append(AssistantMessage("ok", usage=Usage(900, 10), model="m"))
    result = create_condenser(model=WINDOW).run_sync(msgs)
    assert result.tokens_before > 40_000
    assert result.reason == "condensed"


def test_a_dated_model_alias_still_anchors() -> None:
    msgs = [
        UserMessage("x" * 36_000),
        AssistantMessage("ok", usage=Usage(9_000, 10), model="gpt-4o-2024-08-06"),
    ]
    est = estimate_context(msgs, Model("gpt-4o", 128_000))
    assert est.anchored
    assert not estimate_context(msgs, Model("claude-x", 128_000)).anchored


def test_shortening_cuts_the_longest_block_and_never_nests_markers() -> None:
    msgs = [
        UserMessage("a" * 5000),
        AssistantMessage("b" * 5000),
        UserMessage([TextBlock("Please fix bug #42"), TextBlock("z" * 100_000)]),
    ]
    result = create_condenser(model=Model("m", 8000)).run_sync(msgs)
    last = result.messages[-1]
    assert isinstance(last, UserMessage)
    assert last.content[0] == TextBlock("Please fix bug #42")
    assert str(last.content).count("removed by window-budget") == 1
    assert result.tokens_after <= result.limit


def test_signed_thinking_survives_shortening_untouched() -> None:
    signed = ThinkingBlock("reasoning " * 50, signature="sig-abc")
    msg = AssistantMessage([signed, TextBlock("answer " * 5000)])
    short = shorten_message(msg, 600)
    assert isinstance(short, AssistantMessage)
    assert short.content[0] is signed
    assert "removed by window-budget" in short.content[1].text


def test_fitting_the_tail_shares_the_cut_instead_of_emptying_one_message() -> None:
    msgs = [
        UserMessage("start"),
        AssistantMessage("ok"),
        UserMessage("go"),
        AssistantMessage(
            [
                ThinkingBlock("reasoning " * 600),
                TextBlock("I will call f."),
                ToolCallBlock("c1", "f", {}),
            ]
        ),
        ToolResultMessage("c1", "f", "result line\n" * 1000),
    ]
    model = Model("m", 2000)
    result = create_condenser(model=model, policy=BudgetPolicy(reserve_tokens=0)).run_sync(msgs)
    assert result.tokens_after <= result.limit
    tool = result.messages[-1]
    call = result.messages[-2]
    assert isinstance(tool, ToolResultMessage)
    assert isinstance(call, AssistantMessage)
    assert len(tool.content) > 400
    assert len(call.content[0].thinking) > 400
    assert call.tool_calls == msgs[3].tool_calls


def test_check_window_refuses_a_window_the_reserve_eats() -> None:
    from window_budget.errors import ConfigError
    from window_budget.pipeline import check_window

    with pytest.raises(ConfigError, match=r"context_window=1,000 .* reserve_tokens=2,048"):
        check_window(1000, BudgetPolicy())
    check_window(1000, BudgetPolicy.for_window(1000))  # the scaled default fits
    check_window(2400, BudgetPolicy())


# ------------------------------------------------- the original of a shortened message


def _overflowing() -> tuple[list[AssistantMessage | UserMessage], str]:
    big = "BIG " + " ".join(f"b{i}" for i in range(3000))  # the newest turn: over the window
    history: list[AssistantMessage | UserMessage] = []
    for i in range(6):
        history += [UserMessage(f"q{i} " + "w " * 200), AssistantMessage(content=f"a{i}")]
    return [*history, UserMessage(big)], big


def _filed(condenser: object) -> list[str]:
    store = condenser.deps.memory  # type: ignore[attr-defined]
    name = condenser.deps.conversation  # type: ignore[attr-defined]
    return [message_text(message_from_dict(dict(o))) for _, o in store.originals(name)]


@pytest.mark.parametrize("how", ["sync", "await"])
def test_transcript_out_files_the_original_of_a_message_it_shortened(how: str) -> None:
    history, big = _overflowing()
    condenser = create_condenser(model=Model("m", 4000))
    out = condenser.sync(history) if how == "sync" else asyncio.run(condenser(history))
    assert big not in [message_text(m) for m in out]  # kept, shortened
    assert big in _filed(condenser)  # `history = condenser.sync(history)` loses nothing


def test_the_account_leaves_filing_to_the_caller() -> None:
    history, big = _overflowing()
    condenser = create_condenser(model=Model("m", 4000))
    result = condenser.run_sync(history)
    assert result.shortened
    assert big not in _filed(condenser)  # run() callers store what they choose


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=transcripts(max_groups=12),
    paste=st.integers(2_000, 12_000),
    boundary=st.one_of(st.none(), st.integers(0, 30)),
)
def test_what_is_filed_is_the_originals_of_what_was_shortened(
    history: list[AgentMessage], paste: int, boundary: int | None
) -> None:
    history = [*history, UserMessage("paste: " + "p " * paste)]
    if boundary is not None:  # a provider's compaction: the condenser runs past it
        block = ProviderCompactionBlock.from_provider(
            {"type": "compaction", "content": "Earlier turns, condensed.", "signature": "c2ln"}
        )
        assert block is not None
        at = min(boundary, len(history) - 1)
        reply = AssistantMessage([block, TextBlock("Continuing.")])
        history = [*history[:at], UserMessage("go on"), reply, *history[at:]]
    condenser = create_condenser(model=Model("m", 6000), policy=BudgetPolicy(keep_recent=800))
    try:
        result = condenser.run_sync(history)
    except BudgetError:
        return
    before = len(_filed(condenser))
    condenser.archive_shortened(result, None)
    filed = _filed(condenser)[before:]
    assert len(filed) == len(result.shortened)
    inputs = [message_text(m) for m in history]
    outputs = [message_text(m) for m in result.messages]
    for text in filed:
        assert text in inputs  # an original the caller gave
        assert text not in outputs  # and the output holds it only shortened
