"""What both adapters' memory stores and recall tools share (``window_budget.bridge.stores``)."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from window_budget.bridge.stores import (
    LazyKey,
    check_key,
    key_from_hex,
    new_key_hex,
    original_text,
    recall_reply,
)
from window_budget.errors import ConfigError
from window_budget.memory import InProcessMemoryStore


def test_an_original_is_shown_by_its_text_or_its_json() -> None:
    assert original_text({"role": "user", "content": "Port the loader."}) == "Port the loader."
    odd = {"role": 7, "payload": ["x"]}
    assert original_text(odd) == '{"role": 7, "payload": ["x"]}'


@given(st.binary(max_size=40))
def test_a_stored_key_reads_back_only_when_it_can_seal(raw: bytes) -> None:
    assert key_from_hex(raw.hex()) == (raw if len(raw) >= 16 else None)


@pytest.mark.parametrize("value", [None, "zz", "", 12, "ab" * 15])
def test_a_damaged_stored_key_is_none(value: object) -> None:
    assert key_from_hex(value) is None


def test_a_new_key_is_32_random_bytes() -> None:
    first, second = new_key_hex(), new_key_hex()
    assert key_from_hex(first) is not None
    assert len(bytes.fromhex(first)) == 32
    assert first != second


@pytest.mark.parametrize("key", [b"short", "a" * 32, 32])
def test_a_key_that_cannot_seal_is_refused(key: object) -> None:
    with pytest.raises(ConfigError, match="at least 16"):
        check_key(key)


def test_the_key_is_loaded_once_however_many_threads_ask() -> None:
    loads: list[int] = []
    gate = threading.Barrier(8)

    def load() -> bytes:
        loads.append(1)
        return b"k" * 32

    key = LazyKey(None, load)
    got: list[bytes] = []

    def ask() -> None:
        gate.wait()
        got.append(key.get())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [b"k" * 32] * 8
    assert loads == [1]
    assert LazyKey(b"g" * 16, load).get() == b"g" * 16
    assert loads == [1]


def test_recall_replies_in_sentences_never_raises() -> None:
    store = InProcessMemoryStore()
    store.archive("c1", 0, [{"role": "user", "content": "The build id is 7731."}])
    assert "7731" in recall_reply(store, "c1", {"pointer": "#0"})
    assert "nothing is archived" in recall_reply(None, "c1", {"pointer": "#0"})
    assert "nothing is archived" in recall_reply(store, None, {"pointer": "#0"})
    both = recall_reply(store, "c1", {"query": "build", "pointer": "#0"})
    assert both.startswith("recall could not run:")

    def unnamed() -> str:
        raise ConfigError("no session yet")

    assert recall_reply(store, unnamed, {"pointer": "#0"}) == "recall could not run: no session yet"
    assert "7731" in recall_reply(store, lambda: "c1", {"pointer": "#0"})
