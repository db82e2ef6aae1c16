"""What the LangChain and LlamaIndex runs share: the scripted summarizer and their evidence."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from injection.checks import Evidence
from injection.evidence import inspect, recall_all
from window_budget import AgentMessage
from window_budget.digest import is_digest
from window_budget.memory import InProcessMemoryStore
from window_budget.messages import message_text, message_to_dict
from window_budget.pipeline.summarize import FactLedger, ledger_of, local_ledger
from window_budget.pipeline.summarize.facts.serial import ledger_to_json

SUMMARY_REPLY = "# Objective\nPort the loader.\n# Status\nok"
FILLER_CHARS = 900


class Summaries:
    """The summary calls of one run: every prompt kept; odd calls fail (network-free digest)."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def answer(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if len(self.prompts) % 2 == 1:
            raise RuntimeError("summarizer down")
        return SUMMARY_REPLY


def store_of(archived: Sequence[AgentMessage], ledger: FactLedger | None) -> InProcessMemoryStore:
    """A memory store holding what an adapter archived and its last digest's ledger (the
    adapters keep no store of their own, so recall is measured over this one)."""
    store = InProcessMemoryStore()
    store.archive("bench", 0, [message_to_dict(m) for m in archived if not is_digest(m)])
    if ledger is not None:
        store.save_ledger("bench", ledger_to_json(ledger), seal="")
    return store


def adapter_evidence(
    digests: Sequence[AgentMessage],
    archived: Sequence[AgentMessage],
    prompts: Sequence[str],
    dump: Path,
) -> Evidence:
    ev = Evidence(prompts=list(prompts))
    for digest in digests:
        ev.digests.append(message_text(digest))
        ev.ledgers.append(ledger_of(digest))
    # The bounded record holds few facts; the facts the core extracts from what the adapter
    # converted and folded show every fact a compaction saw, with its provenance.
    ev.ledgers.append(local_ledger([m for m in archived if not is_digest(m)]))
    ev.cli.append(inspect(dump))
    ev.recalls = recall_all(store_of(archived, ev.ledgers[-1] if ev.ledgers else None), "bench")
    return ev
