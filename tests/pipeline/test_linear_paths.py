"""The paths that used to be quadratic, checked by counting work (never by timing)."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any

import pytest

from window_budget import (
    AssistantMessage,
    BudgetPolicy,
    Model,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
)
from window_budget.budget import TokenLedger
from window_budget.budget import _ledger as ledger_module
from window_budget.pipeline import WindowCondenser
from window_budget.pipeline.summarize import build_local_digest
from window_budget.tools.timeline import simulate


def test_ledger_recheck_of_an_appended_list_costs_the_new_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compared = [0]
    real_list = builtins.list

    def counting_list(items: object = ()) -> list[object]:
        out = real_list(items)  # type: ignore[call-overload]
        compared[0] += len(out)
        return out

    monkeypatch.setattr(ledger_module, "list", counting_list, raising=False)
    ledger = TokenLedger()
    history: list[object] = []
    for i in range(2_000):
        history.append(UserMessage(f"m{i}"))
        ledger.total(history)  # type: ignore[arg-type]
    assert ledger.estimated == 2_000
    assert compared[0] == 0  # no copy of the known prefix, ever
    # A new list with the same objects is still recognised (by a C-speed comparison).
    assert ledger.total(list(history)) == ledger.total(history)  # type: ignore[arg-type]
    assert ledger.estimated == 2_000


@pytest.mark.slow
def test_replay_runs_the_condenser_only_where_the_gate_fires(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = [0]
    real = WindowCondenser.run_sync

    def counting(self: WindowCondenser, *args: object, **kwargs: object) -> object:
        calls[0] += 1
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(WindowCondenser, "run_sync", counting)
    messages = [UserMessage(f"q{i} " + "x" * 400) for i in range(3_000)]
    timeline = simulate(messages, Model("m", 20_000), BudgetPolicy(keep_recent=3_000))
    assert timeline.firings
    assert calls[0] == len(timeline.firings)  # not one call per message
    assert len(timeline.context) == len(messages)
    assert max(timeline.context) <= timeline.window


class _Walked(list[object]):
    """A transcript that counts the messages read from it, by iteration or by index."""

    walked = 0

    def __iter__(self) -> Iterator[object]:
        for message in super().__iter__():
            self.walked += 1
            yield message

    def __getitem__(self, index: Any) -> Any:
        got = super().__getitem__(index)
        self.walked += len(got) if isinstance(index, slice) else 1
        return got


def _agent_head(turns: int) -> list[object]:
    """``turns`` turns of an agent at work: five messages, ~500 tokens of tool output each."""
    noise = "FAILED tests/test_db.py::test_migrate\n" + "E   assert ...\n" * 30
    msgs: list[object] = []
    for i in range(turns):
        msgs += [
            UserMessage(f"Step {i}: keep going, never skip tests."),
            AssistantMessage((ToolCallBlock(f"r{i}", "read_file", {"path": f"src/p{i % 40}.py"}),)),
            ToolResultMessage(f"r{i}", "read_file", f"def f_{i}(x):\n    return x\n" * 60),
            AssistantMessage((ToolCallBlock(f"t{i}", "bash", {"command": f"pytest t{i % 40}"}),)),
            ToolResultMessage(f"t{i}", "bash", noise, is_error=i % 7 == 0),
        ]
    return msgs


def test_the_local_digest_of_a_200k_token_head_reads_each_message_a_few_times() -> None:
    # Counted, not timed (bench/bench_core.py times it): reading the head again for every
    # message (a tool-group index rebuilt per turn, say) would read it ~n times per message.
    head = _Walked(_agent_head(400))  # 2,000 messages, ~200k tokens
    body = build_local_digest(head)  # type: ignore[arg-type]
    assert "never skip tests" in body.lower()
    walked, n = head.walked, len(head)
    assert 0 < walked <= 6 * n, f"{walked:,} messages read for {n:,}"
