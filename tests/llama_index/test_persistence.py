"""Persistence as in LlamaIndex's memories: ``to_string``/``from_string``, pickling a memory
with an unpicklable tokenizer, and ``initial_token_count`` above the limit."""

from __future__ import annotations

import copy
import gc
import json
import logging
import pickle
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
from llama_index.core.llms import MockLLM
from llama_index.core.memory import ChatMemoryBuffer, ChatSummaryMemoryBuffer
from llama_index.core.storage.chat_store import SimpleChatStore
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context
from llama_index.storage.chat_store.sqlite import SQLiteChatStore

from llama_index.memory.window_budget import (
    ARCHIVE_SUFFIX,
    WindowBudgetMemory,
    is_digest,
)
from window_budget.errors import BudgetError

from .conftest import ScriptedLLM, fill, small_memory, user


def test_to_string_from_string_round_trip() -> None:
    llm = ScriptedLLM()
    memory = WindowBudgetMemory.from_defaults(llm=llm, context_window=2000, digest_role="pair")
    fill(memory, 30)
    text = memory.to_string()
    assert isinstance(text, str)
    again = WindowBudgetMemory.from_string(text, llm=llm)
    assert again.llm is llm
    assert again.digest_role == "pair"
    assert again.policy == memory.policy
    assert [m.model_dump() for m in again.get_all(include_archived=True)] == [
        m.model_dump() for m in memory.get_all(include_archived=True)
    ]
    assert [m.model_dump() for m in again.get()] == [m.model_dump() for m in memory.get()]
    assert is_digest(again.get_all()[0])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not a WindowBudgetMemory string: invalid JSON"),
        ('{"class_name": "ChatMemoryBuffer"}', "not a WindowBudgetMemory"),
        ('{"context_window": -5}', "context_window must be a positive int, got -5"),
        ('{"context_window": 2000, "digest_role": "tool"}', "digest_role must be one of"),
    ],
)
def test_bad_strings_are_one_clear_sentence(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        WindowBudgetMemory.from_string(text)


def test_string_from_before_digest_role_keeps_the_user_digest() -> None:
    memory = WindowBudgetMemory.from_defaults(context_window=2000)
    data = memory.to_dict()
    del data["digest_role"]
    assert WindowBudgetMemory.from_dict(data).digest_role == "user"


def test_pickling_a_lambda_counter_drops_it_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    memory = WindowBudgetMemory.from_defaults(
        context_window=2000, counter=lambda text: len(text) // 3
    )
    fill(memory, 5)
    with caplog.at_level(logging.WARNING):
        data = pickle.dumps(memory)
    assert "unpicklable counter" in caplog.text
    again = pickle.loads(data)
    assert [m.content for m in again.get_all()] == [m.content for m in memory.get_all()]
    heuristic = WindowBudgetMemory.from_defaults(context_window=2000)
    assert again.count_tokens(again.get_all()) == heuristic.count_tokens(memory.get_all())
    again.put(ChatMessage(role="user", content="still works"))
    assert again.get()[-1].content == "still works"


def test_pickling_a_tokenizer_fn_that_does_not_pickle(caplog: pytest.LogCaptureFixture) -> None:
    memory = WindowBudgetMemory.from_defaults(
        context_window=2000, tokenizer_fn=lambda text: text.split()
    )
    fill(memory, 2)
    with caplog.at_level(logging.WARNING):
        again = pickle.loads(pickle.dumps(memory))
    assert "unpicklable counter" in caplog.text
    assert len(again.get_all()) == 4


@pytest.mark.parametrize("peer", [ChatMemoryBuffer, ChatSummaryMemoryBuffer])
def test_initial_token_count_above_the_limit_raises_value_error_like_the_peers(peer: Any) -> None:
    kwargs = {"count_initial_tokens": True} if peer is ChatSummaryMemoryBuffer else {}
    theirs = peer.from_defaults(token_limit=500, **kwargs)
    fill(theirs, 1)
    with pytest.raises(ValueError, match="exceeds token limit"):
        theirs.get(initial_token_count=501)
    ours = WindowBudgetMemory.from_defaults(token_limit=500)
    fill(ours, 1)
    with pytest.raises(ValueError, match="initial_token_count 501 exceeds the token limit 500"):
        ours.get(initial_token_count=501)
    with pytest.raises(BudgetError):
        ours.get(initial_token_count=501)
    assert ours.get(initial_token_count=300)


async def test_async_initial_token_count_above_the_limit() -> None:
    ours = WindowBudgetMemory.from_defaults(token_limit=500)
    with pytest.raises(ValueError, match="exceeds the token limit"):
        await ours.aget(initial_token_count=10_000)


# ------------------------------------------------- an agent's Context, saved and restored


def lookup(q: str) -> str:
    """Look a fact up."""
    return f"facts about {q}: " + "detail " * 30


def sqlite_store(path: Path) -> SQLiteChatStore:
    return SQLiteChatStore.from_params(database=str(path))


def dispose(store: SQLiteChatStore) -> None:
    store._session.kw["bind"].dispose()  # the integration leaves its pool to the GC


def users_stored(store: SQLiteChatStore, key: str) -> list[str]:
    everything = [*store.get_messages(key + ARCHIVE_SUFFIX), *store.get_messages(key)]
    return [m.content or "" for m in everything if m.role == "user" and not is_digest(m)]


def questions(turns: range) -> list[str]:
    return [f"question {i}: " + "please look it up " * 15 for i in turns]


async def run_restored(agent: FunctionAgent, ctx: Context, memory: Any, turns: range) -> None:
    for question in questions(turns):
        # Passing memory= again changes nothing: the agent takes the Context's memory.
        await agent.run(user_msg=question, memory=memory, ctx=ctx)


class MemoriesSeen:
    """Every memory object an agent's run appended through, with its LLM and store."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[tuple[int, Any, Any]] = []
        real = WindowBudgetMemory.aput_messages

        async def spy(memory: WindowBudgetMemory, messages: list[ChatMessage]) -> None:
            self.seen.append((id(memory), memory.llm, memory.chat_store))
            await real(memory, messages)

        monkeypatch.setattr(WindowBudgetMemory, "aput_messages", spy)


pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")


async def test_a_restored_agent_context_keeps_the_memorys_llm_and_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before, the memory a Context rebuilt (after ctx.to_dict() / Context.from_dict, and on
    # every later run of one Context, which the workflow serializes in between) had no LLM
    # (0 summary calls in 12 runs, network-free digests only) and a new SimpleChatStore
    # (the SQLite rows stayed at 2).
    store = sqlite_store(tmp_path / "chat.db")
    llm = ScriptedLLM(window=2_500)
    memory = WindowBudgetMemory.from_defaults(llm=llm, chat_store=store, chat_store_key="u-42")
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(lookup)], llm=llm, streaming=False)
    ctx = Context(agent)
    await agent.run(user_msg="hello", memory=memory, ctx=ctx)
    rows = len(store.get_messages("u-42"))

    restored = Context.from_dict(agent, ctx.to_dict())
    runs = MemoriesSeen(monkeypatch)
    summaries = len(llm.summary_prompts)
    await run_restored(agent, restored, memory, range(12))

    assert len({who for who, _, _ in runs.seen}) > 1  # rebuilt from the Context's dict
    assert all(used is llm and where is store for _, used, where in runs.seen)
    assert len(llm.summary_prompts) > summaries  # the LLM writes the digests
    assert len(store.get_messages("u-42")) != rows  # the conversation goes on in SQLite
    assert users_stored(store, "u-42") == ["hello", *questions(range(12))]
    dispose(store)


async def test_a_context_whose_memory_is_gone_is_refused_then_restored_with_what_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = sqlite_store(tmp_path / "chat.db")
    llm = ScriptedLLM(window=2_500)
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(lookup)], llm=llm, streaming=False)

    async def first_request() -> str:
        memory = WindowBudgetMemory.from_defaults(llm=llm, chat_store=store, chat_store_key="u-42")
        ctx = Context(agent)
        await agent.run(user_msg="hello", memory=memory, ctx=ctx)
        return json.dumps(ctx.to_dict())

    saved = await first_request()
    gc.collect()  # the request is over and its memory gone, as in another process
    with pytest.raises(ValueError, match=r"the LLM 'scripted' \(llm=\.\.\.\) and the chat store"):
        await agent.run(user_msg="lost?", ctx=Context.from_dict(agent, json.loads(saved)))
    assert users_stored(store, "u-42") == ["hello"]

    runs = MemoriesSeen(monkeypatch)
    summaries = len(llm.summary_prompts)
    with WindowBudgetMemory.restoring(llm=llm, chat_store=store):
        restored = Context.from_dict(agent, json.loads(saved))
        await run_restored(agent, restored, None, range(1))
    await run_restored(agent, restored, None, range(1, 12))  # later runs: the same objects
    assert all(used is llm and where is store for _, used, where in runs.seen)
    assert len(llm.summary_prompts) > summaries
    assert users_stored(store, "u-42") == ["hello", *questions(range(12))]
    dispose(store)


def test_from_dict_refuses_an_llm_it_cannot_restore_and_takes_none_when_asked() -> None:
    memory = WindowBudgetMemory.from_defaults(llm=ScriptedLLM(), context_window=2_000)
    fill(memory, 3)
    data = memory.to_dict()
    data["instance"] = "0" * 32  # saved by a memory that is not alive here
    with pytest.raises(ValueError, match="pass them to from_dict"):
        WindowBudgetMemory.from_dict(data)
    assert WindowBudgetMemory.from_dict(data, llm=None).llm is None
    with (
        pytest.raises(TypeError, match=r"restoring\(\) takes"),
        WindowBudgetMemory.restoring(model="gpt"),
    ):
        pass


def test_a_copy_saved_is_not_taken_for_its_original() -> None:
    # A deep copy has its own store: restoring what it saved must not bind the original's.
    memory = WindowBudgetMemory.from_defaults(context_window=2_000)
    fill(memory, 2)
    memory.to_dict()
    twin = copy.deepcopy(memory)
    twin.put(ChatMessage(role="user", content="only in the copy"))
    again = WindowBudgetMemory.from_dict(twin.to_dict())
    assert again.chat_store is twin.chat_store
    assert again.chat_store is not memory.chat_store


# ------------------------------------------------------------- round trips


def test_serialization_round_trip() -> None:
    llm = ScriptedLLM()
    memory = small_memory(llm, counter="heuristic")
    memory.put(ChatMessage(role="system", content="rules"))
    fill(memory, 50)
    memory.put(
        ChatMessage(
            role="assistant",
            blocks=[ToolCallBlock(tool_call_id="z", tool_name="f", tool_kwargs={"a": 1})],
        )
    )
    data = json.loads(memory.to_json())
    again = WindowBudgetMemory.from_json(json.dumps(data), llm=llm)
    assert again.context_window == memory.context_window
    assert again.policy == memory.policy
    assert again.chat_store_key == memory.chat_store_key
    assert [m.model_dump() for m in again.get_all()] == [m.model_dump() for m in memory.get_all()]
    assert len(again.get_all(include_archived=True)) == len(memory.get_all(include_archived=True))
    assert [m.model_dump() for m in again.get()] == [m.model_dump() for m in memory.get()]
    assert is_digest(again.get_all()[1])
    # The LLM is not serialized: the same object while the memory that saved it lives in
    # this process, or what is passed (None: network-free digests).
    assert WindowBudgetMemory.from_dict(memory.to_dict()).llm is llm
    assert WindowBudgetMemory.from_dict(memory.to_dict(), llm=None).llm is None


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_pickle_and_deepcopy_keep_policy_and_counter(how: str) -> None:
    import copy
    import dataclasses
    import pickle

    from llama_index.memory.window_budget import default_policy

    policy = dataclasses.replace(default_policy(3000), trigger_ratio=0.6)
    memory = WindowBudgetMemory.from_defaults(
        llm=MockLLM(), context_window=3000, policy=policy, counter=len
    )
    fill(memory, 3)
    other = pickle.loads(pickle.dumps(memory)) if how == "pickle" else copy.deepcopy(memory)
    assert other.policy == policy
    assert other.count_tokens(other.get_all()) == memory.count_tokens(memory.get_all())
    assert other.llm is not None
    other.put(user(99))
    assert len(other.get_all()) == len(memory.get_all()) + 1
    assert other.get()[-1].content == user(99).content


def test_tiktoken_counter_round_trips() -> None:
    from window_budget.budget import TiktokenCounter

    memory = small_memory(counter=TiktokenCounter())
    fill(memory, 3)
    again = WindowBudgetMemory.from_dict(memory.to_dict())
    assert again.count_tokens(again.get_all()) == memory.count_tokens(memory.get_all())
    assert again.to_dict()["counter"] == memory.to_dict()["counter"]


def test_a_token_is_no_key_to_another_conversation() -> None:
    # The token finds the live objects for the conversation that saved them, not for data
    # edited to name another key in the same store.
    store = SimpleChatStore()
    memory = WindowBudgetMemory.from_defaults(
        llm=ScriptedLLM(), context_window=2_000, chat_store=store, chat_store_key="alice"
    )
    fill(memory, 2)
    data = memory.to_dict()
    assert WindowBudgetMemory.from_dict(data).chat_store is store
    data["chat_store_key"], data["archive_key"] = "bob", ""
    with pytest.raises(ValueError, match="the LLM 'scripted'"):
        WindowBudgetMemory.from_dict(data)


# ---------------------------------------------------------------- the memory store


def _with_store(**kw: Any) -> WindowBudgetMemory:
    memory = WindowBudgetMemory.from_defaults(context_window=2000, **kw)
    fill(memory, 30)
    assert memory.recall_tool().call(pointer="#0").content  # the store holds the head
    return memory


def test_a_memory_store_on_the_chat_store_comes_back_with_the_memory() -> None:
    memory = _with_store(memory_store=True)
    data = json.loads(memory.to_string())
    assert data["memory_store"] == "chat_store"
    data["instance"] = "saved elsewhere"  # as another process reads it
    again = WindowBudgetMemory.from_dict(data)
    assert again.memory_store is not None
    assert again.memory_store is not memory.memory_store
    assert "question 0" in again.recall_tool().call(pointer="#0").content
    assert [m.model_dump() for m in again.get()] == [m.model_dump() for m in memory.get()]
    fill(again, 10)  # the next compactions go on filing originals after the first ones
    assert again.memory_store.archived(again.chat_store_key) > memory.memory_store.archived(
        memory.chat_store_key
    )


def test_a_memory_store_alive_in_this_process_is_found_again() -> None:
    memory = _with_store(memory_store=True)
    again = WindowBudgetMemory.from_string(memory.to_string())
    assert again.memory_store is memory.memory_store


def test_a_memory_store_the_data_cannot_carry_is_asked_for_by_name(tmp_path: Path) -> None:
    from window_budget.memory import SQLiteMemoryStore

    store = SQLiteMemoryStore(str(tmp_path / "memory.sqlite"))
    memory = _with_store(memory_store=store)
    data = memory.to_dict()
    assert data["memory_store"] == "SQLiteMemoryStore"
    data["instance"] = "saved elsewhere"
    with pytest.raises(ValueError, match=r"the memory store SQLiteMemoryStore \(memory_store="):
        WindowBudgetMemory.from_dict(data)
    again = WindowBudgetMemory.from_dict(data, memory_store=store)
    assert again.memory_store is store
    with WindowBudgetMemory.restoring(memory_store=None):
        assert WindowBudgetMemory.from_dict(data).memory_store is None  # chosen: none


def test_a_restored_memory_store_keeps_the_key_a_target_store_already_has() -> None:
    memory = _with_store(memory_store=True)
    data = memory.to_dict()
    data["instance"] = "saved elsewhere"
    target = SimpleChatStore()
    other = WindowBudgetMemory.from_defaults(
        context_window=2000, chat_store=target, chat_store_key="other", memory_store=True
    )
    fill(other, 30)
    their_key = other.memory_store.key
    again = WindowBudgetMemory.from_dict(data, chat_store=target)
    assert again.memory_store.key == their_key  # the other conversation's digests still verify
    assert is_digest(other.get_all()[0])
    assert "question 0" in again.recall_tool().call(pointer="#0").content
    assert is_digest(again.get_all()[0])  # resealed under the target's key


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"elsewhere": []}, "memory_entries must map"),
        ([], "memory_entries must map"),
        ({"window_budget:chat_history:originals": [{"role": 7}]}, "is not a list of messages"),
    ],
)
def test_saved_memory_entries_that_are_not_ours_are_one_clear_sentence(
    entries: object, message: str
) -> None:
    data = _with_store(memory_store=True).to_dict()
    data["instance"] = "saved elsewhere"
    data["memory_entries"] = entries
    with pytest.raises(ValueError, match=message):
        WindowBudgetMemory.from_dict(data)


@pytest.mark.parametrize("field", ["memory_store", "chat_store", "archive_store", "llm"])
def test_names_in_saved_data_reach_the_error_short_and_printable(field: str) -> None:
    data = WindowBudgetMemory.from_defaults(context_window=2000).to_dict()
    data["instance"] = "saved elsewhere"
    data[field] = "Evil\x1b[2J\nStore" + "x" * 500
    with pytest.raises(ValueError, match=r"Evil\?\[2J\?Storex+…") as caught:
        WindowBudgetMemory.from_dict(data)
    assert len(str(caught.value)) < 600
