"""What every reader shares: the result type, the error, and the line/record plumbing.

Readers are pure parsers: they take records (already-decoded JSON values) and build core
messages. Opening files, splitting lines and decoding JSON happen here, once, so the
error for a bad line reads the same whatever the format.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from window_budget._shown import Shown
from window_budget.errors import MessageError, ReadError
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    JSONProblem,
    Usage,
    loads,
)

__all__ = [
    "CLAUDE_TYPES",
    "PICK_FORMAT",
    "PICK_RUN",
    "PI_TYPES",
    "SKIP_BAD",
    "BadRecord",
    "Collector",
    "FormatMismatch",
    "JSONProblem",
    "ReadError",
    "Transcript",
    "foreign_dump",
    "iter_json_lines",
    "load_json",
    "loads",
    "open_transcript",
]


@dataclass(frozen=True, slots=True)
class BadRecord:
    """A line or record that was skipped because ``skip_bad`` was set."""

    line: int
    """1-based line (JSONL) or record (JSON list) number."""
    reason: str
    """What was wrong with it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Transcript(Shown):
    """A conversation read from a file: core messages plus what the core has no place for."""

    messages: tuple[AgentMessage, ...]
    """The conversation in the core's message kinds, in order."""
    system: tuple[str, ...] = ()
    """System prompts, kept apart: the core has no system role; count them as pinned tokens."""
    format: str = "json"
    """The format it was read as (a key of ``window_budget.readers.FORMATS``)."""
    path: str = ""
    """Where it came from (empty when read from a string or a stream)."""
    skipped: tuple[BadRecord, ...] = ()
    """Lines or records skipped because ``skip_bad`` was set."""
    ignored: int = 0
    """Records that carry no conversation (progress events, snapshots, ...), skipped by design."""
    meta: Mapping[str, Any] = field(default_factory=dict)
    """Format-specific facts worth keeping (session id, model, compaction points, ...)."""
    archive: tuple[AgentMessage, ...] = ()
    """What came before the last compaction in the file, in file order: no longer in the
    model's context, so not in ``messages`` (empty when the file has no compaction or was
    read with ``whole_file=True``)."""
    whole_file: bool = False
    """True when read with ``whole_file=True``: ``messages`` is every message in the file,
    earlier compactions inline, rather than the live context after the last one."""

    @property
    def reported_usage(self) -> Usage | None:
        """The usage of the last assistant message that has one: the provider's own figure."""
        for msg in reversed(self.messages):
            if isinstance(msg, AssistantMessage) and msg.usage is not None:
                return msg.usage
        return None

    @property
    def model(self) -> str | None:
        """The model of the last assistant message that names one."""
        for msg in reversed(self.messages):
            if isinstance(msg, AssistantMessage) and msg.model:
                return msg.model
        return None


class _Tally(Protocol):
    """What a collector reads of a streamed reader's key-field count (``FieldTally``)."""

    own: int
    last_own: bool
    key: Any


class Collector:
    """Turns per-record failures into either an error or a skipped entry (``skip_bad``)."""

    def __init__(
        self, path: str, *, skip_bad: bool, unit: str = "line", tally: _Tally | None = None
    ) -> None:
        self.path = path
        self.skip_bad = skip_bad
        self.unit = unit
        self.skipped: list[BadRecord] = []
        self.tally = tally
        """A streamed reader's key-field count: a record that fails before any record with
        the format's key fields was seen means the wrong format, not a bad record."""

    def fail(self, where: int, reason: str, *, hint: str = "") -> None:
        """Record a bad line or raise, depending on ``skip_bad``."""
        if self.skip_bad:
            self.skipped.append(BadRecord(where, reason))
            return
        label = f"{self.path or '<input>'}, {self.unit} {where}"
        fix = hint or f"fix the record, or skip bad records with {SKIP_BAD}"
        raise ReadError(f"{label}: {reason} — {fix}", path=self.path, line=where)

    def guard(self, where: int, fn: Callable[[], None]) -> None:
        """Run ``fn`` (which parses one record); a malformed record goes through :meth:`fail`."""
        try:
            fn()
        except FormatMismatch:
            raise
        except (
            MessageError,
            KeyError,
            TypeError,
            ValueError,
            AttributeError,
            OverflowError,
            RecursionError,
        ) as exc:
            tally = self.tally
            if tally is not None and not tally.own and not tally.last_own:
                raise mismatch(
                    self.path,
                    tally.key.fmt,
                    f"no {self.unit} up to {self.unit} {where} has {tally.key.names}",
                ) from None
            self.fail(where, describe(exc))


SKIP_BAD = "skip_bad=True (--skip-bad on the command line)"
"""How an error names the skip option; the command line shows its own spelling instead."""
PICK_FORMAT = "format= (--from on the command line)"
"""How an error names the format option; the command line shows its own spelling instead."""

PI_TYPES = frozenset(
    {
        "session",
        "message",
        "compaction",
        "model_change",
        "thinking_level_change",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)
"""Entry types of a pi session file."""
CLAUDE_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "summary",
        "progress",
        "file-history-snapshot",
        "queue-operation",
    }
)
"""Event types of a Claude Code session file."""

PICK_RUN = "run= (--run on the command line)"
"""How an error names the run option; the command line shows its own spelling instead."""


class FormatMismatch(ReadError):
    """A reader was forced on a file that holds none of its format's key fields.

    :func:`~window_budget.readers.read_transcript` adds which format the file looks like.
    """

    def __init__(self, message: str, *, path: str = "", fmt: str = "") -> None:
        super().__init__(message, path=path)
        self.fmt = fmt
        """The format that was forced."""


