"""Claude Code session files (``~/.claude/projects/<project>/<session>.jsonl``), streamed.

One event a line. Only ``user``, ``assistant`` and ``system`` lines carry conversation;
the rest (progress, snapshots, queue operations, ...) are counted in ``ignored``, as are
sub-agent (``isSidechain``) lines in a session file, which never reach the main context
(a file of side-chain lines only — a sub-agent's own ``agent-*.jsonl`` — is read from
them). Only what follows the last compaction is in the model's context: the rest is the
transcript's ``archive`` unless the whole file is asked for. One API response
is split over several ``assistant`` lines that share ``message.id`` and repeat its usage:
they are merged back into one message. A ``compact_boundary`` system line followed by a
user line with ``isCompactSummary`` becomes a ``CompactionSummaryMessage`` — or, when
the boundary's ``compactMetadata`` carries this library's digest record (``window_budget``),
the :class:`~window_budget.messages.DigestMessage` it was written from, so the usage on
the turns kept with it is not taken for the condensed transcript's size. System prompts
written by :func:`write_claude_code` ride on ``system`` lines of subtype
``window_budget_system_prompt`` (Claude Code ignores them) and come back in
``Transcript.system``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import IO, Any

from window_budget.digest import is_digest
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    Block,
    CompactionSummaryMessage,
    ToolResultMessage,
    Usage,
    UserMessage,
    content_text,
    parse_timestamp,
)
from window_budget.readers._base import (
    CLAUDE_TYPES,
    PI_TYPES,
    Collector,
    Transcript,
    iter_json_lines,
)
from window_budget.readers._digests import (
    DIGEST_KEY,
    digest_from_info,
    digest_info,
    find_digest_record,
)
from window_budget.readers._records import (
    FieldTally,
    KeyFields,
    as_int,
    real_usage,
    tag,
    text_of,
)
from window_budget.readers._render import render_as_text
from window_budget.readers.anthropic import (
    blocks_from_anthropic,
    content_to_anthropic,
    simplify,
    tool_result_to_anthropic,
    usage_from_anthropic,
)

__all__ = ["read_claude_code", "write_claude_code"]

_CONVERSATION = frozenset({"user", "assistant", "system"})
_SYSTEM_PROMPT = "window_budget_system_prompt"  # subtype of the lines holding system prompts
_SYNTHETIC_MODEL = "<synthetic>"  # Claude Code's own stand-in replies (API errors, interrupts)


@dataclass
class _Reply:
    """An assistant response being reassembled from its split lines."""

    blocks: list[Block] = field(default_factory=list)
    usage: Usage | None = None
    model: str | None = None
    stop_reason: str | None = None
    timestamp: float | None = None

    def build(self) -> AssistantMessage:
        content: str | tuple[Block, ...] = tuple(self.blocks)
        return AssistantMessage(
            content,
            usage=self.usage,
            model=self.model,
            stop_reason=self.stop_reason,
            timestamp=self.timestamp,
        )


def _has_claude_fields(record: Mapping[str, Any]) -> bool | str:
    kind = tag(record.get("type"))
    marked = "sessionId" in record or "parentUuid" in record or "uuid" in record
    if kind in PI_TYPES and not marked:
        return f"a line is a pi {kind!r} entry"
    return kind in CLAUDE_TYPES or marked


CLAUDE_FIELDS = KeyFields(
    "claude-code", "a Claude Code event type or a sessionId", _has_claude_fields
)
"""What makes a line a Claude Code event (for a forced reader's check)."""


class _Chain:
    """The messages of one chain of a session file: the main one or the side chains."""

    def __init__(self) -> None:
        self.out: list[AgentMessage | _Reply] = []
        self.open_replies: dict[str, _Reply] = {}
        self.names: dict[str, str] = {}
        self.boundary: tuple[int, Any] | None = None
        self.compactions = 0
        self.last_boundary: int | None = None  # index in ``out`` of the newest summary

    def messages(self) -> list[AgentMessage]:
        return [m.build() if isinstance(m, _Reply) else m for m in self.out]

    def add_summary(self, text: str, ts: float | None) -> None:
        """A compaction's summary: the digest the model sees from here on."""
        before, info = self.boundary or (0, None)
        digest = digest_from_info(text, info, timestamp=ts) or CompactionSummaryMessage(
            text, before, timestamp=ts, kept_count=0
        )
        self.boundary = None
        self.compactions += 1
        self.last_boundary = len(self.out)
        self.out.append(digest)

    def add_user(self, message: Mapping[str, Any], ts: float | None) -> None:
        """A user line: its tool results first, then any text."""
        blocks, results = blocks_from_anthropic(message["content"], self.names)
        self.out.extend(results)
        if blocks or not results:
            self.out.append(UserMessage(simplify(blocks), timestamp=ts))

    def add_reply(
        self, message: Mapping[str, Any], obj: Mapping[str, Any], ts: float | None
    ) -> None:
        """An assistant line, merged into the reply its ``message.id`` names."""
        blocks, _ = blocks_from_anthropic(message["content"], self.names)
        # Parsed before anything is kept, so a bad line leaves no half-built reply behind.
        usage = real_usage(usage_from_anthropic(message.get("usage")))
        reply_id = str(message.get("id") or obj.get("uuid") or len(self.out))
        reply = self.open_replies.get(reply_id)
        if reply is None:
            reply = _Reply(timestamp=ts)
            self.open_replies[reply_id] = reply
            self.out.append(reply)
        reply.blocks.extend(blocks)
        model = message.get("model")
        if model and model != _SYNTHETIC_MODEL:
            reply.model = str(model)
            # Each split line repeats the response's usage; the last one is the final figure.
            reply.usage = usage or reply.usage
        reply.stop_reason = message.get("stop_reason") or reply.stop_reason


def _system_line(obj: Mapping[str, Any], chain: _Chain, system: list[str]) -> bool:
    """Take a ``system`` line's compaction boundary or system prompt; False for a UI notice."""
    if obj.get("subtype") == "compact_boundary":
        info = obj.get("compactMetadata") or {}
        chain.boundary = (as_int(info.get("preTokens")), find_digest_record(info))
        return True
    if obj.get("subtype") == _SYSTEM_PROMPT:
        system.append(text_of(obj.get("content")))
        return True
    return False


def read_claude_code(
    stream: IO[str], *, path: str = "", skip_bad: bool = False, whole_file: bool = False
) -> Transcript:
    """Read a Claude Code session, merging split assistant lines by ``message.id``.

    The model sees only what follows the last compaction (a ``compact_boundary`` line and
    the ``isCompactSummary`` summary after it): that summary and what follows it are
    ``messages``; what came before is ``archive``, or everything is ``messages`` with
    ``whole_file``. A file holding only side-chain lines (a sub-agent's own file, or the
    side chain a compaction ran in) is read from those lines.
    """
    tally = FieldTally(CLAUDE_FIELDS, path)
    collector = Collector(path, skip_bad=skip_bad, tally=tally)
    main, side = _Chain(), _Chain()
    state: dict[str, Any] = {"ignored": 0, "side_lines": 0}
    meta: dict[str, Any] = {}
    system: list[str] = []

    def handle(obj: Any) -> None:
        if not isinstance(obj, Mapping):
            raise TypeError(f"a line must hold a JSON object, not {type(obj).__name__}")
        tally.add(obj)
        kind = tag(obj.get("type"))
        if kind not in _CONVERSATION:
            state["ignored"] += 1
            return
        chain = side if obj.get("isSidechain") else main
        if chain is side:
            state["side_lines"] += 1
        for key in ("sessionId", "cwd", "gitBranch", "version", "agentId"):
            if key in obj and key not in meta:
                meta[key] = obj[key]
        ts = parse_timestamp(obj.get("timestamp"))
        if kind == "system":
            if not _system_line(obj, chain, system) and chain is main:
                state["ignored"] += 1  # notices shown in the UI, never sent to the model
            return
        message = obj["message"]
        if kind == "user" and obj.get("isCompactSummary"):
            chain.add_summary(text_of(message["content"]), ts)
        elif kind == "user":
            chain.add_user(message, ts)
        else:
            chain.add_reply(message, obj, ts)

    for number, obj in iter_json_lines(stream, collector):
        collector.guard(number, partial(handle, obj))
    tally.finish("line")
    # A sub-agent's file is all side chain; in a session file side chains never reach the
    # main context, so they are only counted.
    chain = side if not main.out and side.out else main
    if chain is main:
        state["ignored"] += state["side_lines"]
    else:
        meta["sidechain"] = True
    messages = chain.messages()
    archive: list[AgentMessage] = []
    if not whole_file and chain.last_boundary:
        archive, messages = messages[: chain.last_boundary], messages[chain.last_boundary :]
    meta["compactions"] = chain.compactions
    return Transcript(
        messages=tuple(messages),
        system=tuple(system),
        format="claude-code",
        path=path,
        skipped=tuple(collector.skipped),
        ignored=state["ignored"],
        meta=meta,
        archive=tuple(archive),
        whole_file=whole_file,
    )


def _assistant_line(msg: AssistantMessage, i: int) -> dict[str, Any]:
    """The ``message`` of an assistant line: Anthropic's API response, usage included."""
    body: dict[str, Any] = {
        "id": f"msg_wb_{i}",
        "type": "message",
        "role": "assistant",
        "model": msg.model or "unknown",
        "content": content_to_anthropic(msg.content)
        if not isinstance(msg.content, str)
        else [{"type": "text", "text": msg.content}],
        "stop_reason": msg.stop_reason,
    }
    if msg.usage is not None:
        u = msg.usage
        body["usage"] = {
            "input_tokens": u.input_tokens,
            "cache_creation_input_tokens": u.cache_creation_tokens,
            "cache_read_input_tokens": u.cache_read_tokens,
            "output_tokens": u.output_tokens,
        }
    return body


def _digest_lines(
    msg: AgentMessage, base: dict[str, Any], boundary_id: str, tokens_before: int | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A digest as Claude Code writes a compaction: the boundary line, then the summary line."""
    pre = getattr(msg, "tokens_before", None)
    if tokens_before is not None and (not pre or isinstance(msg, UserMessage)):
        pre = tokens_before
    metadata: dict[str, Any] = {"trigger": "manual", "preTokens": pre or 0}
    info = digest_info(msg)
    if info is not None:
        metadata[DIGEST_KEY] = info
    boundary = {
        **base,
        "uuid": boundary_id,
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "compactMetadata": metadata,
    }
    text = content_text(msg.content) if isinstance(msg, UserMessage) else render_as_text(msg)
    summary = {
        **base,
        "parentUuid": boundary_id,
        "type": "user",
        "isCompactSummary": True,
        "message": {"role": "user", "content": text},
    }
    return boundary, summary


def _user_line(msg: AgentMessage) -> dict[str, Any]:
    """The ``message`` of a user line: a tool result, the content, or another kind as text."""
    if isinstance(msg, ToolResultMessage):
        return {"role": "user", "content": [tool_result_to_anthropic(msg)]}
    if isinstance(msg, UserMessage):
        return {"role": "user", "content": content_to_anthropic(msg.content)}
    return {"role": "user", "content": render_as_text(msg)}


def write_claude_code(
    messages: Iterable[AgentMessage],
    stream: IO[str],
    *,
    system: Iterable[str] = (),
    session_id: str | None = None,
    tokens_before: int | None = None,
) -> None:
    """Write core messages as a Claude Code session (one line per message, chained uuids).

    A digest is written the way Claude Code writes its own compactions: a
    ``compact_boundary`` system line (``preTokens`` is ``tokens_before`` when given, the
    size of the transcript the digest replaced; a window-budget digest's counts ride in
    its ``compactMetadata``), then the summary as an ``isCompactSummary`` user line.
    Claude Code rebuilds its own system prompt, so ``system`` prompts go on ``system``
    lines of subtype ``window_budget_system_prompt``, which Claude Code does not send to
    the model and :func:`read_claude_code` reads back into ``Transcript.system``.
    """
    session = session_id or str(uuid.uuid4())
    parent: str | None = None
    for n, prompt in enumerate(system):
        note_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session}/system/{n}"))
        note = {
            "parentUuid": parent,
            "isSidechain": False,
            "sessionId": session,
            "uuid": note_id,
            "type": "system",
            "subtype": _SYSTEM_PROMPT,
            "content": prompt,
            "isMeta": True,
        }
        stream.write(json.dumps(note, ensure_ascii=False) + "\n")
        parent = note_id
    for i, msg in enumerate(messages):
        base: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": False,
            "sessionId": session,
            "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session}/{i}")),
        }
        if isinstance(msg, AssistantMessage):
            line = {**base, "type": "assistant", "message": _assistant_line(msg, i)}
        elif is_digest(msg) and not isinstance(msg, ToolResultMessage):
            boundary_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session}/{i}/boundary"))
            boundary, line = _digest_lines(msg, base, boundary_id, tokens_before)
            stream.write(json.dumps(boundary, ensure_ascii=False) + "\n")
        else:
            line = {**base, "type": "user", "message": _user_line(msg)}
        stream.write(json.dumps(line, ensure_ascii=False) + "\n")
        parent = line["uuid"]
