"""OpenHands event streams: the agent's events, as OpenHands serializes them.

The event shape is OpenHands' ``event_to_dict`` (All-Hands-AI/OpenHands,
``openhands/events/serialization/event.py``, and ``openhands/events/tool.py`` for
``tool_call_metadata``): ``{id, timestamp, source: agent|user|environment, action, args}``
for actions and ``{id, source, observation, content, extras, cause}`` for observations;
with function calling both carry ``tool_call_metadata {function_name, tool_call_id,
model_response, total_calls_in_response}``, ``model_response`` being the provider's
whole reply (LiteLLM's ``ModelResponse``: ``id``, ``model``, ``choices[0].message`` with
``content`` and ``tool_calls``, and ``usage``).

Files: an evaluation's ``output.jsonl`` (one run a line, events under ``history``; the run
is picked by ``run``, 0-based, the first by default), a JSON object with a ``history``
list, or a JSON list of events (a trajectory export).

What the model saw is rebuilt as OpenHands' conversation memory does: the ``system``
action is the system prompt; a user ``message`` is a user turn; the actions one model
reply produced are that one assistant reply (its text, all its tool calls, its usage and
model — so the provider's usage is carried); an observation answering a tool call is that
call's result. An observation is never a user turn (OpenHands sends some to the model as
user text; only what a user typed is the user's): without ``tool_call_metadata`` it answers
the action its ``cause`` names (an agent without function calling: the action, read as
text, becomes the call ``openhands-event-<id>`` it was), else it is a
``CustomMessage(custom_type="observation")`` (workspace context, controller errors). State
changes and empty events are counted in ``ignored``.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import IO, Any, TypeGuard

from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    Block,
    CompactionSummaryMessage,
    CustomMessage,
    ImageBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    content_text,
)
from window_budget.readers._base import (
    BOM,
    DIGEST_KEY,
    PICK_RUN,
    Collector,
    FieldTally,
    KeyFields,
    ReadError,
    Transcript,
    digest_from_info,
    digest_info,
    find_digest_record,
    image_from_url,
    image_to_url,
    loads,
    mismatch,
    real_usage,
    tag,
    text_of,
)
from window_budget.readers._render import render_as_text
from window_budget.readers.openai import parse_arguments, usage_from_openai

__all__ = ["is_openhands_events", "is_openhands_run", "read_openhands", "write_openhands"]

_IGNORED_ACTIONS = frozenset({"change_agent_state", "null", "recall", "condensation_request"})
_IGNORED_OBSERVATIONS = frozenset({"agent_state_changed", "null"})


def is_openhands_events(events: Any) -> bool:
    """True for a list whose first item is an OpenHands action or observation event."""
    return (
        isinstance(events, list)
        and bool(events)
        and isinstance(events[0], Mapping)
        and ("action" in events[0] or "observation" in events[0])
        and "source" in events[0]
    )


def is_openhands_run(doc: Any) -> bool:
    """True for an object whose ``history`` is a list of OpenHands events."""
    return isinstance(doc, Mapping) and is_openhands_events(doc.get("history"))


_FIELDS = KeyFields(
    "openhands", "an action or an observation", lambda r: "action" in r or "observation" in r
)


class _Events:
    """Turns events into core messages, one reply per model response."""

    def __init__(self) -> None:
        self.out: list[AgentMessage] = []
        self.system: list[str] = []
        self.replies: dict[str, int] = {}
        """Where each model response's reply is in ``out``, by response id."""
        self.ignored = 0
        self.calls: dict[int, _Call] = {}
        """Actions an observation can answer, by event id."""

    def add(self, event: Any) -> None:
        if not isinstance(event, Mapping):
            raise TypeError(f"an event must be a JSON object, not {type(event).__name__}")
        if "action" in event:
            self._action(event)
        elif "observation" in event:
            self._observation(event)
        else:
            raise ValueError("an event needs an 'action' or an 'observation'")

    def _action(self, event: Mapping[str, Any]) -> None:
        kind = tag(event["action"])
        args = event.get("args") or {}
        if not isinstance(args, Mapping):
            raise TypeError("'args' must be an object")
        if kind == "system":
            self.system.append(text_of(args.get("content")))
            return
        if kind == "condensation":
            # Read whole, a summary stands where it was made; without one, nothing reached
            # the model.
            summary = args.get("summary")
            if isinstance(summary, str):
                self.out.append(CompactionSummaryMessage(summary))
            else:
                self.ignored += 1
            return
        if kind in _IGNORED_ACTIONS:
            self.ignored += 1
            return
        meta = event.get("tool_call_metadata")
        if isinstance(meta, Mapping):
            self._reply(event, meta, args)
            return
        text = text_of(args.get("content")) if kind == "message" else ""
        if event.get("source") == "user":
            content = self._with_images(text, args)
            self.out.append(
                digest_from_info(content, find_digest_record(args)) or UserMessage(content)
            )
            return
        if kind != "message":
            # An agent without function calling: its thought and what it ran, as text; an
            # observation answering it makes it the call it was (see _answer).
            thought = text_of(args.get("thought"))
            rest = {k: v for k, v in args.items() if k not in ("thought", "content")}
            text = "\n".join(
                p for p in (thought, f"[{kind}] {json.dumps(rest, ensure_ascii=False)}") if p
            )
            number = _event_id(event)
            if number is not None:
                call = ToolCallBlock(f"openhands-event-{number}", str(kind), rest)
                self.calls[number] = _Call(len(self.out), call, thought)
        self.out.append(AssistantMessage(text))

    def _reply(
        self, event: Mapping[str, Any], meta: Mapping[str, Any], args: Mapping[str, Any]
    ) -> None:
        response = meta.get("model_response")
        response = response if isinstance(response, Mapping) else {}
        key = str(response.get("id") or f"event-{event.get('id')}")
        at = self.replies.get(key)
        if at is None:  # else another action of a reply already read whole
            at = self.replies[key] = len(self.out)
            self.out.append(self._reply_message(response, meta, args))
        number, reply = _event_id(event), self.out[at]
        if number is not None and isinstance(reply, AssistantMessage):
            # An observation without metadata may still answer it (by its ``cause``).
            wanted = str(meta.get("tool_call_id"))
            call = next((c for c in reply.tool_calls if c.id == wanted), None)
            if call is not None:
                self.calls[number] = _Call(at, call, None)

    @staticmethod
    def _reply_message(
        response: Mapping[str, Any], meta: Mapping[str, Any], args: Mapping[str, Any]
    ) -> AssistantMessage:
        choices = response.get("choices")
        message = (
            choices[0].get("message")
            if isinstance(choices, list) and choices and isinstance(choices[0], Mapping)
            else None
        )
        message = message if isinstance(message, Mapping) else {}
        blocks: list[Block] = []
        text = text_of(message.get("content"))
        if text:
            blocks.append(TextBlock(text))
        for call in message.get("tool_calls") or ():
            fn = call["function"]
            blocks.append(
                ToolCallBlock(
                    str(call["id"]), str(fn["name"]), parse_arguments(fn.get("arguments"))
                )
            )
        if not any(isinstance(b, ToolCallBlock) for b in blocks):
            blocks.append(
                ToolCallBlock(
                    str(meta["tool_call_id"]),
                    str(meta["function_name"]),
                    {k: v for k, v in args.items() if k != "thought"},
                )
            )
        model = response.get("model")
        return AssistantMessage(
            tuple(blocks),
            usage=real_usage(usage_from_openai(response.get("usage"))),
            model=str(model) if isinstance(model, str) and model else None,
        )

    def _observation(self, event: Mapping[str, Any]) -> None:
        kind = tag(event["observation"])
        if kind in _IGNORED_OBSERVATIONS:
            self.ignored += 1
            return
        content = text_of(event.get("content"))
        meta = event.get("tool_call_metadata")
        if isinstance(meta, Mapping):
            self.out.append(
                ToolResultMessage(
                    str(meta["tool_call_id"]),
                    str(meta.get("function_name") or ""),
                    content,
                    is_error=kind == "error",
                )
            )
        elif content:
            self.out.append(self._answer(event, kind, content))
        else:
            self.ignored += 1

    def _answer(self, event: Mapping[str, Any], kind: str | None, content: str) -> AgentMessage:
        """An observation without ``tool_call_metadata``: never a user turn.

        It answers the action its ``cause`` names when that action's reply is the last
        one read and its call has no result yet (an agent without function calling,
        browsing output): then it is that call's result. Anything else (workspace
        context, an error the controller raised) is an observation note.
        """
        cause = event.get("cause")
        found = self.calls.get(cause) if _is_id(cause) else None
        if found is None or not all(
            isinstance(m, ToolResultMessage) and m.tool_call_id != found.call.id
            for m in self.out[found.at + 1 :]
        ):
            return CustomMessage("observation", content)
        reply = self.out[found.at]
        if found.thought is not None and isinstance(reply, AssistantMessage):
            # A text action becomes the call it was, the model's thought kept as its text.
            blocks = (TextBlock(found.thought),) if found.thought else ()
            self.out[found.at] = AssistantMessage((*blocks, found.call))
        return ToolResultMessage(found.call.id, found.call.name, content, is_error=kind == "error")

    @staticmethod
    def _with_images(text: str, args: Mapping[str, Any]) -> str | tuple[Block, ...]:
        urls = args.get("image_urls")
        if not isinstance(urls, list) or not urls:
            return text
        return (TextBlock(text), *(image_from_url(str(u)) for u in urls))


