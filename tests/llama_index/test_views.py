"""What chat engines and agents see: the digest's role, the view when the prefix leaves no
space for a digest, and ``get_all`` (the short form) against the full history."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.agent.workflow import FunctionAgent, ReActAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.chat_engine import CondensePlusContextChatEngine, SimpleChatEngine
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.tools import FunctionTool

from llama_index.memory.window_budget import RECORD_KEY, WindowBudgetMemory, is_digest
from window_budget.pipeline.summarize import CONDENSER_BRIEF

from .conftest import ScriptedLLM

pytestmark = pytest.mark.filterwarnings(
    "ignore::pydantic.warnings.PydanticDeprecationWarning",
    "ignore:is_running called from within a step:DeprecationWarning",
)

TURNS = 40


class ViewLLM(ScriptedLLM):
    """The scripted LLM, keeping every chat request (summary requests left out)."""

    _requests: list[list[ChatMessage]] = PrivateAttr(default_factory=list)

    def _respond(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        if not (messages and (messages[0].content or "").startswith(CONDENSER_BRIEF[:40])):
            self._requests.append([m.model_copy(deep=True) for m in messages])
        return super()._respond(messages, **kwargs)

    @property
    def requests(self) -> list[list[ChatMessage]]:
        return self._requests


def doubled_users(request: Sequence[ChatMessage]) -> int:
    """Places where two user messages follow each other (system messages aside)."""
    roles = [m.role for m in request if m.role not in (MessageRole.SYSTEM, MessageRole.DEVELOPER)]
    return sum(a == b == MessageRole.USER for a, b in itertools.pairwise(roles))


def digests_seen(llm: ViewLLM) -> list[ChatMessage]:
    return [m for r in llm.requests for m in r if is_digest(m)]


def lookup(q: str) -> str:
    """Look a fact up."""
    return f"facts about {q}: " + "detail " * 40


def run_simple(role: str) -> ViewLLM:
    llm = ViewLLM(window=2500)
    memory = WindowBudgetMemory.from_defaults(llm=llm, digest_role=role)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt="You are terse.")
    for i in range(TURNS):
        engine.chat(f"turn {i}: " + "tell me more " * 25)
    return llm


async def run_condense_plus_context(role: str) -> ViewLLM:
    llm = ViewLLM(window=4096)
    docs = [Document(text=f"Document {k}: " + "knowledge " * 30) for k in range(3)]
    index = VectorStoreIndex.from_documents(docs, embed_model=MockEmbedding(embed_dim=8))
    memory = WindowBudgetMemory.from_defaults(llm=llm, context_window=2048, digest_role=role)
    engine = CondensePlusContextChatEngine.from_defaults(
        index.as_retriever(similarity_top_k=1), llm=llm, memory=memory
    )
    for i in range(TURNS):  # async: the sync path leaves an event loop behind
        await engine.achat(f"turn {i}: " + "what about it " * 20)
    return llm


def digest_roles_ok(llm: ViewLLM, role: str) -> None:
    """The digest reached the LLM in ``role``'s form, its record with it, roles alternating."""
    with_digest = [r for r in llm.requests if any(is_digest(m) for m in r)]
    assert with_digest, "no digest reached the LLM"
    for request in with_digest:
        i = next(k for k, m in enumerate(request) if is_digest(m))
        assert RECORD_KEY in request[i].additional_kwargs  # metadata survives
        if role == "system":
            assert request[i].role == MessageRole.SYSTEM
        else:
            assert request[i].role == MessageRole.USER
            assert request[i + 1].role == MessageRole.ASSISTANT
    assert sum(doubled_users(r) for r in llm.requests) == 0


def test_the_default_role_is_the_pair() -> None:
    assert WindowBudgetMemory.from_defaults(context_window=2000).digest_role == "pair"


@pytest.mark.parametrize("role", ["pair", "system"])
def test_simple_chat_engine_views_alternate(role: str) -> None:
    digest_roles_ok(run_simple(role), role)


@pytest.mark.parametrize("role", ["pair", "system"])
async def test_condense_plus_context_views_alternate(role: str) -> None:
    digest_roles_ok(await run_condense_plus_context(role), role)


def test_user_role_hands_the_digest_over_as_a_plain_user_message() -> None:
    # The role chosen knowingly (and the form before digest_role existed): no acknowledgement
    # follows it, so where the cut lands before a user turn two user messages meet.
    llm = run_simple("user")
    digests = digests_seen(llm)
    assert digests
    assert all(m.role == MessageRole.USER for m in digests)
    for request in llm.requests:
        for k, m in enumerate(request[:-1]):
            if is_digest(m):
                assert (request[k + 1].content or "") != "Understood."


async def test_function_agent_views() -> None:
    llm = ViewLLM(window=4096)
    memory = WindowBudgetMemory.from_defaults(llm=llm)
    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(lookup)],
        llm=llm,
        system_prompt="Use the tool.",
        streaming=False,
    )
    for i in range(TURNS):
        await agent.run(user_msg=f"question {i}: " + "please look " * 20, memory=memory)
    digest_roles_ok(llm, "pair")
    for request in llm.requests:  # a tool result always follows its call
        for k, m in enumerate(request):
            if m.role == MessageRole.TOOL:
                assert (
                    any(isinstance(b, ToolCallBlock) for b in request[k - 1].blocks)
                    or request[k - 1].role == MessageRole.TOOL
                )


