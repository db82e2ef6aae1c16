"""Issue 24, LlamaIndex part: built, read at the limit and saved as the peers are.

``from_defaults()`` with no argument, positionally and under ``Settings``; the one-word
swap from ``ChatMemoryBuffer`` in ``SimpleChatEngine``, ``CondensePlusContextChatEngine``
and a ``FunctionAgent``; ``get(initial_token_count=token_limit)``; ``to_dict`` /
``from_dict`` of the LLM, a ``tokenizer_fn`` and the archive store.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core import Settings
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.chat_engine import CondensePlusContextChatEngine, SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import ChatMemoryBuffer, ChatSummaryMemoryBuffer
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.storage.chat_store import SimpleChatStore
from llama_index.core.tools import FunctionTool
from llama_index.core.utils import get_tokenizer

from llama_index.memory.window_budget import WindowBudgetMemory, bounded_tool, is_digest

from .conftest import ScriptedLLM, fill

pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")

PEERS = [ChatMemoryBuffer, WindowBudgetMemory]


@pytest.fixture
def settings() -> Iterator[type[Settings]]:  # type: ignore[valid-type]
    """LlamaIndex's ``Settings`` as a fresh process has them, restored afterwards."""
    saved = Settings._llm, Settings._prompt_helper
    Settings._llm, Settings._prompt_helper = None, None
    try:
        yield Settings
    finally:
        Settings._llm, Settings._prompt_helper = saved


def history(turns: int) -> list[ChatMessage]:
    out = []
    for i in range(turns):
        out.append(ChatMessage(role="user", content=f"question {i} " + "please " * 30))
        out.append(ChatMessage(role="assistant", content=f"answer {i} " + "sure " * 30))
    return out


# ------------------------------------------------------ item 8: construction


def test_no_argument_gives_chat_memory_buffers_limit(settings: Any) -> None:
    # Settings untouched: ChatMemoryBuffer's 3,000 tokens (ChatSummaryMemoryBuffer's 2,000
    # is its verbatim part only; Memory's 30,000 would overflow LlamaIndex's own default
    # 3,900-token window).
    memory = WindowBudgetMemory.from_defaults()
    assert memory.token_limit == ChatMemoryBuffer.from_defaults().token_limit == 3000
    fill(memory, 60)
    assert memory.count_tokens(memory.get()) <= 3000
    assert is_digest(memory.get_all()[0])


def test_settings_context_window_is_respected(settings: Any) -> None:
    settings.context_window = 8192
    memory = WindowBudgetMemory.from_defaults()
    assert memory.context_window == 8192 - settings.num_output
    # 75 % of it, as ChatMemoryBuffer takes 75 % of an LLM's window.
    assert memory.token_limit == int(0.75 * memory.context_window)


def test_settings_llm_gives_the_window_and_writes_no_digest(settings: Any) -> None:
    llm = ScriptedLLM(window=8000, output=1000)
    settings.llm = llm
    memory = WindowBudgetMemory.from_defaults()
    assert memory.context_window == WindowBudgetMemory.from_defaults(llm=llm).context_window
    assert memory.llm is None
    for m in history(80):
        memory.put(m)
    assert is_digest(memory.get_all()[0])
    assert llm.summary_prompts == []  # a digest call is spend the caller asks for


def test_settings_leaving_no_room_is_one_sentence(settings: Any) -> None:
    settings.context_window, settings.num_output = 500, 500
    with pytest.raises(
        ValueError, match=r"Settings\.context_window 500 minus Settings\.num_output"
    ):
        WindowBudgetMemory.from_defaults()


@pytest.mark.parametrize("peer", [ChatMemoryBuffer, ChatSummaryMemoryBuffer, WindowBudgetMemory])
def test_positional_arguments_are_chat_memory_buffers(peer: Any) -> None:
    store = SimpleChatStore()
    memory = peer.from_defaults(history(2), None, store, "k", 1500, get_tokenizer())
    assert memory.token_limit == 1500
    assert [m.content for m in store.get_messages("k")] == [m.content for m in history(2)]
    assert len(peer.from_defaults(history(1)).get()) == 2


