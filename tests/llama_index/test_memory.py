from __future__ import annotations

import asyncio
import json
import threading

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
    DIGEST_COVERED_KEY,
    DIGEST_KEY,
    RECORD_KEY,
    WindowBudgetMemory,
    is_digest_message,
)
from window_budget.digest import SESSION_HEADER
from window_budget.errors import BudgetError

from .conftest import ScriptedLLM, request_tokens


def user(i: int, words: int = 30) -> ChatMessage:
    return ChatMessage(role="user", content=f"question {i} " + "please " * words)


def bot(i: int, words: int = 30) -> ChatMessage:
    return ChatMessage(role="assistant", content=f"answer {i} " + "sure " * words)


def small_memory(llm: ScriptedLLM | None = None, **kw: object) -> WindowBudgetMemory:
    return WindowBudgetMemory.from_defaults(llm=llm or ScriptedLLM(), context_window=2000, **kw)


def fill(memory: WindowBudgetMemory, turns: int) -> None:
    for i in range(turns):
        memory.put(user(i))
        memory.put(bot(i))


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


def test_missing_window_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="context_window"):
        WindowBudgetMemory.from_defaults()


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
    assert is_digest_message(head)
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
    with pytest.raises(BudgetError):  # fits or BudgetError, as in the LangChain adapter
        memory.get(initial_token_count=10**9)
    assert memory.get(initial_token_count=-5)


def test_set_history_is_condensed_on_get() -> None:
    memory = small_memory()
    memory.set([m for i in range(200) for m in (user(i), bot(i))])
    view = memory.get()
    assert is_digest_message(view[0])
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
    assert is_digest_message(view[0])
    assert memory.count_tokens(view) <= memory.token_limit


def test_manual_compact_folds_all_but_last_turn() -> None:
    memory = small_memory()
    fill(memory, 3)
    memory.put(user(99))
    view = memory.compact()
    assert is_digest_message(view[0])
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
        calls_seen: set[str] = set()
        for m in view:
            for b in m.blocks:
                if isinstance(b, ToolCallBlock):
                    calls_seen.add(b.tool_call_id or "")
            if m.role == MessageRole.TOOL:
                assert m.additional_kwargs["tool_call_id"] in calls_seen
        assert view[0].role == MessageRole.USER


# ----------------------------------------------------------------- concurrency


async def test_concurrent_agets_compact_once() -> None:
    history = [m for i in range(100) for m in (user(i), bot(i))]
    single = ScriptedLLM()
    alone = small_memory(single)
    alone.chat_store.set_messages(alone.chat_store_key, list(history))
    await alone.aget()
    llm = ScriptedLLM()
    memory = small_memory(llm)
    memory.chat_store.set_messages(memory.chat_store_key, list(history))
    views = await asyncio.gather(*[memory.aget() for _ in range(6)])
    assert len(llm.summary_prompts) == len(single.summary_prompts) >= 1
    assert all(v[0].content == views[0][0].content for v in views)
    assert sum(is_digest_message(m) for m in memory.get_all()) == 1


async def test_async_path_uses_achat_not_chat() -> None:
    llm = ScriptedLLM()
    memory = small_memory(llm)
    for i in range(60):
        await memory.aput(user(i))
        await memory.aput(bot(i))
    assert is_digest_message((await memory.aget())[0])
    assert llm.summary_prompts
    assert set(llm.calls) == {"achat"}


def test_sync_path_uses_chat() -> None:
    llm = ScriptedLLM()
    fill(small_memory(llm), 60)
    assert llm.summary_prompts
    assert set(llm.calls) == {"chat"}


def test_put_from_threads_loses_nothing() -> None:
    memory = small_memory()

    def writer(t: int) -> None:
        for i in range(40):
            memory.put(ChatMessage(role="user", content=f"t{t} m{i} " + "x " * 30))

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = memory.get_all(include_archived=True)
    assert sorted(m.content.split()[0] + m.content.split()[1] for m in everything) == sorted(
        f"t{t}m{i}" for t in range(4) for i in range(40)
    )
    assert memory.count_tokens(memory.get()) <= memory.token_limit


