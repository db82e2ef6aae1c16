"""The cut and the view plan both adapters take from the core: ``blocked_cuts`` and ``plan_view``.

Each adapter used to walk tool groups its own way. The walks are ported below as oracles (onto
core messages: a LangChain ``ToolMessage`` is a ``ToolResultMessage`` here, a LlamaIndex tool
role the same); on transcripts whose results follow their calls, as both frameworks write
them, the core answers exactly as they did. Where they disagreed with the core's pairing rules
(a reused id, a retried result), the core's rules win, and a test says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from tests.budget.test_tool_groups import any_transcript, reference_blocked
from tests.strategies import transcripts
from window_budget import AssistantMessage, ToolCallBlock, ToolResultMessage, UserMessage
from window_budget.budget import ToolShape, estimate_message_tokens, estimate_tokens
from window_budget.digest import is_digest
from window_budget.messages import AgentMessage
from window_budget.pipeline import blocked_cuts, plan_view, snap_back

# ------------------------------------------------------------------ the old walks (oracles)


def old_langchain_legal_cut(body: Sequence[AgentMessage], cut: int) -> bool:
    """``langchain_window_budget._remembered.legal_cut`` as it was, on core messages."""
    if cut < len(body) and isinstance(body[cut], ToolResultMessage):
        return False
    open_calls: set[str] = set()
    for m in body[:cut]:
        if isinstance(m, AssistantMessage):
            open_calls.update(str(c.id) for c in m.tool_calls)
        elif isinstance(m, ToolResultMessage):
            open_calls.discard(str(m.tool_call_id))
    if not open_calls:
        return True
    return not any(
        isinstance(m, ToolResultMessage) and str(m.tool_call_id) in open_calls for m in body[cut:]
    )


def old_llama_suffix_start(
    body: Sequence[AgentMessage], room: int, resumed_tokens: int
) -> int | None:
    """``ViewPlanner.suffix_start`` as it was (a tool-role walk), on core messages."""
    best: int | None = None
    total = 0
    for i in range(len(body) - 1, -1, -1):
        if is_digest(body[i]):
            break
        total += estimate_message_tokens(body[i])
        if total > room:
            break
        if isinstance(body[i], ToolResultMessage):
            continue
        lead = 0 if isinstance(body[i], UserMessage) else resumed_tokens
        if total + lead <= room:
            best = i
    return best


def old_llama_turn_start(body: Sequence[AgentMessage]) -> int:
    """Where ``ViewPlanner.smallest_view`` began the newest turn (back over tool roles)."""
    start = len(body) - 1
    while start > 0 and isinstance(body[start], ToolResultMessage):
        start -= 1
    return start


def old_langchain_safe_cut(messages: Sequence[AgentMessage], cut: int) -> int:
    """``langchain_window_budget._keep.safe_cut`` as it was (back to the call)."""
    n = len(messages)
    if cut >= n or not isinstance(messages[cut], ToolResultMessage):
        return cut
    ids: set[str] = set()
    end = cut
    while end < n and isinstance(messages[end], ToolResultMessage):
        result = messages[end]
        assert isinstance(result, ToolResultMessage)
        if result.tool_call_id:
            ids.add(result.tool_call_id)
        end += 1
    for i in range(cut - 1, -1, -1):
        m = messages[i]
        if isinstance(m, AssistantMessage) and ids & {c.id for c in m.tool_calls if c.id}:
            return i
    return end


def shape(message: AgentMessage) -> ToolShape:
    """A core message's shape, as an adapter builds one from its native message."""
    if isinstance(message, AssistantMessage):
        return ToolShape(tuple(c.id for c in message.tool_calls))
    if isinstance(message, ToolResultMessage):
        return ToolShape(result=True, answers=message.tool_call_id)
    return ToolShape()


# ------------------------------------------------------------------ the cut


@given(any_transcript)
def test_shapes_cut_where_messages_cut(msgs: list[AgentMessage]) -> None:
    """Reused ids, orphans, results out of order: shapes pair exactly as messages do."""
    assert blocked_cuts([shape(m) for m in msgs]) == blocked_cuts(msgs) == reference_blocked(msgs)


@given(transcripts())
def test_the_cut_answers_as_the_old_langchain_walk(msgs: list[AgentMessage]) -> None:
    blocked = blocked_cuts([shape(m) for m in msgs])
    assert [not b for b in blocked] == [
        old_langchain_legal_cut(msgs, cut) for cut in range(len(msgs) + 1)
    ]


def test_a_retried_result_keeps_its_group_whole_where_the_old_walk_split_it() -> None:
    """The old walk closed a call at its first result; a retry after a user turn was cut off."""
    call = AssistantMessage([ToolCallBlock("a", "bash", {})])
    msgs = [call, ToolResultMessage("a", "bash", "1"), UserMessage("again?")]
    msgs.append(ToolResultMessage("a", "bash", "2"))
    assert old_langchain_legal_cut(msgs, 2)
    assert blocked_cuts([shape(m) for m in msgs])[2]


