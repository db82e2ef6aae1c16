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
from collections.abc import Iterable, Iterator, Mapping
from functools import partial
from typing import IO, Any

from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    CustomMessage,
    ImageBlock,
    ToolResultMessage,
    UserMessage,
    content_text,
)
from window_budget.readers._base import (
    BOM,
    PICK_RUN,
    Collector,
    ReadError,
    Transcript,
    loads,
    mismatch,
)
from window_budget.readers._digests import (
    DIGEST_KEY,
    digest_info,
)
from window_budget.readers._openhands_condensation import condensed_view, is_condensation
from window_budget.readers._openhands_events import Events
from window_budget.readers._records import (
    FieldTally,
    KeyFields,
    image_to_url,
)
from window_budget.readers._render import render_as_text

__all__ = ["is_openhands_events", "is_openhands_run", "read_openhands", "write_openhands"]


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


def _runs(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield number, line


def _document(text: str, path: str, run: int, meta: dict[str, Any]) -> Any:
    """The JSON document, or run ``run`` of a JSONL file (noted in ``meta``)."""
    try:
        doc: Any = loads(text)
    except ValueError:
        doc = None
    if doc is not None:
        return doc
    # JSONL: one run a line; only the chosen one is decoded.
    where = path or "<input>"
    lines = list(_runs(text.splitlines(keepends=True)))
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
    return doc


def _events(doc: Any, path: str, meta: dict[str, Any]) -> list[Any]:
    """The events of a run (its ``instance_id`` noted in ``meta``) or of a list of events."""
    if is_openhands_run(doc):
        if isinstance(doc.get("instance_id"), str):
            meta["instance_id"] = doc["instance_id"]
        return list(doc["history"])
    if isinstance(doc, list):
        return doc
    raise mismatch(
        path,
        "openhands",
        "it holds neither a list of events nor runs with a 'history' of events",
    )


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
    text = stream.read()
    text = text[1:] if text.startswith(BOM) else text
    meta: dict[str, Any] = {}
    events = _events(_document(text, path, run, meta), path, meta)
    unit = "event"
    tally = FieldTally(_FIELDS, path)
    for event in events:
        tally.add(event)
    tally.finish(unit)
    collector = Collector(path, skip_bad=skip_bad, unit=unit)
    numbered = list(enumerate(events, start=1))
    condensations = [i for i, e in numbered if is_condensation(e)]
    meta["compactions"] = len(condensations)
    built, archive = Events(), Events()
    if whole_file or not condensations:
        for index, event in numbered:
            collector.guard(index, partial(built.add, event))
        messages = built.out
    else:
        messages = condensed_view(numbered, condensations[-1], built, archive, collector)
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


def _model_response(msg: AssistantMessage, response_id: str, text: str) -> dict[str, Any]:
    """The ``model_response`` an assistant reply's actions share: text, calls, model, usage."""
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {
                "name": c.name,
                "arguments": json.dumps(dict(c.arguments), ensure_ascii=False),
            },
        }
        for c in msg.tool_calls
    ]
    return {
        "id": response_id,
        "model": msg.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text or None, "tool_calls": calls},
            }
        ],
        "usage": _usage_out(msg),
    }


def _user_args(msg: UserMessage) -> dict[str, Any]:
    """A user message's ``args``: its text, its images as URLs, a digest's record."""
    args: dict[str, Any] = {"content": content_text(msg.content)}
    if not isinstance(msg.content, str):
        images = [image_to_url(b) for b in msg.content if isinstance(b, ImageBlock)]
        if images:
            args["image_urls"] = images
    info = digest_info(msg)
    if info is not None:
        args[DIGEST_KEY] = info
    return args


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
            response = _model_response(msg, f"wb-{i}", text)
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
            args = _user_args(msg)
            add({"source": "user", "action": "message", "args": args})
        elif isinstance(msg, CustomMessage):
            # An observation answering no action: read back as the note it was.
            add({"source": "environment", "observation": "note", "content": render_as_text(msg)})
        else:
            add({"source": "user", "action": "message", "args": {"content": render_as_text(msg)}})
    json.dump(events, stream, ensure_ascii=False, indent=1)
    stream.write("\n")
