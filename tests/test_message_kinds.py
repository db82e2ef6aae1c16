"""One table of message kinds: every kind the messages module defines is in it, and read alike.

A kind added to ``window_budget.messages`` without an entry in ``MESSAGE_KINDS`` (and a
sample below) fails here, before any consumer silently treats it as an unknown object.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from window_budget import messages
from window_budget.budget import estimate_message_tokens, message_parts
from window_budget.messages import (
    MESSAGE_KINDS,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    DigestMessage,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    _kinds,
    message_blocks,
    message_from_dict,
    message_kind,
    message_text,
    message_to_dict,
    serialize_unknown,
    tool_call_ids,
    tool_calls,
)
from window_budget.pipeline import shorten_message
from window_budget.pipeline.summarize import flatten_message

LONG = "the build log says nothing new here. " * 200

SAMPLES: dict[type, object] = {
    UserMessage: UserMessage([TextBlock(LONG), ImageBlock("aGk=")]),
    DigestMessage: DigestMessage(LONG, covered_count=3),
    AssistantMessage: AssistantMessage(
        [ThinkingBlock("plan"), TextBlock(LONG), ToolCallBlock("c1", "bash", {"command": "ls"})]
    ),
    ToolResultMessage: ToolResultMessage("c1", "bash", LONG, is_error=True),
    BashExecutionMessage: BashExecutionMessage("make test", LONG, exit_code=2),
    CustomMessage: CustomMessage("note", LONG, details={"ticket": 42}),
    BranchSummaryMessage: BranchSummaryMessage(LONG, from_id="e1"),
    CompactionSummaryMessage: CompactionSummaryMessage(LONG, tokens_before=9000),
}
"""One message of every kind, each with a long body."""


def _message_classes() -> list[type]:
    """The public message classes of the messages module: dataclasses whose role is fixed."""
    out = []
    for name in dir(messages):
        obj = getattr(messages, name)
        if (
            not name.startswith("_")
            and isinstance(obj, type)
            and obj.__module__.startswith(f"{messages.__name__}.")
            and dataclasses.is_dataclass(obj)
            and any(f.name == "role" and not f.init for f in dataclasses.fields(obj))
        ):
            out.append(obj)
    return out


def _role(cls: type) -> str:
    return next(f.default for f in dataclasses.fields(cls) if f.name == "role")  # type: ignore[return-value]


def test_every_message_class_is_a_kind_of_the_table_with_a_sample() -> None:
    classes = _message_classes()
    assert len(classes) >= 8
    for cls in classes:
        kind = next((MESSAGE_KINDS[t] for t in cls.__mro__ if t in MESSAGE_KINDS), None)
        assert kind is not None, f"{cls.__name__} has no entry in MESSAGE_KINDS"
        assert kind.role == _role(cls)
        assert cls in SAMPLES, f"add a {cls.__name__} to SAMPLES"
    assert set(messages.KNOWN_MESSAGE_TYPES) == set(MESSAGE_KINDS)


@pytest.mark.parametrize("cls", list(MESSAGE_KINDS))
def test_the_table_names_fields_the_kind_has(cls: type) -> None:
    kind = MESSAGE_KINDS[cls]
    fields = {f.name: f.type for f in dataclasses.fields(cls)}
    assert kind.body in fields
    assert (fields[kind.body] == "Content") == kind.has_blocks
    for name in (*kind.lead, *kind.labels):
        assert fields[name] == "str"
    for name in kind.extras:
        assert "Mapping" in str(fields[name])
    assert kind.heads == (*kind.labels, *kind.lead)


@pytest.mark.parametrize("sample", list(SAMPLES.values()), ids=lambda m: type(m).__name__)
def test_every_consumer_reads_every_kind_as_itself(sample: object) -> None:
    kind = message_kind(sample)
    assert kind is not None
    serialized = serialize_unknown(sample)
    # Text, billing and flattening: never the unknown object's serialized fallback.
    assert message_text(sample) != serialized
    assert "the build log" in message_text(sample)  # type: ignore[arg-type]
    parts, _, _ = message_parts(sample)  # type: ignore[arg-type]
    assert serialized not in parts
    assert all(getattr(sample, name) in parts for name in kind.heads)
    assert not any(serialized in entry for entry in flatten_message(sample))  # type: ignore[arg-type]
    # Shortening cuts the body and keeps everything that names the message.
    short = shorten_message(sample, 200)  # type: ignore[arg-type]
    assert type(short) is type(sample)
    assert estimate_message_tokens(short) < estimate_message_tokens(sample)  # type: ignore[arg-type]
    for name in kind.heads:
        assert getattr(short, name) == getattr(sample, name)
    # Serialization round-trips it as the same kind.
    record = message_to_dict(sample)  # type: ignore[arg-type]
    assert "serialized" not in record
    assert message_from_dict(record) == sample


def test_a_subclass_is_its_base_kind_and_an_unknown_object_is_none() -> None:
    @dataclass(frozen=True)
    class Strange:
        role: str = "systemNote"

    class AuditedResult(ToolResultMessage):
        __slots__ = ()

    assert message_kind(DigestMessage("d")) is MESSAGE_KINDS[UserMessage]
    assert message_kind(AuditedResult("c1", "bash", "ok")) is MESSAGE_KINDS[ToolResultMessage]
    assert message_kind(Strange()) is None
    assert message_kind({"role": "user", "content": "hi"}) is None
    assert message_text(Strange()) == serialize_unknown(Strange())  # type: ignore[arg-type]


def test_blocks_and_tool_calls_of_any_message() -> None:
    assert [type(b) for b in message_blocks(SAMPLES[UserMessage])] == [TextBlock, ImageBlock]
    assert message_blocks(UserMessage("plain text")) == ()
    assert message_blocks(SAMPLES[BashExecutionMessage]) == ()
    assert message_blocks({"role": "user"}) == ()
    assert [c.name for c in tool_calls(SAMPLES[AssistantMessage])] == ["bash"]
    assert tool_calls(SAMPLES[ToolResultMessage]) == ()
    assert tool_call_ids(SAMPLES[AssistantMessage]) == ("c1",)  # type: ignore[arg-type]


def test_classes_made_on_the_fly_do_not_pile_up_in_the_lookup() -> None:
    for i in range(1_000):
        made = type(f"Made{i}", (), {"role": "systemNote"})
        assert message_kind(made()) is None
    assert len(_kinds._KIND_OF_TYPE) <= _kinds._MAX_CACHED_TYPES
    assert message_kind(SAMPLES[DigestMessage]) is MESSAGE_KINDS[UserMessage]
