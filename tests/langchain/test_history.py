"""CondensingChatMessageHistory: compaction on write, stable reads, the archive."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from langchain_window_budget import CondensingChatMessageHistory, condense_messages, digest_record
from window_budget import BudgetPolicy
from window_budget.digest import SESSION_HEADER

from .conftest import RecordingChatModel, digest_model, request_tokens, tool_loop

SMALL = BudgetPolicy(keep_recent=1500, reserve_tokens=256)


def _history(**kw: object) -> CondensingChatMessageHistory:
    return CondensingChatMessageHistory(
        InMemoryChatMessageHistory(), model=digest_model(), context_window=4000, policy=SMALL, **kw
    )  # type: ignore[arg-type]


def test_compacts_on_write_and_archives_everything() -> None:
    history = _history()
    written: list[BaseMessage] = []
    for i in range(10):
        batch = tool_loop(3, start=i * 3)
        written += batch
        history.add_messages(batch)
    live = history.messages
    assert live[0].text.startswith(SESSION_HEADER)
    record = digest_record(live[0])
    assert record is not None
    archived = history.archive.messages
    # Every message ever written is in the live tail or the archive, by identity.
    everything = {id(m) for m in [*archived, *live]}
    assert all(id(m) in everything for m in written)
    start, end = record["archive"]["start"], record["archive"]["end"]
    assert end == len(archived)
    assert 0 <= start < end
    assert record["covered"] + len(live) - 1 == len(written)


def test_reads_are_stable_within_a_turn() -> None:
    history = _history()
    history.add_messages(tool_loop(2))
    first = history.messages
    assert history.messages is first
    history.add_messages(tool_loop(1, start=5))
    assert history.messages is not first


async def test_async_methods() -> None:
    history = _history()
    for i in range(10):
        await history.aadd_messages(tool_loop(3, start=i * 3))
    live = await history.aget_messages()
    assert live[0].text.startswith(SESSION_HEADER)
    assert await history.aget_messages() is live
    await history.aclear()
    assert await history.aget_messages() == []
    assert history.archive.messages  # clear() leaves the archive alone


def test_summarizer_failure_keeps_every_message() -> None:
    class Boom(GenericFakeChatModel):
        def _generate(self, *a, **k):  # type: ignore[no-untyped-def]
            raise RuntimeError("down")

    history = CondensingChatMessageHistory(
        InMemoryChatMessageHistory(),
        model=Boom(messages=iter([])),
        context_window=4000,
        policy=SMALL,
    )
    written: list[BaseMessage] = []
    for i in range(10):
        batch = tool_loop(3, start=i * 3)
        written += batch
        history.add_messages(batch)
    assert digest_record(history.messages[0])["fallback"] is True  # type: ignore[index]
    everything = {id(m) for m in [*history.archive.messages, *history.messages]}
    assert all(id(m) in everything for m in written)


@pytest.mark.slow
def test_lcel_chain_with_message_history_stays_in_window() -> None:
    window = 6000
    chat = RecordingChatModel(
        window=window, tool_rounds=0, reply_chars=1500, sizes=[], summary_calls=[]
    )
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "You are a careful assistant. " * 20),
            MessagesPlaceholder("history"),
            ("human", "{input}"),
        ]
    )
    system_tokens = request_tokens(prompt.invoke({"history": [], "input": ""}).to_messages())
    store = CondensingChatMessageHistory(
        InMemoryChatMessageHistory(),
        model=chat,
        context_window=window,
        policy=BudgetPolicy(keep_recent=2000, reserve_tokens=512),
        system_prompt_tokens=system_tokens,
    )
    # The transformer is the safety net for an oversized new input; the history persists.
    guard = condense_messages(
        model=chat, context_window=window, policy=BudgetPolicy(keep_recent=2000, reserve_tokens=512)
    )
    chain = RunnableWithMessageHistory(
        prompt | guard | chat,
        lambda _sid: store,
        input_messages_key="input",
        history_messages_key="history",
    )
    config = {"configurable": {"session_id": "s"}}
    for i in range(210):
        chain.invoke({"input": f"turn {i}: " + "u" * 600}, config=config)
    assert chat.calls == 210
    assert max(chat.sizes) <= window
    assert chat.summary_calls  # compaction happened
    assert len(store.archive.messages) + len(store.messages) - 1 >= 420


def test_fake_list_model_reply_is_reused_safely() -> None:
    model = GenericFakeChatModel(messages=itertools.cycle([AIMessage("# Objective\nx")]))
    history = CondensingChatMessageHistory(
        InMemoryChatMessageHistory(), model=model, context_window=4000, policy=SMALL
    )
    for i in range(12):
        history.add_messages(tool_loop(3, start=i * 3))
    assert sum(1 for m in history.messages if digest_record(m)) == 1


# ------------------------------------------------------- review regressions


def test_originals_of_shortened_messages_are_archived() -> None:
    # Review bug 4: a message kept only as a shortened copy lost its middle for good.
    history = CondensingChatMessageHistory(
        InMemoryChatMessageHistory(), model=digest_model(), context_window=8000
    )
    history.add_messages([HumanMessage("hello"), AIMessage("hi")])
    big = "UNIQUE-START " + "z" * 30000 + " UNIQUE-MID " + "z" * 30000 + " UNIQUE-END"
    history.add_messages(
        [
            AIMessage(
                "", tool_calls=[{"name": "read", "args": {}, "id": "c1", "type": "tool_call"}]
            ),
            ToolMessage(big, tool_call_id="c1"),
        ]
    )
    result = history.last_result
    assert result is not None
    assert result.core.shortened
    assert result.replaced
    assert all("UNIQUE-MID" not in m.text for m in history.messages)
    assert any(m.text == big for m in history.archive.messages)


class _FailingAfterClear(InMemoryChatMessageHistory):
    fail_after_clear: bool = False
    cleared: bool = False

    def clear(self) -> None:
        super().clear()
        self.cleared = True

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        if self.cleared and self.fail_after_clear:
            self.fail_after_clear = False  # the store comes back for the restore
            raise ConnectionError("db went away")
        super().add_messages(messages)

    async def aclear(self) -> None:
        self.clear()

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        self.add_messages(messages)


def _fill_until_failure(
    history: CondensingChatMessageHistory, live: _FailingAfterClear
) -> list[BaseMessage]:
    sent: list[BaseMessage] = []
    for i in range(40):
        message = HumanMessage(f"u{i} " + "x" * 700)
        sent.append(message)
        live.cleared = False
        live.fail_after_clear = True
        try:
            history.add_messages([message])
        except ConnectionError:
            return sent
    raise AssertionError("the history never compacted")


def test_failed_replace_restores_the_live_history() -> None:
    # Review bug 5: clear() then a failing add_messages() lost the live history.
    live = _FailingAfterClear()
    history = CondensingChatMessageHistory(live, model=digest_model(), context_window=4000)
    sent = _fill_until_failure(history, live)
    assert [m.text for m in live.messages] == [m.text for m in sent]
    stored = {m.text for m in live.messages} | {m.text for m in history.archive.messages}
    assert all(m.text in stored for m in sent)


async def test_failed_async_replace_restores_the_live_history() -> None:
    live = _FailingAfterClear()
    history = CondensingChatMessageHistory(live, model=digest_model(), context_window=4000)
    for i in range(40):
        message = HumanMessage(f"u{i} " + "x" * 700)
        live.cleared = False
        live.fail_after_clear = True
        try:
            await history.aadd_messages([message])
        except ConnectionError:
            break
    else:
        raise AssertionError("the history never compacted")
    assert len(live.messages) == i + 1
    assert live.messages[-1].text == message.text


async def test_concurrent_async_writes_do_not_duplicate_the_archive() -> None:
    # Review bug 9: concurrent turns each archived the same head.
    history = CondensingChatMessageHistory(
        InMemoryChatMessageHistory(), model=digest_model(), context_window=4000
    )
    sent = [HumanMessage(f"m{i} " + "x" * 700) for i in range(40)]
    for i in range(0, 40, 4):
        await asyncio.gather(*(history.aadd_messages([m]) for m in sent[i : i + 4]))
    texts = [
        m.text for m in [*history.messages, *history.archive.messages] if digest_record(m) is None
    ]
    assert sorted(texts) == sorted(m.text for m in sent)


def test_concurrent_threaded_writes_do_not_duplicate_the_archive() -> None:
    history = CondensingChatMessageHistory(
        InMemoryChatMessageHistory(), model=digest_model(), context_window=4000
    )
    sent = [HumanMessage(f"m{i} " + "x" * 700) for i in range(40)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda m: history.add_messages([m]), sent))
    texts = [
        m.text for m in [*history.messages, *history.archive.messages] if digest_record(m) is None
    ]
    assert sorted(texts) == sorted(m.text for m in sent)


def test_a_failing_archive_puts_the_live_history_back() -> None:
    # The head is archived after the live history was rewritten: an archive that then
    # fails must not leave the live history condensed with its head nowhere.
    class DownArchive(InMemoryChatMessageHistory):
        def add_messages(self, messages: Sequence[BaseMessage]) -> None:
            raise OSError("archive disk full")

    live = InMemoryChatMessageHistory()
    history = CondensingChatMessageHistory(
        live, model=digest_model(), context_window=4000, archive=DownArchive()
    )
    sent: list[BaseMessage] = []
    failure: OSError | None = None
    for i in range(40):
        sent.append(HumanMessage(f"u{i} " + "x" * 700))
        try:
            history.add_messages([sent[-1]])
        except OSError as exc:
            failure = exc
            break
    assert str(failure) == "archive disk full"
    assert [m.text for m in live.messages] == [m.text for m in sent]
    assert history.messages == live.messages
