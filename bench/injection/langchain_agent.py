"""The LangChain cells: ``create_agent`` with ``WindowBudgetMiddleware`` and a scripted
tool-calling model, a tool or the model's reply metadata filling the field."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from langchain_core.tools import InjectedToolCallId

from injection.adapters import FILLER_CHARS, Summaries, adapter_evidence
from injection.checks import Cell, Evidence
from injection.payloads import OBJECTIVE, PAYLOADS
from window_budget.digest import is_digest

LC_FIELDS = (
    "tool result content",
    "tool error output (ToolException)",
    "tool name",
    "tool-call arguments",
    "shell output (failed Bash tool)",
    "shell command (Bash arguments)",
    "image mime type in a tool result",
    "tool message metadata (artifact, additional_kwargs, name)",
    "observation a tool adds (ChatMessage role=observation)",
    "model name (response_metadata)",
)


def _lc_tools(field_name: str, payload: str) -> list[Any]:
    from langchain_core.messages import ChatMessage, ToolMessage
    from langchain_core.tools import StructuredTool, ToolException
    from langgraph.types import Command

    def lookup(q: str) -> str:
        """Look something up."""
        return f"findings for {q}: " + "f" * FILLER_CHARS

    def fetch(url: str) -> Any:
        """Fetch a page."""
        if field_name.startswith("tool error"):
            raise ToolException(payload)
        if field_name.startswith("image"):
            return [
                {"type": "text", "text": "captured"},
                {"type": "image", "base64": "AAAA", "mime_type": payload},
            ]
        return payload

    def bash(command: str) -> str:
        """Run a shell command."""
        if field_name.startswith("shell output"):
            raise ToolException(payload)
        return "ok"

    def meta(url: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Fetch a page with metadata."""
        if field_name.startswith("observation"):
            return Command(
                update={
                    "messages": [
                        ToolMessage("fetched", tool_call_id=tool_call_id),
                        ChatMessage(role="observation", content=payload),
                    ]
                }
            )
        return ToolMessage(
            "fetched",
            tool_call_id=tool_call_id,
            artifact=payload,
            additional_kwargs={"note": payload},
            response_metadata={"source": payload},
        )

    tools = [
        StructuredTool.from_function(lookup),
        StructuredTool.from_function(fetch, handle_tool_error=True),
        StructuredTool.from_function(bash, name="Bash", handle_tool_error=True),
        StructuredTool.from_function(meta),
    ]
    if field_name == "tool name":
        tools.append(StructuredTool.from_function(lambda q: "ok", name=payload, description="x"))
    return tools


def _lc_first_call(field_name: str, payload: str) -> dict[str, Any]:
    call: dict[str, Any] = {"name": "fetch", "args": {"url": "https://docs.example"}}
    if field_name == "tool name":
        call = {"name": payload, "args": {"q": "x"}}
    elif field_name == "tool-call arguments":
        call = {"name": "lookup", "args": {"q": payload}}
    elif field_name.startswith("shell output"):
        call = {"name": "Bash", "args": {"command": "make test"}}
    elif field_name.startswith("shell command"):
        call = {"name": "Bash", "args": {"command": payload}}
    elif field_name.startswith(("tool message", "observation")):
        call = {"name": "meta", "args": {"url": "https://docs.example"}}
    return {**call, "id": "call-hostile", "type": "tool_call"}


def _lc_model(field_name: str, payload: str, summaries: Summaries) -> Any:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from window_budget.pipeline.summarize import CONDENSER_BRIEF

    model_name = payload if field_name.startswith("model name") else "scripted"

    class Scripted(BaseChatModel):
        """Calls one tool per user turn (the hostile call on the first), then answers."""

        turn: int = 0

        @property
        def _llm_type(self) -> str:
            return "bench-scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> ChatResult:
            first = messages[0] if messages else None
            if isinstance(first, SystemMessage) and first.text == CONDENSER_BRIEF:
                reply = AIMessage(summaries.answer(messages[-1].text))
                return ChatResult(generations=[ChatGeneration(message=reply)])
            meta = {"model_name": model_name}
            if isinstance(messages[-1], HumanMessage):
                self.turn += 1
                call = (
                    _lc_first_call(field_name, payload)
                    if self.turn == 1
                    else {
                        "name": "lookup",
                        "args": {"q": f"topic {self.turn}"},
                        "id": f"call-{self.turn}",
                        "type": "tool_call",
                    }
                )
                reply = AIMessage("", tool_calls=[call], response_metadata=meta)
            else:
                reply = AIMessage(f"answer {self.turn}: " + "a" * 300, response_metadata=meta)
            return ChatResult(generations=[ChatGeneration(message=reply)])

    return Scripted()


def langchain_run(
    field_name: str, payload: str, tmp: Path, *, first: list[Any] | None = None, turns: int = 9
) -> tuple[Evidence, list[Any], Any]:
    """A ``create_agent`` run with the hostile field filled on the first turn."""
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage, messages_to_dict
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_window_budget import WindowBudgetMiddleware
    from langchain_window_budget._convert import to_core

    summaries = Summaries()
    model = _lc_model(field_name, payload, summaries)
    archived: list[Any] = []
    middleware = WindowBudgetMiddleware(
        model, context_window=3000, archive=archived.extend, system_prompt="Be terse."
    )
    agent = create_agent(
        model,
        tools=_lc_tools(field_name, payload),
        system_prompt="Be terse.",
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "bench"}}
    for i in range(turns):
        opening = [*(first or []), HumanMessage(OBJECTIVE)] if i == 0 else []
        agent.invoke({"messages": [*opening, HumanMessage(f"Step {i}: carry on.")]}, config)
    state = agent.get_state(config).values["messages"]
    core_archive = [to_core(m) for m in archived]
    digests = [m for m in [*core_archive, *(to_core(m) for m in state)] if is_digest(m)]
    dump = tmp / "langchain_state.json"
    dump.write_text(json.dumps(messages_to_dict(state), ensure_ascii=False), encoding="utf-8")
    ev = adapter_evidence(digests, core_archive, summaries.prompts, dump)
    return ev, state, middleware


def langchain_cells(variants: Sequence[str], tmp: Path) -> list[Cell]:
    cells = []
    for variant in variants:
        for name in LC_FIELDS:
            ev, _, middleware = langchain_run(name, PAYLOADS[variant], tmp)
            cell = Cell("langchain", name, variant, note=f"{middleware.compactions} compactions")
            cells.append(cell.judge(ev))
    return cells
