"""SWE-agent trajectory files (``<instance>.traj``): one JSON object per run.

The shape is SWE-agent's (SWE-agent/SWE-agent, ``sweagent/types.py`` and the agent's
``.traj`` writer): ``{"history": [...], "trajectory": [...], "info": {...},
"replay_config": "...", "environment": "..."}``. ``history`` is what the model was sent:
``{role: system|user|assistant|tool, content (text or text parts), message_type,
thought?, action?, tool_calls? (Chat Completions shape), tool_call_ids? (on tool
results)}``. A file without ``history``, or with only the system prompt in it (older or
trimmed ones), is read from ``trajectory`` steps: each step's ``response`` as the model's
reply and its ``observation`` as what came back.

SWE-agent sends the model all but its replies as ``user`` turns; only the task is the
user's. The first user item before any action (the instance template: the issue) is a
``UserMessage``; demonstrations (``is_demo``, ``message_type: demonstration``) are
``CustomMessage(custom_type="demonstration")`` — examples, kept as text; every later
observation is the result of the action before it: a ``ToolResultMessage`` (with
function calling it names its call in ``tool_call_ids``; without, the reply's ``action``
text becomes a ``bash`` call ``swe-step-<n>``, ``n`` its record or step number), else a
``CustomMessage(custom_type="observation")``. So no page an agent fetched or file it
read is ever taken for something the user asked.

SWE-agent records no per-call usage (only run totals in ``info.model_stats``, kept in
``meta``), so these transcripts are estimated, never anchored. The model is the one the
run's ``replay_config`` names.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import IO, Any

from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    Block,
    CustomMessage,
    DigestMessage,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    content_text,
)
from window_budget.readers._base import (
    JSONProblem,
    ReadError,
    Transcript,
    load_json,
    loads,
    mismatch,
)
from window_budget.readers._digests import (
    DIGEST_KEY,
)
from window_budget.readers._records import (
    FieldTally,
    KeyFields,
    convert_records,
    tag,
    text_of,
)
from window_budget.readers.openai import content_from_openai, message_from_openai, to_openai

__all__ = ["is_swe_agent", "read_swe_agent", "write_swe_agent"]

_ROLES = frozenset({"system", "user", "assistant", "tool"})


def is_swe_agent(doc: Any) -> bool:
    """True for an object with a ``history`` or ``trajectory`` list of SWE-agent steps."""
    if not isinstance(doc, Mapping):
        return False
    history, steps = doc.get("history"), doc.get("trajectory")
    if isinstance(history, list) and history and isinstance(history[0], Mapping):
        first = history[0]
        return "role" in first and ("message_type" in first or "agent" in first)
    return (
        isinstance(steps, list)
        and bool(steps)
        and isinstance(steps[0], Mapping)
        and ("response" in steps[0] or "observation" in steps[0])
    )


def _as_openai(item: Mapping[str, Any], call: str | None) -> dict[str, Any]:
    """One history item as a Chat Completions message (tool results name their call).

    ``call`` is the id synthesized for an action given only as text (an agent without
    function calling): the reply gets a ``bash`` call carrying it, the observation after it
    the result.
    """
    record: dict[str, Any] = {"role": item["role"], "content": item.get("content")}
    if DIGEST_KEY in item:
        record[DIGEST_KEY] = item[DIGEST_KEY]
    if item.get("tool_calls"):
        record["tool_calls"] = item["tool_calls"]
    elif call is not None and item.get("role") == "assistant":
        record["tool_calls"] = [_synthesized(call, item.get("action"))]
    ids = item.get("tool_call_ids")
    if item.get("role") == "tool" and isinstance(ids, list) and ids:
        record["tool_call_id"] = ids[0]
    return record


def _synthesized(call: str, action: Any) -> dict[str, Any]:
    return {
        "id": call,
        "type": "function",
        "function": {"name": _ACTION_TOOL, "arguments": {"command": str(action)}},
    }


_ACTION_TOOL = "bash"
"""The tool a text action ran in: SWE-agent runs its commands in the environment's shell."""


def _convert(
    raw: Mapping[str, Any], names: dict[str, str], system: list[str]
) -> AgentMessage | None:
    kind, item, call = raw["kind"], raw["item"], raw.get("call")
    if not isinstance(item, Mapping):
        raise TypeError(f"a message must be a JSON object, not {type(item).__name__}")
    if kind == "demonstration":
        return CustomMessage("demonstration", _demo_content(item))
    if kind == "step":
        return _step_reply(item, call)
    if kind in ("observation", "step-observation"):
        content = (
            text_of(item["observation"])
            if kind == "step-observation"
            else content_from_openai(item.get("content"))
        )
        if call is not None:
            return ToolResultMessage(call, names.get(call, _ACTION_TOOL), content)
        return CustomMessage("observation", content)
    if tag(item.get("role")) not in _ROLES:
        raise ValueError(
            f"unknown role {item.get('role')!r} (expected system, user, assistant or tool)"
        )
    return message_from_openai(_as_openai(item, call), names, system)


