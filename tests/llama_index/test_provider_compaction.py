"""Provider-side compaction through the LlamaIndex memory.

Assumed shape: neither ``llama-index-llms-anthropic`` (0.12.3) nor ``llama-index-llms-openai``
(0.8.3) keeps a ``compaction`` block in the ``ChatMessage`` (both drop unknown blocks). Where
they keep a provider item that must be sent back (OpenAI's reasoning items), it is a
``ThinkingBlock`` whose ``additional_information`` is the item as the API returned it; a
caller keeping a compaction block does the same, and that is what these tests put.
"""

from __future__ import annotations

from llama_index.core.base.llms.types import ChatMessage, TextBlock, ThinkingBlock

from llama_index.memory.window_budget import WindowBudgetMemory
from llama_index.memory.window_budget.convert import to_core
from window_budget.messages import ProviderCompactionBlock

from .conftest import ScriptedLLM, bot, user

OLD = "pre-compaction-marker"
ANTHROPIC_BLOCK = {
    "type": "compaction",
    "content": "Server summary: the user ports budget.py; test_io fails on Windows.",
    "signature": "c2ln",
}
OPENAI_ITEM = {"type": "compaction", "id": "cmp_01", "encrypted_content": "gAAAAABp" + "Z" * 600}


def compacted(raw: dict) -> ChatMessage:
    summary = raw.get("content")
    return ChatMessage(
        role="assistant",
        blocks=[
            ThinkingBlock(content=summary, additional_information=dict(raw)),
            TextBlock(text="Resuming."),
        ],
    )


def test_the_block_converts_to_the_core_block() -> None:
    for raw in (ANTHROPIC_BLOCK, OPENAI_ITEM):
        core = to_core(compacted(raw))
        found = [b for b in core.content if isinstance(b, ProviderCompactionBlock)]  # type: ignore[union-attr]
        assert [b.payload for b in found] == [raw]


def test_memory_keeps_the_block_pins_it_and_never_folds_what_came_before() -> None:
    llm = ScriptedLLM()
    memory = WindowBudgetMemory.from_defaults(llm=llm, context_window=2000)
    for i in range(20):  # far more than the window holds, before the provider compacted
        memory.put(ChatMessage(role="user", content=f"{OLD} {i} " + "please " * 30))
        memory.put(bot(i))
    memory.put(user(100))
    stored_before = len(memory.get_all())
    llm.summary_prompts.clear()  # ours before the provider compacted: they may fold anything
    reply = compacted(ANTHROPIC_BLOCK)
    memory.put(reply)
    for i in range(101, 140):
        memory.put(user(i))
        memory.put(bot(i))
        view = memory.get()
        carriers = [m for m in view if m.blocks == reply.blocks]
        assert len(carriers) == 1  # sent every time, unchanged
    assert llm.summary_prompts  # our digests did run, after the block
    assert all(OLD not in prompt for prompt in llm.summary_prompts)
    everything = memory.get_all(include_archived=True)
    assert sum(1 for m in everything if m.blocks == reply.blocks) == 1
    assert len([m for m in everything if OLD in (m.content or "")]) >= min(stored_before, 20) // 2
