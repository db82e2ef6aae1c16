"""The core's result mapped back onto the caller's LangChain messages (one digest message)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, cast

from langchain_core.messages import BaseMessage, HumanMessage

from langchain_window_budget._convert import Converted, mark_usage_stale
from langchain_window_budget._digest import build_digest, digest_record
from langchain_window_budget._result import LangChainResult
from langchain_window_budget._shorten import shortened_copy
from window_budget import bridge
from window_budget.contract import CondenseResult

__all__ = ["ArchiveFn", "map_back"]

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
