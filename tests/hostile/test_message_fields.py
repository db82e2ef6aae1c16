"""Every field of every block and message is type-checked where the object is built.

A wrong type raises ``MessageError`` with one sentence naming the class and the field
(and never echoing the value, which may be huge or secret); a right type is kept as is.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from window_budget import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    estimate_tokens,
)
from window_budget.errors import MessageError
from window_budget.messages import DigestMessage, message_from_dict

SECRET = "sk-live-" + "x" * 200  # a wrong-field value must never be echoed back

# (class, valid keyword arguments): each case below breaks exactly one field.
VALID: dict[type, dict[str, Any]] = {
    TextBlock: {"text": "t"},
    ThinkingBlock: {"thinking": "t", "signature": None},
    ToolCallBlock: {"id": "c1", "name": "bash", "arguments": {"cmd": "ls"}},
    ImageBlock: {"data": "AA==", "mime_type": "image/png"},
    UserMessage: {"content": "hi", "timestamp": 1.0},
    DigestMessage: {"content": "d", "covered_count": 3, "kept_count": None, "fallback": False},
    AssistantMessage: {"content": "ok", "model": "m", "stop_reason": "stop", "timestamp": 2},
    ToolResultMessage: {
        "tool_call_id": "c1",
        "tool_name": "bash",
        "content": "out",
        "is_error": False,
        "timestamp": None,
    },
    BashExecutionMessage: {
        "command": "ls",
        "output": "a",
        "exit_code": 0,
        "cancelled": False,
        "truncated": False,
        "timestamp": None,
    },
    CustomMessage: {
        "custom_type": "note",
        "content": "c",
        "display": True,
        "details": None,
        "timestamp": None,
    },
    BranchSummaryMessage: {"summary": "s", "from_id": None, "timestamp": None},
    CompactionSummaryMessage: {"summary": "s", "tokens_before": 10, "timestamp": None},
}

NOT_STR = [None, 3, b"bytes", ["a"], TextBlock("t"), True]
BAD: dict[str, list[object]] = {
    "text": NOT_STR,
    "thinking": NOT_STR,
    "id": NOT_STR,
    "name": NOT_STR,
    "data": NOT_STR,
    "mime_type": NOT_STR,
    "command": NOT_STR,
    "output": NOT_STR,
    "custom_type": NOT_STR,
    "summary": NOT_STR,
    "tool_call_id": NOT_STR,
    "tool_name": NOT_STR,
    "signature": [3, b"x"],
    "model": [3, SECRET.encode()],
    "stop_reason": [0, ["stop"]],
    "from_id": [7, b"id"],
    "arguments": [None, "cmd=ls", ["ls"], 3],
    "details": ["d", ["x"], 3],
    "content": [None, 3, b"bytes", [None], [SECRET], [{"type": "text", "text": "t"}]],
    "timestamp": ["2025-01-01", True, b"1", [1.0]],
    "exit_code": ["1", 1.0, True],
    "is_error": [None, 1, "false"],
    "cancelled": [None, 0, "no"],
    "truncated": [1, "yes"],
    "display": [None, 0],
    "fallback": [1, None],
    "covered_count": [None, -1, 1.5, True, "3"],
    "kept_count": [-2, 2.0, "1"],
    "tokens_before": [None, -1, 1.5, "10"],
}
CASES = [
    (cls, name, value) for cls, fields in VALID.items() for name in fields for value in BAD[name]
]


def _id(case: object) -> str:
    return repr(case)[:24]


@pytest.mark.parametrize(("cls", "name", "value"), CASES, ids=_id)
def test_a_wrong_type_is_refused_naming_class_and_field(
    cls: type, name: str, value: object
) -> None:
    kwargs = {**VALID[cls], name: value}
    with pytest.raises(MessageError) as info:
        cls(**kwargs)
    text = str(info.value)
    assert text.startswith(f"{cls.__name__}.{name} must be ") or (
        name == "content" and text.startswith(f"{cls.__name__} content")
    ), text
    assert "\n" not in text
    assert SECRET not in text
    assert "x" * 50 not in text


@pytest.mark.parametrize(
    "make",
    [
        lambda: TextBlock(None),  # type: ignore[arg-type]
        lambda: ToolCallBlock(None, None),  # type: ignore[arg-type]
        lambda: BashExecutionMessage(None, None),  # type: ignore[arg-type]
        lambda: CustomMessage(None, "x"),  # type: ignore[arg-type]
        lambda: ToolResultMessage("c", None, "x"),  # type: ignore[arg-type]
        lambda: AssistantMessage([TextBlock("ok"), ThinkingBlock(None)]),  # type: ignore[arg-type]
    ],
)
def test_the_reported_breaks(make: Callable[[], object]) -> None:
    with pytest.raises(MessageError, match=r"^\w+\.\w+ must be"):
        make()


@pytest.mark.parametrize("cls", list(VALID), ids=lambda c: c.__name__)
def test_valid_fields_are_kept_as_given(cls: type) -> None:
    obj = cls(**VALID[cls])
    for name, value in VALID[cls].items():
        if name != "content":
            assert getattr(obj, name) == value


def test_mappings_and_subclasses_are_accepted() -> None:
    class Name(str):
        pass

    call = ToolCallBlock(Name("c"), "t", MappingProxyType({"a": 1}))
    assert call.arguments["a"] == 1
    assert CustomMessage("n", "c", details=MappingProxyType({})).details == {}
    assert BashExecutionMessage("ls", "", exit_code=-9).exit_code == -9  # killed by a signal


def test_replace_revalidates() -> None:
    from dataclasses import replace

    with pytest.raises(MessageError, match=r"ToolResultMessage\.is_error"):
        replace(ToolResultMessage("c", "t", "x"), is_error="yes")


@pytest.mark.parametrize(
    "record",
    [
        {"role": "bashExecution", "command": "ls", "exitCode": "1"},
        {"role": "custom", "customType": "n", "content": "c", "details": [1]},
        {"role": "assistant", "content": "ok", "model": 4},
    ],
)
def test_junk_records_become_one_sentence_message_errors(record: dict[str, Any]) -> None:
    with pytest.raises(MessageError, match=r"must be"):
        message_from_dict(record)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("yesterday", None),
        ("2026-01-02T03:04:05Z", 1767323045.0),
        (1.5, 1.5),
        (float("inf"), None),
        (True, None),
        ("9" * 5000, None),
        ([1], None),
    ],
)
def test_record_timestamps_are_read_or_dropped_never_fatal(
    raw: object, expected: float | None
) -> None:
    # A timestamp is metadata: an unreadable one is dropped and the message's content kept.
    message = message_from_dict({"role": "user", "content": "hi", "timestamp": raw})
    assert message.content == "hi"
    assert getattr(message, "timestamp", None) == expected


@given(
    st.one_of(
        st.none(),
        st.integers(),
        st.floats(),
        st.binary(),
        st.booleans(),
        st.lists(st.text(), max_size=2),
        st.dictionaries(st.text(), st.text()),
    )
)
def test_no_non_str_text_gets_in(value: object) -> None:
    with pytest.raises(MessageError, match=r"^TextBlock\.text must be a str, not "):
        TextBlock(value)  # type: ignore[arg-type]
    with pytest.raises(MessageError, match=r"^ThinkingBlock\.thinking must be a str, not "):
        ThinkingBlock(value)  # type: ignore[arg-type]


@given(st.text())
def test_any_str_text_is_taken_and_estimated(value: str) -> None:
    assert estimate_tokens([UserMessage([TextBlock(value)])]) >= 0


@pytest.mark.parametrize(
    "line",
    [
        '{"role": "assistant", "content": "ok", "usage": {"input": 1e400}}',
        '{"role": "assistant", "content": "ok", "usage": {"output": "' + "9" * 5001 + '"}}',
        '{"role": "assistant", "content": "ok", "usage": {"input": 1.5}}',
        '{"role": "assistant", "content": "ok", "usage": {"cacheRead": [1]}}',
        '{"role": "user", "content": "d", "digest": {"covered": "many"}}',
        '{"role": "user", "content": "d", "digest": {"covered": 3, "kept": NaN}}',
        '{"role": "compactionSummary", "summary": "s", "tokensBefore": -Infinity}',
    ],
)
def test_absurd_counts_in_records_are_message_errors(line: str) -> None:
    import json

    with pytest.raises(MessageError, match=r"must be a whole number, not \S+$"):
        message_from_dict(json.loads(line))


def test_counts_in_records_still_read_whole_floats_and_digit_strings() -> None:
    msg = message_from_dict(
        {"role": "assistant", "content": "ok", "usage": {"input": 12.0, "output": "7"}}
    )
    assert msg.usage is not None  # type: ignore[union-attr]
    assert (msg.usage.input_tokens, msg.usage.output_tokens) == (12, 7)  # type: ignore[union-attr]
