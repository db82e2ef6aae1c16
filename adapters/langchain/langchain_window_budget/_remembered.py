"""Remembered digests: a head summarized before is put back as its digest, not summarized again.

For callers that do not store the result (the LCEL transformer, ``condense_messages``): the
digest written for each head is remembered process-wide (``window_budget.bridge``), keyed
by running fingerprints of the head's messages, and a later transcript that starts with the
same head gets the digest in its place. Only what newly left the tail is then summarized.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence
from dataclasses import replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, FunctionMessage, ToolMessage

from langchain_window_budget._convert import chat_model_id
from langchain_window_budget._result import HeadView, LangChainResult
from langchain_window_budget._sessions import Session, holds_objects
from window_budget import bridge
from window_budget.budget import ToolShape
from window_budget.contract import BudgetPolicy
from window_budget.pipeline import blocked_cuts

__all__ = ["digest_seed", "head_view", "remember", "tool_shape"]


def tool_shape(message: BaseMessage) -> ToolShape:
    """What the core's tool pairing reads of ``message`` (see ``blocked_cuts``)."""
    if isinstance(message, AIMessage):
        return ToolShape(tuple(str(c.get("id")) for c in message.tool_calls))
    if isinstance(message, ToolMessage):
        return ToolShape(result=True, answers=str(message.tool_call_id))
    if isinstance(message, FunctionMessage):
        return ToolShape(result=True)
    return ToolShape()


def head_view(
    messages: Sequence[BaseMessage],
    force: bool,
    session: Session,
    seed: Hashable,
    lock: threading.Lock,
    canon: Sequence[BaseMessage] | None = None,
) -> HeadView:
    """The transcript with a remembered digest in place of its head, when one is known.

    ``canon`` is the engine's stand-in for ``messages`` (equal position by position; see
    ``Sessions.canonical``); the fingerprints are taken on it, the views built of both.
    ``seed`` names what makes two digests of one head interchangeable (the writer and the
    policy); ``lock`` guards ``session``.
    """
    canon = messages if canon is None else canon
    codec = session.converter.codec
    pinned = bridge.pinned_count(codec, canon)
    chain = _chain(codec, canon, pinned, session, seed, lock)
    hit = None if force else bridge.recall_digest(chain, seed)
    if hit is None:
        return HeadView(messages, pinned, chain, 0, None, canon=canon)
    length, digest = hit
    body = canon[pinned:]
    if blocked_cuts([tool_shape(m) for m in body])[length]:
        # The same head, but what follows answers a call in it: cutting there would
        # orphan a tool result. Summarize afresh.
        return HeadView(messages, pinned, chain, 0, None, canon=canon)
    view = [*messages[:pinned], digest, *messages[pinned + length :]]
    canon_view = view if canon is messages else [*canon[:pinned], digest, *body[length:]]
    return HeadView(
        view,
        pinned,
        chain,
        length,
        digest,
        list(messages[pinned : pinned + length]),
        canon=canon_view,
    )


def _chain(
    codec: Any,
    canon: Sequence[BaseMessage],
    pinned: int,
    session: Session,
    seed: Hashable,
    lock: threading.Lock,
) -> list[int]:
    """The head fingerprints of ``canon[pinned:]``, extending last call's when it only grew."""
    with lock:
        src, chain = session.chain_src, session.chain_last
        k = len(src)
        if (
            pinned == session.chain_pinned
            and len(chain) == k - pinned
            and holds_objects(canon, src)
        ):
            if len(canon) == k:
                return chain  # the same list again: nothing to fingerprint
            chain = bridge.head_chain(codec, canon[k:], seed, prev=chain)
        else:
            chain = bridge.head_chain(codec, canon[pinned:], seed)
        session.chain_src, session.chain_last, session.chain_pinned = list(canon), chain, pinned
        return chain


def remember(view: HeadView | None, out: LangChainResult, seed: Hashable) -> LangChainResult:
    """Remember the digest ``out`` wrote for its head; ``out`` in the caller's terms.

    When ``view`` put a remembered digest in, the originals it stood for are added to what
    ``out`` dropped, and ``out`` is marked ``reused``.
    """
    if view is None:
        return out
    reused = view.digest is not None
    dropped = out.dropped
    if reused and dropped and dropped[0] is view.digest:
        dropped = dropped[1:]  # the remembered digest stood for ``view.head``
    originals = len(view.head) + len(dropped)
    if out.digest is not None:
        bridge.remember_digest(view.chain, originals, out.digest, seed)
    if not reused:
        return out
    return replace(out, dropped=[*view.head, *dropped], reused=True)


def _writer_name(writer: object) -> str | None:
    """What names the digests' writer in the remembered digests' seed."""
    if writer is None:
        return None
    return chat_model_id(writer) or getattr(writer, "__qualname__", None) or type(writer).__name__


def digest_seed(
    model_id: str | None, writer: object, policy: BudgetPolicy, window: int, memory: object
) -> tuple[Hashable, ...]:
    """What makes two digests of one head interchangeable: the writer and the policy.

    And the memory store, whose key seals the digest.
    """
    store = None if memory is None else id(memory)
    return ("langchain", model_id, _writer_name(writer), repr(policy), window, store)
