"""inspect shows the model, its window from models.dev, the calibration and the provider figures."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from window_budget import AssistantMessage, ToolResultMessage, Usage, UserMessage
from window_budget.budget import estimate_tokens
from window_budget.cli import main
from window_budget.readers import write_transcript

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"


def _session(
    path: Path, model: str, *, calls: int = 6, ratio: float = 1.2, overhead: int = 2500
) -> Path:
    msgs: list = [UserMessage("run the tests and fix what fails")]
    for i in range(calls):
        prompt = overhead + round(ratio * estimate_tokens(msgs))
        msgs.append(AssistantMessage(f"step {i}", usage=Usage(prompt, 20), model=model))
        msgs.append(ToolResultMessage(f"t{i}", "bash", f"test_{i} ... ok\n" * 60))
    write_transcript(msgs, path, format="json")
    return path


def _inspect(*args: str | Path) -> dict:
    result = CliRunner().invoke(main, ["inspect", *map(str, args), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)[0]


def test_the_window_comes_from_the_models_dev_data() -> None:
    info = _inspect(FIXTURES / "claude_code_session.jsonl")
    assert info["model"].startswith("claude-sonnet-4-5")
    assert info["gate"]["window"] == 200_000
    assert info["window_source"] == "models.dev"
    assert info["model_data"]["provider"] == "anthropic"


def test_window_overrides_the_table() -> None:
    info = _inspect(FIXTURES / "claude_code_session.jsonl", "--window", "50000")
    assert info["gate"]["window"] == 50_000
    assert info["window_source"] == "--window"


def test_an_unknown_model_is_assumed_with_a_note(tmp_path: Path) -> None:
    path = _session(tmp_path / "local.json", "my-local-llama")
    result = CliRunner().invoke(main, ["inspect", str(path)])
    assert result.exit_code == 0, result.output
    assert (
        "my-local-llama, window 128,000 (assumed: model not in the models.dev data; "
        "--window N sets it)" in result.stdout
    )
    info = _inspect(path)
    assert (info["gate"]["window"], info["model_data"]) == (128_000, None)
    assert info["window_source"] == "assumed: model not in the models.dev data"
    given = _inspect(path, "--window", "8192")
    assert (given["gate"]["window"], given["window_source"]) == (8192, "--window")


def test_a_directory_reports_every_file_whatever_its_model(tmp_path: Path) -> None:
    _session(tmp_path / "local.json", "my-local-llama")
    _session(tmp_path / "claude.json", "claude-haiku-4-5-20251001")
    result = CliRunner().invoke(main, ["inspect", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    entries = json.loads(result.stdout)
    assert sorted(e["gate"]["window"] for e in entries) == [128_000, 200_000]


def test_calibration_and_provider_figures_are_shown(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.json", "claude-sonnet-4-5-20250929")
    info = _inspect(path)
    cal = info["calibration"]
    assert abs(cal["ratio"] - 1.2) < 0.03
    assert abs(cal["overhead_tokens"] - 2500) < 100
    assert cal["samples"] == 5
    assert info["reported_usage"]["context_tokens"] > 0
    text = CliRunner().invoke(main, ["inspect", str(path)]).stdout
    assert "window 200,000 (models.dev: anthropic claude-sonnet-4-5-20250929)" in text
    assert "provider counts x1.2" in text


def test_no_calibration_without_enough_usage() -> None:
    info = _inspect(FIXTURES / "openai_chat.json")
    assert info["calibration"] is None
    assert info["window_source"] == "assumed: no model named"


def test_a_placeholder_model_on_a_failed_reply_does_not_hide_the_session_model(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.json"
    msgs = [
        UserMessage("hi"),
        AssistantMessage("hello", usage=Usage(900, 5), model="claude-opus-4-1-20250805"),
        UserMessage("again"),
        AssistantMessage("API Error: overloaded", usage=Usage(0, 0), model="<synthetic>"),
    ]
    write_transcript(msgs, path, format="json")
    info = _inspect(path)
    assert info["gate"]["window"] == 200_000
    assert info["window_source"] == "models.dev"
    assert info["anchored"]
