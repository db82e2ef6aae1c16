from __future__ import annotations

from llama_index.core.base.llms.types import (
    AudioBlock,
    ChatMessage,
    CitableBlock,
    CitationBlock,
    ImageBlock,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.tools import ToolSelection

from llama_index.memory.window_budget import to_core
from llama_index.memory.window_budget.convert import split_pinned, tool_calls_of
from window_budget.budget import estimate_message_tokens
from window_budget.messages import (
    AssistantMessage,
    CustomMessage,
    ToolResultMessage,
    UserMessage,
)


def tokens(msg: ChatMessage) -> int:
    return estimate_message_tokens(to_core(msg))


def test_every_role_maps() -> None:
    expected = {
        MessageRole.USER: UserMessage,
        MessageRole.ASSISTANT: AssistantMessage,
        MessageRole.CHATBOT: AssistantMessage,
        MessageRole.MODEL: AssistantMessage,
        MessageRole.TOOL: ToolResultMessage,
        MessageRole.FUNCTION: ToolResultMessage,
        MessageRole.SYSTEM: CustomMessage,
        MessageRole.DEVELOPER: CustomMessage,
    }
    assert set(expected) == set(MessageRole)
    for role, kind in expected.items():
        core = to_core(ChatMessage(role=role, content="hello there"))
        assert isinstance(core, kind), role
        assert estimate_message_tokens(core) > 4


def test_tool_call_counted_once_with_block_and_kwargs() -> None:
    block = ToolCallBlock(tool_call_id="c1", tool_name="search", tool_kwargs={"q": "x" * 400})
    raw = {
        "id": "c1",
        "type": "function",
        "function": {"name": "search", "arguments": '{"q": "' + "x" * 400 + '"}'},
    }
    only_block = ChatMessage(role="assistant", blocks=[block])
    both = ChatMessage(role="assistant", blocks=[block], additional_kwargs={"tool_calls": [raw]})
    only_kwargs = ChatMessage(role="assistant", content="", additional_kwargs={"tool_calls": [raw]})
    assert len(tool_calls_of(both)) == 1
    assert tokens(both) == tokens(only_block)
    # Arguments cost tokens even with no text content at all.
    assert tokens(only_kwargs) > 100
    assert len(tool_calls_of(only_kwargs)) == 1


def test_tool_selection_in_kwargs_is_counted() -> None:
    sel = ToolSelection(tool_id="t9", tool_name="calc", tool_kwargs={"expr": "1+1" * 100})
    msg = ChatMessage(role="assistant", content="", additional_kwargs={"tool_calls": [sel]})
    (call,) = tool_calls_of(msg)
    assert (call.id, call.name) == ("t9", "calc")
    assert tokens(msg) > 80


def test_tool_result_keeps_call_id() -> None:
    msg = ChatMessage(
        role="tool", content="42", additional_kwargs={"tool_call_id": "c1", "name": "calc"}
    )
    core = to_core(msg)
    assert isinstance(core, ToolResultMessage)
    assert (core.tool_call_id, core.tool_name) == ("c1", "calc")


def test_thinking_image_citation_and_unknown_content_counted() -> None:
    plain = tokens(ChatMessage(role="assistant", content="ok"))
    thinking = ChatMessage(
        role="assistant", blocks=[ThinkingBlock(content="t" * 720), TextBlock(text="ok")]
    )
    assert tokens(thinking) >= plain + 200
    image = ChatMessage(
        role="user", blocks=[ImageBlock(url="https://x/y.png"), TextBlock(text="what is this")]
    )
    assert tokens(image) >= 1024
    cite = ChatMessage(
        role="assistant",
        blocks=[
            CitationBlock(
                cited_content="a quoted passage " * 20,
                source="doc.pdf",
                title="Doc",
                additional_location_info={"page": 1},
            )
        ],
    )
    assert tokens(cite) > 80
    citable = ChatMessage(
        role="user", blocks=[CitableBlock(content="source text " * 30, source="s", title="t")]
    )
    assert tokens(citable) > 80
    audio = ChatMessage(role="user", blocks=[AudioBlock(audio=b"\x00" * 64, format="wav")])
    assert tokens(audio) >= 1024


def test_unknown_additional_kwargs_are_counted() -> None:
    bare = tokens(ChatMessage(role="assistant", content="ok"))
    extra = tokens(
        ChatMessage(role="assistant", content="ok", additional_kwargs={"provider_state": "s" * 360})
    )
    assert extra >= bare + 100


def test_split_pinned_counts_leading_system_messages() -> None:
    msgs = [
        ChatMessage(role="system", content="a"),
        ChatMessage(role="developer", content="b"),
        ChatMessage(role="user", content="c"),
        ChatMessage(role="system", content="d"),
    ]
    assert split_pinned(msgs) == 2


def test_idless_block_and_kwargs_entry_with_id_count_once() -> None:
    raw = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"q": "x"}'},
    }
    msg = ChatMessage(
        role="assistant",
        blocks=[ToolCallBlock(tool_call_id=None, tool_name="lookup", tool_kwargs={"q": "x"})],
        additional_kwargs={"tool_calls": [raw]},
    )
    assert len(tool_calls_of(msg)) == 1
    other = {"id": "call_2", "function": {"name": "other", "arguments": "{}"}}
    msg.additional_kwargs["tool_calls"].append(other)
    assert [c.name for c in tool_calls_of(msg)] == ["lookup", "other"]


