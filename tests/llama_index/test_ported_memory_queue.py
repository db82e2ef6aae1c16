"""LlamaIndex's ``Memory`` tests, ported to ``WindowBudgetMemory`` (see
``test_ported_memory.py`` for the rules of the port and what is not ported)."""

from __future__ import annotations

import pytest
from llama_index.core.base.llms.types import ImageBlock, ThinkingBlock, ToolCallBlock
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.storage.chat_store import SimpleChatStore

from llama_index.memory.window_budget import WindowBudgetMemory
from llama_index.memory.window_budget.archive_pack import unpack

from .test_ported_memory import LIMIT, design

# ============================================================== Memory (19 tests)


@pytest.fixture
def memory() -> WindowBudgetMemory:
    return WindowBudgetMemory.from_defaults(token_limit=1000, chat_store_key="test_user")


def test_memory_initialization(memory: WindowBudgetMemory) -> None:
    assert memory.token_limit == 1000
    assert memory.chat_store_key == "test_user"


def test_memory_estimate_token_count_text(memory: WindowBudgetMemory) -> None:
    short = memory.count_tokens([ChatMessage(role="user", content="Test message")])
    long = memory.count_tokens([ChatMessage(role="user", content="Test message " * 20)])
    assert 0 < short < long


def test_memory_estimate_token_count_image(memory: WindowBudgetMemory) -> None:
    # A fixed estimate per image (the core's 1,024, Memory's 256), whatever the URL.
    one = ChatMessage(role="user", blocks=[ImageBlock(url="http://example.com/image.jpg")])
    other = ChatMessage(role="user", blocks=[ImageBlock(url="http://example.com/i.png")])
    assert memory.count_tokens([one]) >= 1024
    assert abs(memory.count_tokens([one]) - memory.count_tokens([other])) < 10


def test_memory_estimate_token_count_tool_call(memory: WindowBudgetMemory) -> None:
    block = ToolCallBlock(tool_call_id="c1", tool_name="search", tool_kwargs={"q": "word " * 50})
    count = memory.count_tokens([ChatMessage(role="assistant", blocks=[block])])
    assert count > memory.count_tokens([ChatMessage(role="assistant", content="")]) + 50


def test_memory_estimate_token_count_thinking(memory: WindowBudgetMemory) -> None:
    block = ThinkingBlock(content="let me reason about this carefully " * 10)
    count = memory.count_tokens([ChatMessage(role="assistant", blocks=[block])])
    assert count > memory.count_tokens([ChatMessage(role="assistant", content="")]) + 20


async def test_memory_manage_queue_flushes_large_tool_calls() -> None:
    memory = WindowBudgetMemory.from_defaults(token_limit=LIMIT, tokenizer_fn=str.split)
    big_args = {"query": "word " * 200}
    for i in range(10):
        await memory.aput(ChatMessage(role="user", content="hi"))
        await memory.aput(
            ChatMessage(
                role="assistant",
                blocks=[ToolCallBlock(tool_call_id=f"c{i}", tool_name="s", tool_kwargs=big_args)],
            )
        )
    assert len(await memory.aget_all()) < 20


async def test_memory_manage_queue_under_limit(memory: WindowBudgetMemory) -> None:
    await memory.aput_messages([ChatMessage(role="user", content="Short message")])
    current = await memory.aget()
    assert [m.content for m in current] == ["Short message"]


async def test_memory_manage_queue_over_limit(memory: WindowBudgetMemory) -> None:
    await memory.aput_messages(
        [
            ChatMessage(role="user", content="x " * 500),
            ChatMessage(role="assistant", content="y " * 500),
            ChatMessage(role="user", content="z " * 500),
        ]
    )
    current = await memory.aget()
    assert "z " in (current[-1].content or "")
    assert memory.count_tokens(current) <= memory.token_limit


@design("the folded turns come back as a digest (and its acknowledgement), not dropped")
async def test_memory_manage_queue_over_limit_one_message(memory: WindowBudgetMemory) -> None:
    await memory.aput_messages(
        [
            ChatMessage(role="user", content="x " * 500),
            ChatMessage(role="assistant", content="y " * 500),
            ChatMessage(role="user", content="z " * 500),
        ]
    )
    assert len(await memory.aget()) == 1


async def test_memory_aput(memory: WindowBudgetMemory) -> None:
    await memory.aput(ChatMessage(role="user", content="New message"))
    assert [m.content for m in await memory.aget()] == ["New message"]


async def test_memory_aput_messages(memory: WindowBudgetMemory) -> None:
    await memory.aput_messages(
        [
            ChatMessage(role="user", content="Message 1"),
            ChatMessage(role="assistant", content="Response 1"),
        ]
    )
    assert [m.content for m in await memory.aget()] == ["Message 1", "Response 1"]


async def test_memory_aset(memory: WindowBudgetMemory) -> None:
    await memory.aset(
        [
            ChatMessage(role="user", content="Message 1"),
            ChatMessage(role="assistant", content="Response 1"),
        ]
    )
    assert [m.content for m in await memory.aget()] == ["Message 1", "Response 1"]


async def test_memory_aget_all(memory: WindowBudgetMemory) -> None:
    await memory.aput_messages(
        [
            ChatMessage(role="user", content="Message 1"),
            ChatMessage(role="assistant", content="Response 1"),
        ]
    )
    assert [m.content for m in await memory.aget_all()] == ["Message 1", "Response 1"]


async def test_memory_areset(memory: WindowBudgetMemory) -> None:
    await memory.aput(ChatMessage(role="user", content="New message"))
    await memory.areset()
    assert await memory.aget() == []


