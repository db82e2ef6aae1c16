"""Hostile files through the library: ``read_transcript`` raises one-sentence ``ReadError``s.

Every file here is one a user could hand the reader by accident or on purpose: nesting
deep enough to blow the recursion limit, integers too long to convert, non-finite usage
figures, a FIFO or a device, a byte-order mark, and a format forced on a file of another
format. None may escape as a raw ``RecursionError`` / ``ValueError`` / ``OverflowError``,
hang, or be read as a guess.
"""

from __future__ import annotations

import io
import json
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from window_budget import AssistantMessage, ToolCallBlock, ToolResultMessage
from window_budget.readers import FORMATS, ReadError, detect_format, read_transcript

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"

_CLAUDE_LINE = {
    "type": "assistant",
    "uuid": "a1",
    "sessionId": "s",
    "message": {
        "id": "m1",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "hi"}],
        "usage": {"input_tokens": 10, "output_tokens": 2},
    },
}
_USER_LINE = {
    "type": "user",
    "uuid": "u1",
    "sessionId": "s",
    "message": {"role": "user", "content": "hello"},
}


def _claude_with_usage(value: str) -> str:
    """A Claude Code session whose usage field holds ``value`` verbatim (JSON text)."""
    line = json.dumps(_CLAUDE_LINE).replace('"input_tokens": 10', f'"input_tokens": {value}')
    return json.dumps(_USER_LINE) + "\n" + line + "\n"


def _openai_with_usage(value: str) -> str:
    return (
        '[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo", '
        f'"usage": {{"prompt_tokens": {value}, "completion_tokens": 3}}}}]\n'
    )


# name -> (file name, text, what the one sentence must mention)
BAD_TEXT: dict[str, tuple[str, str, str]] = {
    "nesting-json": ("deep.json", "[" * 100_000, "nested"),
    "nesting-jsonl": ("deep.jsonl", json.dumps(_USER_LINE) + "\n" + "[" * 100_000 + "\n", "nested"),
    "nesting-in-a-record": (
        "deep_record.json",
        '[{"role": "user", "content": ' + "[" * 50_000 + "]" * 50_000 + "}]",
        "nested",
    ),
    "huge-int-json": ("huge.json", _openai_with_usage("9" * 5001), "digits"),
    "huge-int-jsonl": ("huge.jsonl", _claude_with_usage("1" * 5001), "digits"),
    "1e400-json": ("big_float.json", _openai_with_usage("1e400"), "prompt_tokens"),
    "infinity-jsonl": ("inf.jsonl", _claude_with_usage("Infinity"), "input_tokens"),
    "nan-jsonl": ("nan.jsonl", _claude_with_usage("NaN"), "input_tokens"),
    "neg-infinity-pi": (
        "inf_pi.jsonl",
        '{"type": "session", "id": "s"}\n'
        '{"type": "message", "message": {"role": "assistant", "content": '
        '"x", "usage": {"input": -Infinity, "output": 1}}}\n',
        "usage",
    ),
    "1e400-anthropic": (
        "big.json",
        '{"system": "s", "messages": [{"role": "assistant", "content": '
        '[{"type": "text", "text": "x"}], "usage": {"input_tokens": 1e400, '
        '"output_tokens": 1}}]}',
        "input_tokens",
    ),
    "1e400-langchain": (
        "lc.json",
        '[{"type": "ai", "data": {"content": "x", "usage_metadata": '
        '{"input_tokens": 1e400, "output_tokens": 1}}}]',
        "input_tokens",
    ),
}


@contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    """Fail instead of hanging forever (a FIFO with no writer blocks ``open``)."""
    if threading.current_thread() is not threading.main_thread():  # pragma: no cover
        yield
        return

    def boom(signum: int, frame: object) -> None:
        raise TimeoutError(f"still blocked after {seconds} s")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _one_sentence(exc: ReadError, path: Path) -> str:
    text = str(exc)
    assert "\n" not in text
    assert str(path) in text
    return text


@pytest.mark.parametrize("case", list(BAD_TEXT), ids=str)
def test_bad_files_raise_read_error(case: str, tmp_path: Path) -> None:
    name, text, mentions = BAD_TEXT[case]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ReadError) as info:
        read_transcript(path)
    message = _one_sentence(info.value, path)
    assert mentions in message
    # Picking another format cannot help with any of these.
    assert "--from" not in message
    assert "format=" not in message


@pytest.mark.parametrize("case", ["huge-int-jsonl", "infinity-jsonl", "nesting-jsonl"])
def test_skip_bad_skips_the_line_and_reads_the_rest(case: str, tmp_path: Path) -> None:
    name, text, _ = BAD_TEXT[case]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    t = read_transcript(path, format="claude-code", skip_bad=True)
    assert len(t.skipped) == 1
    assert t.skipped[0].line == 2
    assert len(t.messages) == 1


def test_non_finite_numbers_elsewhere_are_read(tmp_path: Path) -> None:
    # Python's json writes NaN for a float tool argument; only usage must be a count.
    path = tmp_path / "nan_args.json"
    path.write_text(
        '[{"role": "assistant", "content": null, "tool_calls": [{"id": "c", '
        '"type": "function", "function": {"name": "f", "arguments": '
        '{"x": NaN, "y": 1e400}}}]}, {"role": "tool", "tool_call_id": "c", '
        '"content": "ok"}]'
    )
    t = read_transcript(path)
    call = t.messages[0]
    assert isinstance(call, AssistantMessage)
    assert isinstance(call.content[0], ToolCallBlock)  # type: ignore[index]
    assert isinstance(t.messages[1], ToolResultMessage)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    for call in (
        lambda: read_transcript(fifo),
        lambda: detect_format(fifo),
        lambda: read_transcript(fifo, format="claude-code"),
    ):
        with _deadline(5), pytest.raises(ReadError) as info:
            call()
        assert "not a regular file" in _one_sentence(info.value, fifo)


