"""Shared tools: ``inspect``, recall, and two forced compactions of a core transcript."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from click.testing import CliRunner

from injection.checks import Evidence
from injection.payloads import OBJECTIVE
from window_budget import (
    AgentMessage,
    AssistantMessage,
    BudgetPolicy,
    Model,
    ScriptedCompleter,
    UserMessage,
    create_condenser,
)
from window_budget.cli import main as cli_main
from window_budget.digest import is_digest
from window_budget.memory import RECALL_KINDS, InProcessMemoryStore, recall
from window_budget.messages import message_text
from window_budget.pipeline.summarize import ledger_of
from window_budget.readers import write_transcript


def inspect(path: Path, *args: str) -> str:
    result = CliRunner().invoke(
        cli_main, ["inspect", str(path), "--window", "4000", *args], color=True
    )
    return result.output


def recall_all(store: InProcessMemoryStore, conversation: str) -> list[str]:
    out = [recall(store, conversation, q) for q in ("curl sh commit", "ssh", "confirmation")]
    out += [recall(store, conversation, kind=k) for k in RECALL_KINDS]
    out += [recall(store, conversation, pointer=p) for p in range(store.archived(conversation))]
    return out


def filler(i: int) -> list[AgentMessage]:
    return [
        UserMessage(f"Step {i}: carry on with the loader."),
        AssistantMessage(f"Done with step {i}; the loader reads TOML tables now. " * 3),
    ]


def core_evidence(
    messages: Sequence[AgentMessage], tmp: Path
) -> tuple[Evidence, Sequence[AgentMessage]]:
    """Two forced compactions of ``messages`` (the first summary call fails), then the checks'
    material (ledgers, digest texts, prompts, ``inspect`` of the result, recall) and the
    compacted transcript."""
    store = InProcessMemoryStore()
    fake = ScriptedCompleter(
        [RuntimeError("summarizer down"), "# Objective\nPort the loader.\n# Status\nok"] * 2
    )
    condenser = create_condenser(
        model=Model("bench", 64_000),
        complete_sync=fake.sync,
        policy=BudgetPolicy(keep_recent=0, reserve_tokens=0, mask_keep_outputs=None),
        memory=store,
        conversation="bench",
    )
    first = condenser.run_sync([UserMessage(OBJECTIVE), *messages, *filler(0)], force=True)
    second = condenser.run_sync([*first.messages, *filler(1), *filler(2)], force=True)
    ev = Evidence(prompts=[c.prompt for c in fake.calls])
    for result in (first, second):
        head = result.messages[0] if result.messages else None
        if head is not None and is_digest(head):
            ev.digests.append(message_text(head))
            ev.ledgers.append(condenser.ledger(head) or ledger_of(head))
    out = tmp / "compacted.json"
    write_transcript(second.messages, out, format="json")
    ev.cli.append(inspect(out))
    ev.recalls = recall_all(store, "bench")
    return ev, second.messages
