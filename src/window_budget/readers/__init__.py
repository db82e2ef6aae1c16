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
``openhands``             OpenHands event stream (an ``output.jsonl`` of runs, a run
                          object with ``history``, or a list of events)
``tau-bench``             tau-bench result file: a list of runs, each with a ``traj``
``swe-agent``             SWE-agent ``.traj`` file (``history``, else ``trajectory``)
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
import os
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

from window_budget.messages import AgentMessage
from window_budget.readers._base import (
    BOM,
    CLAUDE_TYPES,
    PI_TYPES,
    PICK_FORMAT,
    PICK_RUN,
    BadRecord,
    FormatMismatch,
    ReadError,
    Transcript,
    loads,
    open_transcript,
)
from window_budget.readers._records import (
    tag,
)
from window_budget.readers.anthropic import read_anthropic, write_anthropic
from window_budget.readers.claude_code import read_claude_code, write_claude_code
from window_budget.readers.langchain_dump import read_langchain, write_langchain
from window_budget.readers.llama_index_dump import read_llama_index, write_llama_index
from window_budget.readers.native import NATIVE_TAG, read_native, write_native
from window_budget.readers.openai import read_openai, write_openai
from window_budget.readers.openhands import (
    is_openhands_events,
    is_openhands_run,
    read_openhands,
    write_openhands,
)
from window_budget.readers.pi import read_pi, write_pi
from window_budget.readers.swe_agent import is_swe_agent, read_swe_agent, write_swe_agent
from window_budget.readers.tau_bench import is_tau_bench, read_tau_bench, write_tau_bench

__all__ = [
    "BOUNDARY_FORMATS",
    "FORMATS",
    "RUN_FORMATS",
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
    "openhands": (read_openhands, write_openhands),
    "tau-bench": (read_tau_bench, write_tau_bench),
    "swe-agent": (read_swe_agent, write_swe_agent),
    "json": (read_native, write_native),
}
"""Every format by name: its reader and its writer."""

TRANSCRIPT_SUFFIXES = (".json", ".jsonl", ".traj")
"""File endings a directory scan picks up."""

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


def _sniff(head: list[str], whole: Callable[[], str], where: str, *, pick: str) -> str:
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


def _head(lines: Iterable[str]) -> list[str]:
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
        head = _head(stream)

    def whole() -> str:
        with open_transcript(p) as again:
            return again.read()

    try:
        return _sniff(head, whole, str(p), pick=PICK_FORMAT)
    except UnicodeDecodeError as exc:
        raise _not_utf8(p, exc) from None


def _not_utf8(path: Path, exc: UnicodeDecodeError) -> ReadError:
    return ReadError(
        f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}) — is this a transcript?",
        path=str(path),
    )


def _looks_like(path: Path, forced: str) -> str:
    """What to tell the user after a forced format did not fit ``path``."""
    try:
        real = detect_format(path)
    except (ReadError, OSError, UnicodeDecodeError):
        real = ""
    if real and real != forced:
        return f"; it looks like {real} — read it with format={real!r}"
    return f"; pick the format it is written in with {PICK_FORMAT}"


BOUNDARY_FORMATS = frozenset({"claude-code", "pi", "openhands"})
"""Formats that record compactions: their readers return the live context after the last one."""
RUN_FORMATS = frozenset({"tau-bench", "openhands"})
"""Formats whose files hold many runs: ``run=`` picks one (the first by default)."""