def test_a_device_is_refused() -> None:
    with pytest.raises(ReadError, match="not a regular file"):
        read_transcript("/dev/null", format="openai")
    with pytest.raises(ReadError, match="not a regular file"):
        read_transcript("/dev/zero")


@pytest.mark.parametrize(
    "name", sorted(p.name for p in FIXTURES.iterdir() if p.suffix in (".json", ".jsonl"))
)
def test_a_byte_order_mark_is_read(name: str, tmp_path: Path) -> None:
    source = FIXTURES / name
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + source.read_bytes())
    plain = read_transcript(source)
    with_bom = read_transcript(path)
    assert with_bom.format == plain.format
    assert with_bom.messages == plain.messages
    assert read_transcript(path, format=plain.format).messages == plain.messages


# ------------------------------------------------------- a forced reader must not guess

_LLAMA = FIXTURES / "llama_index_dump.json"
_OPENAI = FIXTURES / "openai_chat.json"
_ANTHROPIC = FIXTURES / "anthropic_messages.json"
_CLAUDE = FIXTURES / "claude_code_session.jsonl"
_PI = FIXTURES / "pi_session.jsonl"
_LANGCHAIN = FIXTURES / "langchain_dump.json"

MISMATCHED: list[tuple[Path, str, str]] = [
    (_LLAMA, "openai", "llama-index"),
    (_OPENAI, "llama-index", "openai"),
    (_ANTHROPIC, "openai", "anthropic"),
    (_OPENAI, "anthropic", "openai"),
    (_LANGCHAIN, "openai", "langchain"),
    (_OPENAI, "langchain", "openai"),
    (_PI, "claude-code", "pi"),
    (_CLAUDE, "pi", "claude-code"),
    (FIXTURES / "openai_chat.jsonl", "claude-code", "openai-jsonl"),
    (FIXTURES / "openhands_output.jsonl", "openai-jsonl", "openhands"),
    (FIXTURES / "openhands_output.jsonl", "pi", "openhands"),
    (_CLAUDE, "openhands", "claude-code"),
    (FIXTURES / "swe_agent_run.traj", "openai", "swe-agent"),
    (FIXTURES / "swe_agent_run.traj", "json", "swe-agent"),
    (FIXTURES / "tau_bench_results.json", "openai", "tau-bench"),
    (_OPENAI, "tau-bench", "openai"),
    (_OPENAI, "swe-agent", "openai"),
]


@pytest.mark.parametrize(
    ("path", "forced", "real"), MISMATCHED, ids=[f"{f}-on-{r}" for _, f, r in MISMATCHED]
)
def test_a_forced_reader_that_finds_none_of_its_fields_reads_nothing(
    path: Path, forced: str, real: str
) -> None:
    for skip_bad in (False, True):
        with pytest.raises(ReadError) as info:
            read_transcript(path, format=forced, skip_bad=skip_bad)
        message = _one_sentence(info.value, path)
        assert forced in message
        # It names the format the file really is, which is what helps.
        assert f"format={real!r}" in message


def test_every_fixture_still_reads_as_its_own_format_when_forced() -> None:
    for path in FIXTURES.iterdir():
        if path.suffix in (".json", ".jsonl"):
            fmt = read_transcript(path).format
            assert read_transcript(path, format=fmt).messages


def test_an_empty_list_is_an_empty_transcript_in_every_list_format(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text("[]\n")
    for fmt in ("openai", "anthropic", "langchain", "llama-index", "json"):
        assert read_transcript(path, format=fmt).messages == ()


# ------------------------------------------------------------ fuzzed: ReadError or a read

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "content",
                    "type",
                    "message",
                    "data",
                    "blocks",
                    "history",
                    "traj",
                    "action",
                    "observation",
                    "tool_calls",
                    "usage",
                    "id",
                    "summary",
                    "args",
                    "tool_call_metadata",
                    "function",
                    "input_tokens",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


def _as_text(value: object, jsonl: bool) -> str:
    if jsonl and isinstance(value, list):
        return "".join(json.dumps(v) + "\n" for v in value)
    return json.dumps(value)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(value=_JSON, jsonl=st.booleans(), fmt=st.sampled_from([None, *sorted(FORMATS)]))
def test_any_json_reads_or_raises_read_error(value: object, jsonl: bool, fmt: str | None) -> None:
    text = _as_text(value, jsonl)
    for skip_bad in (False, True):
        message = ""
        try:
            read_transcript(io.StringIO(text), format=fmt, skip_bad=skip_bad)
        except ReadError as exc:
            message = str(exc)
        assert "\n" not in message


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=200), fmt=st.sampled_from([None, *sorted(FORMATS)]))
def test_any_text_reads_or_raises_read_error(text: str, fmt: str | None) -> None:
    with suppress(ReadError):
        read_transcript(io.StringIO(text), format=fmt, skip_bad=True)
