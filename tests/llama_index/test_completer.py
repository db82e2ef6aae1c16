"""completers_from_llm: any LlamaIndex LLM as the core's completer pair, over the bridge."""

from __future__ import annotations

import asyncio

import pytest

from llama_index.memory.window_budget import completers_from_llm
from window_budget import Model, UserMessage
from window_budget.cancel import CancelledByToken, CancelToken
from window_budget.contract import CompleteOptions, Context
from window_budget.messages import message_text
from window_budget.pipeline.summarize import CONDENSER_BRIEF

from .conftest import ScriptedLLM

MODEL = Model("scripted", 4096)
CONTEXT = Context(CONDENSER_BRIEF, (UserMessage("<scrollback>» you: hi</scrollback>"),))


def test_sync_calls_chat_and_async_calls_achat_and_the_reply_is_read() -> None:
    llm = ScriptedLLM()
    complete, complete_sync = completers_from_llm(llm)
    sync = complete_sync(MODEL, CONTEXT)
    asynchronous = asyncio.run(complete(MODEL, CONTEXT))
    assert llm.calls == ["chat", "achat"]
    assert message_text(sync).startswith("# Objective\nkeep chatting (digest 1)")
    assert message_text(asynchronous).startswith("# Objective\nkeep chatting (digest 2)")
    assert sync.model == "scripted"
    assert llm.summary_prompts == ["<scrollback>» you: hi</scrollback>"] * 2


def test_a_cancelled_run_makes_no_llm_call() -> None:
    llm = ScriptedLLM()
    complete, complete_sync = completers_from_llm(llm)
    token = CancelToken()
    token.cancel("request aborted")
    options = CompleteOptions(signal=token)
    with pytest.raises(CancelledByToken):
        complete_sync(MODEL, CONTEXT, options)
    with pytest.raises(CancelledByToken):
        asyncio.run(complete(MODEL, CONTEXT, options))
    assert llm.calls == []
