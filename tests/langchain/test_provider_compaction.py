"""Provider-side compaction through the LangChain adapter, on the shapes the real packages build.

The AIMessages come out of ``langchain-anthropic``'s and ``langchain-openai``'s own response
parsers, run on recorded raw API responses (no network, no key): a ``compaction`` content
block (Anthropic's server-side ``compact_20260112`` edit) and a ``compaction`` output item
(OpenAI's Responses API ``context_management``).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langchain_window_budget import (
    WindowBudgetMiddleware,
    condense_messages,
    digest_record,
)
from langchain_window_budget._convert import to_core
from window_budget import BudgetPolicy
from window_budget.messages import ProviderCompactionBlock
from window_budget.pipeline.summarize import CONDENSER_BRIEF

from .conftest import digest_model, provider_valid

anthropic = pytest.importorskip("langchain_anthropic")
openai_chat = pytest.importorskip("langchain_openai.chat_models.base")

SUMMARY = "Server summary: the user ports budget.py; test_io fails on Windows paths."
OLD = "pre-compaction-marker"


def anthropic_reply(call_id: str | None = None, text: str = "Resuming the port.") -> AIMessage:
    """What ``ChatAnthropic`` returns for a reply that compacted on the server."""
    from anthropic.types.beta import BetaMessage

    content: list[dict[str, Any]] = [
        {"type": "compaction", "content": SUMMARY, "signature": "c2ln"},
        {"type": "text", "text": text},
    ]
    if call_id is not None:
        content.append({"type": "tool_use", "id": call_id, "name": "lookup", "input": {"q": "x"}})
    raw = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-6",
        "content": content,
        "stop_reason": "tool_use" if call_id else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 900,
            "output_tokens": 60,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "iterations": [
                {
                    "type": "compaction",
                    "input_tokens": 150_412,
                    "output_tokens": 1_200,
                    "cache_read_input_tokens": 0,
                    "cache_creation_input_tokens": 0,
                },
                {
                    "type": "message",
                    "input_tokens": 900,
                    "output_tokens": 60,
                    "cache_read_input_tokens": 0,
                    "cache_creation_input_tokens": 0,
                },
            ],
        },
    }
    chat = anthropic.ChatAnthropic(model="claude-opus-4-6", api_key="sk-test")
    result = chat._format_output(BetaMessage.model_validate(raw))
    message = result.generations[0].message
    assert isinstance(message, AIMessage)
    return message


def openai_reply(text: str = "Continuing.") -> AIMessage:
    """What ``ChatOpenAI`` (Responses API) returns for a reply that compacted on the server."""
    from openai.types.responses import Response

    raw = {
        "id": "resp_01",
        "object": "response",
        "created_at": 1764300000,
        "model": "gpt-5.2",
        "status": "completed",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": [
            {"type": "compaction", "id": "cmp_01", "encrypted_content": "gAAAAABp" + "Z" * 3000},
            {
                "type": "message",
                "id": "msg_01",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            },
        ],
        "usage": {
            "input_tokens": 1_100,
            "output_tokens": 30,
            "total_tokens": 1_130,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }
    result = openai_chat._construct_lc_result_from_responses_api(Response.model_validate(raw))
    message = result.generations[0].message
    assert isinstance(message, AIMessage)
    return message


def history(turns: int, tag: str, size: int = 900) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(turns):
        out.append(HumanMessage(f"{tag} question {i} " + "q" * size, id=f"{tag}-h{i}"))
        out.append(AIMessage(f"{tag} answer {i} " + "a" * size, id=f"{tag}-a{i}"))
    return out


@pytest.mark.parametrize("make", [anthropic_reply, openai_reply], ids=["anthropic", "openai"])
def test_the_packages_shapes_become_one_provider_block(make: Any) -> None:
    reply = make()
    core = to_core(reply)
    blocks = [b for b in core.content if isinstance(b, ProviderCompactionBlock)]  # type: ignore[union-attr]
    assert len(blocks) == 1
    raw = next(b for b in reply.content if isinstance(b, dict) and b["type"] == "compaction")
    assert blocks[0].payload == raw


@pytest.mark.parametrize("make", [anthropic_reply, openai_reply], ids=["anthropic", "openai"])
def test_history_before_the_compaction_is_neither_counted_nor_folded(make: Any) -> None:
    # Far over an 8k window in all, but the provider dropped everything before its block.
    msgs = [*history(20, OLD), HumanMessage("keep going"), make(), HumanMessage("thanks")]
    before = copy.deepcopy(msgs)
    out = condense_messages(msgs, model=digest_model(), context_window=8_000)
    assert out is msgs
    assert msgs == before


@pytest.mark.parametrize("make", [anthropic_reply, openai_reply], ids=["anthropic", "openai"])
def test_a_digest_goes_after_the_compaction_and_the_head_is_the_callers_own(make: Any) -> None:
    reply = make()
    head = [SystemMessage("be brief"), *history(6, OLD), HumanMessage("keep going"), reply]
    msgs = [*head, *history(14, "new")]
    out = condense_messages(
        msgs,
        model=digest_model(),
        context_window=8_000,
        policy=BudgetPolicy(keep_recent=1_000, reserve_tokens=0),
    )
    assert out is not msgs
    assert all(a is b for a, b in zip(out, head, strict=False))
    assert len(out) > len(head)
    assert digest_record(out[len(head)]) is not None  # our digest, right after the block
    assert sum(1 for m in out if m is reply) == 1
    assert reply.content == make().content  # untouched, compaction block and all
    assert not any(OLD in m.text for m in out[len(head) :])


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"findings for {q}: " + "f" * 1500


class CompactingChatModel(BaseChatModel):
    """A fake tool-calling model whose server compacts once the request passes a threshold.

    The compacting reply is langchain-anthropic's own parse of a raw response carrying a
    ``compaction`` block; the requests after it are measured from that block on, as the
    API does.
    """

    threshold: int = 5_000
    window: int = 8_000
    compacted_at: int | None = None
    calls: int = 0
    requests: list[list[BaseMessage]] = []  # noqa: RUF012
    summary_prompts: list[str] = []  # noqa: RUF012

    @property
    def _llm_type(self) -> str:
        return "compacting-chat-model"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if isinstance(messages[0], SystemMessage) and messages[0].text == CONDENSER_BRIEF:
            if self.compacted_at is not None:  # ours, after the provider compacted
                self.summary_prompts.append(messages[-1].text)
            return ChatResult(generations=[ChatGeneration(message=AIMessage("# Objective\nport"))])
        self.requests.append(list(messages))
        self.calls += 1
        seen = _provider_view(messages)
        size = sum(len(m.text) for m in seen) // 4
        assert size <= self.window, f"request of ~{size} tokens over the window"
        last_is_tool = isinstance(messages[-1], ToolMessage)
        if self.compacted_at is None and size > self.threshold:
            self.compacted_at = self.calls
            msg = anthropic_reply(None if last_is_tool else f"cmp-call-{self.calls}")
        elif not last_is_tool:
            call = {"name": "lookup", "args": {"q": "x"}, "id": f"c{self.calls}"}
            msg = AIMessage("calling " + "p" * 40, tool_calls=[{**call, "type": "tool_call"}])
        else:
            msg = AIMessage("final answer " + "a" * 300)
        return ChatResult(generations=[ChatGeneration(message=msg)])


def _provider_view(messages: list[BaseMessage]) -> list[BaseMessage]:
    """What the API keeps: from the newest message carrying a compaction block on."""
    for i in range(len(messages) - 1, -1, -1):
        content = messages[i].content
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "compaction" for b in content
        ):
            return messages[i:]
    return messages


def test_an_agent_keeps_the_compaction_block_and_never_summarizes_before_it() -> None:
    model = CompactingChatModel(requests=[], summary_prompts=[])
    middleware = WindowBudgetMiddleware(
        model=model,
        context_window=model.window,
        policy=BudgetPolicy(keep_recent=1_500, reserve_tokens=0),
    )
    agent = create_agent(
        model, tools=[lookup], middleware=[middleware], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "compacting"}}
    for i in range(30):
        text = f"{OLD if model.compacted_at is None else 'task'} {i}: " + "x" * 600
        agent.invoke({"messages": [HumanMessage(text)]}, config)
    assert model.compacted_at is not None
    compacting = model.requests[model.compacted_at]  # the request after the block came back
    block = anthropic_reply().content[0]
    for request in model.requests[model.compacted_at :]:
        assert provider_valid(request)
        carriers = [m for m in request if isinstance(m.content, list) and block in m.content]
        assert len(carriers) == 1  # sent back on every later request, once, unchanged
    assert compacting
    # Our digests after it fold only what followed the block: never the turns before it.
    assert model.summary_prompts
    assert all(OLD not in prompt for prompt in model.summary_prompts)
    saved = agent.get_state(config).values["messages"]
    assert any(isinstance(m.content, list) and block in m.content for m in saved)
    assert any(OLD in m.text for m in saved)  # nothing of the caller's history was dropped


@pytest.mark.parametrize("make", [anthropic_reply, openai_reply], ids=["anthropic", "openai"])
def test_the_transformer_pins_the_compaction_too(make: Any) -> None:
    reply = make()
    head = [*history(4, OLD), HumanMessage("keep going"), reply]
    chain = condense_messages(
        model=digest_model(),
        context_window=8_000,
        policy=BudgetPolicy(keep_recent=1_000, reserve_tokens=0),
    )
    out = chain.invoke([*head, *history(14, "new")])
    assert all(a is b for a, b in zip(out, head, strict=False))
    assert digest_record(out[len(head)]) is not None
    assert not any(OLD in m.text for m in out[len(head) :])


def test_the_history_wrapper_keeps_the_block_and_folds_only_what_followed() -> None:
    from langchain_core.chat_history import InMemoryChatMessageHistory

    from langchain_window_budget import CondensingChatMessageHistory

    store = CondensingChatMessageHistory(
        InMemoryChatMessageHistory(),
        model=digest_model(),
        context_window=8_000,
        policy=BudgetPolicy(keep_recent=1_000, reserve_tokens=0),
    )
    reply = anthropic_reply()
    store.add_messages([*history(4, OLD), HumanMessage("keep going"), reply])
    for i in range(14):
        store.add_messages(history(1, f"new{i}"))
    kept = store.messages
    at = next(i for i, m in enumerate(kept) if m.content == reply.content)
    assert sum(1 for m in kept if m.content == reply.content) == 1
    assert sum(1 for m in kept[:at] if OLD in m.text) == 8  # the head, whole and in place
    assert digest_record(kept[at + 1]) is not None
