"""pi coding agent session files (``.jsonl``), streamed.

The shapes follow pi's session format (badlogic/pi-mono,
``packages/coding-agent/docs/session.md``). Entries: ``session`` (header), ``message``
(``message.role`` is one of the core's own roles, so each maps 1:1 through
:func:`~window_budget.messages.message_from_dict`), ``compaction`` (a summary that
replaced older entries), ``branch_summary`` and ``custom_message`` (in the model's
context), ``model_change``, ``thinking_level_change``, ``custom``, ``label`` and
``session_info`` (not in it). From version 2 entries form a tree by ``id`` /
``parentId``; the active branch ends at the last entry. Compactions name the first entry
they kept by ``firstKeptEntryIndex`` (older files) or ``firstKeptEntryId`` (newer ones);
both are accepted and recorded in ``meta["compactions"]``. Tool calls an aborted turn
left without results are kept as they are. System prompts written by :func:`write_pi`
ride in the header's ``systemPrompts`` list (pi ignores it) and come back in
``Transcript.system``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import IO, Any

from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    DigestMessage,
    message_from_dict,
)
from window_budget.readers._base import (
    CLAUDE_TYPES,
    PI_TYPES,
    Collector,
    Transcript,
    iter_json_lines,
)
from window_budget.readers._digests import honoured, sealed_dict
from window_budget.readers._records import (
    FieldTally,
    KeyFields,
    as_int,
    check_counts,
    real_usage,
    tag,
)

__all__ = ["read_pi", "write_pi"]

_NOT_IN_CONTEXT = frozenset(
    {"model_change", "thinking_level_change", "custom", "label", "session_info"}
)


USAGE_FIELDS = ("input", "output", "cacheRead", "cacheWrite")
"""The count fields of a pi (and this library's own) assistant ``usage``."""


def _has_pi_fields(record: Mapping[str, Any]) -> bool | str:
    kind = tag(record.get("type"))
    if kind in CLAUDE_TYPES or "sessionId" in record or "parentUuid" in record:
        return f"a line is a Claude Code {kind!r} event"
    return kind in PI_TYPES


PI_FIELDS = KeyFields("pi", "a pi entry type", _has_pi_fields)
"""What makes a line a pi entry (for a forced reader's check)."""


@dataclass
class _Entry:
    """One entry of the file (the header excluded), before the active branch is chosen."""

    position: int
    """Entry number, the header being 0 (what ``firstKeptEntryIndex`` counts)."""
    id: str | None
    parent: str | None
    msg: AgentMessage | None = None
    compaction: Mapping[str, Any] | None = None


def _context_message(raw: Any) -> AgentMessage | None:
    """A ``message`` entry's message, or None for a ``!!`` shell run (shown, never sent)."""
    if isinstance(raw, Mapping):
        check_counts(raw.get("usage"), USAGE_FIELDS)
    msg = honoured(message_from_dict(raw), raw)
    if (
        isinstance(msg, AssistantMessage)
        and msg.usage is not None
        and real_usage(msg.usage) is None
    ):
        msg = replace(msg, usage=None)  # an aborted reply measured nothing
    if isinstance(raw, Mapping) and raw.get("excludeFromContext") is True:
        return None
    return msg


def _summary_of(kind: str, obj: Mapping[str, Any]) -> AgentMessage:
    """The summary a ``compaction`` or ``branch_summary`` entry carries."""
    if not isinstance(obj["summary"], str):
        raise TypeError(f"{kind} 'summary' must be a string")
    if kind == "compaction":
        return CompactionSummaryMessage(obj["summary"], as_int(obj.get("tokensBefore")))
    return BranchSummaryMessage(obj["summary"], from_id=tag(obj.get("fromId")))


def _entry(
    obj: Mapping[str, Any], kind: str | None, index: int, meta: dict[str, Any]
) -> tuple[_Entry, bool]:
    """The tree entry of a line other than the header, and whether the model never sees it.

    A model change or a session name is noted in ``meta``.
    """
    entry = _Entry(index, tag(obj.get("id")), tag(obj.get("parentId")))
    if kind in _NOT_IN_CONTEXT:
        if kind == "model_change":
            meta["model"] = obj.get("modelId") or obj.get("model")
        elif kind == "session_info" and isinstance(obj.get("name"), str):
            meta["name"] = obj["name"]
        return entry, True
    if kind == "message":
        entry.msg = _context_message(obj["message"])
        return entry, entry.msg is None  # None: a `!!` shell run, shown, never sent
    if kind in ("compaction", "branch_summary"):
        entry.msg = _summary_of(kind, obj)
        if kind == "compaction":
            entry.compaction = obj
    elif kind == "custom_message":
        entry.msg = message_from_dict({**obj, "role": "custom"})
    else:
        raise ValueError(
            f"unknown entry type {kind!r} (expected one of {', '.join(sorted(PI_TYPES))})"
        )
    return entry, False


def read_pi(
    stream: IO[str], *, path: str = "", skip_bad: bool = False, whole_file: bool = False
) -> Transcript:
    """Read a pi session file.

    Entries form a tree (``id`` / ``parentId``, from version 2): the model sees the branch
    from the last entry back to the root, and of it only the last compaction's summary,
    the entries it kept (from its first kept entry up to the compaction, which pi writes
    after them) and what follows. That is ``messages``, with the kept entries moved after
    the summary and counted in its ``kept_count`` (their usage measured the longer
    transcript). Everything else in the file — before the compaction, or on branches left
    behind — is ``archive``; with ``whole_file`` every entry is a message, in file order.
    A digest this library wrote is a boundary too. ``branch_summary`` and
    ``custom_message`` entries reach the model; ``custom``, ``label`` and ``session_info``
    entries and ``!!`` shell runs (``excludeFromContext``) do not.
    """
    tally = FieldTally(PI_FIELDS, path)
    collector = Collector(path, skip_bad=skip_bad, tally=tally)
    entries: list[_Entry] = []
    meta: dict[str, Any] = {}
    system: list[str] = []
    ignored = 0
    position = 0

    def handle(obj: Any) -> None:
        nonlocal ignored, position
        if not isinstance(obj, Mapping):
            raise TypeError(f"a line must hold a JSON object, not {type(obj).__name__}")
        tally.add(obj)
        kind = tag(obj.get("type"))
        position += 1  # older files index entries from the header, which is entry 0
        if kind == "session":
            meta.update({k: obj[k] for k in ("id", "cwd", "version", "timestamp") if k in obj})
            prompts = obj.get("systemPrompts")
            if isinstance(prompts, list):
                system.extend(str(p) for p in prompts)
            return
        entry, hidden = _entry(obj, kind, position - 1, meta)
        ignored += hidden
        entries.append(entry)

    for number, obj in iter_json_lines(stream, collector):
        collector.guard(number, partial(handle, obj))
    tally.finish("line")
    branch = entries if whole_file else _active_branch(entries)
    out, boundaries, compactions = _messages(branch)
    meta["compactions"] = compactions
    live = out if whole_file or not boundaries else _live(out, boundaries[-1])
    # Whatever the file holds that the model does not see, in file order.
    shown = {id(m) for m in live} | ({id(out[boundaries[-1]["index"]])} if boundaries else set())
    archive = (
        []
        if whole_file
        else [e.msg for e in entries if e.msg is not None and id(e.msg) not in shown]
    )
    return Transcript(
        messages=tuple(live),
        system=tuple(system),
        format="pi",
        path=path,
        skipped=tuple(collector.skipped),
        ignored=ignored,
        meta=meta,
        archive=tuple(archive),
        whole_file=whole_file,
    )


def _active_branch(entries: list[_Entry]) -> list[_Entry]:
    """The entries from the root to the last one, following ``parentId`` (all of a linear file)."""
    by_id = {e.id: e for e in entries if e.id is not None}
    if not entries or not any(e.parent is not None for e in entries):
        return entries  # version 1: one line of entries
    on_path: set[str] = set()
    node: str | None = entries[-1].id
    while node is not None and node in by_id and node not in on_path:
        on_path.add(node)
        node = by_id[node].parent
    return [e for e in entries if e.id is None or e.id in on_path]


def _messages(
    branch: list[_Entry],
) -> tuple[list[AgentMessage], list[dict[str, Any]], list[dict[str, Any]]]:
    """The branch's messages, its boundaries and its compactions.

    Boundaries are compactions and this library's digests; compactions are listed as
    ``meta`` reports them, by index into the messages.
    """
    out: list[AgentMessage] = []
    by_id: dict[str, int] = {}  # a kept-entry pointer may name any entry: the next message
    by_position: dict[int, int] = {}
    boundaries: list[dict[str, Any]] = []
    compactions: list[dict[str, Any]] = []
    for entry in branch:
        by_position[entry.position] = len(out)
        if entry.id is not None:
            by_id[entry.id] = len(out)
        if entry.msg is None:
            continue
        if entry.compaction is not None:
            obj = entry.compaction
            first = obj.get("firstKeptEntryId", obj.get("firstKeptEntryIndex"))
            kept_at = (
                by_id.get(first)
                if isinstance(first, str)
                else by_position.get(first)
                if isinstance(first, int)
                else None
            )
            kept = obj.get("keptCount")  # this library's writer: kept entries follow
            compactions.append(
                {
                    "index": len(out),
                    "first_kept": kept_at,
                    "tokens_before": getattr(entry.msg, "tokens_before", 0),
                }
            )
            boundaries.append(
                {
                    "index": len(out),
                    "first_kept": kept_at,
                    "kept": kept if isinstance(kept, int) and kept >= 0 else None,
                }
            )
        elif isinstance(entry.msg, DigestMessage):
            boundaries.append({"index": len(out), "first_kept": None, "kept": None})
        out.append(entry.msg)
    return out, boundaries, compactions


def _live(out: list[AgentMessage], boundary: Mapping[str, Any]) -> list[AgentMessage]:
    """The model's context after ``boundary``: its summary, the entries kept, the rest."""
    at: int = boundary["index"]
    summary = out[at]
    if not isinstance(summary, CompactionSummaryMessage):
        return out[at:]  # a digest message: its kept turns already follow it
    first = boundary["first_kept"]
    if isinstance(first, int) and first < at:
        kept = [m for m in out[first:at] if not isinstance(m, CompactionSummaryMessage)]
        return [replace(summary, kept_count=len(kept)), *kept, *out[at + 1 :]]
    kept_after = boundary["kept"]
    return [replace(summary, kept_count=kept_after or 0), *out[at + 1 :]]


def write_pi(
    messages: Iterable[AgentMessage],
    stream: IO[str],
    *,
    system: Iterable[str] = (),
    session_id: str | None = None,
) -> None:
    """Write core messages as a pi session: a header line, then one entry per message.

    pi rebuilds its own system prompt, so ``system`` prompts go in the header's
    ``systemPrompts`` list, which pi ignores and :func:`read_pi` reads back.
    """
    header: dict[str, Any] = {
        "type": "session",
        "id": session_id or str(uuid.uuid4()),
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    prompts = list(system)
    if prompts:
        header["systemPrompts"] = prompts
    stream.write(json.dumps(header) + "\n")
    for i, msg in enumerate(messages):
        if isinstance(msg, CompactionSummaryMessage):
            entry: dict[str, Any] = {
                "type": "compaction",
                "summary": msg.summary,
                "tokensBefore": msg.tokens_before,
                "firstKeptEntryIndex": i + 1,
            }
            if msg.kept_count:
                # Kept turns follow the summary here (pi writes them before it), so their
                # number rides along for read_pi: their usage must not anchor.
                entry["keptCount"] = msg.kept_count
        else:
            entry = {"type": "message", "message": sealed_dict(msg)}
        stream.write(json.dumps(entry, ensure_ascii=False) + "\n")