@pytest.mark.parametrize(
    ("chat_history", "message"),
    [
        (MockLLM(), "chat_history must be a list of ChatMessage, got the LLM MockLLM"),
        ("hello", "chat_history must be a list of ChatMessage, got str"),
        ([ChatMessage(content="a"), {"role": "user"}], r"chat_history\[1\] must be a ChatMessage"),
    ],
)
def test_bad_chat_history_is_one_sentence(chat_history: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        WindowBudgetMemory.from_defaults(chat_history)


@pytest.mark.parametrize("peer", PEERS)
def test_one_word_swap_in_simple_chat_engine(peer: Any) -> None:
    # The engine builds the memory itself: from_defaults(chat_history=..., token_limit=...).
    llm = ScriptedLLM(window=3000)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory_cls=peer, system_prompt="Be terse.")
    # ChatMemoryBuffer counts words of text only and overflows the (heuristic) window.
    for i in range(60 if peer is WindowBudgetMemory else 8):
        engine.chat(f"turn {i}: " + "tell me more " * 25)
    assert max(llm.sizes) <= llm.window
    if peer is WindowBudgetMemory:
        memory = engine._memory
        assert is_digest(memory.get_all()[0])
        assert len(memory.get_all(include_archived=True)) == 120


class NotesRetriever(BaseRetriever):
    """Two fixed notes: the engine's retrieved context, without an index."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        notes = [f"note {i}: the retry budget is {i} seconds" for i in range(2)]
        return [NodeWithScore(node=TextNode(text=text), score=1.0) for text in notes]


def retriever() -> BaseRetriever:
    return NotesRetriever()


@pytest.mark.parametrize("peer", PEERS)
async def test_one_word_swap_in_condense_plus_context_engine(peer: Any) -> None:
    llm = ScriptedLLM(window=4000)
    memory = peer.from_defaults(llm=llm, token_limit=1500)
    engine = CondensePlusContextChatEngine.from_defaults(retriever(), llm=llm, memory=memory)
    for i in range(40):
        await engine.achat(f"turn {i}: what is the retry budget? " + "please " * 20)
    assert max(llm.sizes) <= llm.window
    assert memory.count_tokens(memory.get()) <= 1500 if peer is WindowBudgetMemory else True
    if peer is WindowBudgetMemory:
        assert is_digest(memory.get_all()[0])


def search_logs(query: str) -> str:
    """Search the service logs."""
    return f"matches for {query}: " + "line " * 3000


def tool_calling_model() -> MockFunctionCallingLLM:
    """LlamaIndex's mock function-calling LLM, scripted to call the tool on every question."""
    ids = itertools.count()

    def respond(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        if kwargs.get("tools") and messages[-1].role == MessageRole.USER:
            call = ToolCallBlock(
                tool_call_id=f"c{next(ids)}", tool_name="search_logs", tool_kwargs={"query": "x"}
            )
            return ChatMessage(role="assistant", blocks=[call])
        return ChatMessage(role="assistant", content="It timed out.")

    return MockFunctionCallingLLM(response_generator=respond)


@pytest.mark.parametrize("peer", PEERS)
async def test_one_word_swap_in_a_function_agent(peer: Any) -> None:
    llm = tool_calling_model()
    memory = peer.from_defaults(token_limit=1500)
    tool = bounded_tool(FunctionTool.from_defaults(search_logs), max_tokens=300)
    agent = FunctionAgent(tools=[tool], llm=llm, streaming=False)
    for i in range(20):
        await agent.run(user_msg=f"why did job {i} fail?", memory=memory, max_iterations=4)
    everything = (
        memory.get_all(include_archived=True) if peer is WindowBudgetMemory else memory.get_all()
    )
    results = [m for m in everything if m.role == MessageRole.TOOL]
    assert len(results) == 20  # the tool was called on every run, bounded
    assert all("removed by window-budget" in (m.content or "") for m in results)
    if peer is WindowBudgetMemory:
        assert memory.count_tokens(memory.get()) <= memory.token_limit
        assert is_digest(memory.get_all()[0])


# --------------------------------------------------- item 9: get at the limit


async def test_initial_token_count_at_the_limit_returns_no_history(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # As ChatMemoryBuffer's tests ("the history should be empty"); this raised BudgetError.
    memory = WindowBudgetMemory.from_defaults(token_limit=500)
    fill(memory, 3)
    stored = memory.get_all()
    with caplog.at_level(logging.WARNING):
        assert memory.get(initial_token_count=500) == []
        assert await memory.aget(initial_token_count=500) == []
    assert "initial_token_count 500 leaves no room" in caplog.text
    assert memory.get_all() == stored


def test_a_system_prompt_filling_the_limit_does_not_break_the_engine() -> None:
    llm = ScriptedLLM(window=3000)
    memory = WindowBudgetMemory.from_defaults(token_limit=600)
    prompt = "rule " * 2000
    while len(memory.tokenizer_fn(prompt)) > memory.token_limit:
        prompt = prompt[:-5]
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt=prompt)
    engine.chat("hello")  # raised BudgetError before
    assert memory.get_all()[0].content == "hello"


# ------------------------------------------------------ item 10: saving


def saved_elsewhere(memory: WindowBudgetMemory) -> dict[str, Any]:
    """``to_dict`` as another process reads it: through JSON, the saver not alive there."""
    data = json.loads(json.dumps(memory.to_dict()))
    data["instance"] = "0" * 32
    return data


def test_a_recognized_llm_round_trips_as_llama_index_loads_it() -> None:
    memory = WindowBudgetMemory.from_defaults(llm=MockLLM(max_tokens=7), context_window=2000)
    again = WindowBudgetMemory.from_dict(saved_elsewhere(memory))
    assert type(again.llm) is MockLLM
    assert again.llm.max_tokens == 7
    assert again.llm is not memory.llm


class KeyedLLM(MockLLM):
    api_key: str = "sk-secret"
    api_base: str = "https://llm.example"

    @classmethod
    def class_name(cls) -> str:
        return "KeyedLLM"


def test_keys_and_endpoints_are_never_written_nor_read() -> None:
    memory = WindowBudgetMemory.from_defaults(llm=KeyedLLM(), context_window=2000)
    text = memory.to_string()
    assert "sk-secret" not in text
    assert "llm.example" not in text
    data = saved_elsewhere(memory)
    assert data["llm_config"]["class_name"] == "KeyedLLM"
    with pytest.raises(ValueError, match="the LLM"):  # not a class LlamaIndex loads
        WindowBudgetMemory.from_dict(data)
    data["llm_config"] = {"class_name": "MockLLM", "max_tokens": 3, "api_base": "https://x"}
    assert WindowBudgetMemory.from_dict(data).llm.max_tokens == 3


def test_tokenizer_fn_round_trips_as_chat_memory_buffers() -> None:
    words = str.split
    theirs = ChatMemoryBuffer.from_dict(ChatMemoryBuffer.from_defaults(tokenizer_fn=words).dict())
    assert theirs.tokenizer_fn is get_tokenizer()  # the peer: LlamaIndex's tokenizer
    ours = WindowBudgetMemory.from_defaults(token_limit=800, tokenizer_fn=words)
    fill(ours, 2)
    named = WindowBudgetMemory.from_defaults(token_limit=800, counter="llama_index")
    again = WindowBudgetMemory.from_dict(saved_elsewhere(ours))
    assert again.count_tokens(again.get_all()) == named.count_tokens(ours.get_all())
    kept = WindowBudgetMemory.from_dict(saved_elsewhere(ours), tokenizer_fn=words)
    assert kept.count_tokens(kept.get_all()) == ours.count_tokens(ours.get_all())
    tiktoken = WindowBudgetMemory.from_defaults(token_limit=800, tokenizer_fn=get_tokenizer())
    assert tiktoken.to_dict()["counter"] == "llama_index"


def test_a_separate_archive_store_round_trips() -> None:
    memory = WindowBudgetMemory.from_defaults(context_window=1500, archive_store=SimpleChatStore())
    fill(memory, 30)
    assert memory.archive_store is not None
    assert memory.archive_store.get_messages(memory.archive_key)
    again = WindowBudgetMemory.from_dict(saved_elsewhere(memory))
    assert isinstance(again.archive_store, SimpleChatStore)
    assert again.archive_store is not again.chat_store
    assert again.get_all(include_archived=True) == memory.get_all(include_archived=True)
    # The conversation, and the key its digests are sealed with (they were resealed under it).
    assert sorted(again.chat_store.get_keys()) == [memory.chat_store_key, "window_budget:_key"]


def test_saved_digests_verify_where_restored_and_edited_ones_do_not() -> None:
    memory = WindowBudgetMemory.from_defaults(context_window=1500)
    fill(memory, 30)
    data = saved_elsewhere(memory)
    digest = next(m for m in data["messages"] if "window_budget" in m["additional_kwargs"])
    assert is_digest(WindowBudgetMemory.from_dict(data).get_all()[0])
    record = digest["additional_kwargs"]["window_budget"]
    covered, record["covered"] = record["covered"], 2**53 - 1  # edited in the data
    edited = WindowBudgetMemory.from_dict(data)
    assert not any(is_digest(m) for m in edited.get_all())
    record["covered"] = covered
    again = WindowBudgetMemory.from_dict(json.loads(json.dumps(data)))
    assert is_digest(again.get_all()[0])


def test_from_dict_refuses_unknown_keywords() -> None:
    data = WindowBudgetMemory.from_defaults(context_window=1500).to_dict()
    with pytest.raises(TypeError, match=r"from_dict\(\) takes .*; got lm"):
        WindowBudgetMemory.from_dict(data, lm=None)
