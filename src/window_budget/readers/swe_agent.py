"""SWE-agent trajectory files (``<instance>.traj``): one JSON object per run.

The shape is SWE-agent's (SWE-agent/SWE-agent, ``sweagent/types.py`` and the agent's
``.traj`` writer): ``{"history": [...], "trajectory": [...], "info": {...},
"replay_config": "...", "environment": "..."}``. ``history`` is what the model was sent:
``{role: system|user|assistant|tool, content (text or text parts), message_type,
thought?, action?, tool_calls? (Chat Completions shape), tool_call_ids? (on tool
results)}``; demonstrations (``is_demo``) were sent too and are kept. A file without
``history``, or with only the system prompt in it (older or trimmed ones), is read from
``trajectory`` steps: each step's ``response`` as the model's reply and its
``observation`` as what came back.

SWE-agent records no per-call usage (only run totals in ``info.model_stats``, kept in
``meta``), so these transcripts are estimated, never anchored. The model is the one the
run's ``replay_config`` names.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import IO, Any

from window_budget.messages import AgentMessage, AssistantMessage
from window_budget.readers._base import (
    DIGEST_KEY,
    LEGACY_DIGEST_KEY,
    KeyFields,
    ReadError,
    Transcript,
    convert_records,
    load_json,
    mismatch,
    tag,
    text_of,
)
from window_budget.readers.openai import message_from_openai, to_openai

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


def _as_openai(item: Mapping[str, Any]) -> dict[str, Any]:
    """One history item as a Chat Completions message (tool results name their call)."""
    record: dict[str, Any] = {"role": item["role"], "content": item.get("content")}
    for key in (DIGEST_KEY, LEGACY_DIGEST_KEY):
        if key in item:
            record[key] = item[key]
    if item.get("tool_calls"):
        record["tool_calls"] = item["tool_calls"]
    ids = item.get("tool_call_ids")
    if item.get("role") == "tool" and isinstance(ids, list) and ids:
        record["tool_call_id"] = ids[0]
    return record


def _convert(
    raw: Mapping[str, Any], names: dict[str, str], system: list[str]
) -> AgentMessage | None:
    if tag(raw.get("role")) not in _ROLES:
        raise ValueError(
            f"unknown role {raw.get('role')!r} (expected system, user, assistant or tool)"
        )
    return message_from_openai(_as_openai(raw), names, system)


def _from_steps(steps: list[Any]) -> list[dict[str, Any]]:
    """History items rebuilt from trajectory steps (reply, then what the tools returned)."""
    items: list[dict[str, Any]] = []
    for step in steps:
        if not isinstance(step, Mapping):
            items.append({"role": "step", "content": step})  # reported as a bad record
            continue
        reply = step.get("response") or step.get("thought") or ""
        items.append({"role": "assistant", "content": text_of(reply)})
        if step.get("observation"):
            items.append({"role": "user", "content": text_of(step["observation"])})
    return items


def _model_of(doc: Mapping[str, Any]) -> str | None:
    config = doc.get("replay_config")
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except ValueError:
            return None
    agent = config.get("agent") if isinstance(config, Mapping) else None
    model = agent.get("model") if isinstance(agent, Mapping) else None
    name = model.get("name") if isinstance(model, Mapping) else None
    return str(name) if isinstance(name, str) and name else None


_FIELDS = KeyFields("swe-agent", "a role and a message_type", lambda r: "role" in r)


def read_swe_agent(stream: IO[str], *, path: str = "", skip_bad: bool = False) -> Transcript:
    """Read a SWE-agent ``.traj`` file (its ``history``, else its ``trajectory`` steps)."""
    doc = load_json(stream, path, "swe-agent")
    if not is_swe_agent(doc):
        raise mismatch(
            path, "swe-agent", "it has no 'history' or 'trajectory' list of SWE-agent steps"
        )
    history = doc.get("history") if isinstance(doc.get("history"), list) else []
    steps = doc.get("trajectory") if isinstance(doc.get("trajectory"), list) else []
    talk = [h for h in history if not (isinstance(h, Mapping) and h.get("role") == "system")]
    # A history of system prompts only (trimmed files) says less than the steps do.
    items = list(history) if talk or not steps else [*history, *_from_steps(list(steps))]
    if not items:
        raise ReadError(f"{path or '<input>'}: the trajectory is empty", path=path)
    inner = convert_records(
        items, path=path, skip_bad=skip_bad, fmt="swe-agent", convert=_convert, fields=_FIELDS
    )
    model = _model_of(doc)
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


def write_swe_agent(
    messages: Iterable[AgentMessage], stream: IO[str], *, system: Iterable[str] = ()
) -> None:
    """Write core messages as a SWE-agent ``.traj`` object with a ``history`` list.

    Only the history is written (the run's info and replay config belong to SWE-agent);
    tool results name their call in ``tool_call_ids``, as SWE-agent's do.
    """
    history: list[dict[str, Any]] = []
    for record in to_openai(messages, system, digests=True):
        item = {**record, "agent": "main", "message_type": _MESSAGE_TYPES[record["role"]]}
        if "tool_call_id" in item:
            item["tool_call_ids"] = [item.pop("tool_call_id")]
            item.pop("name", None)
        history.append(item)
    json.dump(
        {"history": history, "trajectory": [], "info": {}}, stream, ensure_ascii=False, indent=1
    )
    stream.write("\n")
