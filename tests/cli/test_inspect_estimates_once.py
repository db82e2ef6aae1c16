"""``inspect`` estimates each message once, however many reports it draws from them.

The gate's replay, the calibration and the category report all need per-message
estimates; each used to make its own pass, so a 100k-message transcript was estimated
three times over. Counted, not timed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from window_budget.budget import _cache
from window_budget.cli import main


def test_each_message_is_estimated_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n = 600
    messages = []
    for i in range(n // 2):
        messages.append({"role": "user", "content": f"question {i} " + "word " * 40})
        messages.append({"role": "assistant", "content": f"answer {i} " + "text " * 40})
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"messages": messages}), encoding="utf-8")

    calls = 0
    real = _cache.estimate_message_tokens

    def counting(message: object, counter: object = None) -> int:
        nonlocal calls
        calls += 1
        return real(message, counter)  # type: ignore[arg-type]

    # Every module holding the function by name, so no pass can go around the count.
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("window_budget") and (
            getattr(module, "estimate_message_tokens", None) is real
        ):
            monkeypatch.setattr(module, "estimate_message_tokens", counting)
    _cache.ESTIMATES.clear()
    _cache._BY_ID.clear()
    result = CliRunner().invoke(main, ["inspect", str(path), "--window", "8000"])
    assert result.exit_code == 0, result.output
    assert "first fires at message" in result.output  # the replay ran
    assert calls == n
