"""The network-free digest: the six headings filled from the transcript's own facts.

Used whenever no model is bound, the model fails, or it replies with nothing. It is
deterministic (same input, same digest) and never exceeds its token budget.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from window_budget.contract import TokenCounter
from window_budget.digest import digest_body, is_digest
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    ToolResultMessage,
    UserMessage,
    content_text,
)
from window_budget.summarize.prompt import clamp_text

__all__ = ["build_local_digest"]

_PATH_KEYS = ("path", "file_path", "filePath", "filename", "file", "target_file", "notebook_path")
_CMD_KEYS = ("command", "cmd", "script")
_CONSTRAINT_RE = re.compile(
    r"\b(must|never|don't|do not|only|always|avoid|without|keep)\b", re.IGNORECASE
)


def _count(text: str, counter: TokenCounter | None) -> int:
    return counter.count(text) if counter is not None else math.ceil(len(text) / 3.6)


def _dedupe(items: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    return [x for x in items if not (x in seen or seen.add(x))]  # type: ignore[func-returns-value]


def build_local_digest(messages: Sequence[AgentMessage], *, prior_digest: str | None = None,
                       reason: str = "no model bound", max_tokens: int = 2000,
                       counter: TokenCounter | None = None) -> str:
    """Fill the digest template from ``messages`` without a model; returns the body text.

    The header is not included (the caller stamps it).
    """
    asks: list[str] = []
    constraints: list[str] = []
    files: list[str] = []
    commands: list[str] = []
    errors: list[str] = []
    plans: list[str] = []
    carried = [prior_digest.strip()] if prior_digest and prior_digest.strip() else []
    for msg in messages:
        if is_digest(msg):
            body = digest_body(msg)
            if body:
                carried.append(body)
            continue
        if isinstance(msg, UserMessage):
            text = content_text(msg.content).strip()
            if text:
                asks.append(clamp_text(" ".join(text.split()), 300))
                for sentence in re.split(r"(?<=[.!?])\s+|\n", text):
                    if _CONSTRAINT_RE.search(sentence):
                        constraints.append(clamp_text(sentence.strip(), 200))
        elif isinstance(msg, AssistantMessage):
            text = content_text(msg.content).strip()
            if text:
                plans.append(clamp_text(" ".join(text.split()), 300))
            for call in msg.tool_calls:
                for key in _PATH_KEYS:
                    value = call.arguments.get(key)
                    if isinstance(value, str) and value:
                        files.append(value)
                for key in _CMD_KEYS:
                    value = call.arguments.get(key)
                    if isinstance(value, str) and value:
                        commands.append(clamp_text(value.strip(), 200))
        elif isinstance(msg, ToolResultMessage) and msg.is_error:
            errors.append(f"{msg.tool_name}: " + clamp_text(content_text(msg.content).strip(), 300))
        elif isinstance(msg, BashExecutionMessage):
            commands.append(clamp_text(msg.command.strip(), 200))
            if msg.exit_code not in (0, None):
                errors.append(f"$ {msg.command.strip()}: exit {msg.exit_code}: "
                              + clamp_text(msg.output.strip(), 300))

    def bullets(items: Sequence[str], limit: int) -> str:
        items = _dedupe(items)[-limit:]
        return "\n".join(f"- {x}" for x in items) if items else "none"

    objective = asks[0] if asks else "none recorded"
    latest = bullets(asks[1:], 3) if len(asks) > 1 else "none"
    sections = [
        f"_Network-free digest ({reason}); {len(messages)} messages condensed._",
        f"# Objective\n{objective}\nLatest asks:\n{latest}",
        f"# Guardrails\n{bullets(constraints, 10)}",
        "# Status\n## Shipped\n"
        + bullets([f"edited {f}" for f in files], 15)
        + f"\n## Active\n{plans[-1] if plans else 'none'}"
        + f"\n## Stuck\n{bullets(errors, 5)}",
        "# Rationale\nnone recorded",
        f"# Plan\n{plans[-1] if plans else 'none'}",
        f"# Carryover\n{bullets(commands, 10)}",
    ]
    if carried:
        sections.append("# Carried digest\n" + "\n\n".join(carried))
    text = "\n\n".join(sections)
    while _count(text, counter) > max_tokens and len(text) > 80:
        text = clamp_text(text, int(len(text) * 0.85))
    return text
