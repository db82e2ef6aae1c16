"""make_completers: any chat model as the core's completer, tagged and capped."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from langchain_window_budget import make_completers, model_token_counter
from window_budget import Model, UserMessage
from window_budget.contract import CompleteOptions, Context
from window_budget.pipeline.summarize import SUMMARY_TAGS

MODEL = Model("fake", 8000)
CONTEXT = Context("brief", (UserMessage("summarize this"),))


class _Capped(GenericFakeChatModel):
    max_tokens: int | None = None
    seen: list[dict[str, Any]] = []  # noqa: RUF012 - a pydantic field

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        self.seen.append(kwargs)
        return super()._generate(messages, stop, run_manager, **kwargs)


class _Tags(BaseCallbackHandler):
    def __init__(self) -> None:
        self.tags: list[list[str]] = []
        self.metadata: list[dict[str, Any]] = []

    def on_chat_model_start(
        self,
        serialized,
        messages,
        *,
        tags=None,
        metadata=None,  # type: ignore[no-untyped-def]
        **kwargs,
    ):
        self.tags.append(list(tags or []))
        self.metadata.append(dict(metadata or {}))


def test_sync_and_async_reply_text_from_block_content() -> None:
    reply = AIMessage(
        content=[{"type": "text", "text": "# Objective"}, {"type": "text", "text": "\nship"}]
    )
    model = GenericFakeChatModel(messages=itertools.cycle([reply]))
    complete, complete_sync = make_completers(model)
    out = complete_sync(MODEL, CONTEXT, CompleteOptions(max_tokens=100))
    assert out.content[0].text == "# Objective\nship"  # type: ignore[union-attr]
    out = asyncio.run(complete(MODEL, CONTEXT, CompleteOptions(max_tokens=100)))
    assert out.model == "fake"


def test_max_tokens_passed_only_where_accepted() -> None:
    capped = _Capped(messages=itertools.cycle([AIMessage("x")]), seen=[])
    _, complete_sync = make_completers(capped)
    complete_sync(MODEL, CONTEXT, CompleteOptions(max_tokens=321))
    assert capped.seen[-1].get("max_tokens") == 321
    plain = GenericFakeChatModel(messages=itertools.cycle([AIMessage("x")]))
    _, complete_sync = make_completers(plain)
    complete_sync(MODEL, CONTEXT, CompleteOptions(max_tokens=321))  # no unknown kwarg sent


def test_summary_call_is_tagged_and_kept_out_of_streams() -> None:
    handler = _Tags()
    model = GenericFakeChatModel(messages=itertools.cycle([AIMessage("x")]), callbacks=[handler])
    complete, complete_sync = make_completers(model)
    complete_sync(MODEL, CONTEXT, CompleteOptions())
    asyncio.run(complete(MODEL, CONTEXT, CompleteOptions()))
    for tags, meta in zip(handler.tags, handler.metadata, strict=True):
        assert set(SUMMARY_TAGS) <= set(tags)
        assert "nostream" in tags
        assert "lc_internal_call" in meta


def test_model_token_counter() -> None:
    model = GenericFakeChatModel(messages=iter([]), custom_get_token_ids=lambda t: t.split())
    counter = model_token_counter(model)
    assert counter.count("hello world " * 50) > counter.count("hello")
