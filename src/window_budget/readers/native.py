"""The library's own JSON: ``{"format": "window-budget/1", "system": [...], "messages": [...]}``.

Messages are :func:`~window_budget.messages.message_to_dict` records, so every core kind
(shell runs, notes, digests) survives a round trip. A bare list of such records reads too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import IO, Any

from window_budget.messages import AgentMessage, message_from_dict
from window_budget.readers._base import (
    Collector,
    ReadError,
    Transcript,
    load_json,
    records,
)
from window_budget.readers._digests import honoured, sealed_dict
from window_budget.readers._records import (
    check_counts,
)

__all__ = ["NATIVE_TAG", "read_native", "write_native"]

NATIVE_TAG = "window-budget/1"
"""The ``format`` value that marks a document as this library's own."""


def read_native(stream: IO[str], *, path: str = "", skip_bad: bool = False) -> Transcript:
    """Read this library's JSON (the object form, or a bare list of message records)."""
    doc = load_json(stream, path, "json")
    system: tuple[str, ...] = ()
    if isinstance(doc, Mapping):
        raw_system = doc.get("system") or []
        if not isinstance(raw_system, list) or not all(isinstance(s, str) for s in raw_system):
            raise ReadError(
                f"{path or '<input>'}: 'system' must be a list of strings — fix the file", path=path
            )
        system = tuple(raw_system)
    collector = Collector(path, skip_bad=skip_bad, unit="record")
    out: list[AgentMessage] = []
    for where, raw in enumerate(records(doc, path, fmt="json"), start=1):

        def one(raw: Any = raw) -> None:
            if isinstance(raw, Mapping):
                check_counts(raw.get("usage"), ("input", "output", "cacheRead", "cacheWrite"))
            out.append(honoured(message_from_dict(raw), raw))

        collector.guard(where, one)
    return Transcript(
        messages=tuple(out),
        system=system,
        format="json",
        path=path,
        skipped=tuple(collector.skipped),
    )


def write_native(
    messages: Iterable[AgentMessage], stream: IO[str], *, system: Iterable[str] = ()
) -> None:
    """Write messages (and system prompts) as this library's JSON."""
    doc: dict[str, Any] = {
        "format": NATIVE_TAG,
        "system": list(system),
        "messages": [sealed_dict(m) for m in messages],
    }
    json.dump(doc, stream, ensure_ascii=False, indent=1)
    stream.write("\n")
