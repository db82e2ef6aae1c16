"""inspect on every model users run, and what the session cost: public shapes, hand-computed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from window_budget import AssistantMessage, ToolResultMessage, Usage, UserMessage
from window_budget.budget import ModelPrices, estimate_tokens, prices_for
from window_budget.cli import main
from window_budget.messages import CompactionSummaryMessage
from window_budget.readers import write_transcript

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"


def _run(*args: str | Path) -> tuple[dict, str]:
    runner = CliRunner()
    as_json = runner.invoke(main, ["inspect", *map(str, args), "--json"])
    assert as_json.exit_code == 0, as_json.output
    text = runner.invoke(main, ["inspect", *map(str, args)])
    assert text.exit_code == 0, text.output
    return json.loads(as_json.stdout)[0], text.stdout


def _renamed(tmp_path: Path, fixture: str, old: str, new: str) -> Path:
    path = tmp_path / fixture
    source = (FIXTURES / fixture).read_text(encoding="utf-8")
    assert old in source
    path.write_text(source.replace(old, new), encoding="utf-8")
    return path


def test_an_openhands_run_of_llama_4_maverick(tmp_path: Path) -> None:
    # A public OpenHands run of meta-llama/llama-4-maverick (served through OpenRouter)
    # stopped with "the context window … is not known" before the models.dev data.
    path = _renamed(
        tmp_path,
        "openhands_output.jsonl",
        "claude-sonnet-4-5-20250929",
        "meta-llama/llama-4-maverick",
    )
    info, text = _run(path)
    assert info["model"] == "meta-llama/llama-4-maverick"
    assert info["gate"]["window"] == 1_048_576
    assert info["model_data"]["provider"] == "openrouter"
    assert "window 1,048,576 (models.dev: openrouter meta-llama/llama-4-maverick)" in text
    # Its calls read cached tokens: priced when the data lists a cache-read price for the
    # model, "unknown" when it does not (OpenRouter lists none for it today).
    prices = prices_for("meta-llama/llama-4-maverick")
    if prices.cache_read is None:
        assert info["cost"]["session"]["total_usd"] is None
        assert "no cache-read price for model 'meta-llama/llama-4-maverick'" in text
    else:
        assert info["cost"]["session"]["total_usd"] > 0


def test_a_swe_agent_demonstration_whose_model_is_replay(tmp_path: Path) -> None:
    path = _renamed(tmp_path, "swe_agent_run.traj", "claude-sonnet-4-20250514", "replay")
    info, text = _run(path)
    assert info["model"] == "replay"
    assert info["gate"]["window"] == 128_000
    assert info["window_source"] == "assumed: model not in the models.dev data"
    assert "replay, window 128,000 (assumed: model not in the models.dev data" in text
    assert "session cost      $0 (no call in the file reports usage)" in text
    given, _ = _run(path, "--window", "32000")
    assert given["gate"]["window"] == 32_000


def test_compact_and_plot_say_the_window_was_assumed(tmp_path: Path) -> None:
    path = _renamed(tmp_path, "swe_agent_run.traj", "claude-sonnet-4-20250514", "replay")
    result = CliRunner().invoke(main, ["compact", str(path), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "model not in the models.dev data; assuming a 128,000-token window" in result.stderr


def test_the_session_cost_by_hand(tmp_path: Path) -> None:
    # claude-sonnet-4-5 at models.dev's prices ($3 in, $15 out, $0.30 cache read, $3.75
    # cache write per million), two calls:
    #   1,000 x 3 + 10,000 x 3.75 + 400 x 15                 = 46,500 -> $0.0465
    #   500 x 3 + 10,000 x 0.30 + 2,000 x 3.75 + 300 x 15     = 16,500 -> $0.0165
    assert prices_for("claude-sonnet-4-5-20250929") == ModelPrices(
        input=3.0, output=15.0, cache_read=0.3, cache_write=3.75
    )
    model = "claude-sonnet-4-5-20250929"
    msgs = [
        UserMessage("port the parser"),
        AssistantMessage("a", usage=Usage(1_000, 400, 0, 10_000), model=model),
        ToolResultMessage("t1", "bash", "ok"),
        AssistantMessage("b", usage=Usage(500, 300, 10_000, 2_000), model=model),
    ]
    path = tmp_path / "s.json"
    write_transcript(msgs, path, format="json")
    info, text = _run(path)
    session = info["cost"]["session"]
    assert session["total_usd"] == pytest.approx(0.063)
    assert (session["input_usd"], session["output_usd"]) == (0.0045, 0.0105)
    assert (session["cache_read_usd"], session["cache_write_usd"]) == (0.003, 0.045)
    assert (
        "session cost      $0.0630 over 2 calls (input $0.0045, cache read $0.0030, "
        "cache write $0.0450, output $0.0105)" in text
    )
    assert info["cost"]["compaction_saved"] is None
    assert "compaction saves  nothing to measure: no compaction in the file" in text


def test_an_unknown_model_costs_unknown(tmp_path: Path) -> None:
    msgs = [UserMessage("hi"), AssistantMessage("x", usage=Usage(900, 5), model="my-llama")]
    path = tmp_path / "s.json"
    write_transcript(msgs, path, format="json")
    info, text = _run(path)
    assert info["cost"]["session"]["total_usd"] is None
    assert info["cost"]["session"]["missing"] == ["no prices for model 'my-llama'"]
    assert "session cost      unknown (no prices for model 'my-llama': 1 call unpriced)" in text


def test_what_compaction_saved_in_a_claude_code_session(tmp_path: Path) -> None:
    from window_budget.readers import read_transcript

    transcript = read_transcript(FIXTURES / "claude_code_session.jsonl")
    info, text = _run(FIXTURES / "claude_code_session.jsonl")
    saved = info["cost"]["compaction_saved"]
    archived = [m for m in transcript.archive if not isinstance(m, CompactionSummaryMessage)]
    digests = [m for m in transcript.messages if isinstance(m, CompactionSummaryMessage)]
    folded = estimate_tokens(archived) - estimate_tokens(digests)
    assert saved["folded_tokens"] == folded
    calls = [m for m in transcript.messages if isinstance(m, AssistantMessage) and m.usage]
    assert saved["calls_since"] == len(calls)
    # claude-sonnet-4-5: $3 a million uncached, $0.30 cached.
    assert saved["per_call_uncached_usd"] == pytest.approx(folded * 3 / 1e6, abs=1e-6)
    assert saved["per_call_cached_usd"] == pytest.approx(folded * 0.3 / 1e6, abs=1e-6)
    assert f"compaction saves  {folded:,} tokens a call" in text
    whole, whole_text = _run(FIXTURES / "claude_code_session.jsonl", "--whole-file")
    assert whole["cost"]["compaction_saved"] is None
    assert "nothing to measure: read inline (--whole-file)" in whole_text
    # The whole file and the live view price the same calls.
    assert whole["cost"]["session"] == info["cost"]["session"]


def test_a_hostile_model_name_reaches_the_terminal_escaped(tmp_path: Path) -> None:
    model = "gpt\x1b]0;pwned\x07\n[FORGED] " + "x" * 400
    msgs = [UserMessage("hi"), AssistantMessage("x", usage=Usage(900, 5), model=model)]
    path = tmp_path / "s.json"
    write_transcript(msgs, path, format="json")
    info, text = _run(path)
    assert info["model"] == model  # --json keeps the data exact
    assert "\x1b" not in text
    assert "\x07" not in text
    assert "\n[FORGED]" not in text
    assert info["gate"]["window"] == 128_000
