from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core.base.llms.types import (
    ChatMessage,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.llms import MockLLM
from llama_index.core.storage.chat_store import SimpleChatStore

from llama_index.memory.window_budget import (
    RECORD_KEY,
    WindowBudgetMemory,
    is_digest,
)
from window_budget.digest import SESSION_HEADER
from window_budget.errors import BudgetError

from .conftest import ScriptedLLM, bot, fill, pairs_kept, request_tokens, small_memory, user

# -------------------------------------------------------- LlamaIndex's own behaviours


def test_put_get_get_all() -> None:
    memory = small_memory()
    memory.put(ChatMessage(role="user", content="hi"))
    memory.put(ChatMessage(role="assistant", content="hello"))
    assert [m.content for m in memory.get()] == ["hi", "hello"]
    assert [m.content for m in memory.get_all()] == ["hi", "hello"]


def test_set_and_reset() -> None:
    memory = small_memory()
    memory.put(user(0))
    memory.set([ChatMessage(role="user", content="a"), ChatMessage(role="assistant", content="b")])
    assert [m.content for m in memory.get_all()] == ["a", "b"]
    memory.reset()
    assert memory.get() == []
    assert memory.get_all() == []
    assert memory.get_all(include_archived=True) == []


def test_chat_store_key_and_shared_store() -> None:
    store = SimpleChatStore()
    a = WindowBudgetMemory.from_defaults(context_window=2000, chat_store=store, chat_store_key="a")
    b = WindowBudgetMemory.from_defaults(context_window=2000, chat_store=store, chat_store_key="b")
    a.put(ChatMessage(role="user", content="for a"))
    b.put(ChatMessage(role="user", content="for b"))
    assert [m.content for m in a.get()] == ["for a"]
    assert [m.content for m in b.get()] == ["for b"]
    assert store.get_messages("a")[0].content == "for a"


def test_chat_history_in_from_defaults() -> None:
    memory = WindowBudgetMemory.from_defaults(context_window=2000, chat_history=[user(1), bot(1)])
    assert len(memory.get_all()) == 2


async def test_async_surface() -> None:
    memory = small_memory()
    await memory.aput(ChatMessage(role="user", content="hi"))
    await memory.aput_messages(
        [ChatMessage(role="assistant", content="hello"), ChatMessage(role="user", content="again")]
    )
    assert [m.content for m in await memory.aget()] == ["hi", "hello", "again"]
    assert len(await memory.aget_all()) == 3
    await memory.aset([ChatMessage(role="user", content="x")])
    assert [m.content for m in await memory.aget_all()] == ["x"]
    await memory.areset()
    assert await memory.aget() == []


def test_window_from_llm_metadata_minus_output() -> None:
    llm = ScriptedLLM(window=8000, output=1000)
    memory = WindowBudgetMemory.from_defaults(llm=llm)
    assert memory.context_window == 7000
    assert WindowBudgetMemory.from_defaults(llm=MockLLM()).context_window == 3900


# ------------------------------------------------------------------- the budget


def test_returned_messages_are_copies() -> None:
    memory = small_memory()
    memory.put(ChatMessage(role="user", content="original"))
    view = memory.get()
    view[0].blocks[0].text = "edited"
    view[0].additional_kwargs["x"] = 1
    view.append(ChatMessage(role="user", content="extra"))
    assert [m.content for m in memory.get_all()] == ["original"]
    assert memory.get_all()[0].additional_kwargs == {}


def test_put_stores_a_copy() -> None:
    memory = small_memory()
    msg = ChatMessage(role="user", content="original")
    memory.put(msg)
    msg.blocks[0].text = "changed later"
    assert memory.get_all()[0].content == "original"


def test_stays_within_limit_and_keeps_everything() -> None:
    llm = ScriptedLLM()
    memory = small_memory(llm)
    for i in range(150):
        memory.put(user(i))
        memory.put(bot(i))
        assert memory.count_tokens(memory.get()) <= memory.token_limit
    archived = memory.get_all(include_archived=True)
    assert [m.content for m in archived] == [
        m.content for i in range(150) for m in (user(i), bot(i))
    ]
    head = memory.get_all()[0]
    assert is_digest(head)
    assert head.role == MessageRole.USER
    assert head.content.startswith(SESSION_HEADER)
    # One record key, shared with the LangChain adapter (it replaced the two older keys).
    record = head.additional_kwargs[RECORD_KEY]
    assert record["digest"] is True
    assert record["covered"] == 300 - (len(memory.get_all()) - 1)
    # Hysteresis: far fewer summaries than turns.
    assert 2 <= len(llm.summary_prompts) <= 40


def test_digest_carried_across_compactions() -> None:
    llm = ScriptedLLM()
    memory = small_memory(llm)
    fill(memory, 80)
    prompts = llm.summary_prompts
    assert len(prompts) >= 3
    for k in range(1, len(prompts)):
        assert "<carried-digest>" in prompts[k]
        assert f"digest {k})" in prompts[k]
    assert f"digest {len(prompts)})" in memory.get()[0].content


def test_leading_system_messages_pinned_and_first_is_user() -> None:
    memory = small_memory()
    memory.set(
        [
            ChatMessage(role="system", content="be terse " * 20),
            ChatMessage(role="assistant", content="leftover reply"),
        ]
    )
    view = memory.get()
    assert view[0].role == MessageRole.SYSTEM
    assert view[1].role == MessageRole.USER
    fill(memory, 60)
    view = memory.get()
    assert view[0].role == MessageRole.SYSTEM
    assert view[0].content.startswith("be terse")
    assert view[1].role == MessageRole.USER
    assert memory.get_all(include_archived=True)[0].role == MessageRole.SYSTEM


def test_initial_token_count_shrinks_tail() -> None:
    memory = small_memory()
    fill(memory, 12)
    plain = memory.get()
    extra = memory.token_limit - memory.count_tokens(plain) + 50
    squeezed = memory.get(initial_token_count=extra)
    assert memory.count_tokens(squeezed) + extra <= memory.token_limit
    assert memory.count_tokens(squeezed) < memory.count_tokens(plain)
    with pytest.raises(BudgetError):  # above the limit: ValueError and BudgetError
        memory.get(initial_token_count=10**9)
    assert memory.get(initial_token_count=-5)


def test_set_history_is_condensed_on_get() -> None:
    memory = small_memory()
    memory.set([m for i in range(200) for m in (user(i), bot(i))])
    view = memory.get()
    assert is_digest(view[0])
    assert memory.count_tokens(view) <= memory.token_limit
    assert len(memory.get_all(include_archived=True)) == 400


def test_failing_llm_leaves_store_intact_and_uses_local_digest() -> None:
    llm = ScriptedLLM(fail_summaries=True)
    memory = small_memory(llm)
    history = [m for i in range(60) for m in (user(i), bot(i))]
    memory.set(history)
    before = [m.model_dump() for m in memory.get_all()]
    view = memory.get()
    assert [m.model_dump() for m in memory.get_all()] == before
    assert len(before) == 120
    assert memory.get_all(include_archived=True) == memory.get_all()
    assert view[0].content.startswith(SESSION_HEADER)
    assert memory.count_tokens(view) <= memory.token_limit
    assert llm.summary_prompts  # the LLM was tried
    # Once the LLM is back, the next get commits a real digest.
    llm.fail_summaries = False
    memory.get()
    assert len(memory.get_all()) < 120
    assert len(memory.get_all(include_archived=True)) == 120


def test_no_llm_uses_network_free_digest() -> None:
    memory = WindowBudgetMemory.from_defaults(context_window=2000)
    fill(memory, 60)
    view = memory.get()
    assert is_digest(view[0])
    assert memory.count_tokens(view) <= memory.token_limit


def test_manual_compact_folds_all_but_last_turn() -> None:
    memory = small_memory()
    fill(memory, 3)
    memory.put(user(99))
    view = memory.compact()
    assert is_digest(view[0])
    assert view[-1].content.startswith("question 99")
    assert len(memory.get_all(include_archived=True)) == 7


# ------------------------------------------------------------------ tool pairs


def tool_turn(i: int, calls: int, words: int) -> list[ChatMessage]:
    ids = [f"c{i}-{k}" for k in range(calls)]
    out = [
        user(i, words),
        ChatMessage(
            role="assistant",
            blocks=[
                ToolCallBlock(tool_call_id=c, tool_name="lookup", tool_kwargs={"q": c}) for c in ids
            ],
        ),
    ]
    out += [
        ChatMessage(role="tool", content="r " * words, additional_kwargs={"tool_call_id": c})
        for c in ids
    ]
    out.append(bot(i, words))
    return out


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 120)), min_size=1, max_size=40))
def test_tool_calls_never_split_from_results(turns: list[tuple[int, int]]) -> None:
    memory = WindowBudgetMemory.from_defaults(context_window=2000)
    for i, (calls, words) in enumerate(turns):
        memory.put_messages(tool_turn(i, calls, words))
        view = memory.get()
        assert memory.count_tokens(view) <= memory.token_limit
        assert pairs_kept(view)
        assert view[0].role == MessageRole.USER


