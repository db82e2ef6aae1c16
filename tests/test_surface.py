"""The public names the other test modules only reach indirectly, exercised directly."""

from __future__ import annotations

from window_budget import (
    AssistantMessage,
    CondenseResult,
    ImageBlock,
    Model,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    Usage,
    UserMessage,
    create_condenser,
)
from window_budget.budget import HeuristicCounter, estimate_message_tokens
from window_budget.contract import SyncCompleteFn, TokenCounter
from window_budget.digest import SESSION_HEADER, digest_body
from window_budget.pipeline import (
    CondenseDecision,
    TrimResult,
    WindowCondenser,
    condense_sync,
    shorten_message,
    trim_by_category,
)
from window_budget.testing import ScriptedCompleter
from window_budget.tools.meter import parse_usage
from window_budget.tools.scratch import ScratchModel, StateChange


def test_condense_sync_writes_a_session_digest() -> None:
    summary = condense_sync([UserMessage("keep the API stable")])
    assert summary.text.startswith(SESSION_HEADER)
    assert digest_body(summary.message) == summary.text[len(SESSION_HEADER) :].strip()
    assert digest_body(UserMessage("not a digest")) is None


def test_shorten_message_keeps_ids_and_marks_the_cut() -> None:
    msg = ToolResultMessage("call-1", "read", "A" * 10_000 + "Z")
    short = shorten_message(msg, 200)
    assert isinstance(short, ToolResultMessage)
    assert short.tool_call_id == "call-1"
    assert estimate_message_tokens(short) <= 200
    assert "removed by window-budget" in short.content
    assert shorten_message(msg, 10_000) is msg
    call = AssistantMessage([TextBlock("t" * 5000), ToolCallBlock("c", "edit", {"path": "a.py"})])
    cut = shorten_message(call, 300)
    assert isinstance(cut, AssistantMessage)
    assert cut.tool_calls == call.tool_calls
    pictures = UserMessage([ImageBlock("AA"), TextBlock("see")])
    assert "removed" in str(shorten_message(pictures, 50).content)


def test_protocols_are_runtime_checkable() -> None:
    assert isinstance(HeuristicCounter(), TokenCounter)
    assert isinstance(ScriptedCompleter().sync, SyncCompleteFn)


def test_decide_and_run_return_their_records() -> None:
    condenser = create_condenser(model=Model("m", 4_000))
    assert isinstance(condenser, WindowCondenser)
    msgs = [UserMessage("x" * 4000) for _ in range(10)]
    decision = condenser.decide(msgs)
    assert isinstance(decision, CondenseDecision)
    assert decision.result is None
    assert decision.plan.cut > 0
    result = condenser.run_sync(msgs)
    assert isinstance(result, CondenseResult)
    assert result.changed
    assert "WindowCondenser(m@4000" in repr(condenser)


def test_trim_result_usage_and_state_change_shapes() -> None:
    trimmed = trim_by_category([UserMessage("a" * 4000), UserMessage("b")], 200)
    assert isinstance(trimmed, TrimResult)
    assert trimmed.kept[-1].content == "b"
    reading = parse_usage({"input_tokens": 10, "output_tokens": 2, "cache_read_input_tokens": 5})
    assert isinstance(reading, Usage)
    scratch = ScratchModel()
    scratch.record_state_change("plan", "build")
    assert scratch.state_changes == [StateChange("plan", "build")]


def test_fit_messages_shares_the_cut_and_marks_it() -> None:
    from window_budget.pipeline import SHORTENED_MARKER, fit_messages

    msgs = [UserMessage("short ask"), ToolResultMessage("c", "read", "r" * 20_000)]
    out, shortened = fit_messages(list(msgs), 1_000)
    assert shortened == (1,)
    assert out[0] is msgs[0]
    assert SHORTENED_MARKER.split("{n}")[1] in out[1].content
    assert sum(estimate_message_tokens(m) for m in out) <= 1_000