def read_transcript(
    source: str | Path | IO[str],
    *,
    format: str | None = None,
    skip_bad: bool = False,
    whole_file: bool = False,
    run: int | None = None,
) -> Transcript:
    """Read a transcript file (or an open text stream) into core messages.

    Args:
        source: a path, or a text stream (then ``format`` is needed unless it is JSON
            whose shape tells).
        format: one of :data:`FORMATS`; detected when None. A forced format that finds
            none of its key fields in the file (or another format's) reads nothing and
            raises, naming the format the file looks like.
        skip_bad: skip malformed lines or records and list them in ``Transcript.skipped``
            instead of raising.
        whole_file: read every message of a file that records compactions (Claude Code,
            pi, OpenHands condensations), earlier compactions inline. By default
            ``messages`` is what the model sees — the last compaction's summary, the turns
            it kept, and what followed — and what came before is ``Transcript.archive``.
        run: which run (0-based) of a file of many runs to read — a tau-bench result
            file or an OpenHands ``output.jsonl``; the first when None. The run read and
            how many there are is in ``Transcript.meta``.

    Raises:
        ReadError: the file cannot be read — not a regular file, not UTF-8, not JSON or
            JSONL, nested too deeply, a usage count that is not a number, or not in the
            forced format; the message is one sentence naming the file, the line or
            record, and what is wrong.
        OSError: the file does not exist or cannot be opened.

    """
    if format is not None and format not in FORMATS:
        raise ReadError(f"unknown format {format!r} — use one of {', '.join(FORMATS)}")
    if not isinstance(source, str | Path):
        if format is None:
            text = source.read()
            format = _sniff(_head(io.StringIO(text)), lambda: text, "", pick="format=")
            source = io.StringIO(text)
        return FORMATS[format][0](source, skip_bad=skip_bad, **_options(format, whole_file, run))
    path = Path(source)
    try:
        fmt = format or detect_format(path)
        with open_transcript(path) as stream:
            return FORMATS[fmt][0](
                stream, path=str(path), skip_bad=skip_bad, **_options(fmt, whole_file, run)
            )
    except FormatMismatch as exc:
        raise ReadError(f"{exc}{_looks_like(path, exc.fmt)}", path=str(path)) from None
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, exc) from None


def _options(fmt: str, whole_file: bool, run: int | None) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if fmt in BOUNDARY_FORMATS:
        options["whole_file"] = whole_file
    if run is not None:
        if fmt not in RUN_FORMATS:
            raise ReadError(
                f"{PICK_RUN} picks one run of a file of many runs "
                f"({', '.join(sorted(RUN_FORMATS))}); a {fmt} file holds one"
            )
        options["run"] = run
    return options


def write_transcript(
    messages: Iterable[AgentMessage],
    target: str | Path | IO[str],
    *,
    format: str = "json",
    system: Iterable[str] = (),
    tokens_before: int | None = None,
) -> None:
    """Write core messages (and system prompts) in one of :data:`FORMATS`.

    Kinds a format has no place for (shell runs, notes, another tool's summaries) are
    written as user text, so nothing the condenser kept is lost; ``swe-agent`` and
    ``openhands`` write a note (``CustomMessage``) as an observation (``swe-agent`` a
    demonstration as a demonstration), so it never reads back as a user turn. Every format keeps the
    ``system`` prompts: ``claude-code`` and ``pi`` (whose agents rebuild their own) on
    records their agents ignore, read back into ``Transcript.system``. ``tokens_before``
    (the size of the transcript a digest replaced, ``CondenseResult.tokens_before``) is
    written where a format records it: ``claude-code``'s ``preTokens``.

    A path is written atomically: into a new file beside it, flushed to disk, then renamed
    over it. A failed write leaves the old file as it was (so the target may be the file
    the messages were read from), and a symlink at the target is replaced, never followed.
    """
    if format not in FORMATS:
        raise ReadError(f"unknown format {format!r} — use one of {', '.join(FORMATS)}")
    writer = FORMATS[format][1]
    extra: dict[str, Any] = {}
    if tokens_before is not None and format == "claude-code":
        extra["tokens_before"] = tokens_before
    if isinstance(target, str | Path):
        with _atomic_text(Path(target)) as stream:
            writer(messages, stream, system=system, **extra)
    else:
        writer(messages, target, system=system, **extra)


@contextmanager
def _atomic_text(target: Path) -> Iterator[IO[str]]:
    """A text stream whose content replaces ``target`` only once all of it is on disk."""
    folder = target.parent
    # O_EXCL refuses an existing name (a planted symlink included); the mode goes through
    # the umask like any new file's.
    tmp = folder / f".{target.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    try:
        with open(fd, "w", encoding="utf-8") as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(tmp, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    with suppress(OSError):  # the rename itself survives a crash once the folder is synced
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def iter_transcript_files(directory: str | Path) -> list[Path]:
    """The transcript files directly inside ``directory`` (by suffix), sorted by name.

    Only regular files (or links to them) count: a FIFO or device named ``x.jsonl`` is
    left out rather than opened.
    """
    return sorted(
        p for p in Path(directory).iterdir() if p.is_file() and p.suffix in TRANSCRIPT_SUFFIXES
    )
