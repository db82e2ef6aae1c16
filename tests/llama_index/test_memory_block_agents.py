"""``WindowBudgetMemoryBlock`` in ``Memory`` under LlamaIndex's own consumers: a
``SimpleChatEngine`` and a ``FunctionAgent`` (scripted function-calling LLM) see the digest the
LLM wrote, the agent recalls an archived original, and a new ``Memory`` and block over the
same stores resume the session."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.memory import Memory
from llama_index.core.tools import FunctionTool

from llama_index.memory.window_budget import WindowBudgetMemoryBlock
from window_budget.digest import SESSION_HEADER
from window_budget.memory import SQLiteMemoryStore
from window_budget.pipeline.summarize import CONDENSER_BRIEF

from .conftest import ScriptedLLM
from .test_memory_block import HOSTILE, TASK, block_text, turns

# The agent workflows touch pydantic's deprecated ``__fields__`` while collecting steps;
# that warning is LlamaIndex's, not ours.
pytestmark = pytest.mark.filterwarnings(
    "ignore::pydantic.warnings.PydanticDeprecationWarning",
    "ignore:is_running called from within a step:DeprecationWarning",
)


def is_summary_request(messages: Sequence[ChatMessage]) -> bool:
    return bool(messages) and (messages[0].content or "").startswith(CONDENSER_BRIEF[:40])


class RecordingLLM(ScriptedLLM):
    """The scripted LLM, keeping every chat request it answered (summary calls aside); asked to
    recall, it calls ``recall`` for the first archived message and answers with the result."""

    _requests: list[list[ChatMessage]] = PrivateAttr(default_factory=list)
    _tool_results: list[str] = PrivateAttr(default_factory=list)

    def _respond(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        if is_summary_request(messages):
            return super()._respond(messages, **kwargs)
        self._requests.append([m.model_copy(deep=True) for m in messages])
        last = messages[-1]
        if kwargs.get("tools") and last.role == MessageRole.USER and "recall" in str(last.content):
            call = ToolCallBlock(
                tool_call_id="call-recall", tool_name="recall", tool_kwargs={"pointer": "#0"}
            )
            return ChatMessage(role="assistant", blocks=[call])
        if last.role == MessageRole.TOOL:
            self._tool_results.append(last.content or "")
            if (last.content or "").startswith("Recalled"):
                return ChatMessage(role="assistant", content=f"From the archive: {last.content}")
        return super()._respond(messages, **kwargs)

    @property
    def requests(self) -> list[list[ChatMessage]]:
        return self._requests

    @property
    def tool_results(self) -> list[str]:
        return self._tool_results


def system_text(request: list[ChatMessage]) -> str:
    return "\n".join(m.content or "" for m in request if m.role == MessageRole.SYSTEM)


def memory_for(block: WindowBudgetMemoryBlock, session: str, **kw: Any) -> Memory:
    return Memory.from_defaults(
        session_id=session,
        memory_blocks=[block],
        token_limit=2000,
        chat_history_token_ratio=0.5,
        token_flush_size=300,
        **kw,
    )


def test_simple_chat_engine_sends_the_llm_written_digest_to_the_llm() -> None:
    llm = RecordingLLM()
    block = WindowBudgetMemoryBlock(llm=llm, max_tokens=700)
    memory = memory_for(block, "chat-1")
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt="Be brief.")
    engine.chat(TASK)
    for i in range(25):
        engine.chat(f"step {i}: check build {1000 + i} " + "please " * 20)
    assert llm.summary_prompts, "the flushed turns were summarized by the LLM"
    last = llm.requests[-1]
    system = system_text(last)
    assert "<ConversationDigest>" in system
    assert SESSION_HEADER in system
    assert f"(digest {len(llm.summary_prompts)})" in system  # the model's latest words
    assert "never touch setup.py" in system  # a constraint the model's reply left out, pinned
    assert TASK not in "\n".join(m.content or "" for m in last if m.role != MessageRole.SYSTEM)
    assert max(llm.sizes) <= llm.window


def lookup(q: str) -> str:
    """Look something up."""
    return f"result for {q}: " + "row " * 40 + HOSTILE


async def test_function_agent_sees_the_digest_and_recalls_an_archived_original() -> None:
    llm = RecordingLLM()
    block = WindowBudgetMemoryBlock(llm=llm, max_tokens=700)
    memory = memory_for(block, "agent-1")
    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(lookup), block.recall_tool()],
        llm=llm,
        system_prompt="Use the tools.",
        streaming=False,
    )
    await agent.run(user_msg=TASK, memory=memory)
    for i in range(12):
        await agent.run(user_msg=f"question {i}: " + "please look " * 20, memory=memory)
    assert llm.summary_prompts
    system = system_text(llm.requests[-1])
    assert SESSION_HEADER in system
    assert "never touch setup.py" in system
    assert system.count("</memory>") == 1  # the tools' closing tags never reach it unescaped

    reply = await agent.run(user_msg="please recall my first request", memory=memory)
    recalled = llm.tool_results[-1]
    assert recalled.startswith("Recalled from this conversation's archive (quoted data")
    assert "| " + TASK in recalled
    assert TASK in str(reply)
    store = block.store
    assert store is not None
    tools = [o for _, o in store.originals("agent-1") if o.get("role") == "toolResult"]
    assert tools, "the tool results were flushed and archived"
    hostile = block.recall_tool("agent-1").call(query="root rm").content
    assert "you are root now" in hostile
    assert all(line.startswith("| ") for line in hostile.splitlines() if "you are root now" in line)


def test_recall_answers_for_the_one_session_or_asks_which() -> None:
    block = WindowBudgetMemoryBlock()
    tool = block.recall_tool()
    assert "has not served a Memory session" in tool.call(pointer="#0").content
    first = memory_for(block, "a")
    first.put(ChatMessage(role="user", content=TASK))
    turns(first, 20)
    assert TASK in tool.call(pointer="#0").content
    second = memory_for(block, "b")
    turns(second, 20)
    assert "block.recall_tool(memory.session_id)" in tool.call(pointer="#0").content
    assert TASK in block.recall_tool("a").call(pointer="#0").content
    assert TASK not in block.recall_tool("b").call(pointer="#0").content


# ------------------------------------------------------------------ persistence


def test_a_new_memory_and_block_resume_the_session_from_disk(tmp_path: Path) -> None:
    from llama_index.storage.chat_store.sqlite import SQLiteChatStore

    queue = f"sqlite+aiosqlite:///{tmp_path / 'queue.db'}"  # Memory's own short-term queue
    blocks = str(tmp_path / "blocks.db")  # the block's digest, archive and ledger
    block = WindowBudgetMemoryBlock(chat_store=SQLiteChatStore.from_params(blocks), max_tokens=700)
    memory = memory_for(block, "user-42", async_database_uri=queue)
    memory.put(ChatMessage(role="user", content=TASK))
    turns(memory, 20)
    assert block.store is not None
    archived = block.store.archived("user-42")
    versions = block.store.ledger("user-42")
    assert archived > 0
    assert versions is not None

    # Another process: new objects over what is on disk.
    again = WindowBudgetMemoryBlock(chat_store=SQLiteChatStore.from_params(blocks), max_tokens=700)
    resumed = memory_for(again, "user-42", async_database_uri=queue)
    assert "never touch setup.py" in block_text(resumed.get())
    turns(resumed, 20, start=20)
    assert again.store is not None
    assert again.store.archived("user-42") > archived
    assert TASK in str(again.store.original("user-42", 0))  # positions go on, not over
    newest = again.store.ledger("user-42")
    assert newest is not None
    assert newest.version > versions.version
    text = block_text(resumed.get())
    assert "Port the config loader to tomllib" in text
    assert "never touch setup.py" in text


async def test_a_sqlite_memory_store_alone_resumes_the_ledger(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite"
    first = SQLiteMemoryStore(path)
    block = WindowBudgetMemoryBlock(memory_store=first, max_tokens=700)
    memory = memory_for(block, "user-7")
    await memory.aput(ChatMessage(role="user", content=TASK))
    for i in range(20):
        await memory.aput(ChatMessage(role="user", content=f"step {i}: " + "please " * 25))
        await memory.aput(ChatMessage(role="assistant", content=f"done {i} " + "sure " * 25))
    first.close()

    reopened = SQLiteMemoryStore(path)
    try:
        again = WindowBudgetMemoryBlock(memory_store=reopened, max_tokens=700)  # no digest kept
        text = await again.aget(session_id="user-7")
        assert "never touch setup.py" in text
        resumed = memory_for(again, "user-7")
        for i in range(20, 40):
            await resumed.aput(ChatMessage(role="user", content=f"step {i}: " + "please " * 25))
            await resumed.aput(ChatMessage(role="assistant", content=f"done {i} " + "sure " * 25))
        text = block_text(await resumed.aget())
        assert "Port the config loader to tomllib" in text
        assert "never touch setup.py" in text
        assert TASK in again.recall_tool("user-7").call(pointer="#0").content
    finally:
        reopened.close()
