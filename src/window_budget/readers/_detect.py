"""Which format a transcript file is written in, from its name and its first records."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from window_budget.readers._base import (
    BOM,
    CLAUDE_TYPES,
    PI_TYPES,
    PICK_FORMAT,
    ReadError,
    loads,
    open_transcript,
)
from window_budget.readers._formats import FORMATS
from window_budget.readers._records import (
    tag,
)
from window_budget.readers.native import NATIVE_TAG
from window_budget.readers.openhands import (
    is_openhands_events,
    is_openhands_run,
)
from window_budget.readers.swe_agent import is_swe_agent
from window_budget.readers.tau_bench import is_tau_bench

__all__ = ["detect_format", "first_lines", "looks_like", "not_utf8", "sniff"]


_CORE_ONLY_ROLES = frozenset(
    {"toolResult", "bashExecution", "custom", "branchSummary", "compactionSummary"}
)
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "image"})


def _detect_line(first: Any) -> str | None:
    if not isinstance(first, Mapping):
        return None
    kind = tag(first.get("type"))
    if kind in PI_TYPES and (
        kind != "message" or (isinstance(first.get("message"), Mapping) and "uuid" not in first)
    ):
        return "pi"
    if kind in CLAUDE_TYPES or "sessionId" in first or "parentUuid" in first:
        return "claude-code"
    if is_openhands_run(first):
        return "openhands"
    if "role" in first:
        return "openai-jsonl"
    return None


def _has_anthropic_blocks(msgs: list[Any]) -> bool:
    for m in msgs:
        content = m.get("content") if isinstance(m, Mapping) else None
        if isinstance(content, list) and any(
            isinstance(b, Mapping) and tag(b.get("type")) in _ANTHROPIC_BLOCKS for b in content
        ):
            return True
    return False


def _detect_object(doc: Mapping[str, Any]) -> str | None:
    """The format of a JSON object document (a list of messages is told by its records)."""
    if doc.get("format") == NATIVE_TAG:
        return "json"
    if isinstance(doc.get("traj"), list):
        return "openai"
    msgs = doc.get("messages")
    if not isinstance(msgs, list):
        return None
    if "system" in doc and not isinstance(doc["system"], list | str):
        return None
    if isinstance(doc.get("system"), list) and all(isinstance(s, str) for s in doc["system"]):
        return "json"
    if "system" in doc or _has_anthropic_blocks(msgs):
        return "anthropic"
    return _detect_document(msgs) or "openai"


def _detect_document(doc: Any) -> str | None:
    if is_tau_bench(doc):
        return "tau-bench"
    if is_openhands_events(doc) or is_openhands_run(doc):
        return "openhands"
    if is_swe_agent(doc):
        return "swe-agent"
    if isinstance(doc, Mapping):
        return _detect_object(doc)
    if not isinstance(doc, list) or not doc:
        return None if not isinstance(doc, list) else "openai"
    first = doc[0]
    if not isinstance(first, Mapping):
        return None
    if "data" in first and "type" in first:
        return "langchain"
    if "blocks" in first or "additional_kwargs" in first:
        return "llama-index"
    roles = {
        m.get("role") for m in doc if isinstance(m, Mapping) and isinstance(m.get("role"), str)
    }
    if roles & _CORE_ONLY_ROLES:
        return "json"
    if "role" in first:
        return (
            "anthropic"
            if _has_anthropic_blocks(doc) and not roles & {"tool", "system"}
            else "openai"
        )
    return None


_NOT_PARSED = object()


def _try_loads(text: str | None) -> Any:
    if text is None:
        return _NOT_PARSED
    try:
        return loads(text)
    except ValueError:
        return _NOT_PARSED


def sniff(head: list[str], whole: Callable[[], str], where: str, *, pick: str) -> str:
    """The format of a file from its first two non-blank lines, or from the whole text.

    A JSON document holds exactly one value, so a first line that is a complete value
    followed by more text means JSONL; a first line that is not a complete value means a
    document spread over lines (pretty-printed), which is then parsed whole. So a valid
    document is never reported as invalid JSONL, nor a JSONL file as an invalid document.
    """
    first = _try_loads(head[0] if head else None)
    second = _try_loads(head[1] if len(head) > 1 else None)
    label = f"{where}: " if where else ""
    unknown = (
        f"{label}cannot tell which transcript format this is — pass one of "
        f"{', '.join(FORMATS)} as {pick}"
    )
    if first is not _NOT_PARSED and len(head) > 1:
        guess = _detect_line(first)
        if guess is None:
            raise ReadError(unknown, path=where)
        return guess
    if first is not _NOT_PARSED:
        guess = _detect_document(first) or _detect_line(first)
        if guess is None:
            raise ReadError(unknown, path=where)
        return guess
    text = whole()
    try:
        doc = loads(text[1:] if text.startswith(BOM) else text)
    except json.JSONDecodeError as exc:
        if second is not _NOT_PARSED and _detect_line(second) is not None:
            # JSONL whose first line is broken: the reader names the line.
            return str(_detect_line(second))
        raise ReadError(
            f"{where or '<input>'}, line {exc.lineno}, column {exc.colno}: not "
            f"valid JSON ({exc.msg}) — fix the file",
            path=where,
            line=exc.lineno,
        ) from None
    except ValueError as exc:
        raise ReadError(f"{label or '<input>: '}{exc} — fix the file", path=where) from None
    guess = _detect_document(doc)
    if guess is None:
        raise ReadError(unknown, path=where)
    return guess


def first_lines(lines: Iterable[str]) -> list[str]:
    head: list[str] = []
    for line in lines:
        if line.strip():
            head.append(line[1:] if not head and line.startswith(BOM) else line)
            if len(head) == 2:
                break
    return head


def detect_format(path: str | Path) -> str:
    """Guess a file's format from its first lines (JSONL) or its shape (JSON).

    Raises:
        ReadError: no known format fits, or the file is not readable JSON or JSONL (or
            not a regular file); the message names the file and, when another format
            could help, the names ``format=`` takes.

    """
    p = Path(path)
    with open_transcript(p) as stream:
        head = first_lines(stream)

    def whole() -> str:
        with open_transcript(p) as again:
            return again.read()

    try:
        return sniff(head, whole, str(p), pick=PICK_FORMAT)
    except UnicodeDecodeError as exc:
        raise not_utf8(p, exc) from None


def not_utf8(path: Path, exc: UnicodeDecodeError) -> ReadError:
    return ReadError(
        f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}) — is this a transcript?",
        path=str(path),
    )


def looks_like(path: Path, forced: str) -> str:
    """What to tell the user after a forced format did not fit ``path``."""
    try:
        real = detect_format(path)
    except (ReadError, OSError, UnicodeDecodeError):
        real = ""
    if real and real != forced:
        return f"; it looks like {real} — read it with format={real!r}"
    return f"; pick the format it is written in with {PICK_FORMAT}"
