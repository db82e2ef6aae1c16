"""Reading and writing a transcript in any format, and finding transcript files."""

from __future__ import annotations

import io
import os
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

from window_budget.messages import AgentMessage
from window_budget.readers._base import (
    PICK_RUN,
    FormatMismatch,
    ReadError,
    Transcript,
    open_transcript,
)
from window_budget.readers._detect import detect_format, first_lines, looks_like, not_utf8, sniff
from window_budget.readers._formats import (
    BOUNDARY_FORMATS,
    FORMATS,
    RUN_FORMATS,
    TRANSCRIPT_SUFFIXES,
)

__all__ = ["iter_transcript_files", "read_transcript", "write_transcript"]


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
            format = sniff(first_lines(io.StringIO(text)), lambda: text, "", pick="format=")
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
        raise ReadError(f"{exc}{looks_like(path, exc.fmt)}", path=str(path)) from None
    except UnicodeDecodeError as exc:
        raise not_utf8(path, exc) from None


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
