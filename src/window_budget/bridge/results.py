"""The core's result mapped back onto an adapter's native messages, the same for every framework.

:func:`result_slots` walks a :class:`~window_budget.contract.CondenseResult` against the core
messages it ran on (which input each output stands for, and whether it was kept, shortened or
masked); :func:`map_result` builds the native list from it — the caller's own objects for what
was kept, the codec's copies for the rest — for both the LangChain adapter (its runs) and the
LlamaIndex adapter (its views and masked rewrites).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from window_budget.contract import CondenseResult
from window_budget.messages import AgentMessage, AssistantMessage

__all__ = ["Mapped", "Slot", "SlotKind", "map_result", "result_slots"]

SlotKind = Literal["kept", "shortened", "masked"]
"""What one output message is: the input's own, a shortened copy, a masked copy."""


@dataclass(frozen=True, slots=True)
class Slot:
    """One message of the core's output after the digest, and where it came from."""

    source: int
    """Index, in the core messages the condenser ran on, of the message it stands for."""
    kind: SlotKind
    """``"kept"``: unchanged (the caller gets its own object back); ``"shortened"``: cut
    down to fit (a copy; the original is *replaced*); ``"masked"``: a tool output replaced
    by a placeholder (a copy; the original is *dropped*, as folded messages are)."""
    core: AgentMessage
    """The core's output message (the shortened or masked text a copy must carry)."""


def _same_text(a: AgentMessage, b: AgentMessage) -> bool:
    """True when ``b`` is ``a`` or differs from it only in its usage figure."""
    if a is b:
        return True
    if isinstance(a, AssistantMessage) and isinstance(b, AssistantMessage):
        return dataclasses.replace(a, usage=None) == dataclasses.replace(b, usage=None)
    return a == b


def result_slots(
    cores: Sequence[AgentMessage], result: CondenseResult
) -> tuple[list[Slot], list[int]]:
    """``(slots, dropped)``: each output message after the digest, and the inputs that left.

    ``cores`` is what the condenser ran on, no core object twice (what :func:`convert`
    returns); the result is mapped back by identity. ``dropped`` indexes ``cores`` in the
    order of ``result.plan.dropped``. A digest or a trim keeps ``plan.kept``; masking keeps
    every position (a placeholder where an output was); otherwise the output is the input
    less what was dropped. A kept message the core rewrote beyond its usage figure (a trim
    removing an image, say) counts as shortened even when ``result.shortened`` omits it.

    Raises:
        RuntimeError: the output does not line up with its plan (a core contract violation).

    """
    index = {id(c): i for i, c in enumerate(cores)}
    dropped = [index[id(c)] for c in result.plan.dropped]
    offset = 1 if result.summary is not None else 0
    masked = set(result.masked)
    if result.summary is not None or result.plan.cut:
        sources = list(result.plan.kept)
    elif masked:
        sources = list(cores)
    else:
        gone = set(dropped)
        sources = [c for i, c in enumerate(cores) if i not in gone]
    outs = result.messages[offset:]
    if len(sources) != len(outs):  # pragma: no cover - a core contract violation
        raise RuntimeError("window-budget: the condensed tail does not match its plan")
    shortened = set(result.shortened)
    slots: list[Slot] = []
    for i, (src, out) in enumerate(zip(sources, outs, strict=True), start=offset):
        kind: SlotKind = (
            "masked"
            if i in masked
            else "shortened"
            if i in shortened or not _same_text(src, out)
            else "kept"
        )
        slots.append(Slot(index[id(src)], kind, out))
    return slots, dropped


N = TypeVar("N")
"""A framework's native message type."""


@dataclass(frozen=True, slots=True)
class Mapped(Generic[N]):
    """The core's result in native messages (see :func:`map_result`)."""

    messages: list[N]
    """``[digest, *tail]``, or ``tail`` when no digest was written."""
    digest: N | None
    """The native digest message, when one was written."""
    tail: list[N]
    """The kept messages: the caller's own objects, copies where shortened or masked."""
    dropped: list[N] = field(default_factory=list)
    """The caller's messages that left (folded into the digest, or masked outputs)."""
    replaced: list[N] = field(default_factory=list)
    """The caller's originals of the tail's shortened copies."""
    slots: list[Slot] = field(default_factory=list)
    """Where each tail entry came from and what it is (index for index with ``tail``)."""


def map_result(
    natives: Sequence[N],
    cores: Sequence[AgentMessage],
    result: CondenseResult,
    *,
    copy: Callable[[N, AgentMessage], N],
    make_digest: Callable[[Mapped[N]], N] | None = None,
) -> Mapped[N]:
    """Map the core's result on ``cores`` back onto ``natives`` (index for index).

    Kept messages are the caller's very objects; shortened and masked ones are
    ``copy(original, core)`` (the codec's shortened copy, which must not touch the
    original). When the core wrote a digest, ``make_digest`` receives the mapping
    without it (dropped, tail) and returns the native digest, which goes first.
    """
    slots, dropped_at = result_slots(cores, result)
    tail: list[N] = []
    replaced: list[N] = []
    for slot in slots:
        original = natives[slot.source]
        if slot.kind == "kept":
            tail.append(original)
            continue
        tail.append(copy(original, slot.core))
        if slot.kind == "shortened":
            replaced.append(original)
    mapped = Mapped(list(tail), None, tail, [natives[i] for i in dropped_at], replaced, slots)
    if result.summary is None or make_digest is None:
        return mapped
    digest = make_digest(mapped)
    return dataclasses.replace(mapped, messages=[digest, *tail], digest=digest)
