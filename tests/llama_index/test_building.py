"""``from_defaults`` as LlamaIndex users call it: ``token_limit``, ``tokenizer_fn``, the
window from the LLM or the model table, and ``Settings.llm`` (never the summarizer)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from llama_index.core import Settings
from llama_index.core.base.llms.types import ChatMessage, LLMMetadata
from llama_index.core.llms import MockLLM
from llama_index.core.memory import ChatMemoryBuffer, ChatSummaryMemoryBuffer
from llama_index.core.storage.chat_store import SimpleChatStore
from llama_index.core.utils import get_tokenizer

from llama_index.memory.window_budget import WindowBudgetMemory, is_digest
from window_budget.budget import CallableCounter, estimate_tokens, model_for
from window_budget.errors import ConfigError

from .conftest import ScriptedLLM, fill, small_memory


def history(turns: int) -> list[ChatMessage]:
    out = []
    for i in range(turns):
        out.append(ChatMessage(role="user", content=f"question {i} " + "please " * 30))
        out.append(ChatMessage(role="assistant", content=f"answer {i} " + "sure " * 30))
    return out


# ---------------------------------------------------------------- token_limit (item 9)


@pytest.mark.parametrize("peer", [ChatMemoryBuffer, ChatSummaryMemoryBuffer, WindowBudgetMemory])
def test_the_peers_keywords_are_accepted(peer: Any) -> None:
    # The call a LlamaIndex user writes for any of its memories works unchanged.
    store = SimpleChatStore()
    memory = peer.from_defaults(
        chat_history=history(3),
        llm=MockLLM(),
        chat_store=store,
        chat_store_key="k",
        token_limit=1500,
        tokenizer_fn=get_tokenizer(),
    )
    assert memory.token_limit == 1500
    assert len(store.get_messages("k")) == 6


def test_token_limit_is_the_view_limit_exactly() -> None:
    memory = WindowBudgetMemory.from_defaults(token_limit=1200)
    assert memory.token_limit == 1200
    assert memory.context_window == 1200
    for m in history(40):
        memory.put(m)
    view = memory.get()
    assert memory.count_tokens(view) <= 1200
    assert is_digest(memory.get_all()[0])
    # Sized as the default for a 1,200-token window: the tail keeps a share of it.
    assert memory.count_tokens(view) > 300


def test_token_limit_inside_the_llms_window() -> None:
    llm = ScriptedLLM(window=8000, output=1000)
    memory = WindowBudgetMemory.from_defaults(llm=llm, token_limit=2000)
    assert memory.context_window == 7000
    assert memory.token_limit == 2000
    assert memory.policy.reserve_tokens == 5000


def test_token_limit_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match="token_limit 9,000 is larger than the 4,000"):
        WindowBudgetMemory.from_defaults(context_window=4000, token_limit=9000)
    with pytest.raises(ValueError, match="token_limit must be a positive int"):
        WindowBudgetMemory.from_defaults(context_window=4000, token_limit=0)
    from window_budget import BudgetPolicy

    with pytest.raises(ValueError, match="either policy= or token_limit="):
        WindowBudgetMemory.from_defaults(
            context_window=4000, token_limit=1000, policy=BudgetPolicy.for_window(4000)
        )


# --------------------------------------------------------------- tokenizer_fn (item 9)


def test_tokenizer_fn_becomes_the_counter() -> None:
    seen: list[str] = []

    def words(text: str) -> list[str]:
        seen.append(text)
        return text.split()

    memory = WindowBudgetMemory.from_defaults(context_window=4000, tokenizer_fn=words)
    message = ChatMessage(role="user", content="one two three " * 50)
    expected = estimate_tokens(
        [memory._core([message])[0]], CallableCounter(lambda t: len(t.split()))
    )
    assert memory.count_tokens([message]) == expected
    assert seen, "the tokenizer function was never called"


def test_llama_index_tokenizer_counts_like_the_named_counter() -> None:
    by_fn = WindowBudgetMemory.from_defaults(context_window=4000, tokenizer_fn=get_tokenizer())
    by_name = WindowBudgetMemory.from_defaults(context_window=4000, counter="llama_index")
    messages = history(5)
    assert by_fn.count_tokens(messages) == by_name.count_tokens(messages)


def test_counter_and_tokenizer_fn_together_are_refused() -> None:
    with pytest.raises(ValueError, match="either counter= or tokenizer_fn="):
        WindowBudgetMemory.from_defaults(
            context_window=4000, counter="heuristic", tokenizer_fn=str.split
        )


# ------------------------------------------------------------ the window (wiring a)


def test_window_from_the_model_table() -> None:
    memory = WindowBudgetMemory.from_defaults(model="gpt-4o")
    assert memory.context_window == model_for("gpt-4o").context_window


def test_unknown_model_is_one_clear_sentence() -> None:
    with pytest.raises(ConfigError, match="'no-such-model' is not known"):
        WindowBudgetMemory.from_defaults(model="no-such-model")


class NoWindowLLM(MockLLM):
    """An LLM whose metadata reports no usable window (some integrations say -1)."""

    model_id: ClassVar[str] = "gpt-4o"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=-1, model_name=self.model_id)


class InHouseLLM(NoWindowLLM):
    model_id: ClassVar[str] = "in-house"


def test_an_llm_without_a_window_falls_back_to_the_table() -> None:
    memory = WindowBudgetMemory.from_defaults(llm=NoWindowLLM())
    assert memory.context_window == model_for("gpt-4o").context_window
    with pytest.raises(ConfigError, match="'in-house' is not known"):
        WindowBudgetMemory.from_defaults(llm=InHouseLLM())


def test_explicit_window_overrides_llm_and_model() -> None:
    llm = ScriptedLLM(window=8000, output=1000)
    memory = WindowBudgetMemory.from_defaults(llm=llm, model="gpt-4o", context_window=3000)
    assert memory.context_window == 3000
    assert WindowBudgetMemory.from_defaults(llm=llm, model="gpt-4o").context_window == 7000


# ------------------------------------------------------------- Settings.llm (item 13)


class RecordingLLM(MockLLM):
    calls: int = 0

    def chat(self, messages: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return super().chat(messages, **kwargs)


@pytest.fixture
def settings_llm() -> Iterator[RecordingLLM]:
    previous = Settings._llm
    llm = RecordingLLM()
    Settings.llm = llm
    try:
        yield llm
    finally:
        Settings._llm = previous


def test_settings_llm_is_never_the_summarizer(settings_llm: RecordingLLM) -> None:
    # As ChatSummaryMemoryBuffer: without llm= no summary call is made at all.
    peer = ChatSummaryMemoryBuffer.from_defaults(token_limit=300)
    peer.set(history(20))
    peer.get()
    memory = WindowBudgetMemory.from_defaults(context_window=1500)
    for m in history(40):
        memory.put(m)
    memory.get()
    assert memory.llm is None
    assert settings_llm.calls == 0
    assert memory.last_compaction is not None
    assert memory.last_compaction.fallback


# ------------------------------------------------------ counters and policies


@pytest.mark.parametrize("counter", ["tiktoken", "llama_index"])
def test_exact_counters(counter: str) -> None:
    memory = small_memory(counter=counter)
    fill(memory, 40)
    view = memory.get()
    assert memory.count_tokens(view) <= memory.token_limit
    prefix = ChatMessage(role="system", content="hello world")
    assert len(memory.tokenizer_fn("hello world")) == memory.count_tokens([prefix])


def test_explicit_policy_leaving_no_room_is_refused() -> None:
    import dataclasses

    from llama_index.memory.window_budget import default_policy
    from window_budget import BudgetPolicy, ConfigError

    with pytest.raises(ConfigError, match=r"BudgetPolicy\.for_window\(2000\)"):
        WindowBudgetMemory.from_defaults(context_window=2000, policy=BudgetPolicy())
    policy = dataclasses.replace(default_policy(2000), trigger_ratio=0.8)
    memory = WindowBudgetMemory.from_defaults(context_window=2000, policy=policy)
    assert memory.token_limit > 1000


def test_trim_strategy_is_refused_with_a_clear_error() -> None:
    from window_budget import BudgetPolicy
    from window_budget.errors import ConfigError

    with pytest.raises(ConfigError, match="strategy='summarize' only"):
        WindowBudgetMemory.from_defaults(context_window=8000, policy=BudgetPolicy(strategy="trim"))


def test_the_default_policy_has_a_prompt_ceiling_only_with_a_memory_store() -> None:
    from window_budget import BudgetPolicy
    from window_budget.memory import InProcessMemoryStore

    plain = WindowBudgetMemory.from_defaults(context_window=200_000)
    assert plain.policy == BudgetPolicy.for_window(200_000, cache_aware=False)
    assert plain.policy.prompt_ceiling is None  # no store: early facts stay in the window
    stored = WindowBudgetMemory.from_defaults(
        context_window=200_000, memory_store=InProcessMemoryStore()
    )
    assert stored.policy == BudgetPolicy.for_window(200_000)
    assert stored.policy.prompt_ceiling == 18_000


class NamedLLM(MockLLM):
    """An LLM that names a real model and reports its window, as integrations do."""

    model_id: ClassVar[str] = "gpt-4o"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=128_000, model_name=self.model_id)


class ClaudeLLM(NamedLLM):
    model_id: ClassVar[str] = "claude-sonnet-4-5"


def test_a_model_whose_cache_is_weak_gets_the_lower_ceiling() -> None:
    # gpt-4o's cached input costs half its input, Claude's a tenth (the model table's prices).
    from window_budget import BudgetPolicy
    from window_budget.memory import InProcessMemoryStore

    weak = WindowBudgetMemory.from_defaults(llm=NamedLLM(), memory_store=InProcessMemoryStore())
    window = weak.context_window
    assert weak.policy == BudgetPolicy.for_window(window, output_reserved=True, cache_read=0.5)
    assert weak.policy.prompt_ceiling == 16_000 + window * 6 // 1000
    strong = WindowBudgetMemory.from_defaults(llm=ClaudeLLM(), memory_store=InProcessMemoryStore())
    assert strong.policy == BudgetPolicy.for_window(strong.context_window, output_reserved=True)
    by_id = WindowBudgetMemory.from_defaults(
        model="gpt-4o", context_window=128_000, memory_store=InProcessMemoryStore()
    )
    assert by_id.policy.prompt_ceiling == 16_000 + by_id.context_window * 6 // 1000
    assert WindowBudgetMemory.from_defaults(llm=NamedLLM()).policy.prompt_ceiling is None