async def test_async_path_uses_achat_not_chat() -> None:
    llm = ScriptedLLM()
    memory = small_memory(llm)
    for i in range(60):
        await memory.aput(user(i))
        await memory.aput(bot(i))
    assert is_digest((await memory.aget())[0])
    assert llm.summary_prompts
    assert set(llm.calls) == {"achat"}


def test_sync_path_uses_chat() -> None:
    llm = ScriptedLLM()
    fill(small_memory(llm), 60)
    assert llm.summary_prompts
    assert set(llm.calls) == {"chat"}


# --------------------------------------------------------------------- counting


def test_request_sizes_measured(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.chat([user(1)])
    assert scripted_llm.sizes == [request_tokens([user(1)])]


# ------------------------------------------------------- regressions from review

BIG = "x" * 20_000


def tiny_memory(**kw: object) -> WindowBudgetMemory:
    return WindowBudgetMemory.from_defaults(llm=MockLLM(max_tokens=20), context_window=1000, **kw)


def call(call_id: str = "c1") -> ChatMessage:
    return ChatMessage(
        role="assistant",
        blocks=[ToolCallBlock(tool_call_id=call_id, tool_name="f", tool_kwargs={"a": 1})],
    )


def result(content: str, call_id: str = "c1") -> ChatMessage:
    return ChatMessage(
        role="tool", content=content, additional_kwargs={"tool_call_id": call_id, "name": "f"}
    )


@pytest.mark.parametrize(
    "history",
    [
        [ChatMessage(role="user", content=BIG)],
        [call(), result(BIG)],
        [ChatMessage(role="user", content="hi"), call(), result(BIG)],
        [result("y" * 2000, f"z{i}") for i in range(20)],
    ],
    ids=["one-huge-user", "one-tool-group", "user-and-tool-group", "orphan-results"],
)
def test_view_fits_when_there_is_nowhere_to_cut(history: list[ChatMessage]) -> None:
    memory = tiny_memory()
    memory.put_messages(history)
    view = memory.get()
    assert memory.count_tokens(view) <= memory.token_limit
    assert "removed by window-budget" in "".join(m.content or "" for m in view)
    assert view[0].role == MessageRole.USER


def test_shortened_view_keeps_thinking_and_tool_calls() -> None:
    memory = tiny_memory()
    memory.set(
        [
            ChatMessage(role="user", content="start"),
            ChatMessage(
                role="assistant",
                blocks=[
                    ThinkingBlock(content="think " * 1000),
                    TextBlock(text="do it"),
                    ToolCallBlock(tool_call_id="c1", tool_name="f", tool_kwargs={"a": 1}),
                ],
            ),
            result("res " * 3000),
        ]
    )
    view = memory.get()
    assert memory.count_tokens(view) <= memory.token_limit
    assistant = next(m for m in view if m.role == MessageRole.ASSISTANT)
    assert [type(b).__name__ for b in assistant.blocks] == [
        "ThinkingBlock",
        "TextBlock",
        "ToolCallBlock",
    ]


def test_chat_engine_chat_history_keeps_archive() -> None:
    from llama_index.core.chat_engine import SimpleChatEngine

    llm = ScriptedLLM()
    memory = small_memory(llm)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    for i in range(30):
        engine.chat(f"q{i} " + "w " * 100)
    before = len(memory.get_all(include_archived=True))
    engine.chat("next", chat_history=engine.chat_history)
    assert len(memory.get_all(include_archived=True)) == before + 2


@pytest.mark.parametrize("extra", [0, 100, 300, 500, 550])
def test_initial_token_count_is_always_honoured(extra: int) -> None:
    memory = tiny_memory()
    for i in range(30):
        memory.put(
            ChatMessage(role="user" if i % 2 == 0 else "assistant", content=f"msg {i} " + "z" * 300)
        )
    view = memory.get(initial_token_count=extra)
    assert memory.count_tokens(view) + extra <= memory.token_limit
    assert view
    assert (view[-1].content or "").startswith("msg 29")


def test_a_prefix_that_leaves_no_room_gets_no_history(caplog: pytest.LogCaptureFixture) -> None:
    # As ChatMemoryBuffer: the history is left out (system messages too when they do not
    # fit beside the prefix), with a warning naming the numbers; the store keeps it all.
    memory = tiny_memory()
    memory.put(ChatMessage(role="system", content="rules " * 100))
    fill(memory, 5)
    stored = memory.get_all()
    with caplog.at_level("WARNING"):
        assert memory.get(initial_token_count=memory.token_limit - 10) == []
    assert "leaves no room" in caplog.text
    system_tokens = memory.count_tokens(stored[:1])
    view = memory.get(initial_token_count=memory.token_limit - system_tokens)
    assert [m.role for m in view] == [MessageRole.SYSTEM]
    assert memory.get_all() == stored


def test_system_messages_larger_than_the_limit_still_raise() -> None:
    # No prefix to blame: the memory's own pinned messages cannot fit (fits or BudgetError).
    memory = tiny_memory()
    memory.put(ChatMessage(role="system", content="rules " * 2000))
    fill(memory, 2)
    with pytest.raises(BudgetError, match="smallest view"):
        memory.get()


def test_chat_engine_prefix_stays_within_limit() -> None:
    from llama_index.core.chat_engine import SimpleChatEngine

    llm = ScriptedLLM()
    memory = small_memory(llm)
    engine = SimpleChatEngine.from_defaults(
        llm=llm, memory=memory, system_prompt="You are terse. " * 40
    )
    for i in range(40):
        engine.chat(f"q{i} " + "please " * 50)
    assert max(llm.sizes) <= memory.token_limit


def test_a_digest_deeper_in_the_head_is_counted_as_what_it_covered() -> None:
    from llama_index.memory.window_budget.convert import make_digest_chat_message, sealed_with
    from llama_index.memory.window_budget.memory_store import seal_key_of
    from window_budget.bridge import read_digest_record

    memory = small_memory()
    key = seal_key_of(None, memory.chat_store)  # digests this memory's store wrote
    with sealed_with(key):
        older = make_digest_chat_message("older digest", 10, compactions=2)
        deeper = make_digest_chat_message("a digest written elsewhere", 5, compactions=3)
    memory.set([older, user(0), bot(0), deeper, user(1), bot(1)])
    fill(memory, 40)
    record = read_digest_record(memory.get_all()[0].additional_kwargs, key=key)
    assert record is not None
    archived = [
        m
        for m in memory.get_all(include_archived=True)
        if read_digest_record(m.additional_kwargs, key=key) is None
    ]
    live_plain = [
        m for m in memory.get_all() if read_digest_record(m.additional_kwargs, key=key) is None
    ]
    # Every plain original is either archived or live; each digest folded in counts its own.
    assert record["covered"] == 15 + len(archived) - len(live_plain)
    assert record["compactions"] >= 4