# --------------------------------------------------------------- serialization


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
    assert is_digest_message(again.get_all()[1])
    # The LLM is not serialized: the same object while the memory that saved it lives in
    # this process, or what is passed (None: network-free digests).
    assert WindowBudgetMemory.from_dict(memory.to_dict()).llm is llm
    assert WindowBudgetMemory.from_dict(memory.to_dict(), llm=None).llm is None


# --------------------------------------------------------------------- counting


@pytest.mark.parametrize("counter", ["tiktoken", "llama_index"])
def test_exact_counters(counter: str) -> None:
    memory = small_memory(counter=counter)
    fill(memory, 40)
    view = memory.get()
    assert memory.count_tokens(view) <= memory.token_limit
    prefix = ChatMessage(role="system", content="hello world")
    assert len(memory.tokenizer_fn("hello world")) == memory.count_tokens([prefix])


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


def test_copies_are_deep_both_ways() -> None:
    memory = small_memory()
    sent = ChatMessage(
        role="assistant",
        blocks=[ToolCallBlock(tool_call_id="c1", tool_name="f", tool_kwargs={"a": [1]})],
        additional_kwargs={"meta": {"k": [1]}},
    )
    memory.put(sent)
    sent.blocks[0].tool_kwargs["a"].append(2)  # type: ignore[union-attr]
    sent.additional_kwargs["meta"]["k"].append(2)
    for got in (memory.get()[-1], memory.get_all()[-1], memory.get_all(True)[-1]):
        assert got.blocks[0].tool_kwargs == {"a": [1]}  # type: ignore[union-attr]
        assert got.additional_kwargs["meta"] == {"k": [1]}
        got.blocks[0].tool_kwargs["a"].append(3)  # type: ignore[union-attr]
        got.additional_kwargs["meta"]["k"].append(3)
    assert memory.get_all()[-1].blocks[0].tool_kwargs == {"a": [1]}  # type: ignore[union-attr]


def test_set_keeps_the_archive() -> None:
    memory = small_memory()
    fill(memory, 30)
    everything = len(memory.get_all(include_archived=True))
    assert everything == 60
    memory.set(memory.get_all())  # what chat engines do with chat_history=...
    assert len(memory.get_all(include_archived=True)) == everything
    memory.set(memory.get_all(), clear_archive=True)
    kept = memory.get_all(include_archived=True)
    assert len(kept) >= len(memory.get_all())
    assert is_digest_message(kept[0])  # its originals are gone: the digest stays visible
    memory.reset()
    assert memory.get_all(include_archived=True) == []


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


def test_archive_never_hides_more_than_it_holds() -> None:
    memory = small_memory()
    digest = ChatMessage(
        role="user",
        content="[session digest]",
        additional_kwargs={DIGEST_KEY: True, DIGEST_COVERED_KEY: 10},
    )
    memory.set([digest, user(1), bot(1)])
    assert len(memory.get_all(include_archived=True)) == 3


def test_explicit_policy_leaving_no_room_is_refused() -> None:
    import dataclasses

    from llama_index.memory.window_budget import default_policy
    from window_budget import BudgetPolicy, ConfigError

    with pytest.raises(ConfigError, match=r"BudgetPolicy\.for_window\(2000\)"):
        WindowBudgetMemory.from_defaults(context_window=2000, policy=BudgetPolicy())
    policy = dataclasses.replace(default_policy(2000), trigger_ratio=0.8)
    memory = WindowBudgetMemory.from_defaults(context_window=2000, policy=policy)
    assert memory.token_limit > 1000


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


def test_initial_token_count_that_cannot_fit_raises() -> None:
    # Fits or BudgetError, like the core and the LangChain adapter.
    memory = tiny_memory()
    memory.put(ChatMessage(role="system", content="rules " * 100))
    fill(memory, 5)
    with pytest.raises(BudgetError, match="smallest view"):
        memory.get(initial_token_count=memory.token_limit - 10)


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


