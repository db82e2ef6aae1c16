from __future__ import annotations

import pytest

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
    Usage,
    UserMessage,
)
from window_budget.errors import MessageError
from window_budget.messages import message_from_dict, message_text, message_to_dict, tool_call_ids


def test_content_sequences_become_tuples_and_roles_are_fixed() -> None:
    msg = UserMessage([TextBlock("a"), ImageBlock("xx", "image/jpeg")])
    assert isinstance(msg.content, tuple)
    assert msg.role == "user"
    assert AssistantMessage("x").role == "assistant"
    assert ToolResultMessage("c", "t", "out").role == "toolResult"
    assert BashExecutionMessage("ls", "").role == "bashExecution"
    assert CustomMessage("k", "v").role == "custom"
    assert BranchSummaryMessage("s").role == "branchSummary"
    assert CompactionSummaryMessage("s").role == "compactionSummary"


@pytest.mark.parametrize("bad", [42, None, b"bytes", [TextBlock("ok"), "not a block"]])
def test_bad_content_is_rejected_with_a_sentence(bad: object) -> None:
    with pytest.raises(MessageError, match="UserMessage content"):
        UserMessage(bad)  # type: ignore[arg-type]


def test_usage_validates_and_sums() -> None:
    u = Usage(100, 20, cache_read_tokens=5, cache_creation_tokens=7)
    assert u.prompt_tokens == 112
    assert u.context_tokens == 132
    with pytest.raises(MessageError, match="input_tokens"):
        Usage(-1, 0)
    with pytest.raises(MessageError, match="must be a Usage"):
        AssistantMessage("x", usage={"input": 1})  # type: ignore[arg-type]


def test_messages_are_frozen() -> None:
    msg = UserMessage("hi")
    with pytest.raises(AttributeError):
        msg.content = "changed"  # type: ignore[misc]


def test_text_and_tool_call_ids() -> None:
    msg = AssistantMessage(
        [
            ThinkingBlock("plan"),
            TextBlock("doing"),
            ToolCallBlock("c1", "bash", {"command": "ls"}),
            ToolCallBlock("c2", "read", {"path": "a"}),
        ]
    )
    assert message_text(msg) == "doing"
    assert tool_call_ids(msg) == ("c1", "c2")
    assert message_text(BashExecutionMessage("ls", "a b")) == "ls\na b"
    assert message_text(CompactionSummaryMessage("old")) == "old"


@pytest.mark.parametrize(
    "msg",
    [
        UserMessage("hi", timestamp=1.5),
        UserMessage([TextBlock("a"), ImageBlock("ZGF0YQ==", "image/png")]),
        AssistantMessage(
            [
                ThinkingBlock("t", signature="sig"),
                TextBlock("x"),
                ToolCallBlock("c", "bash", {"command": "ls"}),
            ],
            usage=Usage(10, 2, 3, 4),
            model="m1",
            stop_reason="toolUse",
        ),
        ToolResultMessage("c", "bash", "out", is_error=True),
        BashExecutionMessage("make", "ok", exit_code=2, cancelled=False, truncated=True),
        CustomMessage("note", "text", display=False, details={"k": 1}),
        BranchSummaryMessage("s", from_id="e1"),
        CompactionSummaryMessage("s", tokens_before=99),
    ],
)
def test_dict_round_trip(msg: object) -> None:
    assert message_from_dict(message_to_dict(msg)) == msg  # type: ignore[arg-type]


def test_unknown_role_round_trips_as_opaque() -> None:
    back = message_from_dict({"role": "systemNote", "serialized": '{"a":1}'})
    assert back.role == "systemNote"
    assert message_to_dict(back)["role"] == "systemNote"


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ({"role": "user"}, "missing 'content'"),
        ({"role": "toolResult", "content": "x"}, "missing 'toolCallId'"),
        ({"role": "assistant", "content": [{"type": "video"}]}, "unknown block type"),
        ({"content": "x"}, "non-empty string 'role'"),
        ([1, 2], "JSON object"),
    ],
)
def test_from_dict_errors_say_what_is_wrong(raw: object, match: str) -> None:
    with pytest.raises(MessageError, match=match):
        message_from_dict(raw)  # type: ignore[arg-type]


def test_digest_message_is_a_user_message_that_round_trips() -> None:
    from window_budget import DigestMessage
    from window_budget.digest import SESSION_HEADER, is_digest

    d = DigestMessage(f"{SESSION_HEADER}\n\nbody", covered_count=12, kept_count=5, fallback=True)
    assert isinstance(d, UserMessage)
    assert d.role == "user"
    assert is_digest(d)
    raw = message_to_dict(d)
    assert raw["digest"] == {"covered": 12, "kept": 5, "fallback": True}
    assert message_from_dict(raw) == d
