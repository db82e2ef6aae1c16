"""Writers of one stored conversation: threads and event loops, copies, ``set`` and the archive."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock

from llama_index.memory.window_budget import (
    is_digest,
)
from tests.providers import RateLimitError

from .conftest import ScriptedLLM, bot, fill, small_memory, user


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
    assert sum(is_digest(m) for m in memory.get_all()) == 1


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
    assert is_digest(kept[0])  # its originals are gone: the digest stays visible
    memory.reset()
    assert memory.get_all(include_archived=True) == []


def test_archive_never_hides_more_than_it_holds() -> None:
    memory = small_memory()
    from window_budget.bridge import RECORD_KEY, digest_record
    from window_budget.messages import DigestMessage

    record = digest_record(DigestMessage("[session digest]", covered_count=10))
    digest = ChatMessage(
        role="user", content="[session digest]", additional_kwargs={RECORD_KEY: record}
    )
    memory.set([digest, user(1), bot(1)])
    assert len(memory.get_all(include_archived=True)) == 3


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


def _raising_memory(error: Exception | None = None) -> Any:
    import dataclasses

    from llama_index.memory.window_budget import default_policy

    llm = ScriptedLLM(fail_summaries=True, summary_error=error or RateLimitError("429 slow down"))
    policy = dataclasses.replace(default_policy(2000), on_summarizer_error="raise")
    memory = small_memory(llm, policy=policy)
    fill(memory, 6)  # under the gate: no summary yet
    return memory


def test_raise_gives_the_providers_own_exception() -> None:
    from window_budget.errors import SummarizerError

    memory = _raising_memory()
    before = [m.content for m in memory.get_all()]
    with pytest.raises(RateLimitError, match="429 slow down") as caught:
        memory.put(user(99, words=2000))
    assert isinstance(caught.value, SummarizerError)  # still catchable as before
    assert caught.value.status_code == 429
    assert [m.content for m in memory.get_all()] == before
    assert len(memory.llm.summary_prompts) == 3  # a rate limit is retried, three calls in all


async def test_raise_gives_the_providers_own_exception_async() -> None:
    from window_budget.errors import SummarizerError

    memory = _raising_memory()
    before = [m.content for m in memory.get_all()]
    with pytest.raises(RateLimitError) as caught:
        await memory.aput(user(99, words=2000))
    assert isinstance(caught.value, SummarizerError)
    assert [m.content for m in memory.get_all()] == before


def test_raise_with_an_unmixable_provider_error_still_takes_the_message_back() -> None:
    from window_budget.errors import SummarizerError

    class Sealed(Exception):
        def __init_subclass__(cls, **kwargs: Any) -> None:
            raise TypeError("Sealed cannot be subclassed")

    memory = _raising_memory(Sealed("sealed failure"))
    before = [m.content for m in memory.get_all()]
    with pytest.raises(SummarizerError) as caught:
        memory.put(user(99, words=2000))
    assert isinstance(caught.value.__cause__, Sealed)
    assert [m.content for m in memory.get_all()] == before


def test_raise_from_get_gives_the_providers_own_exception() -> None:
    from window_budget.errors import SummarizerError

    memory = _raising_memory()
    history = [m for i in range(100) for m in (user(i), bot(i))]
    memory.chat_store.set_messages(memory.chat_store_key, list(history))
    with pytest.raises(RateLimitError) as caught:
        memory.get()
    assert isinstance(caught.value, SummarizerError)
    assert len(memory.get_all()) == len(history)  # the store is left as it was


# -- retries of a summary call (the bridge's policy, as the LangChain adapter has it) --------


@pytest.mark.parametrize("use_async", [False, True])
def test_a_rate_limited_summary_is_retried_and_the_models_digest_kept(use_async: bool) -> None:
    llm = ScriptedLLM(flaky_summaries=2, summary_error=RateLimitError("429 slow down"))
    memory = small_memory(llm)
    fill(memory, 6)
    if use_async:
        asyncio.run(memory.aput(user(99, words=2000)))
    else:
        memory.put(user(99, words=2000))
    assert len(llm.summary_prompts) == 3
    assert llm.summary_prompts[0] == llm.summary_prompts[2]  # the same request again
    account = memory.last_compaction
    assert account is not None
    assert not account.fallback
    assert account.audit is not None  # the digest is the model's, audited


def test_an_overflowing_summary_request_is_retried_smaller() -> None:
    error = RuntimeError("This model's maximum context length is 4096 tokens")
    llm = ScriptedLLM(flaky_summaries=1, summary_error=error)
    memory = small_memory(llm)
    fill(memory, 6)
    memory.put(user(99, words=2000))
    first, second = llm.summary_prompts
    assert len(second) < 0.6 * len(first)
    assert "[... middle of the conversation omitted ...]" in second
    assert memory.last_compaction is not None
    assert not memory.last_compaction.fallback


def test_an_error_a_retry_cannot_mend_is_not_retried() -> None:
    llm = ScriptedLLM(flaky_summaries=1, summary_error=RateLimitError("bad key", status_code=401))
    memory = small_memory(llm)
    fill(memory, 6)
    memory.put(user(99, words=2000))
    assert len(llm.summary_prompts) == 1
    assert memory.last_compaction is not None
    assert memory.last_compaction.fallback
