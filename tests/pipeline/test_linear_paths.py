"""The paths that used to be quadratic, checked by counting work (never by timing)."""

from __future__ import annotations

import builtins

import pytest

from window_budget import (
    BudgetPolicy,
    Model,
    UserMessage,
)
from window_budget.budget import TokenLedger
from window_budget.budget import _ledger as ledger_module
from window_budget.pipeline import WindowCondenser
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