async def test_memory_manage_queue_first_message_must_be_user() -> None:
    memory = WindowBudgetMemory.from_defaults(token_limit=LIMIT)
    await memory.aput_messages(
        [ChatMessage(role="user", content="x " * 300), ChatMessage(role="assistant", content="ok")]
    )
    current = await memory.aget()
    assert current
    assert current[0].role == MessageRole.USER


async def test_memory_manage_queue_preserves_conversation_turn() -> None:
    memory = WindowBudgetMemory.from_defaults(token_limit=LIMIT)
    await memory.aput_messages(
        [
            ChatMessage(role="user", content="a " * 120),
            ChatMessage(role="assistant", content="b " * 120),
            ChatMessage(role="user", content="c " * 120),
            ChatMessage(role="assistant", content="d " * 120),
        ]
    )
    current = await memory.aget()
    assert len(current) >= 2
    assert current[0].role == MessageRole.USER
    for i in range(len(current) - 1):
        if current[i].role == MessageRole.USER:
            assert current[i + 1].role in (MessageRole.ASSISTANT, MessageRole.TOOL)


async def test_memory_manage_queue_with_tool_messages() -> None:
    memory = WindowBudgetMemory.from_defaults(token_limit=LIMIT)
    await memory.aput_messages(
        [
            ChatMessage(role="user", content="a " * 100),
            ChatMessage(
                role="assistant",
                blocks=[ToolCallBlock(tool_call_id="t", tool_name="f", tool_kwargs={})],
            ),
            ChatMessage(role="tool", content="c " * 100, additional_kwargs={"tool_call_id": "t"}),
            ChatMessage(role="assistant", content="d " * 100),
        ]
    )
    current = await memory.aget()
    assert current
    assert current[0].role == MessageRole.USER
    for i, m in enumerate(current):
        if m.role == MessageRole.TOOL:
            assert i > 0
            assert current[i - 1].role in (MessageRole.ASSISTANT, MessageRole.TOOL)


async def test_memory_manage_queue_only_tool_message_remaining() -> None:
    memory = WindowBudgetMemory.from_defaults(token_limit=LIMIT)
    await memory.aput_messages(
        [
            ChatMessage(role="user", content="x " * 300),
            ChatMessage(
                role="assistant",
                blocks=[ToolCallBlock(tool_call_id="t", tool_name="call", tool_kwargs={})],
            ),
            ChatMessage(role="tool", content="result", additional_kwargs={"tool_call_id": "t"}),
        ]
    )
    current = await memory.aget()
    if current:
        assert current[0].role == MessageRole.USER


# --------------------------------------------- Memory with a custom chat store (5)


async def test_memory_accepts_custom_chat_store() -> None:
    store = SimpleChatStore()  # any BaseChatStore (Memory: any AsyncDBChatStore)
    memory = WindowBudgetMemory.from_defaults(
        token_limit=1000, chat_store=store, chat_store_key="test_user"
    )
    await memory.aput_messages(
        [
            ChatMessage(role="user", content="Message 1"),
            ChatMessage(role="assistant", content="Response 1"),
        ]
    )
    assert [m.content for m in await memory.aget()] == ["Message 1", "Response 1"]
    assert memory.chat_store is store
    assert len(store.get_messages("test_user")) == 2


async def test_memory_from_defaults_with_custom_chat_store() -> None:
    store = SimpleChatStore()
    memory = WindowBudgetMemory.from_defaults(
        [ChatMessage(role="user", content="Seeded")], chat_store=store, chat_store_key="u"
    )
    assert memory.chat_store is store
    assert [m.content for m in await memory.aget()] == ["Seeded"]


async def test_memory_waterfall_archives_into_custom_chat_store() -> None:
    store = SimpleChatStore()
    memory = WindowBudgetMemory.from_defaults(
        token_limit=1000, chat_store=store, chat_store_key="test_user"
    )
    await memory.aput_messages(
        [
            ChatMessage(role="user", content="x " * 500),
            ChatMessage(role="assistant", content="y " * 500),
            ChatMessage(role="user", content="z " * 500),
        ]
    )
    current = await memory.aget()
    assert "z " in (current[-1].content or "")
    # Archived into the given store (packed there: one entry for the compaction).
    entries = store.get_messages(memory.archive_key)
    assert len(unpack(store, memory.archive_key, entries)) == 2


async def test_memory_concurrent_aput_does_not_over_archive() -> None:
    import asyncio

    def seeds() -> list[ChatMessage]:
        return [ChatMessage(role="user", content=f"seed{i} " + "word " * 40) for i in range(6)]

    def new(name: str) -> ChatMessage:
        return ChatMessage(role="user", content=f"{name} " + "word " * 40)

    sequential = WindowBudgetMemory.from_defaults(seeds(), token_limit=LIMIT)
    await sequential.aput(new("newA"))
    await sequential.aput(new("newB"))
    concurrent = WindowBudgetMemory.from_defaults(seeds(), token_limit=LIMIT)
    await asyncio.gather(concurrent.aput(new("newA")), concurrent.aput(new("newB")))
    every = [m.content for m in await concurrent.aget_all(include_archived=True)]
    assert sorted(every) == sorted(
        m.content for m in await sequential.aget_all(include_archived=True)
    )
    assert len(every) == 8  # nothing archived twice, nothing lost


def test_memory_sync_put_works_across_event_loops() -> None:
    memory = WindowBudgetMemory.from_defaults(token_limit=1000)
    memory.put(ChatMessage(role="user", content="one"))
    memory.put(ChatMessage(role="user", content="two"))
    assert [m.content for m in memory.get_all()] == ["one", "two"]
