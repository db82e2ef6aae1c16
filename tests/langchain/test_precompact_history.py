"""Ahead-of-time compaction in the chat-history wrapper, under ``RunnableWithMessageHistory``.

A real ``RunnableWithMessageHistory`` over ``ChatPromptTemplate | GenericFakeChatModel``,
driven with ``ainvoke``; its factory builds a :class:`CondensingChatMessageHistory` over an
``InMemoryChatMessageHistory`` per request, as such factories do, so the background digest
must outlive the wrapper that started it. The summarizer is gated (``precompact_support``),
so nothing depends on timing. A turn *compacts* when the store holds a digest it did not
hold the turn before.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from langchain_window_budget import CondensingChatMessageHistory, condense_messages, is_digest
from window_budget import BudgetPolicy

from .precompact_support import GatedSummarizer, ask, assert_written_on_the_turn, digest_of

WINDOW = 8_000
POLICY = BudgetPolicy.for_window(WINDOW)
PROMPT = ChatPromptTemplate.from_messages(
    [("system", "You fix modules."), MessagesPlaceholder("history"), ("human", "{ask}")]
)


@dataclass
class Chats:
    """A ``RunnableWithMessageHistory`` whose sessions live in ``stores``."""

    summarizer: Any
    options: dict[str, Any] = field(default_factory=dict)
    stores: dict[str, InMemoryChatMessageHistory] = field(default_factory=dict)
    digests: dict[str, str | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.model = GenericFakeChatModel(messages=(AIMessage("ok") for _ in itertools.count()))
        self.chain = RunnableWithMessageHistory(
            PROMPT | self.model,  # type: ignore[arg-type]
            self.history,
            input_messages_key="ask",
            history_messages_key="history",
        )

    def history(self, session_id: str) -> CondensingChatMessageHistory:
        """The factory: a new wrapper per request, over the session's store."""
        return CondensingChatMessageHistory(
            self.stores.setdefault(session_id, InMemoryChatMessageHistory()),
            model=self.model,
            context_window=WINDOW,
            summarizer=self.summarizer,
            session_id=session_id,
            **{"policy": POLICY, "precompact": 0.5, **self.options},
        )

    def messages(self, session: str) -> list[BaseMessage]:
        return list(self.stores[session].messages)

    async def turn(self, session: str, k: int) -> bool:
        """Run turn ``k`` of ``session``; True when the store now holds a new digest."""
        config = {"configurable": {"session_id": session}}
        await self.chain.ainvoke({"ask": ask(k).content}, config)
        digests = [str(m.content) for m in self.messages(session) if is_digest(m)]
        digest = digests[-1] if digests else None
        new = digest is not None and digest != self.digests.get(session)
        self.digests[session] = digest
        return new

    def crosses(self, session: str, k: int, head: BaseMessage | None = None) -> bool:
        """Whether turn ``k``'s write will cross the trigger (before any compaction)."""
        stored = self.messages(session)
        if head is not None:
            stored[0] = head
        written = [*stored, ask(k), AIMessage("ok")]
        return condense_messages(written, context_window=WINDOW, policy=POLICY) is not written

    async def turns_until(self, session: str, start: int, *, state: str) -> int:
        """Turns from ``start`` until the session's background digest is in ``state``."""
        for k in range(start, start + 60):
            assert not await self.turn(session, k), "compacted before the background digest"
            if self.history(session).ahead_state() == state:
                return k + 1
        raise AssertionError(f"no background digest in state {state!r}")

    async def compacting_turn(self, session: str, start: int) -> Sequence[BaseMessage]:
        """Turns from ``start`` until one compacts; what the store then holds."""
        for k in range(start, start + 60):
            if await self.turn(session, k):
                return self.messages(session)
        raise AssertionError("no turn compacted")


async def running(**options: Any) -> tuple[GatedSummarizer, Chats, int]:
    """Session "s" with its first background digest held at its gate; the next turn."""
    summarizer = GatedSummarizer(**options)
    summarizer.gate(0)
    chats = Chats(summarizer)
    return summarizer, chats, await chats.turns_until("s", 0, state="running")


async def test_the_compacting_write_uses_the_ready_digest_of_the_head_it_folds() -> None:
    summarizer, chats, k = await running()
    summarizer.gates[0].set()
    assert await chats.history("s").await_ahead() == "ready"
    stored = await chats.compacting_turn("s", k)
    assert len(summarizer.seen) == 1  # the compacting write made no summary call
    text, named, kept = digest_of(stored)
    assert "digest-0" in text
    assert named == summarizer.seen[0]  # the digest written for the head folded
    assert not named & kept
    assert named | kept == set(range(max(kept) + 1))
    await chats.history("s").aclose()


