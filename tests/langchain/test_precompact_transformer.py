"""Ahead-of-time compaction in the LCEL transformer: ``prompt | condense_messages(...) | model``.

A real LCEL chain (``ChatPromptTemplate`` → the transformer → langchain-core's
``GenericFakeChatModel``) driven with ``ainvoke``; the caller keeps the history, as a chain
without a chat store does. The summarizer is gated (``precompact_support``), so nothing
depends on timing. A turn *compacts* when the model is sent a digest it was not sent the
turn before (later turns carry the remembered one).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from uuid import UUID

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.load import dumps, loads
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import Runnable, RunnableLambda

from langchain_window_budget import (
    WindowBudgetRunnable,
    acondense_messages,
    condense_messages,
    is_digest,
)
from langchain_window_budget._lcel import config_conversation
from langchain_window_budget.condense import _shared_engine
from window_budget import BudgetPolicy
from window_budget.pipeline import AheadCompactor

from .precompact_support import GatedSummarizer, ask, assert_written_on_the_turn, digest_of

WINDOW = 8_000
POLICY = BudgetPolicy.for_window(WINDOW)
PROMPT = ChatPromptTemplate.from_messages(
    [("system", "You fix modules."), MessagesPlaceholder("history"), ("human", "{ask}")]
)


def replies() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=(AIMessage(f"ok {n}") for n in itertools.count()))


def transformer(summarizer: Any, **options: Any) -> WindowBudgetRunnable:
    runnable = condense_messages(
        model=replies(),
        context_window=WINDOW,
        summarizer=summarizer,
        **{"policy": POLICY, "precompact": 0.5, **options},
    )
    assert isinstance(runnable, WindowBudgetRunnable)
    return runnable


@dataclass
class Chat:
    """One conversation through ``PROMPT | runnable | record | model``; it keeps its history."""

    runnable: WindowBudgetRunnable
    thread: str | None = "t"
    offset: int = 0
    history: list[BaseMessage] = field(default_factory=list)
    sent: list[BaseMessage] = field(default_factory=list)
    """What the model was sent on the last turn."""
    digest: str | None = None
    """The digest the model was sent on the last turn."""

    def __post_init__(self) -> None:
        self.chain: Runnable[Any, Any] = PROMPT | self.runnable | RunnableLambda(self._record)
        self.chain = self.chain | replies()

    def _record(self, value: PromptValue) -> PromptValue:
        self.sent = value.to_messages()
        return value

    def config(self) -> dict[str, Any]:
        return {"configurable": {"thread_id": self.thread}} if self.thread else {}

    def ask(self, k: int) -> HumanMessage:
        return ask(self.offset + k)

    async def turn(self, k: int, *, head: BaseMessage | None = None) -> bool:
        """Run turn ``k`` (the first message replaced by ``head`` when given); True when the
        model was sent a new digest."""
        if head is not None:
            self.history[0] = head
        question = self.ask(k)
        values = {"history": self.history, "ask": question.content}
        reply = await self.chain.ainvoke(values, self.config())
        self.history += [question, reply]
        digests = [str(m.content) for m in self.sent if is_digest(m)]
        new = bool(digests) and digests[-1] != self.digest
        self.digest = digests[-1] if digests else None
        return new

    def crosses(self, k: int, head: BaseMessage | None = None) -> bool:
        """Whether turn ``k`` will cross the trigger (before any compaction of this chat)."""
        history = [head, *self.history[1:]] if head is not None else self.history
        messages = PROMPT.invoke({"history": history, "ask": self.ask(k).content}).to_messages()
        return condense_messages(messages, context_window=WINDOW, policy=POLICY) is not messages

    def ahead(self) -> AheadCompactor:
        ahead = self.runnable.engine.ahead
        assert ahead is not None
        return ahead

    async def turns_until(self, start: int, *, state: str) -> int:
        """Turns from ``start`` until the background digest is in ``state``; the next turn."""
        for k in range(start, start + 60):
            assert not await self.turn(k), "compacted before the background digest"
            if self.ahead().state(self.thread) == state:
                return k + 1
        raise AssertionError(f"no background digest in state {state!r}")

    async def compacting_turn(self, start: int) -> tuple[int, Sequence[BaseMessage]]:
        """Turns from ``start`` until one compacts; the next turn and what the model got."""
        for k in range(start, start + 60):
            if await self.turn(k):
                return k + 1, self.sent
        raise AssertionError("no turn compacted")


async def running(**options: Any) -> tuple[GatedSummarizer, Chat, int]:
    """A chat on thread "t" whose first background digest is held at its gate."""
    summarizer = GatedSummarizer(**options)
    summarizer.gate(0)
    chat = Chat(transformer(summarizer))
    return summarizer, chat, await chat.turns_until(0, state="running")


async def test_the_compacting_turn_uses_the_ready_digest_of_the_head_it_folds() -> None:
    summarizer, chat, k = await running()
    summarizer.gates[0].set()
    assert await chat.ahead().wait("t") == "ready"
    _, sent = await chat.compacting_turn(k)
    assert len(summarizer.seen) == 1  # the compacting turn made no summary call
    text, named, kept = digest_of(sent)
    assert "digest-0" in text
    assert named == summarizer.seen[0]  # the digest written for the head folded
    assert not named & kept
    assert named | kept == set(range(max(kept) + 1))
    await chat.runnable.aclose()


async def test_a_head_changed_on_the_compacting_turn_takes_the_synchronous_path() -> None:
    summarizer, chat, k = await running()
    summarizer.gates[0].set()
    assert await chat.ahead().wait("t") == "ready"
    changed = HumanMessage(str(ask(0).content).replace("please fix", "PLEASE FIX"))  # same size
    while not chat.crosses(k):
        assert not await chat.turn(k)
        assert chat.ahead().state("t") == "ready", "an under-budget turn replaced the digest"
        k += 1
    assert chat.crosses(k, changed)
    assert await chat.turn(k, head=changed)  # the head edited on the very turn that compacts
    assert_written_on_the_turn(summarizer, 1, chat.sent)
    assert "PLEASE FIX" in summarizer.prompts[1]  # the first call the turn made
    assert "digest-0" not in digest_of(chat.sent)[0]


async def test_a_cancelled_digest_is_not_used() -> None:
    summarizer, chat, k = await running()
    assert chat.ahead().cancel("t")
    assert await chat.ahead().wait("t") == "cancelled"
    assert summarizer.cancelled == [0]
    _, sent = await chat.compacting_turn(k)
    assert_written_on_the_turn(summarizer, 1, sent)


async def test_aclose_cancels_the_digest_being_written() -> None:
    summarizer, chat, _ = await running()
    await chat.runnable.aclose()
    assert summarizer.cancelled == [0]
    assert chat.ahead().state("t") == "none"


async def test_a_failed_background_digest_is_written_again_on_the_compacting_turn() -> None:
    summarizer, chat, k = await running(fail={0})
    summarizer.gates[0].set()
    assert await chat.ahead().wait("t") == "failed"
    _, sent = await chat.compacting_turn(k)
    assert_written_on_the_turn(summarizer, 1, sent)


async def test_two_conversations_named_by_their_config_each_use_their_own_digest() -> None:
    # Prompt-template messages carry no ids: only the config's thread_id tells them apart.
    summarizer = GatedSummarizer()
    runnable = transformer(summarizer)
    ahead = runnable.engine.ahead
    assert ahead is not None
    chats = {"a": Chat(runnable, "a"), "b": Chat(runnable, "b", offset=1000)}
    k = 0
    while ahead.state("a") == "none" or ahead.state("b") == "none":
        assert k < 60, "no background digest"
        for chat in chats.values():  # interleaved: each runs while the other's digest is kept
            assert not await chat.turn(k)
        k += 1
    assert await ahead.wait("a") == "ready"
    assert await ahead.wait("b") == "ready"
    assert len(summarizer.seen) == 2
    done: dict[str, Sequence[BaseMessage]] = {}
    while len(done) < 2:
        assert k < 120, "no compaction"
        for name in sorted(set(chats) - set(done)):
            if await chats[name].turn(k):
                done[name] = chats[name].sent
        k += 1
    assert len(summarizer.seen) == 2  # neither compacting turn waited for a summary
    for name, sent in done.items():
        _, named, kept = digest_of(sent)
        mine = range(chats[name].offset, chats[name].offset + 1000)
        assert named in summarizer.seen
        assert all(n in mine for n in named | kept)
        assert not named & kept


async def test_the_policy_precompact_ratio_is_honoured() -> None:
    summarizer = GatedSummarizer()
    summarizer.gate(0)
    policy = replace(POLICY, precompact_ratio=0.5)
    chat = Chat(transformer(summarizer, precompact=None, policy=policy))
    await chat.turns_until(0, state="running")
    await chat.runnable.aclose()


def test_invoke_stays_synchronous_and_starts_nothing() -> None:
    calls: list[int] = []

    def summarizer(request: list[BaseMessage]) -> str:
        calls.append(1)
        return "# Objective\nFix the modules under src/.\n# Plan\nGo on."

    runnable = transformer(summarizer)
    chat = Chat(runnable)
    for k in range(60):
        question = chat.ask(k)
        reply = chat.chain.invoke({"history": chat.history, "ask": question.content}, chat.config())
        chat.history += [question, reply]
        if any(is_digest(m) for m in chat.sent):
            break
    else:
        raise AssertionError("no turn compacted")
    assert chat.ahead().state("t") == "none"
    assert calls  # written on the compacting turn itself


@pytest.mark.filterwarnings("ignore::langchain_core._api.beta_decorator.LangChainBetaWarning")
def test_precompact_survives_serialization() -> None:
    runnable = WindowBudgetRunnable(context_window=WINDOW, precompact=0.5)
    loaded = loads(
        dumps(runnable),
        allowed_objects=[WindowBudgetRunnable],
        valid_namespaces=["langchain_window_budget"],
    )
    assert loaded.precompact == 0.5
    assert loaded.engine.ahead is not None


def test_precompact_must_sit_below_the_trigger() -> None:
    with pytest.raises(ValueError, match="precompact_ratio"):
        WindowBudgetRunnable(context_window=WINDOW, precompact=0.9)


@pytest.mark.parametrize(
    ("configurable", "name"),
    [
        ({"thread_id": "t", "session_id": "s"}, "t"),
        ({"session_id": "s", "conversation_id": "c"}, "s"),
        ({"conversation_id": 7}, "7"),
        ({"thread_id": UUID(int=1)}, str(UUID(int=1))),
        ({"thread_id": "", "session_id": ["not", "a", "name"], "user_id": "u"}, None),
        ({"thread_id": True}, None),
    ],
)
def test_the_config_names_the_conversation(configurable: dict[str, Any], name: str | None) -> None:
    assert config_conversation({"configurable": configurable}) == name
    assert config_conversation(None) is None


async def test_acondense_messages_keeps_a_digest_ahead_per_conversation() -> None:
    summarizer = GatedSummarizer()
    options: dict[str, Any] = {
        "context_window": WINDOW,
        "policy": POLICY,
        "summarizer": summarizer,
        "precompact": 0.5,
        "conversation": "x",
    }
    engine = _shared_engine(None, WINDOW, POLICY, None, summarizer, None, precompact=0.5)
    ahead = engine.ahead
    assert ahead is not None
    history: list[BaseMessage] = []
    k = 0
    while ahead.state("x") == "none":  # kept under the conversation's name
        assert k < 60, "no background digest"
        history += [ask(k), AIMessage("ok")]
        assert await acondense_messages(history, **options) is history
        k += 1
    assert await ahead.wait("x") == "ready"
    for step in range(k, k + 60):
        history += [ask(step), AIMessage("ok")]
        out = await acondense_messages(history, **options)
        if out is not history:
            break
    else:
        raise AssertionError("no call compacted")
    assert len(summarizer.seen) == 1  # the compacting call made no summary call
    _, named, _ = digest_of(out)
    assert named == summarizer.seen[0]
