"""A remembered digest is put back only where the core's cut allows: LangChain messages as shapes.

``tool_shape`` is what the core's ``blocked_cuts`` reads of a LangChain message. Its answers
equal the adapter's former ``legal_cut`` walk (ported below as the oracle) on transcripts whose
results follow their calls, and the core's shared pairing rules everywhere else.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langchain_window_budget._convert import to_core
from langchain_window_budget._remembered import tool_shape
from window_budget.pipeline import blocked_cuts


def old_legal_cut(body: Sequence[BaseMessage], cut: int) -> bool:
    """``_remembered.legal_cut`` as it was before the core answered for it."""
    if cut < len(body) and isinstance(body[cut], ToolMessage | FunctionMessage):
        return False
    open_calls: set[str] = set()
    for m in body[:cut]:
        if isinstance(m, AIMessage):
            open_calls.update(str(c.get("id")) for c in m.tool_calls)
        elif isinstance(m, ToolMessage):
            open_calls.discard(str(m.tool_call_id))
    if not open_calls:
        return True
    return not any(
        isinstance(m, ToolMessage) and str(m.tool_call_id) in open_calls for m in body[cut:]
    )


@st.composite
def transcripts(draw: st.DrawFn) -> list[BaseMessage]:
    """Turns, parallel calls with their results (one sometimes missing), orphans, functions."""
    msgs: list[BaseMessage] = []
    for g in range(draw(st.integers(0, 20))):
        kind = draw(st.integers(0, 6))
        if kind <= 1:
            msgs.append(HumanMessage(f"ask {g}"))
        elif kind <= 3:
            ids = [f"g{g}-{i}" for i in range(draw(st.integers(1, 3)))]
            calls = [{"id": i, "name": "bash", "args": {"n": g}} for i in ids]
            msgs.append(AIMessage("", tool_calls=calls))
            answered = ids[:-1] if draw(st.booleans()) and draw(st.booleans()) else ids
            msgs.extend(ToolMessage(f"out {i}", tool_call_id=i) for i in answered)
        elif kind == 4:
            msgs.append(AIMessage(f"reply {g}"))
        elif kind == 5:
            msgs.append(ToolMessage("stray", tool_call_id=f"orphan-{g}"))
        else:
            msgs.append(
                draw(st.sampled_from([FunctionMessage("f", name="f"), SystemMessage("note")]))
            )
    return msgs


@given(transcripts())
def test_the_core_cuts_where_the_old_walk_did(msgs: list[BaseMessage]) -> None:
    blocked = blocked_cuts([tool_shape(m) for m in msgs])
    assert [not b for b in blocked] == [old_legal_cut(msgs, c) for c in range(len(msgs) + 1)]


@given(transcripts())
def test_shapes_cut_where_the_converted_messages_cut(msgs: list[BaseMessage]) -> None:
    """The shape of a message and its conversion pair alike (no call split either way)."""
    shapes = blocked_cuts([tool_shape(m) for m in msgs])
    converted = blocked_cuts([to_core(m) for m in msgs])
    assert shapes == converted
