"""Reading records into messages: the field helpers and the shared record loop."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import IO, Any

from window_budget.budget import read_count
from window_budget.messages import (
    AgentMessage,
    ImageBlock,
    Usage,
    guess_image_type,
    image_from_url,
)
from window_budget.readers._base import (
    Collector,
    Transcript,
    iter_json_lines,
    load_json,
    mismatch,
    records,
)

__all__ = [
    "FieldTally",
    "KeyFields",
    "as_count",
    "as_int",
    "check_counts",
    "convert_records",
    "guess_image_type",
    "image_from_url",
    "image_to_url",
    "read_message_records",
    "real_usage",
    "tag",
    "text_of",
]


def image_to_url(block: ImageBlock) -> str:
    """The inverse of :func:`image_from_url`."""
    if block.data.startswith(("http://", "https://", "data:", "file:")):
        return block.data
    return f"data:{block.mime_type};base64,{block.data}"


def text_of(value: Any) -> str:
    """Plain text from a string or a list of text parts (other parts are ignored)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        out = []
        for part in value:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                out.append(part["text"])
        return "\n".join(out)
    raise TypeError(f"expected text or a list of parts, found {type(value).__name__}")


def tag(value: Any) -> str | None:
    """A discriminator field (``type``, ``role``, ...) as a string, or None when it is not one.

    Files are hostile: a ``"type": []`` must be an unknown kind, not a crash in a set lookup.
    """
    return value if isinstance(value, str) else None


def real_usage(usage: Usage | None) -> Usage | None:
    """``usage``, or None when it reports an empty prompt (an aborted or failed reply).

    No request has an empty prompt: such a figure measured nothing, and trusting it would
    anchor the estimate at zero.
    """
    if usage is None or usage.prompt_tokens == 0:
        return None
    return usage


def as_int(value: Any) -> int:
    """A non-negative count from a JSON number (None, junk and non-finite numbers become 0)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return max(int(value), 0)


def as_count(value: Any, name: str) -> int:
    """A provider's token count from a JSON number (None and non-numbers become 0).

    The lenient reading of :func:`window_budget.budget.read_count`, which every usage
    parser shares.

    Raises:
        UsageError: a non-finite or absurdly large number (``1e400``, ``Infinity``,
            ``NaN``); the message names the field, for the line's error.

    """
    return read_count({name: value}, name)


def check_counts(raw: Any, names: Iterable[str]) -> None:
    """Reject a usage object whose ``names`` hold non-finite or absurd numbers.

    See :func:`as_count`; other fields and a missing or non-object usage are left alone.
    """
    if isinstance(raw, Mapping):
        for name in names:
            as_count(raw.get(name), name)


RecordConverter = Callable[[Mapping[str, Any], dict[str, str], list[str]], "AgentMessage | None"]
"""Turns one dumped message into a core message (None for a system prompt it collected)."""

FieldCheck = Callable[[Mapping[str, Any]], "bool | str"]
"""Whether a record carries its format's key fields: True, False, or a string saying which
other format's fields it carries that the reader would drop (then nothing is read)."""


@dataclass(frozen=True, slots=True)
class KeyFields:
    """How a reader tells that a file is in its format, so a forced reader never guesses."""

    fmt: str
    """The format's name, for the error."""
    names: str
    """The key fields in words (``"content or tool_calls"``), for the error."""
    check: FieldCheck
    """The per-record test."""


class FieldTally:
    """Counts records with a format's key fields; raises on another format's records."""

    def __init__(self, key: KeyFields, path: str) -> None:
        self.key = key
        self.path = path
        self.seen = 0
        self.own = 0
        self.last_own = True

    def add(self, record: Any) -> None:
        """Look at one decoded record (anything but an object is left to the reader)."""
        self.last_own = True
        if not isinstance(record, Mapping):
            return
        self.seen += 1
        verdict = self.key.check(record)
        if isinstance(verdict, str):
            raise mismatch(self.path, self.key.fmt, verdict)
        self.last_own = bool(verdict)
        self.own += bool(verdict)

    def finish(self, unit: str) -> None:
        """Raise when records were seen and none had the key fields."""
        if self.seen and not self.own:
            raise mismatch(
                self.path,
                self.key.fmt,
                f"none of its {self.seen:,} {unit}{'' if self.seen == 1 else 's'} "
                f"has {self.key.names}",
            )


def read_message_records(
    stream: IO[str],
    *,
    path: str,
    skip_bad: bool,
    fmt: str,
    convert: RecordConverter,
    keys: Iterable[str] = ("messages",),
    jsonl: bool = False,
    fields: KeyFields | None = None,
) -> Transcript:
    """Read dumped messages with ``convert``, one record (or JSONL line) at a time.

    ``convert`` gets the record, a map of tool-call ids to tool names seen so far, and the
    list collecting system prompts. A JSON document is a list of records or an object
    holding one under one of ``keys``; with ``jsonl`` each line is a record, streamed.
    With ``fields``, a file whose records carry none of the format's key fields (or carry
    another format's) raises :class:`FormatMismatch` instead of being read as a guess.
    """
    if not jsonl:
        return convert_records(
            records(load_json(stream, path, fmt), path, keys, fmt),
            path=path,
            skip_bad=skip_bad,
            fmt=fmt,
            convert=convert,
            fields=fields,
        )
    tally = FieldTally(fields, path) if fields is not None else None
    collector = Collector(path, skip_bad=skip_bad, unit="line", tally=tally)
    return _convert(
        iter_json_lines(stream, collector), collector, tally, path=path, fmt=fmt, convert=convert
    )


def convert_records(
    found: list[Any],
    *,
    path: str,
    skip_bad: bool,
    fmt: str,
    convert: RecordConverter,
    fields: KeyFields | None = None,
    unit: str = "record",
) -> Transcript:
    """Convert already-decoded message records, as :func:`read_message_records` does.

    With ``fields`` the records are checked before anything is converted: a file reads,
    or it raises :class:`FormatMismatch`, never half.
    """
    if fields is not None:
        tally = FieldTally(fields, path)
        for raw in found:
            tally.add(raw)
        tally.finish(unit)
    collector = Collector(path, skip_bad=skip_bad, unit=unit)
    return _convert(enumerate(found, start=1), collector, None, path=path, fmt=fmt, convert=convert)


def _convert(
    items: Iterable[tuple[int, Any]],
    collector: Collector,
    tally: FieldTally | None,
    *,
    path: str,
    fmt: str,
    convert: RecordConverter,
) -> Transcript:
    out: list[AgentMessage] = []
    system: list[str] = []
    names: dict[str, str] = {}
    for where, raw in items:
        if tally is not None:
            tally.add(raw)

        def one(raw: Any = raw) -> None:
            if not isinstance(raw, Mapping):
                raise TypeError(f"a message must be a JSON object, not {type(raw).__name__}")
            msg = convert(raw, names, system)
            if msg is not None:
                out.append(msg)

        collector.guard(where, one)
    if tally is not None:
        tally.finish("line")
    return Transcript(
        messages=tuple(out),
        system=tuple(system),
        format=fmt,
        path=path,
        skipped=tuple(collector.skipped),
    )
