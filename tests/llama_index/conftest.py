"""Fixtures for the LlamaIndex adapter: a scripted function-calling LLM that records every
request's size and fails when one exceeds its window."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    LLMMetadata,
    MessageRole,
    ToolCallBlock,
)
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms.mock import MockFunctionCallingLLM

from window_budget.budget import estimate_tokens
from window_budget.pipeline.summarize import CONDENSER_BRIEF

if TYPE_CHECKING:
    from llama_index.memory.window_budget import WindowBudgetMemory


@pytest.fixture(autouse=True)
def fresh_conversion_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with an empty process-wide conversion cache, so tests that count
    conversions do not depend on which tests ran before them."""
    from window_budget import bridge
    from window_budget.budget import ContentCache

    monkeypatch.setattr(bridge.codec, "CONVERSIONS", ContentCache())


@pytest.fixture(autouse=True)
def _no_retry_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A retried summary call does not wait here (the waits are tested in the bridge's tests)."""
    from window_budget.bridge import retry

    monkeypatch.setattr(retry, "RETRY_DELAYS", (0.0, 0.0))


class WindowExceeded(AssertionError):
    """A request to the scripted LLM was larger than its window."""


def request_tokens(messages: Sequence[ChatMessage]) -> int:
    from llama_index.memory.window_budget import to_core

    return estimate_tokens([to_core(m) for m in messages])


class ScriptedLLM(MockFunctionCallingLLM):
    """Answers chat turns, calls a tool when tools are offered, writes short digests.

    Every request is measured with the heuristic; one above ``window`` raises.
    ``fail_summaries`` makes every summary request raise (a failing summarizer): a
    ``RuntimeError``, or ``summary_error`` when given; ``flaky_summaries=n`` makes only the
    first ``n`` raise.
    ``react`` switches the answers to ReAct's text protocol.
    """

    window: int = 4096
    output: int = 256
    reply_words: int = 20
    react: bool = False
    fail_summaries: bool = False
    summary_error: Any = None
    flaky_summaries: int = 0

    _sizes: list[int] = PrivateAttr(default_factory=list)
    _summary_prompts: list[str] = PrivateAttr(default_factory=list)
    _ids: Any = PrivateAttr(default_factory=lambda: itertools.count())
    _calls: list[str] = PrivateAttr(default_factory=list)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            is_chat_model=True, **{k: v for k, v in kwargs.items() if k in ("callback_manager",)}
        )
        for k, v in kwargs.items():
            if k != "callback_manager":
                setattr(self, k, v)
        self.response_generator = self._respond

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.window,
            num_output=self.output,
            is_chat_model=True,
            is_function_calling_model=True,
            model_name="scripted",
        )

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        self._calls.append("chat")
        return ChatResponse(message=self._respond(messages, **kwargs))

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        self._calls.append("achat")
        return ChatResponse(message=self._respond(messages, **kwargs))

    @property
    def calls(self) -> list[str]:
        """Which entry point each chat request came through."""
        return self._calls

    @property
    def sizes(self) -> list[int]:
        return self._sizes

    @property
    def summary_prompts(self) -> list[str]:
        return self._summary_prompts

    def _respond(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        size = request_tokens(messages)
        if (
            messages
            and messages[0].role == MessageRole.SYSTEM
            and (messages[0].content or "").startswith(CONDENSER_BRIEF[:40])
        ):
            self._summary_prompts.append(messages[-1].content or "")
            if self.fail_summaries or len(self._summary_prompts) <= self.flaky_summaries:
                raise self.summary_error or RuntimeError("summarizer is down")
            n = len(self._summary_prompts)
            # The digest restates the latest ask it was shown, else keeps the carried digest's
            # last line, as a model merging it would: a reply that names no fact of the
            # folded turns is a failed summary.
            prompt = messages[-1].content or ""
            asks = re.findall(r"^» you: (.*)$", prompt, re.MULTILINE)
            carried = prompt.partition("<carried-digest>\n")[2].partition("\n</carried-digest>")[0]
            kept = [ln for ln in carried.splitlines() if ln.strip() and not ln.startswith("#")]
            plan = f"\n# Plan\n{(asks or kept)[-1]}" if asks or kept else ""
            return ChatMessage(
                role="assistant",
                content=f"# Objective\nkeep chatting (digest {n})\n# Status\nok (digest {n}){plan}",
            )
        self._sizes.append(size)
        if size > self.window:
            raise WindowExceeded(f"request of {size} tokens exceeds the {self.window} window")
        n = next(self._ids)
        words = " ".join(f"w{n}x{i}" for i in range(self.reply_words))
        last = messages[-1] if messages else None
        if self.react:
            if last is not None and "Observation:" in (last.content or ""):
                return ChatMessage(
                    role="assistant", content=f"Thought: I can answer now.\nAnswer: {words}"
                )
            action = json.dumps({"q": f"turn {n}"})
            return ChatMessage(
                role="assistant",
                content=(f"Thought: I need the tool.\nAction: lookup\nAction Input: {action}"),
            )
        if kwargs.get("tools") and last is not None and last.role == MessageRole.USER:
            name = kwargs["tools"][0].metadata.name
            return ChatMessage(
                role="assistant",
                blocks=[
                    ToolCallBlock(
                        tool_call_id=f"call-{n}", tool_name=name, tool_kwargs={"q": f"turn {n}"}
                    )
                ],
            )
        return ChatMessage(role="assistant", content=f"answer {n}: {words}")


@pytest.fixture
def scripted_llm() -> ScriptedLLM:
    return ScriptedLLM()


# ------------------------------------------------ conversations the tests put


def pairs_kept(view: Sequence[ChatMessage]) -> bool:
    """Every tool result in ``view`` follows the assistant message that made its call."""
    called: set[str] = set()
    for m in view:
        called.update(b.tool_call_id or "" for b in m.blocks if isinstance(b, ToolCallBlock))
        if m.role == MessageRole.TOOL and m.additional_kwargs.get("tool_call_id") not in called:
            return False
    return True


def user(i: int, words: int = 30) -> ChatMessage:
    return ChatMessage(role="user", content=f"question {i} " + "please " * words)


def bot(i: int, words: int = 30) -> ChatMessage:
    return ChatMessage(role="assistant", content=f"answer {i} " + "sure " * words)


def small_memory(llm: ScriptedLLM | None = None, **kw: object) -> WindowBudgetMemory:
    from llama_index.memory.window_budget import WindowBudgetMemory

    return WindowBudgetMemory.from_defaults(llm=llm or ScriptedLLM(), context_window=2000, **kw)


def fill(memory: WindowBudgetMemory, turns: int) -> None:
    for i in range(turns):
        memory.put(user(i))
        memory.put(bot(i))