def _demo_content(item: Mapping[str, Any]) -> str | tuple[Block, ...]:
    """A demonstration's text, with the action of a demonstrated step when only it says it."""
    content = content_from_openai(item.get("content"))
    action = item.get("action")
    if isinstance(action, str) and action.strip() and action not in content_text(content):
        blocks = (TextBlock(content),) if isinstance(content, str) else content
        return (*blocks, TextBlock(action))
    return content


def _step_reply(step: Mapping[str, Any], call: str | None) -> AssistantMessage:
    text = text_of(step.get("response") or step.get("thought") or "")
    if call is None:
        return AssistantMessage(text)
    blocks: tuple[Block, ...] = (TextBlock(text),) if text else ()
    tool = ToolCallBlock(call, _ACTION_TOOL, {"command": str(step["action"])})
    return AssistantMessage((*blocks, tool))


def _is_demo(item: Mapping[str, Any]) -> bool:
    return item.get("is_demo") is True or tag(item.get("message_type")) == "demonstration"


def _is_action(item: Mapping[str, Any]) -> bool:
    action = item.get("action")
    return isinstance(action, str) and bool(action.strip())


def _plan(history: list[Any]) -> list[Any]:
    """Each history item tagged with what it is, for :func:`_convert`.

    SWE-agent sends the model everything as ``user`` turns: the task (its instance
    template, the first user item before any action), demonstrations (``is_demo``) and
    every observation of an agent without function calling. Only the task is the user's;
    demonstrations are examples and observations are what an action returned: a tool
    result when the reply before it gave its action (``swe-step-<n>``, ``n`` the reply's
    record number), else an observation note. ``message_type: user`` is a user turn (what
    SWE-agent and :func:`write_swe_agent` call one); a digest record stays a digest.
    """
    out: list[Any] = []
    task_seen = False
    pending: str | None = None
    for n, item in enumerate(history, start=1):
        call, pending = pending, None
        if not isinstance(item, Mapping):
            out.append(item)  # reported as a bad record
            continue
        role, kind = tag(item.get("role")), "record"
        if _is_demo(item):
            kind, call = "demonstration", None
        elif role == "user" and _is_user_turn(item, task_seen):
            task_seen, call = True, None
        elif role == "user" or (role == "tool" and not item.get("tool_call_ids")):
            kind = "observation"
        elif role == "assistant":
            task_seen = True  # a user turn after an action is what the action returned
            call = None
            if not item.get("tool_calls") and _is_action(item) and _observes(history, n):
                call = pending = f"swe-step-{n}"
        else:
            call = None
        out.append({"kind": kind, "item": item, "call": call})
    return out


def _is_user_turn(item: Mapping[str, Any], task_seen: bool) -> bool:
    if not task_seen or tag(item.get("message_type")) == "user":
        return True
    return DIGEST_KEY in item


def _observes(history: list[Any], n: int) -> bool:
    """True when the item after record ``n`` (1-based) is an observation of its action."""
    if n >= len(history):
        return False
    after = history[n]
    if not isinstance(after, Mapping) or _is_demo(after):
        return False
    role = tag(after.get("role"))
    if role == "tool":
        return not after.get("tool_call_ids")
    return role == "user" and not _is_user_turn(after, task_seen=True)


def _from_steps(steps: list[Any]) -> list[Any]:
    """Records rebuilt from trajectory steps: each reply, then what its action returned.

    No step holds the task, so every observation is what an action returned.
    """
    items: list[Any] = []
    for n, step in enumerate(steps, start=1):
        if not isinstance(step, Mapping):
            items.append({"kind": "step", "item": step})  # reported as a bad record
            continue
        seen = bool(step.get("observation"))
        call = f"swe-step-{n}" if seen and _is_action(step) else None
        items.append({"kind": "step", "item": step, "call": call})
        if seen:
            items.append({"kind": "step-observation", "item": step, "call": call})
    return items


def _model_of(doc: Mapping[str, Any], path: str) -> str | None:
    config = doc.get("replay_config")
    if isinstance(config, str):
        try:
            config = loads(config)
        except JSONProblem as exc:
            # A string inside the file gets the file's limits: one sentence, never a crash.
            raise ReadError(
                f"{path or '<input>'}: field 'replay_config' {exc} — fix the file", path=path
            ) from None
        except ValueError:
            return None
    agent = config.get("agent") if isinstance(config, Mapping) else None
    model = agent.get("model") if isinstance(agent, Mapping) else None
    name = model.get("name") if isinstance(model, Mapping) else None
    return str(name) if isinstance(name, str) and name else None


