from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from window_budget.errors import StoreError
from window_budget.stores import Fold, LockedRewrite, check_written

words = st.lists(st.text(min_size=1, max_size=5), max_size=12)


@given(words, words, st.integers(min_value=0, max_value=12))
def test_a_fold_keeps_everything_appended_after_what_it_read(
    read: list[str], appended: list[str], cut: int
) -> None:
    cut = min(cut, len(read))
    fold = Fold(
        expected=tuple(read), replacement=("digest", *read[cut:]), archived=tuple(read[:cut])
    )
    assert fold.apply([*read, *appended]) == ["digest", *read[cut:], *appended]


@given(words.filter(bool), words)
def test_a_fold_refuses_a_store_whose_prefix_changed(read: list[str], appended: list[str]) -> None:
    fold = Fold(expected=tuple(read), replacement=("digest",))
    changed = ["other" + read[0], *read[1:], *appended]
    assert fold.apply(changed) is None
    assert fold.apply(read[:-1]) is None  # shorter than what was read


class ListStore:
    """A store of strings; ``appends_on_set`` mimics a store whose set does not replace."""

    def __init__(self, messages: list[str], *, appends_on_set: bool = False) -> None:
        self.messages = list(messages)
        self.archive: list[str] = []
        self.appends_on_set = appends_on_set

    def read(self) -> list[str]:
        return list(self.messages)

    def write(self, messages: list[str]) -> None:
        if self.appends_on_set:
            self.messages.extend(messages)
        else:
            self.messages = list(messages)

    def add_archive(self, messages: object) -> None:
        self.archive.extend(messages)  # type: ignore[call-overload]


def test_the_locked_rewrite_archives_and_writes_when_the_prefix_holds() -> None:
    store = ListStore(["a", "b", "c"])
    rewrite = LockedRewrite(store.read, store.write, store.add_archive, store="ListStore")
    store.messages.append("d")  # appended by someone else after the compaction read
    assert rewrite.rewrite(
        Fold(expected=("a", "b", "c"), replacement=("D", "c"), archived=("a", "b"))
    )
    assert store.messages == ["D", "c", "d"]
    assert store.archive == ["a", "b"]


def test_the_locked_rewrite_writes_nothing_when_the_store_changed() -> None:
    store = ListStore(["D", "c"])
    rewrite = LockedRewrite(store.read, store.write, store.add_archive, store="ListStore")
    assert not rewrite.rewrite(
        Fold(expected=("a", "b", "c"), replacement=("D", "c"), archived=("a", "b"))
    )
    assert store.messages == ["D", "c"]
    assert store.archive == []


def test_a_store_that_appends_on_set_is_refused_naming_it() -> None:
    store = ListStore(["a", "b", "c"], appends_on_set=True)
    rewrite = LockedRewrite(store.read, store.write, store.add_archive, store="AppendingStore")
    with pytest.raises(
        StoreError,
        match=r"AppendingStore holds 5 messages after 2 were "
        r"written \(it appended instead of replacing",
    ):
        rewrite.rewrite(Fold(expected=("a", "b", "c"), replacement=("D", "c"), archived=("a", "b")))


def test_check_written_names_lost_and_changed_messages() -> None:
    check_written(["a"], ["a"], "S")
    check_written(["a", "later"], ["a"], "S")  # appended by another writer meanwhile
    with pytest.raises(StoreError, match="S holds 2 messages after 1 were written"):
        check_written(["a", "later"], ["a"], "S", exact=True)
    with pytest.raises(StoreError, match="S holds 1 messages after 2 were written;"):
        check_written(["a"], ["a", "b"], "S")
    with pytest.raises(StoreError, match="S returned other messages than were written"):
        check_written(["x"], ["a"], "S")
    check_written(["A"], ["a"], "S", same=lambda x, y: x.lower() == y.lower())


def test_threads_sharing_a_locked_rewrite_never_fold_one_head_twice() -> None:
    store = ListStore([f"m{i}" for i in range(10)])
    rewrite = LockedRewrite(store.read, store.write, store.add_archive, store="ListStore")
    snapshot = tuple(store.read())
    fold = Fold(expected=snapshot, replacement=("digest", *snapshot[8:]), archived=snapshot[:8])
    results: list[bool] = []
    threads = [
        threading.Thread(target=lambda: results.append(rewrite.rewrite(fold))) for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 7 + [True]
    assert store.archive == list(snapshot[:8])
    assert store.messages == ["digest", "m8", "m9"]
