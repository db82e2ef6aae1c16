"""The bridge both adapters share: the digest record, the conversion cache, named counters."""

from __future__ import annotations

import json
import pickle
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import pytest

from window_budget import ConfigError, DigestMessage, UserMessage
from window_budget.bridge import (
    RECORD_KEY,
    convert,
    digest_from_record,
    digest_record,
    pinned_count,
    read_digest_record,
    register_counter,
    resolve_counter_spec,
)
from window_budget.budget import CallableCounter, ContentCache
from window_budget.messages import AgentMessage


@dataclass(frozen=True, slots=True)
class LedgerDigest(DigestMessage):
    """A digest with a field the bridge has never heard of (like a fact ledger)."""

    facts: dict[str, Any] | None = None
    tags: list[str] = field(default_factory=list)


def test_every_digest_field_survives_a_json_and_pickle_round_trip() -> None:
    facts = {"objective": "ship it", "files": ["a.py", "b.py"], "n": 3}
    digest = LedgerDigest(
        "[digest]", covered_count=40, kept_count=5, fallback=True, facts=facts, tags=["x"]
    )
    record = digest_record(digest, compactions=2)
    assert record["covered"] == 40
    assert record["kept"] == 5
    assert record["fallback"] is True
    assert record["facts"] == facts
    assert record["compactions"] == 2
    for stored in (
        json.loads(json.dumps({RECORD_KEY: record})),
        pickle.loads(pickle.dumps({RECORD_KEY: record})),
    ):
        back = read_digest_record(stored)
        assert back is not None
        rebuilt = digest_from_record("[digest]", back, kind=LedgerDigest)
        assert rebuilt == digest


def test_default_extra_fields_are_left_out_of_the_record() -> None:
    record = digest_record(LedgerDigest("d", covered_count=3))
    assert set(record) == {"digest", "covered", "kept", "fallback", "text_sha", "seal"}
    assert {k: record[k] for k in ("digest", "covered", "kept", "fallback")} == {
        "digest": True,
        "covered": 3,
        "kept": None,
        "fallback": False,
    }


def test_only_a_record_the_library_sealed_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WINDOW_BUDGET_SECRET", "s3cret")
    sealed = digest_record(DigestMessage("t", covered_count=10, kept_count=3), compactions=2)
    a = digest_from_record("t", read_digest_record({RECORD_KEY: sealed}, "t") or {})
    assert (a.covered_count, a.kept_count) == (10, 3)
    # Unsealed (older versions, or written by hand), edited, or moved onto other text: none.
    unsealed = {"digest": True, "covered": 10, "kept": 3, "compactions": 2, "fallback": False}
    assert read_digest_record({RECORD_KEY: unsealed}) is None
    # The flag an unreleased version wrote is no record either.
    assert read_digest_record({"window_budget_digest": True, "window_budget_covered": 7}) is None
    assert read_digest_record({RECORD_KEY: {**sealed, "covered": 2**53 - 1}}) is None
    assert read_digest_record({RECORD_KEY: {**sealed, "facts": {"format": "x"}}}) is None
    assert read_digest_record({RECORD_KEY: sealed}, "other text") is None
    assert read_digest_record({"other": 1}) is None
    # Another secret (another deployment) is another key.
    monkeypatch.setenv("WINDOW_BUDGET_SECRET", "other")
    assert read_digest_record({RECORD_KEY: sealed}, "t") is None


def test_a_store_key_seals_records_and_verifies_them_strictly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("WINDOW_BUDGET_SECRET", raising=False)
    key = b"k" * 32
    sealed = digest_record(DigestMessage("t", covered_count=10), key=key, compactions=2)
    back = read_digest_record({RECORD_KEY: sealed}, "t", key=key)
    assert back is not None
    assert (back["covered"], back["compactions"]) == (10, 2)
    # Strict even without the secret: forged, edited, moved, legacy or another key's.
    forged = {"digest": True, "covered": 2**53 - 1, "kept": 0, "fallback": False}
    assert read_digest_record({RECORD_KEY: forged}, "t", key=key) is None
    assert read_digest_record({RECORD_KEY: {**sealed, "covered": 2**53 - 1}}, "t", key=key) is None
    assert read_digest_record({RECORD_KEY: sealed}, "other text", key=key) is None
    assert read_digest_record({"window_budget_digest": True}, key=key) is None
    assert read_digest_record({RECORD_KEY: sealed}, "t", key=b"x" * 32) is None
    process_sealed = digest_record(DigestMessage("t", covered_count=10))
    assert read_digest_record({RECORD_KEY: process_sealed}, "t", key=key) is None
    # The store's key is the one that counts, whatever the secret says.
    monkeypatch.setenv("WINDOW_BUDGET_SECRET", "s3cret")
    assert read_digest_record({RECORD_KEY: sealed}, "t", key=key) is not None
    assert read_digest_record({RECORD_KEY: sealed}, "t") is None