@dataclass(frozen=True, slots=True)
class _Call:
    """An action an observation can answer: where its reply is and the call it made."""

    at: int
    """The reply's index in the messages read."""
    call: ToolCallBlock
    """The call (for a text action, the one it becomes once answered)."""
    thought: str | None
    """A text action's thought (None for a reply that already holds its calls)."""


def _event_id(event: Mapping[str, Any]) -> int | None:
    number = event.get("id")
    return number if _is_id(number) else None


def _runs(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield number, line


def read_openhands(
    stream: IO[str],
    *,
    path: str = "",
    skip_bad: bool = False,
    run: int = 0,
    whole_file: bool = False,
) -> Transcript:
    """Read an OpenHands event stream (one run of an ``output.jsonl``, or one JSON document).

    A ``condensation`` action (OpenHands' condenser) forgets events — by
    ``forgotten_event_ids`` or a ``forgotten_events_start_id``..``end_id`` range — and may
    put a summary at ``summary_offset`` of what is left. As OpenHands builds the model's
    view, the forgotten events go to ``archive`` and the newest summary becomes a
    ``CompactionSummaryMessage`` whose ``kept_count`` counts the messages after it that
    predate the condensation (their usage measured the longer history). With
    ``whole_file`` every event is read in order, each summary where it was made.

    Raises:
        ReadError: no events, no run ``run``, or an event that is neither an action nor
            an observation (skipped instead with ``skip_bad``).

    """
    where = path or "<input>"
    text = stream.read()
    text = text[1:] if text.startswith(BOM) else text
    lines = list(_runs(text.splitlines(keepends=True)))
    meta: dict[str, Any] = {}
    unit = "event"
    try:
        doc: Any = loads(text)
    except ValueError:
        doc = None
    if doc is None:
        # JSONL: one run a line; only the chosen one is decoded.
        if not 0 <= run < len(lines):
            raise ReadError(
                f"{where}: there is no run {run}; the file holds {len(lines):,} "
                f"runs, numbered 0 to {max(len(lines) - 1, 0):,} — pick one with "
                f"{PICK_RUN}",
                path=path,
            )
        number, line = lines[run]
        try:
            doc = loads(line)
        except ValueError as exc:
            raise ReadError(
                f"{where}, line {number}: run {run} is not valid JSON ({exc}) — "
                "fix the file or pick another run",
                path=path,
                line=number,
            ) from None
        meta.update({"run": run, "runs": len(lines)})
    if is_openhands_run(doc):
        if isinstance(doc.get("instance_id"), str):
            meta["instance_id"] = doc["instance_id"]
        events = list(doc["history"])
    elif isinstance(doc, list):
        events = doc
    else:
        raise mismatch(
            path,
            "openhands",
            "it holds neither a list of events nor runs with a 'history' of events",
        )
    tally = FieldTally(_FIELDS, path)
    for event in events:
        tally.add(event)
    tally.finish(unit)
    collector = Collector(path, skip_bad=skip_bad, unit=unit)
    numbered = list(enumerate(events, start=1))
    condensations = [i for i, e in numbered if _is_condensation(e)]
    meta["compactions"] = len(condensations)
    built, archive = _Events(), _Events()
    if whole_file or not condensations:
        for index, event in numbered:
            collector.guard(index, partial(built.add, event))
        messages = built.out
    else:
        messages = _view(numbered, condensations[-1], built, archive, collector)
    models = [m.model for m in messages if isinstance(m, AssistantMessage) and m.model]
    if models:
        meta["model"] = models[-1]
    return Transcript(
        messages=tuple(messages),
        system=tuple(built.system),
        format="openhands",
        path=path,
        skipped=tuple(collector.skipped),
        ignored=built.ignored + archive.ignored,
        meta=meta,
        archive=tuple(archive.out),
        whole_file=whole_file,
    )


def _is_condensation(event: Any) -> bool:
    return isinstance(event, Mapping) and tag(event.get("action")) == "condensation"


class _Forgotten:
    """The event ids condensations forget, as listed ids and merged ``start..end`` ranges.

    A range is never expanded: a ten-byte ``forgotten_events_end_id`` can name 10**12
    events, so membership is a binary search over the merged ranges.
    """

    def __init__(self) -> None:
        self.ids: set[int] = set()
        self.spans: list[tuple[int, int]] = []
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, args: Mapping[str, Any]) -> None:
        """Take in what one condensation forgets (``pruned_*`` is another spelling of it)."""
        for prefix in ("forgotten", "pruned"):
            ids = args.get(f"{prefix}_event_ids")
            if isinstance(ids, list):
                self.ids.update(i for i in ids if _is_id(i))
            start, end = args.get(f"{prefix}_events_start_id"), args.get(f"{prefix}_events_end_id")
            if _is_id(start) and _is_id(end) and start <= end:
                self.spans.append((start, end))

    def merge(self) -> None:
        """Merge overlapping and adjacent ranges, for :meth:`__contains__`."""
        self.starts, self.ends = [], []
        for start, end in sorted(self.spans):
            if self.ends and start <= self.ends[-1] + 1:
                self.ends[-1] = max(self.ends[-1], end)
            else:
                self.starts.append(start)
                self.ends.append(end)

    def __contains__(self, number: int) -> bool:
        if number in self.ids:
            return True
        at = bisect_right(self.starts, number) - 1
        return at >= 0 and number <= self.ends[at]


