"""The content-keyed estimate cache: hits across new objects, bounded bytes, threads."""

from __future__ import annotations

import copy
import pickle
import threading
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import transcripts
from window_budget import (
    AssistantMessage,
    BudgetPolicy,
    Model,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    estimate_tokens,
    is_over_budget,
    plan_slice,
)
from window_budget.budget import (
    ContentCache,
    cached_estimates,
    estimate_message_tokens,
    fingerprint,
)
from window_budget.budget import _cache as cache_module
from window_budget.budget import _estimate as estimate_module


def _history(n: int, tag: str = "") -> list[object]:
    out: list[object] = []
    for i in range(n):
        out.append(UserMessage(f"{tag}question {i} " + "w " * 30))
        out.append(
            AssistantMessage((TextBlock(f"answer {i}"), ToolCallBlock(f"c{i}", "look", {"q": i})))
        )
        out.append(ToolResultMessage(f"c{i}", "look", f"result {i}"))
    return out


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts real estimates made through the cache."""
    calls = [0]
    real = cache_module.estimate_message_tokens

    def counting(message: object, counter: object = None) -> int:
        calls[0] += 1
        return real(message, counter)  # type: ignore[arg-type]

    monkeypatch.setattr(cache_module, "estimate_message_tokens", counting)
    monkeypatch.setattr(cache_module, "ESTIMATES", ContentCache())
    return calls


def test_equal_messages_as_new_objects_are_estimated_once(counted: list[int]) -> None:
    history = _history(200)
    first = estimate_tokens(history)  # type: ignore[arg-type]
    assert counted[0] == 600
    for rebuilt in (copy.deepcopy(history), pickle.loads(pickle.dumps(history))):
        assert rebuilt[0] is not history[0]
        assert estimate_tokens(rebuilt) == first  # type: ignore[arg-type]
    assert counted[0] == 600


def test_functional_api_reuses_estimates_across_calls(counted: list[int]) -> None:
    history = _history(300)
    model, policy = Model("m", 8_000), BudgetPolicy(keep_recent=1_000, reserve_tokens=0)
    assert is_over_budget(history, model, policy)  # type: ignore[arg-type]
    plan = plan_slice(copy.deepcopy(history), policy)  # type: ignore[arg-type]
    assert plan.cut > 0
    assert counted[0] == 900  # once per message, not once per call


def test_changed_content_is_estimated_afresh(counted: list[int]) -> None:
    a = UserMessage("short")
    b = replace(a, content="short" + " much longer now" * 50)
    assert cached_estimates([a]) == [estimate_message_tokens(a)]
    assert cached_estimates([b]) == [estimate_message_tokens(b)]
    assert counted[0] == 2


def test_a_str_and_a_text_block_are_not_confused() -> None:
    # Same words, different framing: they must not share an entry.
    a, b = UserMessage("same"), UserMessage((TextBlock("same"),))
    assert fingerprint(a) != fingerprint(b)
    assert cached_estimates([a, b]) == [estimate_message_tokens(a), estimate_message_tokens(b)]


def test_the_cache_stays_within_its_byte_bound() -> None:
    cache = ContentCache(max_bytes=50_000)
    for i in range(40):
        cached_estimates([UserMessage(f"{i} " + "x" * 2_000)], cache=cache)
        assert cache.size_bytes <= 50_000
    assert cache.evictions > 0
    assert 0 < len(cache) < 40
    # Larger than the whole cache: computed, never stored.
    cached_estimates([UserMessage("y" * 60_000)], cache=cache)
    assert cache.size_bytes <= 50_000


def test_recently_used_entries_survive_eviction() -> None:
    cache = ContentCache(max_bytes=3 * (200 + 1_010))
    a, b, c, d = (UserMessage(ch * 1_000) for ch in "abcd")
    cached_estimates([a, b, c], cache=cache)
    cached_estimates([a], cache=cache)  # a is now the most recent
    cached_estimates([d], cache=cache)  # evicts b, the least recent
    hits = cache.hits
    cached_estimates([a], cache=cache)
    assert cache.hits == hits + 1
    cached_estimates([b], cache=cache)
    assert cache.hits == hits + 1


def test_threads_share_the_cache_safely() -> None:
    cache = ContentCache(max_bytes=200_000)
    messages = [UserMessage(f"m{i} " + "z" * (i % 97)) for i in range(2_000)]
    expected = [estimate_message_tokens(m) for m in messages]
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for _ in range(5):
                rotated = messages[offset:] + messages[:offset]
                got = cached_estimates(rotated, cache=cache)
                assert got == expected[offset:] + expected[:offset]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k * 250,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert cache.size_bytes <= 200_000


@pytest.mark.slow
@given(transcripts())
def test_cached_estimates_match_the_estimator(messages: list) -> None:
    cache = ContentCache()
    direct = [estimate_message_tokens(m) for m in messages]
    assert cached_estimates(messages, cache=cache) == direct
    assert cached_estimates(copy.deepcopy(messages), cache=cache) == direct


@given(st.lists(st.text(max_size=50), max_size=30))
def test_estimate_tokens_still_sums_the_estimator(texts: list[str]) -> None:
    messages = [UserMessage(t) for t in texts]
    assert estimate_tokens(messages) == sum(map(estimate_message_tokens, messages))


def test_the_heuristic_is_not_copied() -> None:
    # The cache defers to the estimator module: a change there flows through unchanged.
    assert cache_module.estimate_message_tokens is estimate_module.estimate_message_tokens


def test_a_digest_with_another_record_is_estimated_afresh() -> None:
    # The record is billed beside the text: one text with a larger record costs more, and a
    # cache keyed by the text alone answered the first record's figure for the second.
    from window_budget import DigestMessage

    text = "[session digest]\n\n# Objective\nmove invoice rendering off the legacy path"
    small = DigestMessage(text, facts={"facts": [{"kind": "decision", "text": "use pdfkit"}]})
    large = DigestMessage(
        text, facts={"facts": [{"kind": "file", "text": f"src/mod_{i}.py"} for i in range(200)]}
    )
    cache = ContentCache()
    first = cached_estimates([small], cache=cache)
    assert cached_estimates([large], cache=cache) == [estimate_message_tokens(large)]
    assert first == [estimate_message_tokens(small)] != [estimate_message_tokens(large)]
    assert fingerprint(small) != fingerprint(large)


@given(
    st.text(max_size=40),
    st.lists(st.dictionaries(st.sampled_from("abc"), st.text(max_size=30), max_size=3), max_size=6),
)
def test_digests_sharing_a_text_match_the_estimator_through_one_cache(
    text: str, records: list[dict[str, str]]
) -> None:
    from window_budget import DigestMessage

    cache = ContentCache()
    for record in records:
        digest = DigestMessage(text, facts=record or None)
        assert cached_estimates([digest], cache=cache) == [estimate_message_tokens(digest)]
