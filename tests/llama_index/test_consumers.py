"""Real LlamaIndex consumers run 200+ turns with the memory on a scripted LLM that fails
whenever a request exceeds its window."""

from __future__ import annotations

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.agent.workflow import FunctionAgent, ReActAgent
from llama_index.core.base.llms.types import MessageRole
from llama_index.core.chat_engine import CondensePlusContextChatEngine, SimpleChatEngine
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.tools import FunctionTool

from llama_index.memory.window_budget import WindowBudgetMemory, bounded_tool, is_digest

from .conftest import ScriptedLLM

# The agent workflows touch pydantic's deprecated ``__fields__`` while collecting steps;
# that warning is LlamaIndex's, not ours.
pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")

TURNS = 210


def lookup(q: str) -> str:
    """Look a fact up."""
    return f"facts about {q}: " + "detail " * 40


def check(llm: ScriptedLLM, memory: WindowBudgetMemory, turns: int) -> None:
    assert len(llm.sizes) >= turns
    assert max(llm.sizes) <= llm.window
    assert llm.summary_prompts, "the history never reached the gate"
    assert len(llm.summary_prompts) < turns // 3
    assert is_digest(memory.get_all()[0])
    everything = memory.get_all(include_archived=True)
    assert sum(m.role == MessageRole.USER for m in everything) == turns


def test_simple_chat_engine_sync_and_streaming() -> None:
    llm = ScriptedLLM(window=3000)
    memory = WindowBudgetMemory.from_defaults(llm=llm)
    engine = SimpleChatEngine.from_defaults(
        llm=llm, memory=memory, system_prompt="You are terse. " * 30
    )
    for i in range(TURNS - 10):
        engine.chat(f"turn {i}: " + "tell me more " * 25)
    for i in range(10):
        # The streaming path writes the reply to memory from a writer thread.
        response = engine.stream_chat(f"stream {i}: " + "go on " * 25)
        for _ in response.response_gen:
            pass
    check(llm, memory, TURNS)


async def test_simple_chat_engine_async() -> None:
    llm = ScriptedLLM(window=3000)
    memory = WindowBudgetMemory.from_defaults(llm=llm)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    for i in range(TURNS):
        await engine.achat(f"turn {i}: " + "tell me more " * 25)
    check(llm, memory, TURNS)
    assert set(llm.calls) == {"achat"}


@pytest.mark.slow
def test_condense_plus_context_chat_engine() -> None:
    llm = ScriptedLLM(window=4096)
    docs = [Document(text=f"Document {k}: " + "knowledge " * 30) for k in range(5)]
    index = VectorStoreIndex.from_documents(docs, embed_model=MockEmbedding(embed_dim=8))
    # The engine adds retrieved context and a 500-token padding around the history:
    # the memory gets half of the window, the rest stays for context and the reply.
    memory = WindowBudgetMemory.from_defaults(llm=llm, context_window=2048)
    engine = CondensePlusContextChatEngine.from_defaults(
        index.as_retriever(similarity_top_k=1), llm=llm, memory=memory
    )
    for i in range(TURNS):
        engine.chat(f"turn {i}: " + "what about it " * 20)
    check(llm, memory, TURNS)


@pytest.mark.slow
async def test_function_agent_with_tool() -> None:
    llm = ScriptedLLM(window=4096)
    memory = WindowBudgetMemory.from_defaults(llm=llm)
    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(lookup)],
        llm=llm,
        system_prompt="Use the tool.",
        streaming=False,
    )
    for i in range(TURNS):
        await agent.run(user_msg=f"question {i}: " + "please look " * 20, memory=memory)
    check(llm, memory, TURNS)
    tools = [m for m in memory.get_all(include_archived=True) if m.role == MessageRole.TOOL]
    assert len(tools) == TURNS


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:is_running called from within a step:DeprecationWarning")
async def test_react_agent() -> None:
    llm = ScriptedLLM(window=4096, react=True)
    memory = WindowBudgetMemory.from_defaults(llm=llm)
    agent = ReActAgent(tools=[FunctionTool.from_defaults(lookup)], llm=llm, streaming=False)
    for i in range(TURNS):
        await agent.run(user_msg=f"question {i}: " + "please think " * 20, memory=memory)
    check(llm, memory, TURNS)


def huge_lookup(q: str) -> str:
    """Return a very large document."""
    return f"dump for {q}: " + "row " * 20_000


async def test_bounded_tool_keeps_agent_runs_inside_window() -> None:
    llm = ScriptedLLM(window=4096)
    memory = WindowBudgetMemory.from_defaults(llm=llm)
    tool = bounded_tool(FunctionTool.from_defaults(huge_lookup), max_tokens=400)
    assert tool.metadata.name == "huge_lookup"
    agent = FunctionAgent(tools=[tool], llm=llm, streaming=False)
    for i in range(20):
        await agent.run(user_msg=f"question {i}", memory=memory)
    assert max(llm.sizes) <= llm.window
    results = [m for m in memory.get_all(include_archived=True) if m.role == MessageRole.TOOL]
    assert len(results) == 20
    assert all("removed by window-budget" in (m.content or "") for m in results)


async def test_unbounded_tool_output_overflows_the_scratchpad() -> None:
    llm = ScriptedLLM(window=4096)
    memory = WindowBudgetMemory.from_defaults(llm=llm)
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(huge_lookup)], llm=llm, streaming=False)
    with pytest.raises(Exception, match="exceeds the 4096 window"):
        await agent.run(user_msg="question", memory=memory)


def test_a_clamped_tool_output_fits_and_carries_the_cores_marker() -> None:
    from llama_index.memory.window_budget import clamp_text_tokens
    from window_budget.budget import count_text

    text = "HEAD " + "dense/path/segment " * 3_000 + " TAIL"
    out = clamp_text_tokens(text, 500)
    assert count_text(out) <= 500
    assert out.startswith("HEAD")
    assert out.endswith("TAIL")
    assert "chars removed by window-budget" in out
    assert clamp_text_tokens("small", 500) == "small"
