"""A transcript written for LangChain or LlamaIndex loads in the framework as it was read.

Every fixture transcript is written with ``to_langchain`` / ``to_llama_index``, loaded by
the framework itself (``messages_from_dict``, ``ChatMessage.model_validate``) and read by
the adapter: the calls, their results and the failures are those of the transcript, and
the text is the same. Kinds a framework lacks (a provider's compaction summary, a custom
message) become user text there, as documented; the adapter honours a digest only when
its record is sealed, so a written summary reads as the user text it then is.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    ToolResultMessage,
    UserMessage,
    message_text,
    tool_calls,
)
from window_budget.readers import read_transcript
from window_budget.readers.langchain_dump import to_langchain
from window_budget.readers.llama_index_dump import to_llama_index

lc_messages = pytest.importorskip("langchain_core.messages")
lc_convert = pytest.importorskip("langchain_window_budget._convert")
li_types = pytest.importorskip("llama_index.core.base.llms.types")
li_convert = pytest.importorskip("llama_index.memory.window_budget.convert")

FIXTURES = sorted(
    p
    for p in (Path(__file__).parents[1] / "fixtures" / "transcripts").iterdir()
    if p.suffix != ".md"
)


def _shape(message: AgentMessage) -> tuple[Any, ...]:
    kind = type(message).__name__
    if not isinstance(message, AssistantMessage | ToolResultMessage):
        kind = UserMessage.__name__  # what a framework without the kind holds
    calls = [(c.id, c.name, dict(c.arguments)) for c in tool_calls(message)]
    result = (
        (message.tool_call_id, message.is_error) if isinstance(message, ToolResultMessage) else ()
    )
    return kind, calls, result


def _text(message: AgentMessage) -> str:
    return message_text(message).strip()


LOADERS: dict[str, tuple[Callable[..., Any], Callable[[Any], Any], Callable[[Any], Any]]] = {
    "langchain": (to_langchain, lc_messages.messages_from_dict, lc_convert.to_core),
    "llama-index": (
        to_llama_index,
        lambda dumped: [li_types.ChatMessage.model_validate(d) for d in dumped],
        li_convert.to_core,
    ),
}


@pytest.mark.parametrize("framework", sorted(LOADERS))
@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_a_written_transcript_loads_as_it_was_read(path: Path, framework: str) -> None:
    write, load, to_core = LOADERS[framework]
    read = list(read_transcript(path).messages)
    loaded = [to_core(m) for m in load(write(read))]
    assert [_shape(m) for m in loaded] == [_shape(m) for m in read]
    for before, after in zip(read, loaded, strict=True):
        # A summary is written with the digest header the adapters' digests open with.
        assert _text(before) in _text(after)