async def run_react(role: str) -> ViewLLM:
    llm = ViewLLM(window=4096, react=True)
    memory = WindowBudgetMemory.from_defaults(llm=llm, digest_role=role)
    agent = ReActAgent(tools=[FunctionTool.from_defaults(lookup)], llm=llm, streaming=False)
    for i in range(TURNS):
        await agent.run(user_msg=f"question {i}: " + "please think " * 20, memory=memory)
    assert llm.summary_prompts
    return llm


async def test_react_agent_views_keep_the_pair() -> None:
    digest_roles_ok(await run_react("pair"), "pair")


async def test_react_agent_drops_a_system_digest() -> None:
    # Why "system" is not the default: ReActAgent takes a leading system message as its
    # system prompt and does not send it, so the digest never reaches the model.
    llm = await run_react("system")
    assert not digests_seen(llm)


# ------------------------------------------------- no space for a digest (item 10)


def dialogue(turns: int) -> list[ChatMessage]:
    return [
        ChatMessage(role="user" if i % 2 == 0 else "assistant", content=f"msg {i} " + "word " * 25)
        for i in range(2 * turns)
    ]


def largest_verbatim_suffix(
    memory: WindowBudgetMemory, messages: list[ChatMessage], extra: int
) -> int:
    """How many newest messages ChatMemoryBuffer-style trimming keeps (user first)."""
    best = 0
    for k in range(1, len(messages) + 1):
        tail = messages[-k:]
        if (
            tail[0].role == MessageRole.USER
            and memory.count_tokens(tail) + extra <= memory.token_limit
        ):
            best = k
    return best


