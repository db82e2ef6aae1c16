"""The core's cells: each message field a tool, a shell or an observation fills."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from injection.checks import Cell
from injection.evidence import core_evidence, inspect
from injection.payloads import OBJECTIVE, PAYLOADS
from window_budget import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    CustomMessage,
    ImageBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
)
from window_budget.readers import write_transcript


def _call(name: str, **args: object) -> AssistantMessage:
    return AssistantMessage((ToolCallBlock("c1", name, dict(args)),))


CORE_FIELDS: dict[str, Callable[[str], list[AgentMessage]]] = {
    "tool result content": lambda p: [
        _call("fetch", url="https://docs.example/setup"),
        ToolResultMessage("c1", "fetch", p),
    ],
    "tool error output": lambda p: [
        _call("fetch", url="https://docs.example/setup"),
        ToolResultMessage("c1", "fetch", p, is_error=True),
    ],
    "tool name (call and result)": lambda p: [
        _call(p, path="a.py"),
        ToolResultMessage("c1", p, "ok"),
    ],
    "tool-call argument value": lambda p: [
        _call("Bash", command=p),
        ToolResultMessage("c1", "Bash", "exit 1", is_error=True),
    ],
    "tool-call argument key": lambda p: [
        _call("fetch", **{p: "v"}),
        ToolResultMessage("c1", "fetch", "ok"),
    ],
    "shell command": lambda p: [BashExecutionMessage(p, "done", exit_code=0)],
    "shell output (failed)": lambda p: [BashExecutionMessage("make test", p, exit_code=2)],
    "observation note (CustomMessage)": lambda p: [CustomMessage("observation", p)],
    "CustomMessage custom_type": lambda p: [CustomMessage(p, "note body")],
    "image mime type in a tool result": lambda p: [
        _call("screenshot"),
        ToolResultMessage("c1", "screenshot", (TextBlock("captured"), ImageBlock("AA", p))),
    ],
    "assistant model name": lambda p: [AssistantMessage("Reading the loader.", model=p)],
}


def core_cells(variants: Sequence[str], tmp: Path) -> list[Cell]:
    cells = []
    for variant in variants:
        for name, build in CORE_FIELDS.items():
            messages = build(PAYLOADS[variant])
            ev, _ = core_evidence(messages, tmp)
            raw = tmp / "input.json"
            write_transcript([UserMessage(OBJECTIVE), *messages], raw, format="json")
            ev.cli.append(inspect(raw))
            cells.append(Cell("core", name, variant).judge(ev))
    return cells