def _is_id(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _view(
    numbered: list[tuple[int, Any]],
    last: int,
    built: _Events,
    archive: _Events,
    collector: Collector,
) -> list[AgentMessage]:
    """The model's view after the condensations: what is not forgotten, the summary placed."""
    forgotten = _Forgotten()
    summary: tuple[str, int] | None = None
    for _, event in numbered:
        if _is_condensation(event):
            args = event.get("args")
            args = args if isinstance(args, Mapping) else {}
            forgotten.add(args)
            text, offset = args.get("summary"), args.get("summary_offset")
            if isinstance(text, str) and isinstance(offset, int) and offset >= 0:
                summary = (text, offset)
    forgotten.merge()
    live: list[tuple[int, Any]] = []
    for index, event in numbered:
        if _is_condensation(event):
            built.ignored += 1
        elif isinstance(event, Mapping) and _is_id(event.get("id")) and event["id"] in forgotten:
            collector.guard(index, partial(archive.add, event))
        else:
            live.append((index, event))
    # Messages each live event produced, to place the summary by event offset and to count
    # the kept ones that predate the condensation.
    spans: list[tuple[int, int]] = []
    for index, event in live:
        before = len(built.out)
        collector.guard(index, partial(built.add, event))
        spans.append((index, len(built.out) - before))
    if summary is None:
        return built.out
    text, offset = summary
    at = sum(n for _, n in spans[:offset])
    stale = sum(n for index, n in spans[offset:] if index < last)
    return [*built.out[:at], CompactionSummaryMessage(text, kept_count=stale), *built.out[at:]]


def _usage_out(msg: AssistantMessage) -> dict[str, Any] | None:
    u = msg.usage
    if u is None:
        return None
    return {
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.prompt_tokens + u.output_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens},
    }


