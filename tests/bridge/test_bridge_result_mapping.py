"""The bridge maps the core's result back onto native messages, the same way for every adapter.

A tiny framework-free codec stands in for LangChain and LlamaIndex: what it pins is
the contract both adapters rely on — kept messages are the caller's very objects,
shortened and masked ones are copies, the originals are never touched, the digest
goes first, and nothing the input held goes missing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from dataclasses import dataclass, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from window_budget import (
    AssistantMessage,
    BudgetPolicy,
    DigestMessage,
    Model,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    create_condenser,
)
from window_budget.bridge import (
    Mapped,
    convert,
    digest_from_record,
    digest_of,
    digest_record,
    make_completers,
    map_result,
    result_slots,
)
from window_budget.budget import ContentCache
from window_budget.cancel import CancelledByToken, CancelToken
from window_budget.contract import CompleteOptions, CondenseResult, Context
from window_budget.messages import AgentMessage, message_text


@dataclass(eq=False)
class Note:
    """A native message of a make-believe framework (mutable, compared by identity)."""

    kind: str  # "user", "call", "tool"
    text: str
    call_id: str = ""
    copy_of: Note | None = None


class NoteCodec:
    name = "notes"

    def key(self, message: Note) -> Hashable | None:
        return (message.kind, message.text, message.call_id)

    def to_core(self, message: Note) -> AgentMessage:
        if message.kind == "call":
            return AssistantMessage(
                (TextBlock(message.text), ToolCallBlock(message.call_id, "bash", {}))
            )
        if message.kind == "tool":
            return ToolResultMessage(message.call_id, "bash", message.text)
        return UserMessage(message.text)

    def is_pinned(self, message: Note) -> bool:
        return False


def shortened_copy(original: Note, core: AgentMessage) -> Note:
    return Note(original.kind, message_text(core), original.call_id, copy_of=original)


def make_digest(mapped: Mapped[Note]) -> Note:
    return Note("user", f"[digest of {len(mapped.dropped)}; {len(mapped.tail)} kept]")


def session(turns: int, output: str) -> list[Note]:
    notes: list[Note] = []
    for i in range(turns):
        notes += [
            Note("user", f"step {i}: please continue"),
            Note("call", "running", f"c{i}"),
            Note("tool", output, f"c{i}"),
        ]
    return notes


def run(notes: list[Note], **policy: object) -> tuple[list[AgentMessage], CondenseResult]:
    cores = convert(NoteCodec(), notes, cache=ContentCache(1 << 20))
    condenser = create_condenser(
        model=Model("m", 32_768),
        policy=BudgetPolicy(**policy),  # type: ignore[arg-type]
    )
    return cores, condenser.run_sync(cores)


def snapshot(notes: list[Note]) -> list[tuple[str, str, str, Note | None]]:
    return [(n.kind, n.text, n.call_id, n.copy_of) for n in notes]


def check_contract(notes: list[Note], cores: list[AgentMessage], result: CondenseResult) -> None:
    before = snapshot(notes)
    mapped = map_result(notes, cores, result, copy=shortened_copy, make_digest=make_digest)
    assert snapshot(notes) == before  # the caller's messages are never changed
    assert len(mapped.messages) == len(result.messages)
    if result.summary is not None:
        assert mapped.digest is not None
        assert mapped.messages[0] is mapped.digest  # digest first
        assert mapped.messages[1:] == mapped.tail
    else:
        assert mapped.digest is None
        assert mapped.messages == mapped.tail
    slots, dropped = result_slots(cores, result)
    own = {id(n) for n in notes}
    for slot, out in zip(slots, mapped.tail, strict=True):
        original = notes[slot.source]
        if slot.kind == "kept":
            assert out is original  # the caller's own object
        else:
            assert id(out) not in own  # a copy ...
            assert out.copy_of is original  # ... of the right message
            assert out.text == message_text(slot.core)
    assert mapped.dropped == [notes[i] for i in dropped]
    assert mapped.replaced == [notes[s.source] for s in slots if s.kind == "shortened"]
    # Nothing lost: every input is kept (itself or as a copy), dropped, or both (masked).
    accounted = {s.source for s in slots} | set(dropped)
    assert accounted == set(range(len(notes)))


def test_folded_head_becomes_one_digest_and_the_tail_is_the_callers_objects() -> None:
    notes = session(60, "x" * 1900)
    cores, result = run(notes, mask_keep_outputs=None)
    assert result.reason == "condensed"
    check_contract(notes, cores, result)
    mapped = map_result(notes, cores, result, copy=shortened_copy, make_digest=make_digest)
    assert mapped.digest is not None
    assert mapped.digest.text == f"[digest of {result.plan.cut}; {len(result.plan.kept)} kept]"
    assert mapped.dropped == notes[: result.plan.cut]
    assert all(a is b for a, b in zip(mapped.tail, notes[result.plan.cut :], strict=True))
    assert mapped.replaced == []


def test_masked_outputs_are_copies_and_their_originals_are_dropped_not_replaced() -> None:
    notes = session(14, "line of build output\n" * 400)
    cores, result = run(notes, keep_recent=3000)
    assert result.reason == "masked"
    check_contract(notes, cores, result)
    mapped = map_result(notes, cores, result, copy=shortened_copy, make_digest=make_digest)
    masked = [m for m in mapped.tail if m.copy_of is not None]
    assert len(masked) == len(result.masked) == len(mapped.dropped) == 11
    assert [m.copy_of for m in masked] == mapped.dropped
    assert mapped.replaced == []
    assert len(mapped.tail) == len(notes)  # masking keeps every position


def test_an_oversized_kept_message_is_a_shortened_copy_and_its_original_is_replaced() -> None:
    notes = [
        Note("user", "hello " * 500),
        Note("call", "reading", "c"),
        Note("tool", "HEAD" + "z" * 200_000 + "TAIL", "c"),
    ]
    cores, result = run(notes)
    assert result.shortened == (2,)
    check_contract(notes, cores, result)
    mapped = map_result(notes, cores, result, copy=shortened_copy)
    *verbatim, short = mapped.tail
    assert verbatim == notes[len(notes) - len(mapped.tail) : -1]  # the same objects
    assert short.copy_of is notes[2]
    assert mapped.replaced == [notes[2]]
    assert len(short.text) < len(notes[2].text)


def test_a_no_op_maps_every_message_to_itself() -> None:
    notes = session(2, "short")
    cores, result = run(notes)
    assert result.messages is cores
    mapped = map_result(notes, cores, result, copy=shortened_copy, make_digest=make_digest)
    assert all(a is b for a, b in zip(mapped.tail, notes, strict=True))
    assert mapped.digest is None
    assert mapped.dropped == mapped.replaced == []


@settings(max_examples=25, deadline=None)
@given(
    turns=st.integers(1, 40),
    size=st.sampled_from([10, 1900, 9000, 120_000]),
    keep=st.sampled_from([None, 1, 3]),
)
def test_the_mapping_contract_holds_for_any_session(
    turns: int, size: int, keep: int | None
) -> None:
    notes = session(turns, "y" * size)
    notes.append(Note("user", "and now?"))
    cores, result = run(notes, mask_keep_outputs=keep)
    check_contract(notes, cores, result)


# ------------------------------------------------------------------ completers


class EchoCalls:
    """Model calls of a make-believe framework: records prompts, replies in its own shape."""

    def __init__(self) -> None:
        self.prompts: list[list[str]] = []

    def prompt(self, context: Context) -> list[str]:
        return [context.system_prompt, *(message_text(m) for m in context.messages)]

    def call(self, prompt: list[str], options: CompleteOptions | None) -> dict[str, str]:
        self.prompts.append(prompt)
        return {"said": "# Objective\nsync"}

    async def acall(self, prompt: list[str], options: CompleteOptions | None) -> dict[str, str]:
        self.prompts.append(prompt)
        return {"said": "# Objective\nasync"}

    def reply(self, reply: dict[str, str], model: Model) -> AssistantMessage:
        return AssistantMessage((TextBlock(reply["said"]),), model=model.id)


def test_completers_call_the_framework_and_read_its_reply() -> None:
    calls = EchoCalls()
    complete, complete_sync = make_completers(calls)
    model, context = Model("m", 1000), Context("brief", (UserMessage("dropped turns"),))
    sync = complete_sync(model, context)
    asynchronous = asyncio.run(complete(model, context))
    assert message_text(sync) == "# Objective\nsync"
    assert message_text(asynchronous) == "# Objective\nasync"
    assert sync.model == "m"
    assert calls.prompts == [["brief", "dropped turns"]] * 2


def test_a_cancelled_run_makes_no_model_call() -> None:
    calls = EchoCalls()
    complete, complete_sync = make_completers(calls)
    token = CancelToken()
    token.cancel("user left")
    options = CompleteOptions(signal=token)
    model, context = Model("m", 1000), Context("brief", (UserMessage("x"),))
    with pytest.raises(CancelledByToken):
        complete_sync(model, context, options)
    with pytest.raises(CancelledByToken):
        asyncio.run(complete(model, context, options))
    assert calls.prompts == []


class StepCalls(EchoCalls):
    """A framework whose model's digest states the session's objective."""

    def call(self, prompt: list[str], options: CompleteOptions | None) -> dict[str, str]:
        super().call(prompt, options)
        return {"said": "# Objective\nstep 0: please continue"}


def test_completers_drive_a_real_summary() -> None:
    calls = StepCalls()
    _, complete_sync = make_completers(calls)
    notes = session(60, "x" * 1900)
    cores = convert(NoteCodec(), notes, cache=ContentCache(1 << 20))
    condenser = create_condenser(
        model=Model("m", 32_768),
        complete_sync=complete_sync,
        policy=BudgetPolicy(mask_keep_outputs=None),
    )
    result = condenser.run_sync(cores)
    assert result.summary is not None
    assert not result.summary.fallback  # the framework's reply was read
    assert calls.prompts  # through the framework's call, with the core's brief first
    assert all(p[0].startswith("You are a transcript recorder") for p in calls.prompts)


# ---------------------------------------------------------------------- digest


def test_the_native_digest_keeps_every_field_of_the_cores_digest() -> None:
    notes = session(60, "x" * 1900)
    _, result = run(notes, mask_keep_outputs=None)
    assert result.summary is not None
    source = result.summary.message
    assert isinstance(source, DigestMessage)
    assert source.facts  # the network-free digest carries its fact ledger
    digest = digest_of(result.summary.text, source, covered_count=99)
    assert digest == replace(source, covered_count=99)  # the ledger and the rest travel
    rebuilt = digest_from_record(digest.content, digest_record(digest))
    assert rebuilt.covered_count == 99
    assert rebuilt.facts == source.facts
    plain = digest_of("text", AssistantMessage("not a digest"), covered_count=3)
    assert plain == DigestMessage("text", covered_count=3)
    assert digest_of("text") == DigestMessage("text")