def mismatch(path: str, fmt: str, what: str) -> FormatMismatch:
    """The error for a reader forced on a file of another format; ``what`` says why."""
    return FormatMismatch(
        f"{path or '<input>'}: does not read as {fmt}: {what}, so nothing was read",
        path=path,
        fmt=fmt,
    )


def foreign_dump(record: Mapping[str, Any]) -> str:
    """Why a message record is a framework dump of another format ('' when it is not)."""
    if "blocks" in record and "role" in record:
        return "its records are LlamaIndex messages with 'blocks'"
    if "type" in record and isinstance(record.get("data"), Mapping):
        return "its records are LangChain {type, data} dumps"
    return ""


def describe(exc: BaseException) -> str:
    """A short reason for a parsing failure."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    if isinstance(exc, OverflowError):
        return f"a number out of range ({exc})"
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    if isinstance(exc, AttributeError | TypeError):
        return f"unexpected shape ({exc})"
    return str(exc)


BOM = "\ufeff"
"""A UTF-8 byte-order mark as decoded text; some editors on Windows start files with it."""


def open_transcript(path: str | Path) -> IO[str]:
    """Open a transcript file for reading as text, refusing anything but a regular file.

    A FIFO would block ``open`` until a writer comes (forever, for a stray one) and a
    device never ends, so both are refused from ``stat`` before opening, and again from
    the opened descriptor (opened non-blocking) in case the path changed in between. A
    UTF-8 byte-order mark is read past.

    Raises:
        ReadError: the path is a directory, a FIFO, a socket or a device.
        OSError: the file does not exist or cannot be opened.

    """
    p = Path(path)
    _refuse_non_regular(p, os.stat(p).st_mode)
    fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        _refuse_non_regular(p, os.fstat(fd).st_mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return open(fd, encoding="utf-8-sig")  # the caller closes it
    except BaseException:
        os.close(fd)
        raise


def _refuse_non_regular(path: Path, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise ReadError(f"{path} is a directory — pass a transcript file", path=str(path))
    kind = (
        "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "special"
    )
    raise ReadError(
        f"{path} is not a regular file ({kind}) — pass a transcript file", path=str(path)
    )


def iter_json_lines(stream: IO[str], collector: Collector) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank JSONL line, streaming.

    A line that is not JSON goes to ``collector``; a last line cut off mid-record (a file
    still being written) gets its own hint. A byte-order mark before the first line is
    read past.
    """
    pending: tuple[int, str] | None = None
    for number, raw in enumerate(stream, start=1):
        if number == 1 and raw.startswith(BOM):
            raw = raw[1:]
        if pending is not None:
            yield from _decode_line(*pending, collector, last=False)
            pending = None
        if raw.strip():
            pending = (number, raw)
    if pending is not None:
        yield from _decode_line(*pending, collector, last=True)


def _decode_line(
    number: int, raw: str, collector: Collector, *, last: bool
) -> Iterator[tuple[int, Any]]:
    try:
        value = loads(raw)
    except json.JSONDecodeError as exc:
        if last and not raw.endswith("\n"):
            collector.fail(
                number,
                f"the last line is cut off ({exc.msg}, column {exc.colno})",
                hint="the file ends mid-record (still being written?); read the rest "
                f"with {SKIP_BAD}",
            )
        else:
            collector.fail(number, f"not valid JSON ({exc.msg}, column {exc.colno})")
    except JSONProblem as exc:
        collector.fail(number, str(exc))
    else:
        yield number, value


def load_json(stream: IO[str], path: str, fmt: str = "") -> Any:
    """Decode a whole JSON document, turning any failure into a one-sentence :class:`ReadError`.

    With ``fmt`` (the format expected), a file of one JSON value a line is a
    :class:`FormatMismatch` — the file is fine, the format is not — rather than bad JSON.
    """
    text = stream.read()
    try:
        return loads(text[1:] if text.startswith(BOM) else text)
    except json.JSONDecodeError as exc:
        if fmt and exc.msg == "Extra data" and exc.colno == 1:
            raise mismatch(
                path, fmt, "it holds one JSON value a line (JSONL), not one JSON document"
            ) from None
        raise ReadError(
            f"{path or '<input>'}, line {exc.lineno}: not valid JSON ({exc.msg}, "
            f"column {exc.colno}) — fix the file",
            path=path,
            line=exc.lineno,
        ) from None
    except JSONProblem as exc:
        raise ReadError(f"{path or '<input>'}: {exc} — fix the file", path=path) from None


def records(
    value: Any,
    path: str,
    keys: Iterable[str] = ("messages",),
    fmt: str = "",
) -> list[Any]:
    """The list of message records in a JSON document: the list itself or under one of ``keys``.

    With ``fmt`` (the format expected), a document of another shape is a
    :class:`FormatMismatch`, so the error can name the format it looks like.
    """
    if isinstance(value, list):
        return value
    if isinstance(value, Mapping):
        for key in keys:
            if isinstance(value.get(key), list):
                return list(value[key])
    wanted = " or ".join(repr(k) for k in keys)
    if fmt:
        raise mismatch(
            path, fmt, f"it is neither a list of messages nor an object with a {wanted} list"
        )
    raise ReadError(
        f"{path or '<input>'}: expected a JSON list of messages or an object with "
        f"a {wanted} list, found {type(value).__name__} — pick the right format "
        "(--from)",
        path=path,
    )