_FIELDS = KeyFields("swe-agent", "a role and a message_type", lambda r: "role" in r)


def read_swe_agent(stream: IO[str], *, path: str = "", skip_bad: bool = False) -> Transcript:
    """Read a SWE-agent ``.traj`` file (its ``history``, else its ``trajectory`` steps).

    The task is a user turn; demonstrations are ``CustomMessage(custom_type=
    "demonstration")`` and observations tool results (or ``custom_type="observation"``
    notes), so neither is ever read as something the user asked.

    Raises:
        ReadError: not JSON, not SWE-agent, an empty trajectory, a ``replay_config`` too
            deeply nested to read, or a bad history item (skipped with ``skip_bad``).

    """
    doc = load_json(stream, path, "swe-agent")
    if not is_swe_agent(doc):
        raise mismatch(
            path, "swe-agent", "it has no 'history' or 'trajectory' list of SWE-agent steps"
        )
    history = list(doc["history"]) if isinstance(doc.get("history"), list) else []
    steps = list(doc["trajectory"]) if isinstance(doc.get("trajectory"), list) else []
    talk = [h for h in history if not (isinstance(h, Mapping) and h.get("role") == "system")]
    if not history and not steps:
        raise ReadError(f"{path or '<input>'}: the trajectory is empty", path=path)
    model = _model_of(doc, path)
    tally = FieldTally(_FIELDS, path)
    for item in history:
        tally.add(item)
    tally.finish("record")
    # A history of system prompts only (trimmed files) says less than the steps do.
    items = _plan(history) if talk or not steps else [*_plan(history), *_from_steps(steps)]
    inner = convert_records(items, path=path, skip_bad=skip_bad, fmt="swe-agent", convert=_convert)
    messages = tuple(
        AssistantMessage(
            m.content, usage=m.usage, model=model, stop_reason=m.stop_reason, timestamp=m.timestamp
        )
        if model and isinstance(m, AssistantMessage) and not m.model
        else m
        for m in inner.messages
    )
    meta: dict[str, Any] = {}
    info = doc.get("info")
    if isinstance(info, Mapping):
        for key in ("exit_status", "model_stats"):
            if key in info:
                meta[key] = info[key]
    if model:
        meta["model"] = model
    if isinstance(doc.get("environment"), str):
        meta["environment"] = doc["environment"]
    return Transcript(
        messages=messages,
        system=inner.system,
        format="swe-agent",
        path=path,
        skipped=inner.skipped,
        meta=meta,
    )


_MESSAGE_TYPES = {
    "system": "system_prompt",
    "user": "observation",
    "assistant": "action",
    "tool": "observation",
}


def _message_type(msg: AgentMessage | None, role: str) -> dict[str, Any]:
    """The SWE-agent labels of one written item: what the reader needs to tell it apart."""
    if isinstance(msg, UserMessage | DigestMessage):
        return {"message_type": "user"}
    if isinstance(msg, CustomMessage) and msg.custom_type == "demonstration":
        return {"message_type": "demonstration", "is_demo": True}
    return {"message_type": _MESSAGE_TYPES[role]}


def write_swe_agent(
    messages: Iterable[AgentMessage], stream: IO[str], *, system: Iterable[str] = ()
) -> None:
    """Write core messages as a SWE-agent ``.traj`` object with a ``history`` list.

    Only the history is written (the run's info and replay config belong to SWE-agent);
    tool results name their call in ``tool_call_ids``, as SWE-agent's do. User turns are
    ``message_type: user``, demonstrations ``is_demo``, and other kinds (observations,
    shell runs, notes) observations, so :func:`read_swe_agent` reads each back as what it was.
    """
    prompts, messages = list(system), list(messages)
    history: list[dict[str, Any]] = []
    records = to_openai(messages, prompts, digests=True)
    # to_openai writes one record per system prompt, then one per message.
    owners: list[AgentMessage | None] = [None] * len(prompts)
    for record, msg in zip(records, [*owners, *messages], strict=True):
        item = {**record, "agent": "main", **_message_type(msg, record["role"])}
        if "tool_call_id" in item:
            item["tool_call_ids"] = [item.pop("tool_call_id")]
            item.pop("name", None)
        history.append(item)
    json.dump(
        {"history": history, "trajectory": [], "info": {}}, stream, ensure_ascii=False, indent=1
    )
    stream.write("\n")
