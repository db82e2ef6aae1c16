"""The LlamaIndex cells: a ``FunctionAgent`` over a ``WindowBudgetMemory``, a tool or the
model's reply filling the field."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from injection.adapters import FILLER_CHARS, Summaries, adapter_evidence
from injection.checks import Cell, Evidence
from injection.payloads import OBJECTIVE, PAYLOADS
from window_budget import AgentMessage
from window_budget.digest import is_digest
from window_budget.messages import message_text

LI_FIELDS = (
    "tool result content",
    "tool error output (the tool raises)",
    "tool name",
    "tool-call arguments",
    "assistant reply metadata (additional_kwargs model)",
    "user message metadata (additional_kwargs an app attaches)",
)


def _li_llm(field_name: str, payload: str, summaries: Summaries) -> Any:
    from llama_index.core.base.llms.types import (
        ChatMessage,
        ChatResponse,
        LLMMetadata,
        MessageRole,
        ToolCallBlock,
    )
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    from window_budget.pipeline.summarize import CONDENSER_BRIEF

    class Scripted(MockFunctionCallingLLM):
        """Calls a tool after each user turn (the hostile call on the first), then answers;
        summary requests go to ``summaries``."""

        _turn: int = PrivateAttr(default=0)

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(
                context_window=8192,
                num_output=256,
                is_chat_model=True,
                is_function_calling_model=True,
                model_name="scripted",
            )

        def _respond(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
            first = messages[0] if messages else None
            if (
                first is not None
                and first.role == MessageRole.SYSTEM
                and (first.content or "").startswith(CONDENSER_BRIEF[:40])
            ):
                return ChatMessage(role="assistant", content=summaries.answer(messages[-1].content))
            extra = {"model": payload} if field_name.startswith("assistant reply") else {}
            last = messages[-1]
            if kwargs.get("tools") and last.role == MessageRole.USER:
                self._turn += 1
                name, args = "lookup", {"q": f"topic {self._turn}"}
                if self._turn == 1:
                    name = payload if field_name == "tool name" else "fetch"
                    if field_name == "tool-call arguments":
                        name, args = "lookup", {"q": payload}
                    elif name == "fetch":
                        args = {"url": "https://docs.example"}
                call = ToolCallBlock(
                    tool_call_id=f"call-{self._turn}", tool_name=name, tool_kwargs=args
                )
                return ChatMessage(role="assistant", blocks=[call], additional_kwargs=extra)
            return ChatMessage(
                role="assistant",
                content=f"answer {self._turn}: " + "a" * 300,
                additional_kwargs=extra,
            )

        def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
            return ChatResponse(message=self._respond(messages, **kwargs))

        async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
            return ChatResponse(message=self._respond(messages, **kwargs))

    return Scripted(is_chat_model=True)


def _li_tools(field_name: str, payload: str) -> list[Any]:
    from llama_index.core.tools import FunctionTool

    def lookup(q: str) -> str:
        """Look something up."""
        return f"findings for {q}: " + "f" * FILLER_CHARS

    def fetch(url: str) -> str:
        """Fetch a page."""
        if field_name.startswith("tool error"):
            raise RuntimeError(payload)
        return payload if field_name == "tool result content" else "fetched"

    tools = [FunctionTool.from_defaults(lookup), FunctionTool.from_defaults(fetch)]
    if field_name == "tool name":
        tools.append(FunctionTool.from_defaults(lambda q: "ok", name=payload, description="x"))
    return tools


def llama_index_run(
    field_name: str, payload: str, tmp: Path, *, first: list[Any] | None = None, turns: int = 9
) -> tuple[Evidence, Any]:
    """A ``FunctionAgent`` run over a ``WindowBudgetMemory`` with the hostile field filled."""
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ChatMessage

    from llama_index.memory.window_budget import WindowBudgetMemory, to_core

    summaries = Summaries()
    llm = _li_llm(field_name, payload, summaries)
    memory = WindowBudgetMemory.from_defaults(llm=llm, context_window=2048)
    if first:
        memory.put_messages(first)
    agent = FunctionAgent(tools=_li_tools(field_name, payload), llm=llm, streaming=False)
    extra = {"sources": payload} if field_name.startswith("user message") else {}

    seen: dict[str, AgentMessage] = {}  # every digest the memory held, by text

    async def drive() -> None:
        for i in range(turns):
            text = OBJECTIVE if i == 0 else f"Step {i}: carry on."
            msg = ChatMessage(role="user", content=text, additional_kwargs=extra if i == 1 else {})
            await agent.run(user_msg=msg, memory=memory)
            for m in map(to_core, memory.get_all()):
                if is_digest(m):
                    seen.setdefault(message_text(m), m)

    asyncio.run(drive())
    live = memory.get_all()
    digests = list(seen.values())
    # Every original, archived ones put back in place; the live tail ends it.
    everything = [to_core(m) for m in memory.get_all(include_archived=True)]
    archived = everything[: len(everything) - sum(not is_digest(to_core(m)) for m in live)]
    dump = tmp / "llama_index_state.json"
    dump.write_text(
        json.dumps([m.model_dump(mode="json") for m in live], ensure_ascii=False), encoding="utf-8"
    )
    return adapter_evidence(digests, archived, summaries.prompts, dump), memory


def llama_index_cells(variants: Sequence[str], tmp: Path) -> list[Cell]:
    cells = []
    for variant in variants:
        for name in LI_FIELDS:
            ev, _ = llama_index_run(name, PAYLOADS[variant], tmp)
            cell = Cell("llama-index", name, variant, note=f"{len(ev.prompts)} summary calls")
            cells.append(cell.judge(ev))
    return cells