def test_shortened_copy_keeps_block_structure() -> None:
    from llama_index.memory.window_budget.convert import from_core_shortened
    from window_budget.pipeline import shorten_message

    original = ChatMessage(
        role="assistant",
        blocks=[
            ThinkingBlock(content="think " * 1000),
            TextBlock(text="do it"),
            ToolCallBlock(tool_call_id="c1", tool_name="f", tool_kwargs={"a": 1}),
            ImageBlock(url="https://example.com/a.png", image_mimetype="image/png"),
        ],
    )
    core = to_core(original)
    short = shorten_message(core, 200)
    view = from_core_shortened(original, short)
    kinds = [type(b).__name__ for b in view.blocks]
    assert kinds == ["ThinkingBlock", "TextBlock", "ToolCallBlock", "TextBlock"]
    assert "removed by window-budget" in view.blocks[0].content
    assert view.blocks[1].text == "do it"
    assert "image" in view.blocks[3].text  # the core's placeholder, as it measured
    assert estimate_message_tokens(to_core(view)) == estimate_message_tokens(short)
    assert original.blocks[0].content == "think " * 1000  # the original is untouched


def test_signed_thinking_is_never_shortened() -> None:
    from llama_index.memory.window_budget.convert import from_core_shortened
    from window_budget.pipeline import shorten_message

    signed = ThinkingBlock(content="plan " * 500, additional_information={"signature": "SIG"})
    original = ChatMessage(role="assistant", blocks=[signed, TextBlock(text="text " * 2000)])
    view = from_core_shortened(original, shorten_message(to_core(original), 1000))
    assert view.blocks[0] == signed
    assert "removed by window-budget" in view.blocks[1].text


def test_is_digest_recognises_only_a_sealed_record() -> None:
    from llama_index.core.base.llms.types import ChatMessage as Chat

    import llama_index.memory.window_budget as lwb
    from window_budget.bridge import RECORD_KEY, digest_record
    from window_budget.messages import DigestMessage

    record = digest_record(DigestMessage("[session digest]\n\nbody", covered_count=3))
    text = "[session digest]\n\nbody"
    assert lwb.is_digest(Chat(role="user", content=text, additional_kwargs={RECORD_KEY: record}))
    # A record sealed for another text, or an unsealed flag anyone can write, is no digest.
    assert not lwb.is_digest(Chat(role="user", content="x", additional_kwargs={RECORD_KEY: record}))
    assert not lwb.is_digest(
        Chat(role="user", content=text, additional_kwargs={"window_budget_digest": True})
    )
    assert not lwb.is_digest(Chat(role="user", content="[session digest]\n\ntyped by a user"))
