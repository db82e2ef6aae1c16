"""JSON text from outside, nested past the recursion limit, is bad data: never a crash.

A model writes tool-call arguments as JSON text; a saved memory comes back as a string;
a store file or database row can be damaged. ``json.loads`` raises ``RecursionError`` (not
a ``ValueError``) on nesting past the recursion limit, which slipped past every
``except ValueError`` around it: the LlamaIndex memory failed on ``put`` of such a call,
``WindowBudgetMemory.from_string`` and the scratch tool's event reader raised it raw. All
of them now decode through ``window_budget.messages.loads`` and its one reading of tool-call
arguments (``tool_arguments``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from window_budget.memory import SQLiteMemoryStore
from window_budget.messages import JSONProblem, ToolCallBlock, loads, tool_arguments
from window_budget.tools.scratch._events import Called, read_event

DEEP = "[" * 5_000 + "]" * 5_000
"""Nesting five times Python's default recursion limit, in 10 KB."""


def test_loads_names_the_problem() -> None:
    with pytest.raises(JSONProblem, match="nested too deeply"):
        loads(DEEP)
    with pytest.raises(JSONProblem, match="digits"):
        loads("9" * 100_000)


@pytest.mark.parametrize("raw", [DEEP, '{"a": ' + DEEP + "}", "9" * 100_000, "[1, 2]", "{"])
def test_arguments_that_are_not_an_object_are_kept_whole(raw: str) -> None:
    assert tool_arguments(raw) == {"_raw": raw}


@given(st.one_of(st.text(), st.none(), st.integers(), st.dictionaries(st.text(), st.integers())))
def test_arguments_are_always_a_dict(raw: Any) -> None:
    args = tool_arguments(raw)
    assert isinstance(args, dict)
    assert all(isinstance(k, str) for k in args)


def test_a_scratch_event_with_deep_arguments_is_a_call() -> None:
    event = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "function": {"name": "grep", "arguments": DEEP}}],
    }
    (called,) = [o for o in read_event(event) if isinstance(o, Called)]
    assert called.name == "grep"
    assert called.arguments == {"_raw": DEEP}


def test_a_damaged_ledger_row_reads_as_no_ledger(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = SQLiteMemoryStore(path)
    store.archive("chat", 0, [{"role": "user", "content": "Port the loader."}])
    store.save_ledger("chat", {"facts": []}, seal="s")
    with sqlite3.connect(path) as db:
        db.execute("UPDATE wb_ledgers SET body = ?", (DEEP,))
        db.execute("UPDATE wb_originals SET body = ?", ("{not json",))
    version = store.ledger("chat")
    assert version is None or version.ledger == {}
    assert dict(store.originals("chat")) == {0: {}}


llama_types = pytest.importorskip("llama_index.core.base.llms.types")
li_memory = pytest.importorskip("llama_index.memory.window_budget")


def test_a_llama_index_memory_keeps_a_call_with_deep_arguments() -> None:
    from llama_index.memory.window_budget.convert import to_core

    call = llama_types.ChatMessage(
        role="assistant",
        content="",
        additional_kwargs={
            "tool_calls": [{"id": "c1", "function": {"name": "grep", "arguments": DEEP}}]
        },
    )
    block = llama_types.ChatMessage(
        role="assistant",
        blocks=[llama_types.ToolCallBlock(tool_call_id="c2", tool_name="ls", tool_kwargs=DEEP)],
    )
    memory = li_memory.WindowBudgetMemory.from_defaults(token_limit=50_000)
    for message in (llama_types.ChatMessage(role="user", content="find it"), call, block):
        memory.put(message)
    assert [m.role for m in memory.get()] == ["user", "assistant", "assistant"]
    calls = [b for b in to_core(call).content if isinstance(b, ToolCallBlock)]
    assert calls == [ToolCallBlock("c1", "grep", {"_raw": DEEP})]


def test_a_saved_memory_string_nested_too_deeply_is_one_sentence() -> None:
    with pytest.raises(ValueError, match=r"^not a WindowBudgetMemory string: invalid JSON"):
        li_memory.WindowBudgetMemory.from_string(DEEP)


def test_a_jsonl_file_whose_header_nests_too_deeply_is_read(tmp_path: Path) -> None:
    store = li_memory.JsonlChatStore(directory=str(tmp_path))
    store.add_message("chat", llama_types.ChatMessage(role="user", content="hello"))
    (path,) = tmp_path.iterdir()
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text('{"window_budget_jsonl": ' + DEEP + "\n" + lines[1], encoding="utf-8")
    assert [m.content for m in store.get_messages("chat")] == ["hello"]