async def test_a_head_changed_before_the_compacting_write_takes_the_synchronous_path() -> None:
    summarizer, chats, k = await running()
    summarizer.gates[0].set()
    assert await chats.history("s").await_ahead() == "ready"
    changed = HumanMessage(str(ask(0).content).replace("please fix", "PLEASE FIX"))  # same size
    while not chats.crosses("s", k):
        assert not await chats.turn("s", k)
        assert chats.history("s").ahead_state() == "ready", "a write replaced the digest"
        k += 1
    assert chats.crosses("s", k, changed)
    chats.stores["s"].messages[0] = changed  # edited in the store, then the turn that compacts
    assert await chats.turn("s", k)
    assert_written_on_the_turn(summarizer, 1, chats.messages("s"))
    assert "PLEASE FIX" in summarizer.prompts[1]  # the first call the write made
    assert "digest-0" not in digest_of(chats.messages("s"))[0]


async def test_a_cancelled_digest_is_not_used() -> None:
    summarizer, chats, k = await running()
    assert chats.history("s").cancel_ahead()
    assert await chats.history("s").await_ahead() == "cancelled"
    assert summarizer.cancelled == [0]
    assert_written_on_the_turn(summarizer, 1, await chats.compacting_turn("s", k))


async def test_aclose_cancels_the_sessions_digest_being_written() -> None:
    summarizer, chats, _ = await running()
    await chats.history("s").aclose()
    assert summarizer.cancelled == [0]
    assert chats.history("s").ahead_state() == "cancelled"


async def test_a_failed_background_digest_is_written_again_on_the_compacting_write() -> None:
    summarizer, chats, k = await running(fail={0})
    summarizer.gates[0].set()
    assert await chats.history("s").await_ahead() == "failed"
    assert_written_on_the_turn(summarizer, 1, await chats.compacting_turn("s", k))


async def test_two_sessions_each_use_their_own_digest() -> None:
    summarizer = GatedSummarizer()
    chats = Chats(summarizer)
    offset = {"a": 0, "b": 1000}
    k = 0
    while "none" in (chats.history("a").ahead_state(), chats.history("b").ahead_state()):
        assert k < 60, "no background digest"
        for session in offset:  # interleaved: each runs while the other's digest is kept
            assert not await chats.turn(session, offset[session] + k)
        k += 1
    assert await chats.history("a").await_ahead() == "ready"
    assert await chats.history("b").await_ahead() == "ready"
    assert len(summarizer.seen) == 2
    done: dict[str, list[BaseMessage]] = {}
    while len(done) < 2:
        assert k < 120, "no compaction"
        for session in sorted(set(offset) - set(done)):
            if await chats.turn(session, offset[session] + k):
                done[session] = chats.messages(session)
        k += 1
    assert len(summarizer.seen) == 2  # neither compacting write waited for a summary
    for session, stored in done.items():
        _, named, kept = digest_of(stored)
        mine = range(offset[session], offset[session] + 1000)
        assert named in summarizer.seen
        assert all(n in mine for n in named | kept)
        assert not named & kept


async def test_the_policy_precompact_ratio_is_honoured() -> None:
    summarizer = GatedSummarizer()
    summarizer.gate(0)
    policy = replace(POLICY, precompact_ratio=0.5)
    chats = Chats(summarizer, {"precompact": None, "policy": policy})
    await chats.turns_until("s", 0, state="running")
    await chats.history("s").aclose()


def test_add_messages_stays_synchronous_and_starts_nothing() -> None:
    calls: list[int] = []

    def summarizer(request: list[BaseMessage]) -> str:
        calls.append(1)
        return "# Objective\nFix the modules under src/.\n# Plan\nGo on."

    chats = Chats(summarizer)
    for k in range(60):
        chats.chain.invoke({"ask": ask(k).content}, {"configurable": {"session_id": "s"}})
        if any(is_digest(m) for m in chats.messages("s")):
            break
    else:
        raise AssertionError("no turn compacted")
    assert chats.history("s").ahead_state() == "none"
    assert calls  # written on the compacting write itself


def test_without_precompact_nothing_is_kept_ahead() -> None:
    history = CondensingChatMessageHistory(
        InMemoryChatMessageHistory(), context_window=WINDOW, policy=POLICY
    )
    assert history.ahead_state() == "none"
    assert not history.cancel_ahead()