def test_a_reused_id_answers_the_nearest_call_where_the_old_walk_blocked_the_cut() -> None:
    """``call_0`` on every reply: the result answers the newest, so the older ends its group."""
    first = AssistantMessage([ToolCallBlock("call_0", "bash", {})])
    second = AssistantMessage([ToolCallBlock("call_0", "bash", {})])
    msgs = [first, UserMessage("go on"), second, ToolResultMessage("call_0", "bash", "ok")]
    assert not old_langchain_legal_cut(msgs, 1)
    assert not blocked_cuts([shape(m) for m in msgs])[1]


def test_a_result_without_an_id_is_never_the_first_kept() -> None:
    """A LangChain ``FunctionMessage`` names no call: it answers nothing; no cut starts at it."""
    assert blocked_cuts([ToolShape(), ToolShape(result=True), ToolShape()]) == [
        False,
        True,
        False,
        False,
    ]


@given(transcripts(), st.data())
def test_snapping_back_answers_as_the_old_keep_walk(
    msgs: list[AgentMessage], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(msgs)))
    assert snap_back(msgs, cut) == old_langchain_safe_cut(msgs, cut)
    assert snap_back([shape(m) for m in msgs], cut) == snap_back(msgs, cut)


@given(any_transcript, st.data())
def test_snapping_back_never_splits_a_tool_group(
    msgs: list[AgentMessage], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(msgs)))
    snapped = snap_back(msgs, cut)
    assert snapped == 0 or not reference_blocked(msgs)[snapped]
    if not reference_blocked(msgs)[cut]:
        assert snapped == cut


def test_a_cut_inside_a_group_keeps_the_call_where_the_old_walk_split_it() -> None:
    """Parallel results around a user turn: the old walk moved only a cut *at* a result."""
    call = AssistantMessage([ToolCallBlock("a", "x", {}), ToolCallBlock("b", "x", {})])
    msgs = [UserMessage("go"), call, ToolResultMessage("a", "x", "1"), UserMessage("hm")]
    msgs.append(ToolResultMessage("b", "x", "2"))
    assert old_langchain_safe_cut(msgs, 3) == 3
    assert snap_back(msgs, 3) == 1


# ------------------------------------------------------------------ the view plan

rooms = st.integers(0, 3000)


@given(transcripts(), rooms, st.integers(0, 40))
def test_the_view_plan_answers_as_the_old_llama_index_walk(
    msgs: list[AgentMessage], room: int, resumed_tokens: int
) -> None:
    plan = plan_view(msgs, room, resumed_tokens=resumed_tokens)
    old = old_llama_suffix_start(msgs, room, resumed_tokens)
    if old is not None:
        assert (plan.suffix, plan.start) == (True, old)
        assert plan.messages == tuple(msgs[old:])
    elif msgs:
        assert (plan.suffix, plan.start) == (False, old_llama_turn_start(msgs))
    else:
        assert (plan.suffix, plan.start, plan.messages) == (False, 0, ())


@given(any_transcript, rooms, st.integers(0, 40))
def test_a_view_plan_fits_and_never_splits_a_tool_group(
    msgs: list[AgentMessage], room: int, resumed_tokens: int
) -> None:
    plan = plan_view(msgs, room, resumed_tokens=resumed_tokens)
    blocked = reference_blocked(msgs)
    assert not blocked[plan.start] or plan.start == 0
    assert plan.resumed == (bool(plan.messages) and not isinstance(plan.messages[0], UserMessage))
    if plan.suffix:
        shown = estimate_tokens(list(plan.messages))
        assert shown + (resumed_tokens if plan.resumed else 0) <= room
        assert not any(is_digest(m) for m in plan.messages)
        assert plan.shortened == ()
    else:
        assert len(plan.messages) == len(msgs) - plan.start
        kept = set(range(len(plan.messages))) - set(plan.shortened)
        assert all(plan.messages[i] is msgs[plan.start + i] for i in kept)


@given(transcripts(), rooms, st.data())
def test_a_squeezed_plan_answers_as_the_old_llama_index_check(
    msgs: list[AgentMessage], room: int, data: st.DataObject
) -> None:
    """``plan_squeezed`` in the LlamaIndex compaction, as it was (before any summary call)."""
    cut = data.draw(st.integers(0, len(msgs)))
    users = [i for i, m in enumerate(msgs) if isinstance(m, UserMessage)]
    start = old_llama_suffix_start(msgs, room, 0)
    old = bool(users) and cut > users[-1] and start is not None and start < cut
    assert plan_view(msgs, room).squeezed_by(cut) == old


def test_a_squeezed_digest_view_is_one_that_shows_fewer_verbatim_messages() -> None:
    body = [UserMessage("hi"), AssistantMessage("hello"), UserMessage("more")]
    plan = plan_view(body, 10_000)
    assert plan.suffix
    assert plan.start == 0
    assert plan.crowds_out(2)
    assert not plan.crowds_out(3)
    nothing_fits = plan_view(body, 0)
    assert not nothing_fits.suffix
    assert not nothing_fits.crowds_out(0)
