"""Masking (on by default) in the LangChain adapter: placeholders are native copies of the
caller's tool messages, the originals go where dropped messages go, pairs stay whole."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import event, given, settings
from hypothesis import strategies as st
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langgraph.graph.message import add_messages

from langchain_window_budget import (
    CondensingChatMessageHistory,
    LangChainCondenser,
    WindowBudgetMiddleware,
    condense_messages,
)
from window_budget import BudgetPolicy
from window_budget.digest import SESSION_HEADER
from window_budget.pipeline import MASK_MARKER

from .conftest import digest_model, provider_valid, snapshot, tool_loop

WINDOW = 40_000
POLICY = BudgetPolicy(keep_recent=3000)  # the default masking: K=3, above 2,000 characters


def _session(turns: int = 14) -> list[BaseMessage]:
    return tool_loop(turns, result_chars=8000)


def _check_masked(given: list[BaseMessage], out: list[BaseMessage], masked: int) -> None:
    """Same positions; placeholders are copies with the original's ids; the rest is given."""
    assert len(out) == len(given)
    assert provider_valid(out)
    copies = 0
    for original, new in zip(given, out, strict=True):
        if isinstance(new, ToolMessage) and new.text.startswith(MASK_MARKER):
            copies += 1
            assert new is not original
            assert isinstance(original, ToolMessage)
            assert (new.id, new.tool_call_id, new.name) == (
                original.id,
                original.tool_call_id,
                original.name,
            )
            assert new.status == original.status
        else:
            assert new is original
    assert copies == masked


def test_a_masked_run_maps_back_to_the_callers_objects_and_copies() -> None:
    msgs = _session()
    before = snapshot(msgs)
    engine = LangChainCondenser(digest_model(), context_window=WINDOW, policy=POLICY)
    result = engine.run(msgs)
    assert result.core.reason == "masked"
    assert result.digest is None
    assert result.masked == 11  # 14 outputs, the 3 most recent stay whole
    assert result.tokens_freed > 20_000
    _check_masked(msgs, list(result.messages), 11)
    # The originals are the caller's own objects, handed back as dropped, untouched.
    assert [id(m) for m in result.dropped] == [id(m) for m in msgs if isinstance(m, ToolMessage)][
        :11
    ]
    assert result.replaced == []
    assert snapshot(msgs) == before
    # The next turn is under budget: nothing more to do, no summary call was paid.
    again = engine.run([*result.messages, HumanMessage("and now?")])
    assert not again.changed


def test_condense_messages_returns_the_masked_transcript() -> None:
    msgs = _session()
    out = condense_messages(msgs, model=digest_model(), context_window=WINDOW, policy=POLICY)
    _check_masked(msgs, out, 11)


def test_the_history_archives_the_originals_before_the_placeholders_replace_them() -> None:
    history = CondensingChatMessageHistory(
        InMemoryChatMessageHistory(), model=digest_model(), context_window=WINDOW, policy=POLICY
    )
    msgs = _session()
    history.add_messages(msgs)
    live = history.messages
    _check_masked(msgs, live, 11)
    archived = history.archive.messages
    assert [id(m) for m in archived] == [id(m) for m in msgs if isinstance(m, ToolMessage)][:11]
    assert all(not m.text.startswith(MASK_MARKER) for m in archived)


def test_the_middleware_state_update_replaces_outputs_by_id_and_archives_them() -> None:
    archived: list[BaseMessage] = []
    middleware = WindowBudgetMiddleware(
        digest_model(), context_window=WINDOW, policy=POLICY, archive=archived.extend
    )
    state = add_messages([], _session())  # what the graph holds: ids set
    before = snapshot(state)
    update = middleware.before_model(
        {"messages": state},  # type: ignore[typeddict-item]
        SimpleNamespace(config={}),
    )  # type: ignore[arg-type]
    assert update is not None
    new_state = add_messages(state, update["messages"])  # LangGraph's own reducer
    _check_masked(state, new_state, 11)
    assert snapshot(state) == before
    assert [m.id for m in archived] == [m.id for m in state if isinstance(m, ToolMessage)][:11]
    assert middleware.last_result is not None
    assert middleware.last_result.masked == 11


