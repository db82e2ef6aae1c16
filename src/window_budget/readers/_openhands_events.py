"""OpenHands events as core messages: one reply per model response, observations as results.

See :mod:`window_budget.readers.openhands` for the event shape and the mapping; this module
reads events one at a time, in order, and knows nothing of files, runs or condensations.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    Block,
    CompactionSummaryMessage,
    CustomMessage,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    tool_arguments,
)
from window_budget.readers._digests import (
    digest_from_info,
    find_digest_record,
)
from window_budget.readers._records import (
    image_from_url,
    real_usage,
    tag,
    text_of,
)
from window_budget.readers.openai import usage_from_openai

__all__ = ["Call", "Events", "event_id", "is_id"]

_IGNORED_ACTIONS = frozenset({"change_agent_state", "null", "recall", "condensation_request"})
_IGNORED_OBSERVATIONS = frozenset({"agent_state_changed", "null"})


class Events:
    """Turns events into core messages, one reply per model response.

    Feed it events in order with :meth:`add`; ``out`` holds the messages, ``system`` the
    system prompts, ``ignored`` the events that carry no conversation.
    """

    def __init__(self) -> None:
        self.out: list[AgentMessage] = []
        self.system: list[str] = []
        self.replies: dict[str, int] = {}
        """Where each model response's reply is in ``out``, by response id."""
        self.ignored = 0
        self.calls: dict[int, Call] = {}
        """Actions an observation can answer, by event id."""

    def add(self, event: Any) -> None:
        """Read one event (a malformed one raises, for the caller's collector)."""
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
            number = event_id(event)
            if number is not None:
                call = ToolCallBlock(f"openhands-event-{number}", str(kind), rest)
                self.calls[number] = Call(len(self.out), call, thought)
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
        number, reply = event_id(event), self.out[at]
        if number is not None and isinstance(reply, AssistantMessage):
            # An observation without metadata may still answer it (by its ``cause``).
            wanted = str(meta.get("tool_call_id"))
            call = next((c for c in reply.tool_calls if c.id == wanted), None)
            if call is not None:
                self.calls[number] = Call(at, call, None)

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
                ToolCallBlock(str(call["id"]), str(fn["name"]), tool_arguments(fn.get("arguments")))
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
        found = self.calls.get(cause) if is_id(cause) else None
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
class Call:
    """An action an observation can answer: where its reply is and the call it made."""

    at: int
    """The reply's index in the messages read."""
    call: ToolCallBlock
    """The call (for a text action, the one it becomes once answered)."""
    thought: str | None
    """A text action's thought (None for a reply that already holds its calls)."""


def event_id(event: Mapping[str, Any]) -> int | None:
    """An event's ``id`` when it is an integer (ids are how observations name actions)."""
    number = event.get("id")
    return number if is_id(number) else None


def is_id(value: Any) -> TypeGuard[int]:
    """True for an integer event id (never a ``bool``, which JSON spells differently)."""
    return isinstance(value, int) and not isinstance(value, bool)
