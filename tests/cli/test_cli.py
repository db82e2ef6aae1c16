"""The command line through click's CliRunner: exit codes, --json shape, messages, the PNG."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from window_budget.cli import main
from window_budget.digest import is_digest
from window_budget.pipeline import is_masked
from window_budget.readers import read_transcript

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
BAD = Path(__file__).parents[1] / "fixtures" / "bad"
LONG = Path(__file__).parents[2] / "examples" / "long_session.jsonl"
GOOD = sorted(p for p in FIXTURES.iterdir() if p.suffix in (".json", ".jsonl"))
SMALL = ["--window", "4000", "--keep-recent", "300"]


def run(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize("command", ["inspect", "compact", "plot", "demo", None])
def test_help_on_every_command(command: str | None) -> None:
    result = run(*([command] if command else []), "--help")
    assert result.exit_code == 0
    assert "Usage:" in result.output


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_inspect_every_format(path: Path) -> None:
    result = run("inspect", path, *SMALL)
    assert result.exit_code == 0, result.output
    assert "by role" in result.output
    assert "gate" in result.output


def test_inspect_json_shape() -> None:
    result = run(
        "inspect",
        FIXTURES / "claude_code_session.jsonl",
        LONG,
        "--json",
        "--window",
        "32768",
        "--no-mask",
    )
    assert result.exit_code == 0
    reports = json.loads(result.output)
    assert isinstance(reports, list)
    assert len(reports) == 2
    small, long = reports
    assert set(small) >= {
        "file",
        "format",
        "messages",
        "estimated_tokens",
        "by_role",
        "by_category",
        "reported_usage",
        "context_tokens",
        "anchored",
        "gate",
        "cut",
        "system_tokens",
        "skipped",
    }
    assert small["format"] == "claude-code"
    assert small["reported_usage"]["context_tokens"] == 4 + 5200 + 900 + 12
    assert small["gate"]["over_budget"] is False
    assert small["cut"]["index"] is None
    assert long["gate"]["over_budget"] is True
    assert long["gate"]["fires_at"] is not None
    cut = long["cut"]
    assert 0 < cut["index"] < long["messages"]
    assert cut["dropped_messages"] + cut["kept_messages"] == long["messages"]
    assert sum(e["tokens"] for e in long["by_role"].values()) == long["estimated_tokens"]


def test_bad_file_one_line_and_exit_1() -> None:
    result = run("inspect", BAD / "openai_bad_record.json")
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert "openai_bad_record.json, record 2: missing field 'role'" in lines[0]
    assert "Traceback" not in result.output


def test_skip_bad_reports_what_was_skipped() -> None:
    result = run("inspect", BAD / "claude_code_truncated.jsonl", "--skip-bad", "--json")
    assert result.exit_code == 0
    (report,) = json.loads(result.output)
    assert report["skipped"][0]["line"] == 4


def test_usage_error_exits_1() -> None:
    result = run("inspect", FIXTURES / "openai_chat.json", "--window", "nope")
    assert result.exit_code == 1
    missing = run("inspect", "no/such/file.json")
    assert missing.exit_code == 1
    assert run("compact").exit_code == 1


def test_bad_policy_is_one_line() -> None:
    result = run("inspect", FIXTURES / "openai_chat.json", "--trigger-ratio", "1.5")
    assert result.exit_code == 1


def test_wrong_format_override() -> None:
    result = run("inspect", FIXTURES / "claude_code_session.jsonl", "--from", "openai")
    assert result.exit_code == 1
    assert "does not read as openai: it holds one JSON value a line (JSONL)" in result.output
    assert "--from claude-code" in result.output


def test_directory_with_progress(tmp_path: Path) -> None:
    for p in GOOD[:3]:
        shutil.copy(p, tmp_path / p.name)
    result = CliRunner().invoke(main, ["inspect", str(tmp_path), "--json"])
    assert result.exit_code == 0
    assert len(json.loads(result.stdout)) == 3


def test_compact_writes_the_input_format(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    result = run("compact", LONG, "--window", "32768", "-o", out)
    assert result.exit_code == 0, result.output
    back = read_transcript(out)
    assert back.format == "claude-code"
    original = read_transcript(LONG)
    assert is_digest(back.messages[0])
    assert len(back.messages) < len(original.messages)
    # the kept tail is verbatim: same texts as the end of the original
    assert back.messages[-1] == original.messages[-1]


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_compact_every_format_as_json(path: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = run("compact", path, *SMALL, "--force", "--format", "json", "-o", out)
    assert result.exit_code == 0, result.output
    assert read_transcript(out).format == "json"


def test_compact_to_stdout_and_under_budget_is_unchanged() -> None:
    result = CliRunner().invoke(main, ["compact", str(FIXTURES / "openai_chat.jsonl")])
    assert result.exit_code == 0
    lines = [json.loads(x) for x in result.stdout.splitlines()]
    assert [x["role"] for x in lines] == ["user", "assistant", "tool", "assistant"]
    assert "under-budget" in result.stderr


def test_compact_dry_run_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "never.jsonl"
    result = run("compact", LONG, "--window", "32768", "--dry-run", "-o", out)
    assert result.exit_code == 0
    assert "would condense; cut before message #" in result.output
    assert not out.exists()


def test_compact_with_a_langchain_model(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    pytest.importorskip("langchain_window_budget")
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    import window_budget.cli.compact as compact_command

    # A digest that names the session's objective (one that names no fact is no digest).
    reply = "# Objective\nWe're porting the settings service from YAML to TOML.\nport the loader"
    fake = GenericFakeChatModel(messages=iter([AIMessage(reply)]))
    monkeypatch.setattr(compact_command, "_load_chat_model", lambda spec: fake)
    out = tmp_path / "out.json"
    result = run(
        "compact",
        LONG,
        "--window",
        "32768",
        "--model",
        "fake:model",
        "--to",
        "json",
        "--no-mask",
        "-o",
        out,
    )
    assert result.exit_code == 0, result.output
    digest = read_transcript(out).messages[0]
    assert "port the loader" in digest.content  # type: ignore[union-attr,operator]


def test_compact_unknown_provider_is_one_line() -> None:
    pytest.importorskip("langchain")
    result = run("compact", LONG, "--model", "no-such-provider:x")
    assert result.exit_code == 1
    assert "--model no-such-provider:x" in result.output


def test_compact_directory_needs_output_dir(tmp_path: Path) -> None:
    for p in GOOD[:2]:
        shutil.copy(p, tmp_path / p.name)
    assert run("compact", tmp_path).exit_code == 1
    out = tmp_path / "out"
    result = run("compact", tmp_path, "-o", out, "--force")
    assert result.exit_code == 0
    assert len(list(out.iterdir())) == 2


def test_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "growth.png"
    result = run("plot", LONG, "--window", "16000", "-o", out)
    assert result.exit_code == 0, result.output
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000
    assert "7 condensations over 193 messages" in result.output


def test_plot_without_matplotlib_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = run("plot", LONG, "-o", tmp_path / "x.png")
    assert result.exit_code == 1
    assert "window-budget[plot]" in result.output


def test_demo_still_works() -> None:
    result = run("demo", "--width", "60")
    assert result.exit_code == 0
    assert "digest" in result.output.lower()


def test_bare_command_prints_help() -> None:
    result = run()
    assert result.exit_code == 0
    assert "inspect" in result.output


def test_to_is_an_alias_of_format(tmp_path: Path) -> None:
    out = tmp_path / "o.json"
    result = run("compact", FIXTURES / "openai_run.json", "--to", "anthropic", "-o", out)
    assert result.exit_code == 0
    assert read_transcript(out).format == "anthropic"


# ------------------------------------------------------------ regressions from review


def test_a_compacted_claude_code_file_inspects_under_budget(tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    assert run("compact", LONG, "--window", "32768", "-o", out).exit_code == 0
    result = run("inspect", out, "--window", "32768", "--json")
    info = json.loads(result.stdout)[0]
    assert info["anchored"] is False
    assert info["gate"]["over_budget"] is False
    assert info["gate"]["fires_at"] is None
    # the session log keeps the folded turns ahead of the new boundary
    (boundary,) = [
        line
        for line in map(json.loads, out.read_text().splitlines())
        if line.get("subtype") == "compact_boundary"
    ]
    assert len(read_transcript(out, whole_file=True).messages) > info["messages"]
    original = json.loads(run("inspect", LONG, "--window", "32768", "--json").stdout)[0]
    assert boundary["compactMetadata"]["preTokens"] == original["context_tokens"]


def _dir_with(tmp_path: Path, **extra: str) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copy(FIXTURES / "openai_chat.json", folder / "chat.json")
    for name, text in extra.items():
        (folder / name.replace("_", ".")).write_text(text)
    return folder


def test_a_directory_skips_files_of_no_known_format(tmp_path: Path) -> None:
    folder = _dir_with(tmp_path, package_json='{"name": "x", "version": "1.0.0"}')
    result = CliRunner().invoke(main, ["inspect", str(folder), "--json"])
    assert result.exit_code == 0, result.output
    reports = json.loads(result.stdout)
    assert [r["format"] for r in reports if "format" in r] == ["openai"]
    skipped = [r for r in reports if "skipped" in r and "format" not in r]
    assert len(skipped) == 1
    assert skipped[0]["file"].endswith("package.json")
    assert "cannot tell" in skipped[0]["skipped"]
    assert "skipped" in result.stderr
    assert "package.json" in result.stderr

    text = CliRunner().invoke(main, ["inspect", str(folder)])
    assert text.exit_code == 0
    assert "chat.json" in text.stdout


def test_a_directory_skips_unreadable_files_only_with_skip_bad(tmp_path: Path) -> None:
    broken = '[{"role": "user", "content": "hi"}, {"role": "user", "content": 5}]'
    folder = _dir_with(tmp_path, broken_json=broken)
    result = CliRunner().invoke(main, ["inspect", str(folder)])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error:") or "\nError:" in result.stderr

    result = CliRunner().invoke(main, ["inspect", str(folder), "--skip-bad", "--json"])
    assert result.exit_code == 0, result.output
    reports = json.loads(result.stdout)
    assert len(reports) == 2


def test_the_error_line_starts_its_own_line_after_the_progress_bar(tmp_path: Path) -> None:
    folder = _dir_with(tmp_path, z_json='[{"role": "user", "content": 5}]')
    result = CliRunner().invoke(main, ["inspect", str(folder)])
    assert result.exit_code == 1
    error_lines = [line for line in result.stderr.splitlines() if "Error:" in line]
    assert error_lines
    assert all(line.startswith("Error:") for line in error_lines)


def test_plot_directory_skips_a_file_that_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    from window_budget.tools import timeline

    folder = _dir_with(tmp_path)
    shutil.copy(FIXTURES / "openai_chat.jsonl", folder / "other.jsonl")
    real = timeline.simulate

    def flaky(messages, *args, **kwargs):  # type: ignore[no-untyped-def]
        if len(messages) == len(read_transcript(folder / "chat.json").messages):
            raise ValueError("boom")
        return real(messages, *args, **kwargs)

    monkeypatch.setattr(timeline, "simulate", flaky)
    out = tmp_path / "png"
    result = CliRunner().invoke(main, ["plot", str(folder), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "skipped" in result.stderr
    assert "boom" in result.stderr
    assert (out / "other.png").exists()
    assert not (out / "chat.png").exists()


def _brute_force_firing(msgs, model, pinned, limit, counter=None):  # type: ignore[no-untyped-def]
    from window_budget.pipeline import estimate_context as context

    for i in range(len(msgs)):
        if (
            context(msgs[: i + 1], model, counter=counter, pinned_tokens=pinned).context_tokens
            > limit
        ):
            return i
    return None


def test_first_firing_agrees_with_the_gate() -> None:
    from window_budget import AssistantMessage, DigestMessage, Model, Usage, UserMessage
    from window_budget.cli import _first_firing
    from window_budget.contract import BudgetPolicy
    from window_budget.pipeline import budget_limit

    model = Model("m", 4000)
    limit = budget_limit(model, BudgetPolicy(reserve_tokens=0))
    digest = DigestMessage(
        "[session digest — older turns condensed]\n\nx", covered_count=9, kept_count=2
    )
    cases = {
        "stale usage kept with a digest": [
            digest,
            UserMessage("q"),
            AssistantMessage("a", usage=Usage(50_000, 1), model="m"),
            UserMessage("more " * 50),
        ],
        "another model's usage": [
            UserMessage("q"),
            AssistantMessage("a", usage=Usage(50_000, 1), model="other"),
            UserMessage("more"),
        ],
        "dated alias of the same model anchors": [
            UserMessage("q"),
            AssistantMessage("a", usage=Usage(3_500, 1), model="m-2024-01-01"),
            UserMessage("more"),
        ],
        "implausibly small usage": [
            UserMessage("x" * 20_000),
            AssistantMessage("a", usage=Usage(10, 1), model="m"),
            UserMessage("more"),
        ],
        "fresh usage after the kept turns": [
            digest,
            UserMessage("q"),
            AssistantMessage("a"),
            UserMessage("again"),
            AssistantMessage("b", usage=Usage(3_500, 1), model="m"),
        ],
    }
    for name, msgs in cases.items():
        for pinned in (0, 500):
            expected = _brute_force_firing(msgs, model, pinned, limit)
            assert _first_firing(msgs, model, pinned, limit, None) == expected, name
    assert _first_firing(cases["stale usage kept with a digest"], model, 0, limit, None) is None
    assert _first_firing(cases["another model's usage"], model, 0, limit, None) is None
    assert _first_firing(cases["dated alias of the same model anchors"], model, 0, limit, None) == 1
    assert _first_firing(cases["implausibly small usage"], model, 0, limit, None) == 0


def test_bad_record_error_uses_command_line_wording(tmp_path: Path) -> None:
    result = run("inspect", BAD / "openai_bad_record.json")
    assert result.exit_code == 1
    assert "--skip-bad" in result.output
    assert "skip_bad=True" not in result.output


def test_a_json_syntax_error_is_reported_with_its_place(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[\n  {"role": "user", "content": "hi"},\n  {"role": oops}\n]\n')
    result = run("inspect", path)
    assert result.exit_code == 1
    assert "line 3, column 12: not valid JSON" in result.output


def test_run_picks_a_run_and_applies_only_to_files_of_many(tmp_path: Path) -> None:
    tau = FIXTURES / "tau_bench_results.json"
    one = run("inspect", tau, "--run", "1", "--json")
    assert one.exit_code == 0, one.output
    (report,) = json.loads(one.stdout)
    assert (report["run"], report["runs"]) == (1, 2)
    assert "run               0 of 2 in the file" in run("inspect", tau).output
    wrong = run("inspect", FIXTURES / "pi_session.jsonl", "--run", "1")
    assert wrong.exit_code == 1
    assert "--run picks one run of a file of many runs" in wrong.output
    missing = run("inspect", tau, "--run", "9")
    assert missing.exit_code == 1
    assert "there is no run 9" in missing.output
    both = run("inspect", tau, FIXTURES / "pi_session.jsonl", "--run", "1", "--json")
    assert both.exit_code == 0, both.output
    assert [r.get("run") for r in json.loads(both.stdout)] == [1, None]


def test_inspect_names_the_model_of_each_new_format() -> None:
    for name, model in [
        ("openhands_output.jsonl", "claude-sonnet-4-5-20250929"),
        ("claude_code_sidechain.jsonl", "claude-haiku-4-5-20251001"),
        ("swe_agent_run.traj", "claude-sonnet-4-20250514"),
    ]:
        result = run("inspect", FIXTURES / name)
        assert result.exit_code == 0, result.output
        assert f"model             {model}" in result.output


def test_inspect_and_compact_say_what_masking_does(tmp_path: Path) -> None:
    info = json.loads(run("inspect", LONG, "--window", "32768", "--json").stdout)[0]
    cut = info["cut"]
    assert cut["reason"] == "masked"
    assert cut["index"] is None
    assert cut["masked_outputs"] > 0
    assert cut["tokens_after"] + cut["tokens_freed"] == info["context_tokens"]
    text = run("inspect", LONG, "--window", "32768").stdout
    assert f"masking {cut['masked_outputs']} old tool outputs frees" in text
    assert "no digest (--no-mask to fold instead)" in text

    dry = run("compact", LONG, "--window", "32768", "--dry-run", "--to", "json")
    assert f"would mask {cut['masked_outputs']} old tool outputs" in dry.output

    out = tmp_path / "masked.json"
    result = run("compact", LONG, "--window", "32768", "--to", "json", "-o", out)
    assert result.exit_code == 0, result.output
    assert f"{cut['masked_outputs']} old tool outputs masked" in result.output
    back = read_transcript(out).messages
    original = read_transcript(LONG).messages
    assert len(back) == len(original)
    assert not is_digest(back[0])
    assert sum(is_masked(m) for m in back) == cut["masked_outputs"]


def test_compact_folds_a_session_log_instead_of_masking(tmp_path: Path) -> None:
    # A log keeps what a compaction folds ahead of its boundary, never a masked original.
    out = tmp_path / "c.jsonl"
    result = run("compact", LONG, "--window", "32768", "-o", out)
    assert result.exit_code == 0, result.output
    assert "masked" not in result.output
    assert is_digest(read_transcript(out).messages[0])
