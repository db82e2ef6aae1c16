"""The formats by name: each one's reader and writer."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import IO, Any

from window_budget.messages import AgentMessage
from window_budget.readers._base import (
    Transcript,
)
from window_budget.readers.anthropic import read_anthropic, write_anthropic
from window_budget.readers.claude_code import read_claude_code, write_claude_code
from window_budget.readers.langchain_dump import read_langchain, write_langchain
from window_budget.readers.llama_index_dump import read_llama_index, write_llama_index
from window_budget.readers.native import read_native, write_native
from window_budget.readers.openai import read_openai, write_openai
from window_budget.readers.openhands import (
    read_openhands,
    write_openhands,
)
from window_budget.readers.pi import read_pi, write_pi
from window_budget.readers.swe_agent import read_swe_agent, write_swe_agent
from window_budget.readers.tau_bench import read_tau_bench, write_tau_bench

__all__ = ["BOUNDARY_FORMATS", "FORMATS", "RUN_FORMATS", "TRANSCRIPT_SUFFIXES", "Reader", "Writer"]

Reader = Callable[..., Transcript]
Writer = Callable[..., None]


def _read_openai_jsonl(stream: IO[str], **kw: Any) -> Transcript:
    return read_openai(stream, jsonl=True, **kw)


def _write_openai_jsonl(messages: Iterable[AgentMessage], stream: IO[str], **kw: Any) -> None:
    write_openai(messages, stream, jsonl=True, **kw)


FORMATS: Mapping[str, tuple[Reader, Writer]] = {
    "openai": (read_openai, write_openai),
    "openai-jsonl": (_read_openai_jsonl, _write_openai_jsonl),
    "anthropic": (read_anthropic, write_anthropic),
    "claude-code": (read_claude_code, write_claude_code),
    "pi": (read_pi, write_pi),
    "langchain": (read_langchain, write_langchain),
    "llama-index": (read_llama_index, write_llama_index),
    "openhands": (read_openhands, write_openhands),
    "tau-bench": (read_tau_bench, write_tau_bench),
    "swe-agent": (read_swe_agent, write_swe_agent),
    "json": (read_native, write_native),
}
"""Every format by name: its reader and its writer."""

TRANSCRIPT_SUFFIXES = (".json", ".jsonl", ".traj")
"""File endings a directory scan picks up."""


BOUNDARY_FORMATS = frozenset({"claude-code", "pi", "openhands"})
"""Formats that record compactions: their readers return the live context after the last one."""
RUN_FORMATS = frozenset({"tau-bench", "openhands"})
"""Formats whose files hold many runs: ``run=`` picks one (the first by default)."""
