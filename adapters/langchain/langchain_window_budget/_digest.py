"""The digest as LangChain carries it: a ``HumanMessage`` holding the bridge's sealed record.

The digest's text starts with the core's header; ``additional_kwargs["window_budget"]``
holds the record (see :func:`digest_record`; the LlamaIndex adapter writes the same record
under the same key). ``additional_kwargs`` was chosen over ``response_metadata`` because
LangChain's own ``SummarizationMiddleware`` marks its summaries there too, and chat-model
integrations do not forward unknown ``additional_kwargs`` keys of a human message to the
provider. Only a record the library sealed is read as a digest's.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import HumanMessage

from window_budget import bridge
from window_budget.contract import DigestAudit

__all__ = [
    "DIGEST_KEY",
    "build_digest",
    "digest_record",
    "is_digest",
    "register_node_name",
]

DIGEST_KEY = bridge.RECORD_KEY
"""Key under ``additional_kwargs`` that marks a window-budget digest and holds its record."""


def digest_record(message: object, *, key: bytes | None = None) -> dict[str, Any] | None:
    """The record a window-budget digest carries, or None for any other message.

    ``covered`` and ``kept`` count the messages it stands for and the turns kept with it;
    ``fallback`` marks the network-free digest; every other field of the core's
    ``DigestMessage`` travels too, with ``compactions``, ``archive`` (where the dropped
    head went) and, for a model-written digest, ``audit`` (``in_ledger``, ``checked``,
    ``found``, ``appended``, ``left_out``: the facts the model's text kept and those
    pinned back) from this adapter. ``key`` is the memory store's: only a record sealed with
    it (for this text) counts then; without it, see ``window_budget.digest``.
    """
    if not isinstance(message, HumanMessage):
        return None
    return bridge.read_digest_record(message.additional_kwargs, message.text, key=key)


_NODE_NAMES: set[str] = set()
"""Names of the graph nodes window-budget's middleware runs as (``<name>.before_model``)."""


def register_node_name(name: str) -> None:
    """Remember a middleware's name, so its nodes' stream output is recognised."""
    _NODE_NAMES.add(name)


def is_digest(
    message: object,
    metadata: Mapping[str, Any] | None = None,
    *,
    key: bytes | None = None,
) -> bool:
    """True for a digest this adapter wrote, or for anything window-budget streamed.

    Without ``metadata``: recognises the digest message (or chunk) by its record. With the
    metadata of a ``stream_mode="messages"`` item (``for chunk, metadata in
    agent.stream(..., stream_mode="messages")``) it also recognises what the middleware's
    own node streams beside the digest (the ``RemoveMessage`` of a state rewrite) and any
    token of a summary call (tagged ``window-budget``), so a UI skips all of it with one
    test: ``if is_digest(chunk, metadata): continue``.

    The same question as the core's :func:`window_budget.is_digest`, asked of LangChain
    messages and stream items. With a memory store, pass its ``key``
    (``LangGraphMemoryStore(store).key``): the digests are sealed with it.
    """
    if digest_record(message, key=key) is not None:
        return True
    if not metadata:
        return False
    node = metadata.get("langgraph_node")
    if isinstance(node, str) and node.partition(".")[0] in _NODE_NAMES:
        return True
    tags = metadata.get("tags")
    return isinstance(tags, list | tuple) and "window-budget" in tags


def build_digest(
    text: str,
    *,
    covered: int,
    kept: int,
    compactions: int,
    fallback: bool,
    archive: Mapping[str, Any] | None = None,
    source: object = None,
    audit: DigestAudit | None = None,
    key: bytes | None = None,
) -> HumanMessage:
    """The digest as LangChain carries it: a ``HumanMessage`` with the bridge's record.

    ``source`` is the core's digest (``Summary.message``): every field it has beyond the
    counts given here (a fact ledger, say) travels in the record too. ``audit`` (the check of a
    model-written digest against the fact ledger) is recorded under ``"audit"``. The record
    is sealed with ``key`` (the memory store's) when given.
    """
    digest = bridge.digest_of(
        text, source, covered_count=covered, kept_count=kept, fallback=fallback
    )
    extra: dict[str, Any] = {"compactions": compactions}
    if archive is not None:
        extra["archive"] = dict(archive)
    if audit is not None:
        extra["audit"] = dataclasses.asdict(audit)
    return HumanMessage(
        content=text,
        # ``lc_source``: LangChain's mark of a summary, so code that filters those (or
        # ``SummarizationMiddleware``'s own checks) sees ours as one too.
        additional_kwargs={
            DIGEST_KEY: bridge.digest_record(digest, key=key, **extra),
            "lc_source": "summarization",
        },
        id=f"window-budget-digest-{uuid.uuid4().hex}",
    )
