"""Read transcripts people already have into core messages, and write them back.

Formats (the key is what ``format=`` and the command line's ``--from`` take):

========================  =====================================================
``openai``                Chat Completions message list (JSON; or a run object with
                          ``messages`` / ``traj``)
``openai-jsonl``          the same, one message a line
``anthropic``             Anthropic Messages ``{system?, messages}``
``claude-code``           Claude Code session JSONL
``pi``                    pi coding agent session JSONL
``langchain``             LangChain ``messages_to_dict`` dump
``llama-index``           LlamaIndex ``ChatMessage.model_dump(mode="json")`` list
``json``                  this library's own JSON (``message_to_dict`` records)
========================  =====================================================

JSONL formats are read line by line, so a large session is never held as text; JSON
documents are parsed whole. System prompts come back apart from the messages
(:attr:`Transcript.system`): the core has no system role, so count them as pinned tokens.

>>> import io
>>> t = read_transcript(io.StringIO('[{"role": "system", "content": "be brief"},'
...                                 ' {"role": "user", "content": "hi"}]'))
>>> t.format, t.system, t.messages
('openai', ('be brief',), (UserMessage(content='hi', timestamp=None, role='user'),))
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from window_budget.messages import AgentMessage
from window_budget.readers._base import PICK_FORMAT, BadRecord, ReadError, Transcript
from window_budget.readers.anthropic import read_anthropic, write_anthropic
from window_budget.readers.claude_code import read_claude_code, write_claude_code
from window_budget.readers.langchain_dump import read_langchain, write_langchain
from window_budget.readers.llama_index_dump import read_llama_index, write_llama_index
from window_budget.readers.native import NATIVE_TAG, read_native, write_native
from window_budget.readers.openai import read_openai, write_openai
from window_budget.readers.pi import read_pi, write_pi

__all__ = [
    "FORMATS",
    "TRANSCRIPT_SUFFIXES",
    "BadRecord",
    "ReadError",
    "Transcript",
    "detect_format",
    "iter_transcript_files",
    "read_transcript",
    "write_transcript",
]

Reader = Callable[..., Transcript]
Writer = Callable[..., None]


def _read_openai_jsonl(stream: IO[str], **kw: Any) -> Transcript:
    return read_openai(stream, jsonl=True, **kw)


def _write_openai_jsonl(messages: Iterable[AgentMessage], stream: IO[str], **kw: Any) -> None:
    write_openai(messages, stream, jsonl=True, **kw)


FORMATS: Mapping[str, tuple[Reader, Writer]] = {
    "openai": (read_openai, write_openai),
    "openai-jsonl": (_read_openai_jsonl, _write_openai_jsonl),
    "anthropic": (read_anthropic, write_anthropic),
    "claude-code": (read_claude_code, write_claude_code),
    "pi": (read_pi, write_pi),
    "langchain": (read_langchain, write_langchain),
    "llama-index": (read_llama_index, write_llama_index),
    "json": (read_native, write_native),
}
"""Every format by name: its reader and its writer."""

TRANSCRIPT_SUFFIXES = (".json", ".jsonl")
"""File endings a directory scan picks up."""

_PI_TYPES = frozenset({"session", "message", "compaction", "model_change",
                       "thinking_level_change"})
_CLAUDE_TYPES = frozenset({"user", "assistant", "system", "summary", "progress",
                           "file-history-snapshot", "queue-operation"})
_CORE_ONLY_ROLES = frozenset({"toolResult", "bashExecution", "custom", "branchSummary",
                              "compactionSummary"})
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking",
                               "image"})


def _detect_line(first: Any) -> str | None:
    if not isinstance(first, Mapping):
        return None
    kind = first.get("type")
    if kind in _PI_TYPES and (kind != "message" or (isinstance(first.get("message"), Mapping)
                              and "uuid" not in first)):
        return "pi"
    if kind in _CLAUDE_TYPES or "sessionId" in first or "parentUuid" in first:
        return "claude-code"
    if "role" in first:
        return "openai-jsonl"
    return None


def _has_anthropic_blocks(msgs: list[Any]) -> bool:
    for m in msgs:
        content = m.get("content") if isinstance(m, Mapping) else None
        if isinstance(content, list) and any(
                isinstance(b, Mapping) and b.get("type") in _ANTHROPIC_BLOCKS for b in content):
            return True
    return False


def _detect_document(doc: Any) -> str | None:
    if isinstance(doc, Mapping):
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
    if not isinstance(doc, list) or not doc:
        return None if not isinstance(doc, list) else "openai"
    first = doc[0]
    if not isinstance(first, Mapping):
        return None
    if "data" in first and "type" in first:
        return "langchain"
    if "blocks" in first or "additional_kwargs" in first:
        return "llama-index"
    roles = {m.get("role") for m in doc if isinstance(m, Mapping)}
    if roles & _CORE_ONLY_ROLES:
        return "json"
    if "role" in first:
        return "anthropic" if _has_anthropic_blocks(doc) and not roles & {"tool", "system"} \
            else "openai"
    return None


def detect_format(path: str | Path) -> str:
    """Guess a file's format from its first line (JSONL) or its shape (JSON).

    Raises:
        ReadError: no known format fits; the message lists the names ``format=`` takes.

    """
    p = Path(path)
    with p.open(encoding="utf-8") as stream:
        first_line = ""
        for line in stream:
            if line.strip():
                first_line = line
                break
        rest = stream.readline()
    guess: str | None = None
    syntax: json.JSONDecodeError | None = None
    try:
        first = json.loads(first_line) if first_line else None
    except json.JSONDecodeError as exc:
        first, syntax = None, exc
    if isinstance(first, Mapping) and (rest.strip() or p.suffix == ".jsonl"):
        guess = _detect_line(first)
    if (guess is None and p.suffix != ".jsonl") or (guess is None and not rest.strip()):
        try:
            with p.open(encoding="utf-8") as stream:
                doc = json.load(stream)
        except json.JSONDecodeError as exc:
            doc, syntax = None, exc
        guess = _detect_document(doc) if doc is not None else None
    if guess is None and isinstance(first, Mapping):
        guess = _detect_line(first)
    if guess is None and syntax is not None:
        raise ReadError(f"{p}, line {syntax.lineno}, column {syntax.colno}: not valid JSON "
                        f"({syntax.msg}) — fix the file, or pass {PICK_FORMAT} if it is JSONL",
                        path=str(p), line=syntax.lineno)
    if guess is None:
        raise ReadError(f"{p}: cannot tell which transcript format this is — pass one of "
                        f"{', '.join(FORMATS)} as {PICK_FORMAT}",
                        path=str(p))
    return guess


def read_transcript(source: str | Path | IO[str], *, format: str | None = None,
                    skip_bad: bool = False) -> Transcript:
    """Read a transcript file (or an open text stream) into core messages.

    Args:
        source: a path, or a text stream (then ``format`` is needed unless it is JSON
            whose shape tells).
        format: one of :data:`FORMATS`; detected when None.
        skip_bad: skip malformed lines or records and list them in ``Transcript.skipped``
            instead of raising.

    Raises:
        ReadError: the file cannot be read; the message names the file, the line or
            record, and what is wrong.

    """
    if format is not None and format not in FORMATS:
        raise ReadError(f"unknown format {format!r} — use one of {', '.join(FORMATS)}")
    if not isinstance(source, str | Path):
        if format is None:
            text = source.read()
            try:
                guess = _detect_document(json.loads(text))
            except json.JSONDecodeError:
                first = text.lstrip().split("\n", 1)[0]
                try:
                    guess = _detect_line(json.loads(first))
                except json.JSONDecodeError:
                    guess = None
            if guess is None:
                raise ReadError("cannot tell which transcript format this is — pass one of "
                                f"{', '.join(FORMATS)} as format=")
            format, source = guess, io.StringIO(text)
        return FORMATS[format][0](source, skip_bad=skip_bad)
    path = Path(source)
    if path.is_dir():
        raise ReadError(f"{path} is a directory — pass a transcript file", path=str(path))
    try:
        fmt = format or detect_format(path)
        with path.open(encoding="utf-8") as stream:
            return FORMATS[fmt][0](stream, path=str(path), skip_bad=skip_bad)
    except UnicodeDecodeError as exc:
        raise ReadError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}) — is this "
                        "a transcript?", path=str(path)) from None


def write_transcript(messages: Iterable[AgentMessage], target: str | Path | IO[str], *,
                     format: str = "json", system: Iterable[str] = (),
                     tokens_before: int | None = None) -> None:
    """Write core messages (and system prompts) in one of :data:`FORMATS`.

    Kinds a format has no place for (shell runs, notes, another tool's summaries) are
    written as user text, so nothing the condenser kept is lost. Every format keeps the
    ``system`` prompts: ``claude-code`` and ``pi`` (whose agents rebuild their own) on
    records their agents ignore, read back into ``Transcript.system``. ``tokens_before``
    (the size of the transcript a digest replaced, ``CondenseResult.tokens_before``) is
    written where a format records it: ``claude-code``'s ``preTokens``.
    """
    if format not in FORMATS:
        raise ReadError(f"unknown format {format!r} — use one of {', '.join(FORMATS)}")
    writer = FORMATS[format][1]
    extra: dict[str, Any] = {}
    if tokens_before is not None and format == "claude-code":
        extra["tokens_before"] = tokens_before
    if isinstance(target, str | Path):
        with Path(target).open("w", encoding="utf-8") as stream:
            writer(messages, stream, system=system, **extra)
    else:
        writer(messages, target, system=system, **extra)


def iter_transcript_files(directory: str | Path) -> list[Path]:
    """The transcript files directly inside ``directory`` (by suffix), sorted by name."""
    return sorted(p for p in Path(directory).iterdir()
                  if p.is_file() and p.suffix in TRANSCRIPT_SUFFIXES)