def test_failed_put_with_raise_policy_stores_nothing() -> None:
    import dataclasses

    from llama_index.memory.window_budget import default_policy
    from window_budget.errors import SummarizerError

    llm = ScriptedLLM(fail_summaries=True)
    policy = dataclasses.replace(default_policy(2000), on_summarizer_error="raise")
    memory = small_memory(llm, policy=policy)
    fill(memory, 6)  # under the gate: no summary yet
    before = [m.content for m in memory.get_all()]
    with pytest.raises(SummarizerError):
        memory.put(user(99, words=2000))
    assert [m.content for m in memory.get_all()] == before


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


def test_trim_strategy_is_refused_with_a_clear_error() -> None:
    from window_budget import BudgetPolicy
    from window_budget.errors import ConfigError

    with pytest.raises(ConfigError, match="strategy='summarize' only"):
        WindowBudgetMemory.from_defaults(context_window=8000, policy=BudgetPolicy(strategy="trim"))


def _long_memory(n: int = 2000) -> WindowBudgetMemory:
    # Far under budget: the whole history stays in the store, as in a long chat that has
    # not reached its window yet.
    history = [ChatMessage(role="system", content="be brief")] + [
        user(i, words=2) if i % 2 == 0 else bot(i, words=2) for i in range(n)
    ]
    return WindowBudgetMemory.from_defaults(context_window=1_000_000, chat_history=history)


def _count_conversions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    import llama_index.memory.window_budget.convert as convert

    calls = [0]
    real = convert.to_core

    def counting(message: ChatMessage) -> object:
        calls[0] += 1
        return real(message)

    monkeypatch.setattr(convert, "to_core", counting)
    return calls


def test_put_on_long_history_converts_and_estimates_one_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memory = _long_memory()
    memory.get()
    calls = _count_conversions(monkeypatch)
    ledger = memory._sync_condenser  # type: ignore[union-attr]
    for i in range(3):
        estimated, converted = ledger.estimated, calls[0]
        memory.put(user(10_000 + i))
        assert ledger.estimated - estimated == 1
        assert calls[0] - converted == 1
    estimated, converted = ledger.estimated, calls[0]
    view = memory.get()
    assert len(view) == 2004
    assert ledger.estimated == estimated
    assert calls[0] == converted  # the view is counted from the cached cores


async def test_aput_on_long_history_converts_and_estimates_one_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memory = _long_memory()
    await memory.aget()
    calls = _count_conversions(monkeypatch)
    ledger = memory._async_condenser  # type: ignore[union-attr]
    for i in range(3):
        estimated, converted = ledger.estimated, calls[0]
        await memory.aput(user(10_000 + i))
        assert ledger.estimated - estimated == 1
        assert calls[0] - converted == 1


def test_a_digest_deeper_in_the_head_is_counted_as_what_it_covered() -> None:
    from llama_index.memory.window_budget.convert import make_digest_chat_message
    from window_budget.bridge import read_digest_record

    memory = small_memory()
    older = make_digest_chat_message("older digest", 10, compactions=2)
    deeper = make_digest_chat_message("a digest written elsewhere", 5, compactions=3)
    memory.set([older, user(0), bot(0), deeper, user(1), bot(1)])
    fill(memory, 40)
    digest = memory.get_all()[0]
    record = read_digest_record(digest.additional_kwargs)
    assert record is not None
    archived = [
        m
        for m in memory.get_all(include_archived=True)
        if read_digest_record(m.additional_kwargs) is None
    ]
    live_plain = [m for m in memory.get_all() if read_digest_record(m.additional_kwargs) is None]
    # Every plain original is either archived or live; each digest folded in counts its own.
    assert record["covered"] == 15 + len(archived) - len(live_plain)
    assert record["compactions"] >= 4