def write_openhands(
    messages: Iterable[AgentMessage], stream: IO[str], *, system: Iterable[str] = ()
) -> None:
    """Write core messages as a JSON list of OpenHands-shaped events.

    Each assistant reply with tool calls becomes one action per call sharing one
    ``model_response`` (its text, calls, model and usage), each result an observation
    answering it, so :func:`read_openhands` rebuilds the same messages. OpenHands' own
    action kinds are not known here: calls are written as ``call`` actions.
    """
    events: list[dict[str, Any]] = []

    def add(event: dict[str, Any]) -> int:
        number = len(events)
        events.append({"id": number, **event})
        return number

    for prompt in system:
        add({"source": "agent", "action": "system", "args": {"content": prompt}})
    calls: dict[str, int] = {}
    for i, msg in enumerate(messages):
        if isinstance(msg, AssistantMessage) and msg.tool_calls:
            text = content_text(msg.content)
            response: dict[str, Any] = {
                "id": f"wb-{i}",
                "model": msg.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": text or None,
                            "tool_calls": [
                                {
                                    "id": c.id,
                                    "type": "function",
                                    "function": {
                                        "name": c.name,
                                        "arguments": json.dumps(
                                            dict(c.arguments), ensure_ascii=False
                                        ),
                                    },
                                }
                                for c in msg.tool_calls
                            ],
                        },
                    }
                ],
                "usage": _usage_out(msg),
            }
            for call in msg.tool_calls:
                calls[call.id] = add(
                    {
                        "source": "agent",
                        "action": "call",
                        "args": {**call.arguments, "thought": text},
                        "tool_call_metadata": {
                            "function_name": call.name,
                            "tool_call_id": call.id,
                            "model_response": response,
                            "total_calls_in_response": len(msg.tool_calls),
                        },
                    }
                )
        elif isinstance(msg, AssistantMessage):
            add(
                {
                    "source": "agent",
                    "action": "message",
                    "args": {"content": content_text(msg.content)},
                }
            )
        elif isinstance(msg, ToolResultMessage):
            add(
                {
                    "source": "environment",
                    "observation": "error" if msg.is_error else "tool",
                    "content": content_text(msg.content),
                    "cause": calls.get(msg.tool_call_id),
                    "tool_call_metadata": {
                        "function_name": msg.tool_name,
                        "tool_call_id": msg.tool_call_id,
                    },
                }
            )
        elif isinstance(msg, UserMessage):
            args: dict[str, Any] = {"content": content_text(msg.content)}
            if not isinstance(msg.content, str):
                images = [image_to_url(b) for b in msg.content if isinstance(b, ImageBlock)]
                if images:
                    args["image_urls"] = images
            info = digest_info(msg)
            if info is not None:
                args[DIGEST_KEY] = info
            add({"source": "user", "action": "message", "args": args})
        elif isinstance(msg, CustomMessage):
            # An observation answering no action: read back as the note it was.
            add({"source": "environment", "observation": "note", "content": render_as_text(msg)})
        else:
            add({"source": "user", "action": "message", "args": {"content": render_as_text(msg)}})
    json.dump(events, stream, ensure_ascii=False, indent=1)
    stream.write("\n")
