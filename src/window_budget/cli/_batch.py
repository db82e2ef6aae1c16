"""The files a command runs over: directories expanded, each file read, skips reported."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import click

from window_budget.cli._output import cli_wording, fail, say, terminal_text
from window_budget.readers import (
    RUN_FORMATS,
    ReadError,
    Transcript,
    detect_format,
    iter_transcript_files,
    read_transcript,
)

__all__ = ["Batch"]


class Batch:
    """The files a command runs over, and the ones it skipped along the way.

    In a directory, a file whose format cannot be told (a ``package.json``, say) is
    skipped; with ``--skip-bad`` so is any file that fails to read, and in ``plot`` with
    several inputs any file that fails to replay. Each skip is listed on stderr (and in
    ``inspect --json``); the rest still run.
    """

    def __init__(
        self,
        paths: Sequence[Path],
        *,
        skip_bad: bool,
        whole_file: bool = False,
        run: int | None = None,
    ) -> None:
        self.whole_file = whole_file
        self.run = run
        self.files: list[Path] = []
        self.scanned: set[Path] = set()
        for path in paths:
            if path.is_dir():
                found = iter_transcript_files(path)
                if not found:
                    fail(f"{path}: no .json or .jsonl transcripts in this directory")
                self.files.extend(found)
                self.scanned.update(found)
            else:
                self.files.append(path)
        self.many = len(self.files) > 1 or bool(self.scanned)
        self.skip_bad = skip_bad
        self.skipped: list[dict[str, str]] = []

    def skip(self, path: Path, reason: str) -> None:
        """Note a skipped file (reported by :meth:`report`, once the progress bar is done)."""
        self.skipped.append({"file": str(path), "skipped": reason})

    @contextmanager
    def progress(self) -> Iterator[Iterable[Path]]:
        """The files, with a progress bar on stderr when a directory was given.

        The bar is closed before an error propagates, so the error's line is not written
        after a dangling label; skips are reported once it is closed, error or not.
        """
        try:
            if not self.scanned:
                yield self.files
            else:
                with click.progressbar(
                    self.files,
                    label="transcripts",
                    file=sys.stderr,
                    item_show_func=lambda p: terminal_text(p.name) if p else "",
                ) as bar:
                    yield bar
        finally:
            self.report()

    def report(self) -> None:
        """One stderr line per skipped file."""
        for entry in self.skipped:
            file, reason = entry["file"], entry["skipped"]
            # Reader errors already start with the file's name.
            say(
                f"skipped {reason}" if reason.startswith(file) else f"skipped {file}: {reason}",
                err=True,
            )

    def read(self, path: Path, fmt: str | None) -> Transcript | None:
        """Read one file; None when it is skipped (see the class docstring)."""
        if fmt is None and path in self.scanned:
            try:
                fmt = detect_format(path)
            except _CONTENT_ERRORS as exc:
                self.skip(path, _unreadable(path, exc))
                return None
            except OSError as exc:
                self.skip(path, f"{exc.strerror or exc}")
                return None
        # With several files, --run applies to the files of many runs and the others are
        # read as they are; for one file it must fit (the reader says so otherwise).
        run = self.run
        try:
            if run is not None and self.many:
                fmt = fmt or detect_format(path)
                run = run if fmt in RUN_FORMATS else None
            return read_transcript(
                path, format=fmt, skip_bad=self.skip_bad, whole_file=self.whole_file, run=run
            )
        except _CONTENT_ERRORS as exc:
            message = _unreadable(path, exc)
        except OSError as exc:
            message = f"{path}: {exc.strerror or exc} — check the path"
        if self.skip_bad and self.many:
            self.skip(path, message)
            return None
        fail(message)


_CONTENT_ERRORS = (ValueError, RecursionError)
"""Failures about what a file holds: the readers' errors (``ReadError`` is a ``ValueError``),
undecodable text, and — defensively, for a reader that lets one through — a parse failure
or nesting past the recursion limit. ``MemoryError`` is not one: the machine ran out."""


def _unreadable(path: Path, exc: ValueError | RecursionError) -> str:
    """Why ``path`` could not be read, as one line starting with its name."""
    if isinstance(exc, ReadError):
        return cli_wording(str(exc))
    if isinstance(exc, UnicodeDecodeError):
        why = "not UTF-8 text — is this a transcript?"
    elif isinstance(exc, RecursionError):
        why = "nested too deeply to read (beyond Python's recursion limit)"
    else:
        why = f"could not be read ({type(exc).__name__}: {exc})"
    return f"{path}: {why}"
