"""Masking (on by default) in the LlamaIndex memory: the store holds copies carrying the
placeholder, the originals go to the archive, pairs stay whole, the caller's messages are
untouched and ``last_compaction`` says what masking did."""

from __future__ import annotations

import asyncio

from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock

from llama_index.memory.window_budget import WindowBudgetMemory, is_digest
from window_budget import BudgetPolicy
from window_budget.pipeline import MASK_MARKER

from .conftest import ScriptedLLM

WINDOW = 40_000
POLICY = BudgetPolicy(keep_recent=3000)  # the default masking: K=3, above 2,000 characters


def _step(i: int, chars: int) -> list[ChatMessage]:
    cid = f"call-{i}"
    return [
        ChatMessage(role=MessageRole.USER, content=f"step {i}: run the build"),
        ChatMessage(
            role=MessageRole.ASSISTANT,
            blocks=[
                ToolCallBlock(
                    tool_call_id=cid, tool_name="bash", tool_kwargs={"command": f"make part{i}"}
                )
            ],
        ),
        ChatMessage(
            role=MessageRole.TOOL,
            content=f"build {i} output\n" + "x" * chars,
            additional_kwargs={"tool_call_id": cid, "name": "bash"},
        ),
        ChatMessage(role=MessageRole.ASSISTANT, content=f"part {i} built"),
    ]


def _session(steps: int = 14, chars: int = 8000) -> list[ChatMessage]:
    return [m for i in range(steps) for m in _step(i, chars)]


def _memory() -> WindowBudgetMemory:
    return WindowBudgetMemory.from_defaults(
        llm=ScriptedLLM(window=WINDOW), context_window=WINDOW, policy=POLICY
    )


def _is_placeholder(m: ChatMessage) -> bool:
    return m.role == MessageRole.TOOL and (m.content or "").startswith(MASK_MARKER)


def _paired(messages: list[ChatMessage]) -> bool:
    called: set[str] = set()
    for m in messages:
        called.update(b.tool_call_id for b in m.blocks if isinstance(b, ToolCallBlock))
        if m.role == MessageRole.TOOL and m.additional_kwargs["tool_call_id"] not in called:
            return False
    return True


def _check(memory: WindowBudgetMemory, given: list[ChatMessage], before: list[dict]) -> None:
    live = memory.get_all()
    assert len(live) == len(given)
    assert _paired(live)
    masked = [i for i, m in enumerate(live) if _is_placeholder(m)]
    outputs = [i for i, m in enumerate(live) if m.role == MessageRole.TOOL]
    assert masked  # the oldest outputs; the 3 most recent always stay whole
    assert masked == outputs[: len(masked)]
    assert len(masked) <= len(outputs) - 3
    for i, m in enumerate(live):
        if i in masked:
            assert m.additional_kwargs == given[i].additional_kwargs  # same call id, name
        else:
            assert m == given[i]
    # The originals are in the archive; the whole conversation reads back as it was.
    assert memory.get_all(include_archived=True) == given
    assert [m.model_dump() for m in given] == before  # the caller's objects, untouched
    view = memory.get()
    assert not any(is_digest(m) for m in view)
    assert sum(_is_placeholder(m) for m in view) == len(masked)
    assert memory.count_tokens(view) <= memory.token_limit
    compaction = memory.last_compaction
    assert compaction is not None
    assert 0 < compaction.masked <= len(masked)
    assert compaction.committed
    assert compaction.tokens_freed > 2_000 * compaction.masked / 4
    assert compaction.as_dict()["masked"] == compaction.masked


def test_put_masks_old_outputs_in_the_store_and_archives_the_originals() -> None:
    memory = _memory()
    given = _session()
    before = [m.model_dump() for m in given]
    for m in given:
        memory.put(m)
    _check(memory, given, before)


def test_aput_masks_too() -> None:
    memory = _memory()
    given = _session()
    before = [m.model_dump() for m in given]

    async def run() -> None:
        await memory.aput_messages(given)
        await memory.aget()

    asyncio.run(run())
    _check(memory, given, before)


def test_when_masking_is_not_enough_the_head_is_folded_and_the_archive_still_reads_back() -> None:
    memory = _memory()
    given = [*_session(), *_session(80, chars=1500)]  # small outputs cannot be masked
    for i, m in enumerate(given):  # ids unique across both parts
        if m.role == MessageRole.TOOL:
            m.additional_kwargs["tool_call_id"] = f"id-{i}"
        for b in m.blocks:
            if isinstance(b, ToolCallBlock):
                b.tool_call_id = f"id-{i + 1}"
    memory.put_messages(given)  # at once: masking the large outputs is not enough
    live = memory.get_all()
    assert is_digest(live[0])
    assert memory.last_compaction is not None
    assert memory.last_compaction.masked == 0
    assert _paired(live[1:])
    assert memory.get_all(include_archived=True) == given
