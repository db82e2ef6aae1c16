"""tau-bench result files: a JSON list of runs, each with a ``traj`` of Chat Completions messages.

The shape is tau-bench's ``EnvRunResult`` (sierra-research/tau-bench, ``tau_bench/types.py``):
``[{task_id, reward, info, traj: [{role, content, tool_calls, tool_call_id, name}], trial}]``.
One file holds many runs (every task, every trial); a transcript is one of them, picked by
``run`` (0-based, the first by default). The run's ``task_id``, ``trial`` and ``reward`` and
how many runs the file holds go in ``Transcript.meta``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import IO, Any

from window_budget.messages import AgentMessage
from window_budget.readers._base import (
    PICK_RUN,
    ReadError,
    Transcript,
    load_json,
    mismatch,
)
from window_budget.readers._records import (
    convert_records,
)
from window_budget.readers.openai import message_from_openai, openai_fields, to_openai

__all__ = ["is_tau_bench", "read_tau_bench", "write_tau_bench"]


def is_tau_bench(doc: Any) -> bool:
    """True for a JSON list of runs that each carry a ``traj`` list."""
    return (
        isinstance(doc, list)
        and bool(doc)
        and isinstance(doc[0], Mapping)
        and isinstance(doc[0].get("traj"), list)
    )


def read_tau_bench(
    stream: IO[str], *, path: str = "", skip_bad: bool = False, run: int = 0
) -> Transcript:
    """Read run number ``run`` (0-based) of a tau-bench result file.

    Raises:
        ReadError: the file is not a list of runs, or has no run ``run``.

    """
    doc = load_json(stream, path, "tau-bench")
    where = path or "<input>"
    if not is_tau_bench(doc):
        raise mismatch(path, "tau-bench", "it is not a JSON list of runs with a 'traj' list")
    if not 0 <= run < len(doc):
        raise ReadError(
            f"{where}: there is no run {run}; the file holds {len(doc):,} runs, "
            f"numbered 0 to {len(doc) - 1:,} — pick one with {PICK_RUN}",
            path=path,
        )
    chosen = doc[run]
    if not isinstance(chosen, Mapping) or not isinstance(chosen.get("traj"), list):
        raise ReadError(
            f"{where}: run {run} has no 'traj' list of messages — fix the file", path=path
        )
    inner = convert_records(
        list(chosen["traj"]),
        path=path,
        skip_bad=skip_bad,
        fmt="tau-bench",
        convert=message_from_openai,
        fields=openai_fields("tau-bench"),
    )
    meta: dict[str, Any] = {"run": run, "runs": len(doc)}
    for key in ("task_id", "trial", "reward"):
        if isinstance(chosen.get(key), int | float | str) and not isinstance(chosen[key], bool):
            meta[key] = chosen[key]
    return Transcript(
        messages=inner.messages,
        system=inner.system,
        format="tau-bench",
        path=path,
        skipped=inner.skipped,
        meta=meta,
    )


def write_tau_bench(
    messages: Iterable[AgentMessage], stream: IO[str], *, system: Iterable[str] = ()
) -> None:
    """Write core messages as a one-run tau-bench result list (``[{"traj": [...]}]``).

    Only the trajectory is written: the task, trial and reward belong to the benchmark.
    """
    json.dump(
        [{"info": {}, "traj": to_openai(messages, system, digests=True)}],
        stream,
        ensure_ascii=False,
        indent=1,
    )
    stream.write("\n")