class CountingLLM(MockLLM):
    """MockLLM counting its chat calls (here, only summaries call it)."""

    calls: int = 0

    def chat(self, messages: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return super().chat(messages, **kwargs)


@pytest.mark.parametrize("extra", [450, 500, 540])
def test_a_prefix_that_leaves_no_room_for_a_digest(extra: int) -> None:
    llm = CountingLLM(max_tokens=20)
    memory = WindowBudgetMemory.from_defaults(llm=llm, context_window=1000)
    for m in dialogue(6):
        memory.put(m)
    stored = memory.get_all()
    fits = largest_verbatim_suffix(memory, stored, extra)
    assert fits >= 2
    view = memory.get(initial_token_count=extra)
    assert memory.count_tokens(view) + extra <= memory.token_limit
    verbatim = [m for m in view if any(m.content == s.content for s in stored)]
    assert len(verbatim) >= fits  # at least as well as ChatMemoryBuffer
    # The store is not rewritten into that smallest view, and no summary is paid for a
    # view that would not show it (the history alone is under the gate).
    assert [m.content for m in memory.get_all()] == [m.content for m in stored]
    assert llm.calls == 0


def test_a_smaller_prefix_still_gets_the_digest() -> None:
    memory = WindowBudgetMemory.from_defaults(llm=MockLLM(max_tokens=20), context_window=1000)
    for m in dialogue(6):
        memory.put(m)
    view = memory.get(initial_token_count=300)
    assert is_digest(view[0])
    assert memory.count_tokens(view) + 300 <= memory.token_limit


def test_no_synthetic_marker_over_budget() -> None:
    # The newest message cut down must fit; otherwise no history (never an over-budget view).
    memory = WindowBudgetMemory.from_defaults(context_window=1000)
    for m in dialogue(3):
        memory.put(m)
    for extra in range(560, memory.token_limit + 1, 7):
        view = memory.get(initial_token_count=extra)
        assert memory.count_tokens(view) + extra <= memory.token_limit


@settings(max_examples=25, deadline=None)
@given(
    turns=st.integers(1, 8),
    extra=st.integers(0, 600),
    tools=st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_views_fit_and_keep_tool_pairs(turns: int, extra: int, tools: list[bool]) -> None:
    memory = WindowBudgetMemory.from_defaults(llm=MockLLM(max_tokens=20), context_window=1000)
    for i in range(turns):
        memory.put(ChatMessage(role="user", content=f"q{i} " + "word " * 20))
        if tools[i]:
            memory.put(
                ChatMessage(
                    role="assistant",
                    blocks=[
                        ToolCallBlock(tool_call_id=f"c{i}", tool_name="f", tool_kwargs={"q": i})
                    ],
                )
            )
            memory.put(
                ChatMessage(
                    role="tool", content="result " * 20, additional_kwargs={"tool_call_id": f"c{i}"}
                )
            )
        memory.put(ChatMessage(role="assistant", content=f"a{i} " + "word " * 20))
    before = len(memory.get_all(include_archived=True))
    view = memory.get(initial_token_count=extra)  # [] when no turn fits beside the prefix
    assert memory.count_tokens(view) + extra <= memory.token_limit
    rest = [m for m in view if m.role != MessageRole.SYSTEM]
    assert not rest or rest[0].role == MessageRole.USER
    for k, m in enumerate(view):
        if m.role == MessageRole.TOOL:
            assert k > 0
            assert view[k - 1].role == MessageRole.ASSISTANT
    assert len(memory.get_all(include_archived=True)) == before  # nothing lost


# ---------------------------------------------------------------- get_all (item 14)


def test_get_all_is_the_short_form_and_chat_history_shows_it() -> None:
    llm = ScriptedLLM(window=2500)
    memory = WindowBudgetMemory.from_defaults(llm=llm)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    for i in range(30):
        engine.chat(f"turn {i}: " + "tell me more " * 25)
    short = memory.get_all()
    full = memory.get_all(include_archived=True)
    assert is_digest(short[0])
    assert [m.content for m in engine.chat_history] == [m.content for m in short]
    assert len(full) > len(short)
    assert sum(m.role == MessageRole.USER for m in full) == 30
    assert not any(is_digest(m) for m in full)


# ------------------------------------------------ the pair: alternation and round trips


def alternating(sizes: Sequence[int]) -> list[ChatMessage]:
    return [
        ChatMessage(role="user" if i % 2 == 0 else "assistant", content=f"m{i} " + "word " * n)
        for i, n in enumerate(sizes)
    ]


@settings(max_examples=40, deadline=None)
@given(
    window=st.integers(1_500, 4_000),
    sizes=st.lists(st.integers(1, 200), min_size=6, max_size=40),
    digest_words=st.integers(5, 150),
    extra=st.integers(0, 400),
)
def test_pair_views_never_put_two_user_messages_in_a_row(
    window: int, sizes: list[int], digest_words: int, extra: int
) -> None:
    # Before the acknowledgement was counted in the gate, a view within its size of the
    # limit dropped it: the digest, then a user turn (7 of 2,000 views of a 3,000-token
    # memory swept over prefixes).
    memory = WindowBudgetMemory.from_defaults(
        llm=MockLLM(max_tokens=digest_words), context_window=window
    )
    for m in alternating(sizes):
        memory.put(m)
    views = [memory.get(initial_token_count=extra)]
    # The budgets that leave the view as it stands about an acknowledgement's room.
    room = memory.token_limit - memory.count_tokens(memory.get())
    for near in range(max(0, room - 2), min(room + 16, memory.token_limit)):
        views.append(memory.get(initial_token_count=near))
    for view in views:
        assert doubled_users(view) == 0, [(m.role.value, (m.content or "")[:12]) for m in view]


def put_thirty(role: str) -> tuple[WindowBudgetMemory, list[ChatMessage]]:
    memory = WindowBudgetMemory.from_defaults(
        llm=MockLLM(max_tokens=20), context_window=1_200, digest_role=role
    )
    history = alternating([30] * 30)
    for m in history:
        memory.put(m)
    return memory, history


@pytest.mark.parametrize("role", ["pair", "system", "user"])
def test_set_of_a_view_stores_exactly_the_messages_put(role: str) -> None:
    # Before the acknowledgement was marked as the digest's, set(get()) stored it as a turn
    # of the conversation: 31 messages back for 30 put.
    memory, history = put_thirty(role)
    stored = memory.get_all()
    assert is_digest(stored[0])
    for _ in range(3):  # what a chat engine does every turn
        memory.set(memory.get())
    assert [m.model_dump() for m in memory.get_all()] == [m.model_dump() for m in stored]
    full = memory.get_all(include_archived=True)
    assert [m.content for m in full] == [m.content for m in history]


def test_the_acknowledgement_is_marked_as_the_digests() -> None:
    memory, _ = put_thirty("pair")
    view = memory.get()
    extra = 0
    while view[1].role != MessageRole.ASSISTANT or RECORD_KEY not in view[1].additional_kwargs:
        # The tail starts with a reply: no acknowledgement is needed. One more turn each try
        # moves the cut until it lands before a user turn.
        extra += 1
        assert extra < 12, "no view needed an acknowledgement"
        memory.put(ChatMessage(role=MessageRole.USER, content=f"more {extra} " + "w " * 30))
        view = memory.get()
    assert is_digest(view[0])
    ack = view[1]
    assert ack.role == MessageRole.ASSISTANT
    assert ack.additional_kwargs[RECORD_KEY] == {"part": "acknowledgement"}
    assert not is_digest(ack)
    # Only where the library puts it: the same message elsewhere is the user's to keep.
    memory.put(ack)
    assert memory.get_all()[-1].content == ack.content


def test_set_of_a_view_leaves_the_resumed_marker_out() -> None:
    memory = WindowBudgetMemory.from_defaults(context_window=2_000)
    memory.put(ChatMessage(role="system", content="rules"))
    memory.put(ChatMessage(role="assistant", content="hello, how can I help?"))
    view = memory.get()
    assert view[1].additional_kwargs[RECORD_KEY] == {"part": "resumed"}
    memory.set(view)
    assert [m.content for m in memory.get_all()] == ["rules", "hello, how can I help?"]