def test_without_a_secret_only_this_process_records_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("WINDOW_BUDGET_SECRET", raising=False)
    unsealed = {"digest": True, "covered": 10, "kept": 3, "compactions": 2, "fallback": False}
    assert read_digest_record({RECORD_KEY: unsealed}) is None  # anyone can write that
    ours = digest_record(DigestMessage("t", covered_count=10, kept_count=3))
    a = digest_from_record("t", read_digest_record({RECORD_KEY: ours}, "t") or {})
    assert (a.covered_count, a.kept_count) == (10, 3)
    assert read_digest_record(None) is None
    assert read_digest_record({RECORD_KEY: {"digest": "yes"}}) is None


@pytest.mark.parametrize("bad", [-1, "12", 1e300, float("nan"), True, 2**80, None, [1]])
def test_hostile_counts_fall_back_to_defaults(bad: object) -> None:
    digest = digest_from_record("t", {"digest": True, "covered": bad, "kept": bad})
    assert digest.covered_count == 0
    assert digest.kept_count is None


class _Codec:
    name = "test"

    def __init__(self) -> None:
        self.converted = 0

    def key(self, message: Any) -> Hashable | None:
        return tuple(message["text"]) if message.get("cacheable", True) else None

    def to_core(self, message: Any) -> AgentMessage:
        self.converted += 1
        return UserMessage("".join(message["text"]))

    def is_pinned(self, message: Any) -> bool:
        return bool(message.get("system"))


def test_convert_reuses_core_objects_for_equal_content() -> None:
    codec, cache = _Codec(), ContentCache()
    first = convert(codec, [{"text": ["a"]}, {"text": ["b"]}], cache=cache)
    again = convert(codec, [{"text": ["a"]}, {"text": ["b"]}, {"text": ["c"]}], cache=cache)
    assert again[:2] == first
    assert again[0] is first[0]
    assert codec.converted == 3


def test_convert_never_returns_one_core_object_twice() -> None:
    codec, cache = _Codec(), ContentCache()
    out = convert(codec, [{"text": ["same"]}, {"text": ["same"]}], cache=cache)
    assert out[0] == out[1]
    assert out[0] is not out[1]


def test_pinned_count_counts_the_leading_system_messages_only() -> None:
    msgs = [{"system": True}, {"system": True}, {}, {"system": True}]
    assert pinned_count(_Codec(), msgs) == 2


def test_named_counters_resolve_through_one_registry() -> None:
    assert resolve_counter_spec(None) == (None, "heuristic")
    assert resolve_counter_spec("heuristic") == (None, "heuristic")
    seen: list[object] = []

    def factory(context: object) -> CallableCounter:
        seen.append(context)
        return CallableCounter(len, name="chars")

    register_counter("test-chars", factory)
    counter, name = resolve_counter_spec("test-chars", "the model")
    assert name == "test-chars"
    assert seen == ["the model"]
    assert counter is not None
    assert counter.count("abcd") == 4
    with pytest.raises(ConfigError, match="unknown counter"):
        resolve_counter_spec("no-such-counter")


def test_the_id_memo_is_bounded_and_keyed_by_codec() -> None:
    from window_budget.bridge import Recognised

    memo = Recognised(limit=4)
    core = UserMessage("x")
    memo.put_many("a", [("m1", "native", core), (None, "skipped", core)])
    assert memo.get_many("a", ["m1", "m2", None]) == [("native", core), None, None]
    assert memo.get_many("b", ["m1"]) == [None]  # another codec's options
    memo.put_many("a", [(f"n{i}", i, core) for i in range(4)])
    assert len(memo) <= 4  # past the bound it starts over
    assert memo.get_many("a", ["n3"]) == [(3, core)]
    memo.put_many("a", [(f"big{i}", i, core) for i in range(10)])  # one batch past it
    assert len(memo) == 4
    assert memo.get_many("a", ["big9", "big0"]) == [(9, core), None]


def test_the_id_memo_is_safe_to_share_between_threads() -> None:
    import threading

    from window_budget.bridge import Recognised

    memo = Recognised(limit=500)
    core = UserMessage("x")
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(300):
                memo.put_many("c", [(f"{k}-{i}", (k, i), core)])
                for hit in memo.get_many("c", [f"{k}-{i}", f"{k}-{i - 1}"]):
                    assert hit is None or hit[1] is core
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(memo) <= 500


def test_head_counts_count_every_digest_in_the_head_wherever_it_sits() -> None:
    from window_budget.bridge import head_counts

    first = {"digest": True, "covered": 10, "compactions": 2}
    deeper = {"digest": True, "covered": 5, "compactions": 3}
    assert head_counts([first, None, None, deeper, None]) == (18, 4)
    assert head_counts([None, None]) == (2, 1)  # no digest: the first compaction
    # A record with no (or a hostile) count stands for nothing it can prove, but a
    # digest means at least one compaction happened before.
    assert head_counts([{"digest": True}, {"digest": True, "covered": -3}, None]) == (1, 2)