def test_when_masking_is_not_enough_the_head_is_folded_into_a_digest() -> None:
    # Small outputs cannot be masked, and a large user turn keeps it over budget.
    msgs = [*_session(), *tool_loop(40, result_chars=1500, start=100)]
    engine = LangChainCondenser(digest_model(), context_window=WINDOW, policy=POLICY)
    archived: list[BaseMessage] = []

    def archive(dropped: list[BaseMessage]) -> dict[str, int]:
        archived.extend(dropped)
        return {"start": 0, "end": len(dropped)}

    result = engine.run(msgs, archive=archive)
    assert result.core.reason == "condensed"
    assert result.masked == 0
    assert result.digest is not None
    assert result.digest.text.startswith(SESSION_HEADER)
    assert provider_valid(result.messages)
    assert archived == result.dropped
    n = len(result.messages) - 1
    assert all(a is b for a, b in zip(result.messages[1:], msgs[-n:], strict=True))


def test_pointers_resolve_in_the_history_archive_with_masked_originals_in_it() -> None:
    from langchain_core.messages import AIMessage

    from langchain_window_budget import digest_record
    from langchain_window_budget._convert import to_core
    from window_budget.pipeline.summarize import ledger_of

    history = CondensingChatMessageHistory(
        InMemoryChatMessageHistory(), model=digest_model(), context_window=WINDOW, policy=POLICY
    )
    for i in range(150):
        output = "line of build output\n" * 300 if i % 3 == 0 else f"part {i} ok " + "y" * 1500
        history.add_messages(
            [
                AIMessage(
                    "",
                    id=f"a{i}",
                    tool_calls=[
                        {
                            "name": "bash",
                            "id": f"c{i}",
                            "args": {"command": f"make part{i}"},
                            "type": "tool_call",
                        }
                    ],
                ),
                ToolMessage(output, tool_call_id=f"c{i}", name="bash", id=f"t{i}"),
                HumanMessage(f"next {i}", id=f"h{i}"),
            ]
        )
    archived = history.archive.messages
    assert any(
        isinstance(m, ToolMessage)
        and not m.text.startswith(MASK_MARKER)
        and m.text.startswith("line of build")
        for m in archived
    )  # masked originals
    ledger = ledger_of(to_core(history.messages[0]))
    assert ledger is not None
    archive = [m for m in archived if digest_record(m) is None]
    # The digest's record is bounded: it carries the facts that matter most, each with a
    # pointer that still resolves in the archive, masked originals and all.
    commands = [f for f in ledger.facts if f.kind == "command" and f.source is not None]
    assert ledger.archived == len(archive)
    for fact in commands:
        call = archive[fact.source]
        assert isinstance(call, AIMessage)
        assert call.tool_calls[0]["args"]["command"] == fact.text


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 12_000), min_size=1, max_size=30),
    window=st.integers(8_000, 60_000),
    keep=st.integers(0, 4),
)
def test_any_masked_run_keeps_pairs_ids_and_the_callers_objects(
    sizes: list[int], window: int, keep: int
) -> None:
    msgs = [m for i, n in enumerate(sizes) for m in tool_loop(1, result_chars=n, start=i)]
    before = snapshot(msgs)
    engine = LangChainCondenser(
        digest_model(),
        context_window=window,
        policy=BudgetPolicy(keep_recent=2000, mask_keep_outputs=keep),
    )
    result = engine.run(msgs)
    assert snapshot(msgs) == before
    out = list(result.messages)
    assert provider_valid(out)
    event(result.core.reason)
    if result.core.reason != "masked":
        return
    _check_masked(msgs, out, result.masked)
    tools = [m for m in msgs if isinstance(m, ToolMessage)]
    assert len(tools) - result.masked >= min(keep, len(tools))  # the newest K stay whole
    originals = {id(m) for m in result.dropped}
    assert {m.id for m in out if m.text.startswith(MASK_MARKER)} == {
        m.id for m in msgs if id(m) in originals
    }
