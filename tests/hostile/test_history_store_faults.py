"""The LangChain history wrapper over a store whose rewrite fails: nothing archived, nothing lost.

A compaction replaces the wrapped history by ``[digest, *kept]`` (its ``clear()`` then its
``add_messages()``) and archives the dropped head. Whatever step fails — a ``clear()`` the
store does not implement, one that does nothing, an ``add_messages()`` that stops midway,
a store that stays down for the restore — the archive holds each original at most once
and the caller's messages stay in the store (or, when the store will not take them back,
in the archive, said so by the error).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest

pytest.importorskip("langchain_core")

from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_window_budget import CondensingChatMessageHistory, digest_record
from window_budget import BudgetPolicy
from window_budget.errors import StoreError

pytestmark = pytest.mark.filterwarnings(
    "ignore::langchain_core._api.deprecation.LangChainDeprecationWarning"
)

SMALL = BudgetPolicy(keep_recent=1500, reserve_tokens=256)


class CannotClear(InMemoryChatMessageHistory):
    """A store without a working ``clear()``, as stores that cannot delete define it."""

    def clear(self) -> None:
        raise NotImplementedError


class ClearDoesNothing(InMemoryChatMessageHistory):
    """A store whose ``clear()`` returns without deleting anything."""

    def clear(self) -> None:
        pass


class FailsAfterClear(InMemoryChatMessageHistory):
    """A store whose first write after a ``clear()`` stops after ``fail_after`` messages.

    It fails once, then comes back (for the restore); with ``stays_down`` every write
    after a clear fails the same way, the restore's too.
    """

    fail_after: int = 0
    stays_down: bool = False
    failed: bool = False
    armed: bool = False
    written: int = 0

    def clear(self) -> None:
        super().clear()
        self.armed = self.stays_down or not self.failed
        self.written = 0

    def add_message(self, message: BaseMessage) -> None:
        if self.armed and self.written >= self.fail_after:
            self.armed = False
            self.failed = True
            raise ConnectionError("db went away")
        self.written += 1
        super().add_message(message)


def condensing(
    store: InMemoryChatMessageHistory, archive: InMemoryChatMessageHistory | None = None
) -> CondensingChatMessageHistory:
    """A wrapper that compacts after about a dozen of :func:`turn`'s messages."""
    model = GenericFakeChatModel(
        messages=itertools.cycle([AIMessage("# Objective\nkeep going\n# Status\nearlier notes")])
    )
    return CondensingChatMessageHistory(
        store, model=model, context_window=4000, policy=SMALL, archive=archive
    )


def turn(i: int) -> BaseMessage:
    """A unique message of about 200 tokens."""
    text = f"m{i} " + "x" * 700
    return HumanMessage(text) if i % 2 == 0 else AIMessage(text)


def texts(messages: Sequence[BaseMessage]) -> list[str]:
    return [m.text for m in messages if digest_record(m) is None]


def assert_archived_at_most_once(history: CondensingChatMessageHistory) -> None:
    archived = texts(history.archive.messages)
    assert len(archived) == len(set(archived)), "an original was archived twice"


def write_until_failure(
    history: CondensingChatMessageHistory, error: type[BaseException]
) -> tuple[list[BaseMessage], BaseException]:
    """Write one message at a time until a compaction fails with ``error``."""
    sent: list[BaseMessage] = []
    for i in range(40):
        sent.append(turn(i))
        try:
            history.add_messages([sent[-1]])
        except error as exc:
            return sent, exc
    raise AssertionError("no compaction failed: the test did not exercise the rewrite")


def test_a_store_that_cannot_clear_is_refused_in_one_sentence_and_nothing_is_archived() -> None:
    store = CannotClear()
    history = condensing(store)
    sent, first = write_until_failure(history, StoreError)
    for i in range(len(sent), len(sent) + 16):  # each later turn tries to compact again
        sent.append(turn(i))
        with pytest.raises(StoreError):
            history.add_messages([sent[-1]])
    message = str(first)
    assert "CannotClear" in message
    assert "clear()" in message
    assert "condense_messages()" in message
    assert ". " not in message  # one sentence
    assert "\n" not in message
    assert isinstance(first.__cause__, NotImplementedError)
    assert history.archive.messages == []
    assert texts(store.messages) == texts(sent) == texts(history.messages)


async def test_a_store_that_cannot_clear_is_refused_on_the_async_path_too() -> None:
    store = CannotClear()
    history = condensing(store)
    sent: list[BaseMessage] = []
    for i in range(40):
        sent.append(turn(i))
        try:
            await history.aadd_messages([sent[-1]])
        except StoreError:
            break
    else:
        raise AssertionError("no compaction failed: the test did not exercise the rewrite")
    for i in range(len(sent), len(sent) + 16):
        sent.append(turn(i))
        with pytest.raises(StoreError, match=r"^the store CannotClear cannot delete messages"):
            await history.aadd_messages([sent[-1]])
    assert history.archive.messages == []
    assert texts(await store.aget_messages()) == texts(sent)


def test_a_clear_that_does_nothing_is_refused_before_anything_is_written() -> None:
    store = ClearDoesNothing()
    history = condensing(store)
    sent, error = write_until_failure(history, StoreError)
    assert "ClearDoesNothing" in str(error)
    assert history.archive.messages == []
    # Not [*sent, digest, *kept]: the digest was never written after the failed clear.
    assert texts(store.messages) == texts(sent)
    assert not any(digest_record(m) for m in store.messages)


@pytest.mark.parametrize("fail_after", [0, 1, 3])
def test_add_messages_failing_midway_leaves_store_and_archive_as_they_were(
    fail_after: int,
) -> None:
    store = FailsAfterClear(fail_after=fail_after)
    history = condensing(store)
    sent, _ = write_until_failure(history, ConnectionError)
    assert history.archive.messages == []
    assert texts(store.messages) == texts(sent) == texts(history.messages)
    # The store is back: the next turn compacts, archiving each original once.
    history.add_messages([turn(99)])
    assert digest_record(store.messages[0]) is not None
    assert_archived_at_most_once(history)
    kept = texts(history.archive.messages) + texts(store.messages)
    assert sorted(kept) == sorted(texts([*sent, turn(99)]))


async def test_async_add_messages_failing_midway_leaves_store_and_archive_as_they_were() -> None:
    store = FailsAfterClear(fail_after=2)
    history = condensing(store)
    sent: list[BaseMessage] = []
    for i in range(40):
        sent.append(turn(i))
        try:
            await history.aadd_messages([sent[-1]])
        except ConnectionError:
            break
    else:
        raise AssertionError("no compaction failed: the test did not exercise the rewrite")
    assert history.archive.messages == []
    assert texts(store.messages) == texts(sent)
    await history.aadd_messages([turn(99)])
    assert digest_record(store.messages[0]) is not None
    assert_archived_at_most_once(history)


def test_a_store_that_stays_down_after_clear_loses_no_message() -> None:
    # clear() succeeds, then neither the rewrite nor the restore can write: the caller's
    # messages must survive somewhere, and the error must say where.
    store = FailsAfterClear(fail_after=2, stays_down=True)
    history = condensing(store)
    sent, error = write_until_failure(history, StoreError)
    message = str(error)
    assert "FailsAfterClear" in message
    assert "archive ArchiveChatMessageHistory at 0-" in message
    assert "\n" not in message
    assert isinstance(error.__context__, ConnectionError)
    assert_archived_at_most_once(history)
    assert set(texts(sent)) <= set(texts(history.archive.messages)) | set(texts(store.messages))
