"""The core's result mapped back onto the caller's LangChain messages (one digest message).

And where the originals of kept messages go when a caller stores them shortened: the memory
store (:func:`keep_originals`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, cast

from langchain_core.messages import BaseMessage, HumanMessage

from langchain_window_budget._convert import Converted, mark_usage_stale, to_core
from langchain_window_budget._digest import build_digest, digest_record
from langchain_window_budget._result import LangChainResult
from langchain_window_budget._shorten import shortened_copy
from window_budget import bridge
from window_budget.contract import CondenseResult, MemoryStore
from window_budget.messages import message_to_dict

__all__ = ["ArchiveFn", "akeep_originals", "keep_originals", "map_back"]

ArchiveFn = Callable[[list[BaseMessage]], Mapping[str, Any] | None]
"""Called with the dropped messages before the digest is built; returns where they went."""


def map_back(
    messages: Sequence[BaseMessage],
    conv: Converted,
    result: CondenseResult,
    archive: ArchiveFn | None,
    *,
    key: bytes | None,
    unchanged: Sequence[BaseMessage] | None = None,
) -> LangChainResult:
    """``result`` (the core ran on ``conv.core``) in terms of ``messages``, the caller's own.

    ``unchanged``: what to hand back when nothing was done (``messages`` when None); ``key``
    seals the digest record.
    """
    if result.messages is conv.core:
        return LangChainResult(messages if unchanged is None else unchanged, [], None, result)
    # ``conv.origin`` says where each core message came from.
    natives = [messages[i] for i in conv.origin]

    def make_digest(mapped: bridge.Mapped[BaseMessage]) -> BaseMessage:
        summary = result.summary
        assert summary is not None
        dropped = mapped.dropped
        covered, compactions = bridge.head_counts(digest_record(m, key=key) for m in dropped)
        where = archive(dropped) if archive is not None else None
        return build_digest(
            summary.text,
            covered=covered,
            kept=len(mapped.tail),
            compactions=compactions,
            fallback=summary.fallback,
            archive=where,
            source=summary.message,
            audit=summary.audit,
            key=key,
        )

    mapped = bridge.map_result(
        natives,
        conv.core,
        result,
        copy=partial(shortened_copy, key=key),
        make_digest=make_digest,
    )
    out = mapped.messages
    if mapped.digest is None:
        # No digest records how many kept replies predate this run: mark their usage
        # figures (they measured the longer list) so no later gate anchors on them.
        out = [mark_usage_stale(m) for m in out]
        if archive is not None and mapped.dropped:
            archive(mapped.dropped)
    digest = cast(HumanMessage | None, mapped.digest)
    out_list: list[BaseMessage] = [*messages[: conv.pinned], *out]
    return LangChainResult(out_list, mapped.dropped, digest, result, mapped.replaced)


def keep_originals(
    memory: MemoryStore | None, conversation: str | None, originals: Sequence[BaseMessage]
) -> None:
    """File in ``memory`` the originals of kept messages a stored result holds shortened.

    A caller that stores the result (the middleware's thread, the chat history) keeps only
    the shortened copy; the original goes after what the store holds, so ``recall`` gives it
    back word for word and the next compaction numbers its originals after it.
    """
    if memory is None or conversation is None or not originals:
        return
    kept = [message_to_dict(to_core(m)) for m in originals]
    memory.archive(conversation, memory.archived(conversation), kept)


async def akeep_originals(
    memory: MemoryStore | None, conversation: str | None, originals: Sequence[BaseMessage]
) -> None:
    """The async twin of :func:`keep_originals`: an async-only store is called from a thread."""
    if originals and getattr(memory, "async_only", False):
        await asyncio.to_thread(keep_originals, memory, conversation, originals)
    else:
        keep_originals(memory, conversation, originals)
