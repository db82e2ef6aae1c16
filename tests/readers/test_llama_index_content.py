"""A LlamaIndex dump is read as the LlamaIndex adapter reads the live messages.

Both take a message's tool calls through ``window_budget.messages.merged_tool_calls``. The
pinned cases are what the reader used to get wrong: a call kept both as a ``ToolCallBlock``
and as its raw entry in ``additional_kwargs["tool_calls"]`` (as LlamaIndex's
function-calling integrations store it) was read twice, a two-calls-one-id transcript a
provider refuses when written back; a thinking block lost its signature; a cited source
was read as JSON text.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from window_budget.messages import (
    AssistantMessage,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
)
from window_budget.readers import read_transcript

types = pytest.importorskip("llama_index.core.base.llms.types")
convert = pytest.importorskip("llama_index.memory.window_budget.convert")


def _read(message: Any) -> Any:
    dump = io.StringIO(json.dumps([message.model_dump(mode="json")]))
    (read,) = read_transcript(dump, format="llama-index").messages
    return read


def _entry(call_id: str | None, name: str, args: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": args}}
    return {**entry, "id": call_id} if call_id else entry


def test_a_call_kept_as_a_block_and_an_entry_is_read_once() -> None:
    message = types.ChatMessage(
        role="assistant",
        blocks=[
            types.TextBlock(text="Searching."),
            types.ToolCallBlock(tool_call_id="c1", tool_name="grep", tool_kwargs={"p": "TODO"}),
        ],
        additional_kwargs={"tool_calls": [_entry("c1", "grep", '{"p": "TODO"}')]},
    )
    read = _read(message)
    assert isinstance(read, AssistantMessage)
    assert read.content == (TextBlock("Searching."), ToolCallBlock("c1", "grep", {"p": "TODO"}))


def test_a_signed_thinking_block_keeps_its_signature() -> None:
    thinking = types.ThinkingBlock(
        content="Check the loader.", additional_information={"signature": "s1"}
    )
    message = types.ChatMessage(role="assistant", blocks=[thinking, types.TextBlock(text="ok")])
    assert _read(message).content == (ThinkingBlock("Check the loader.", "s1"), TextBlock("ok"))


def test_a_cited_source_is_read_as_its_label_and_text() -> None:
    source = types.CitableBlock(
        content=[types.TextBlock(text="The loader reads TOML.")],
        source="https://docs.example/loader",
        title="Loader",
    )
    message = types.ChatMessage(
        role="tool", blocks=[source], additional_kwargs={"tool_call_id": "c1", "name": "docs"}
    )
    read = _read(message)
    assert isinstance(read, ToolResultMessage)
    assert read.content == (
        TextBlock("[source Loader — https://docs.example/loader]"),
        TextBlock("The loader reads TOML."),
    )


# The agreement: whatever the calls, a dump read back holds the calls the adapter counts.

_IDS = st.sampled_from(["c1", "c2", "c3", None])
_NAMES = st.sampled_from(["grep", "ls", "edit"])
_ARGS = st.sampled_from(['{"p": 1}', "{}", "", "not json", "[1, 2]", "{" * 3_000])


@settings(max_examples=200, deadline=None)
@given(
    blocks=st.lists(st.tuples(_IDS, _NAMES, _ARGS), max_size=3),
    entries=st.lists(st.tuples(_IDS, _NAMES, _ARGS), max_size=3),
    text=st.sampled_from(["", "On it."]),
)
def test_a_dump_reads_back_the_calls_the_adapter_counts(
    blocks: list[tuple[str | None, str, str]],
    entries: list[tuple[str | None, str, str]],
    text: str,
) -> None:
    message = types.ChatMessage(
        role="assistant",
        blocks=[
            *([types.TextBlock(text=text)] if text else []),
            *(
                types.ToolCallBlock(tool_call_id=i, tool_name=n, tool_kwargs=a)
                for i, n, a in blocks
            ),
        ],
        additional_kwargs={"tool_calls": [_entry(*e) for e in entries]} if entries else {},
    )
    live = convert.to_core(message)
    read = _read(message)
    live_calls = [b for b in live.content if isinstance(b, ToolCallBlock)]
    read_calls = (
        []
        if isinstance(read.content, str)
        else [b for b in read.content if isinstance(b, ToolCallBlock)]
    )
    assert read_calls == live_calls
    block_ids = [i for i, _, _ in blocks if i]
    if len(set(block_ids)) == len(block_ids):  # an entry never adds a second call of an id
        assert len({c.id for c in read_calls}) == len(read_calls)
