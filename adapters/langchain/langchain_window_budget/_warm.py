"""The warm gate: a turn that does not fire is decided from fingerprints, nothing kept alive.

A checkpointer hands the thread back as new objects on every turn. Per conversation the
engine keeps, between turns, only what the core's :class:`~window_budget.budget.KeyedCounts`
keeps: per message fingerprint its estimate and what the gate reads of it, as plain ints
(nothing the cyclic garbage collector tracks, so a long thread costs no collection time).
A turn fingerprints every message (:func:`fingerprints`: a hash over every field the
conversion reads, about a microsecond each), converts and counts only the messages whose
fingerprint is new, and computes the gate's figure from the counts: the same figure, usage
anchor and decision the full path (convert, ledger, gate) reaches. When that decision is
"nothing to do", the turn ends there; otherwise the engine runs its full path.

Turns the full path takes instead (their decision needs more than counts): ``force``,
remembered digests (``remember_digests``), ahead-of-time compaction on ``arun``, a message
of a type other than ``HumanMessage``, ``AIMessage``, ``ToolMessage`` and ``SystemMessage``
(exactly those classes: no subclass, no ``RemoveMessage``, no dict or tuple), a provider's
compaction block anywhere in the thread, a counter for the system prompt other than the
condenser's, and every turn where the gate or the user's trigger fires.

Fingerprints are 64-bit hashes (Python's ``hash`` of a tuple of the fields, the containers
among them by their ``repr``): two different messages of one conversation that hash alike
would share a count; with 64 bits that is a 2**-64 event per pair, accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_window_budget._digest import digest_record
from langchain_window_budget._identity import META_KEYS
from langchain_window_budget._keep import UserSizes
from langchain_window_budget._result import LangChainResult
from langchain_window_budget._sessions import Session, Sessions
from window_budget.budget import KeyedCounts, estimate_message_tokens
from window_budget.contract import CondensePlan, CondenseResult, TokenCounter
from window_budget.pipeline import WindowCondenser, budget_limit

__all__ = ["WarmGate", "fingerprint", "fingerprints"]


def _human(m: Any) -> int:
    d = m.__dict__  # every declared field of a LangChain message: faster than attributes
    extra = d["additional_kwargs"]
    c = d["content"]  # a str, or a list of blocks (by its repr)
    return hash(
        (1, d["id"], c if type(c) is str else repr(c), d["name"], repr(extra) if extra else "")
    )


def _flat(d: Any) -> tuple[tuple[str, Any], ...] | str:
    """``d``'s items when it is a dict of str and int values, else its ``repr`` (slower).

    Exact: a bool or a float never takes the tuple form, where ``1``, ``1.0`` and ``True``
    would hash alike.
    """
    if type(d) is not dict:
        return repr(d)
    for v in d.values():
        kind = type(v)
        if kind is not str and kind is not int:
            return repr(d)
    return tuple(d.items())


def _ai(m: Any) -> int:
    d = m.__dict__
    extra, meta, calls = d["additional_kwargs"], d["response_metadata"], d["tool_calls"]
    bad, usage, c = d["invalid_tool_calls"], d["usage_metadata"], d["content"]
    return hash(
        (
            2,
            d["id"],
            c if type(c) is str else repr(c),
            d["name"],
            repr(extra) if extra else "",
            # What the conversion reads of a call: its id, name and arguments.
            tuple([(x.get("id"), x.get("name"), _flat(x.get("args"))) for x in calls])
            if calls
            else (),
            repr(bad) if bad else "",
            _flat(usage) if usage else (),
            repr([meta.get(k) for k in META_KEYS]) if meta else "",
        )
    )


def _tool(m: Any) -> int:
    d = m.__dict__
    c = d["content"]
    return hash(
        (3, d["id"], c if type(c) is str else repr(c), d["name"], d["tool_call_id"], d["status"])
    )


def _system(m: Any) -> int:
    d = m.__dict__
    extra, c = d["additional_kwargs"], d["content"]
    return hash(
        (4, d["id"], c if type(c) is str else repr(c), d["name"], repr(extra) if extra else "")
    )


_BY_TYPE: Final[dict[type, Callable[[Any], int]]] = {
    HumanMessage: _human,
    AIMessage: _ai,
    ToolMessage: _tool,
    SystemMessage: _system,
}


def fingerprint(message: object) -> int | None:
    """A 64-bit hash of everything ``to_core`` reads of ``message``, and its id.

    None for a message of another class (the full path converts those).
    """
    make = _BY_TYPE.get(type(message))
    return None if make is None else make(message)


def fingerprints(messages: Sequence[object]) -> list[int] | None:
    """:func:`fingerprint` of each message; None when one is of another class."""
    by_type = _BY_TYPE
    try:
        return [by_type[type(m)](m) for m in messages]
    except KeyError:
        return None


class WarmGate:
    """An engine's warm path: the gate's decision from fingerprints and learned counts.

    ``pinned_counter``: the counter leading system messages are estimated with (the
    engine's converter's); the body is estimated with the condenser's.
    """

    def __init__(
        self, condenser: WindowCondenser, sizes: UserSizes, pinned_counter: TokenCounter | None
    ) -> None:
        self._condenser = condenser
        self._sizes = sizes
        self._same_counter = pinned_counter is condenser.deps.counter
        self.converted = 0
        """Messages this gate converted (for tests and benchmarks)."""

    def figure(
        self,
        messages: Sequence[Any],
        session: Session,
        sessions: Sessions,
        extra_pinned_tokens: int,
    ) -> tuple[int, int, int] | None:
        """``(tokens, pinned tokens, messages recognised)``, as the full path's gate counts.

        None when this turn needs the full path (see the module docstring). Lock held.
        """
        if not self._same_counter:
            return None
        keys = fingerprints(messages)
        if keys is None:
            return None
        deps = self._condenser.deps
        model = deps.model
        assert model is not None
        counts = session.counts
        if counts is None:
            counts = session.counts = KeyedCounts()
        tokens, missing = counts.lookup(keys)  # what was appended, as a rule: at the end
        if missing:
            codec = session.converter.codec  # the engine's conversion, usage trusted
            cores = [codec.to_core(messages[i]) for i in missing]
            self.converted += len(cores)
            # Estimated directly: the estimate caches would keep the cores or their texts.
            estimates = [estimate_message_tokens(c, deps.counter) for c in cores]
            for i, core, tokens_i in zip(missing, cores, estimates, strict=True):
                counts.learn(
                    keys[i], core, tokens_i, model, _record_tag(messages[i], codec.record_key)
                )
                tokens[i] = tokens_i
        if len(counts) > 2 * len(keys) + 256:  # what the thread no longer holds
            counts.keep_only(keys)
        sessions.bound()
        if counts.holds_compaction(keys):
            return None
        p = 0
        while p < len(messages) and type(messages[p]) is SystemMessage:
            p += 1
        pinned = sum(tokens[:p]) + extra_pinned_tokens  # type: ignore[arg-type]
        body = keys[p:]
        # Usage up to the newest digest's kept turns is read untrusted (``_find_stale``).
        at, tag = counts.tags(body)
        figure = counts.context(
            body,
            model,
            pinned_tokens=pinned,
            trusted_from=at + tag if at >= 0 else 0,
            estimates=tokens[p:],  # type: ignore[arg-type]
        )
        return figure.context_tokens, pinned, len(keys) - len(missing)

    def run(
        self,
        messages: Sequence[Any],
        session: Session,
        sessions: Sessions,
        extra_pinned_tokens: int,
        own_objects: bool,
    ) -> LangChainResult | None:
        """The run's result when the gate does not fire (nothing to do); else None.

        ``own_objects=False``: the result holds no message (``messages`` is empty), so
        keeping it keeps nothing of the turn alive.
        """
        with sessions.lock:
            sessions.reused_prefix = 0
            got = self.figure(messages, session, sessions, extra_pinned_tokens)
            if got is None:
                return None
            tokens, pinned, sessions.reused_prefix = got
            condenser = self._condenser
            model = condenser.deps.model
            assert model is not None
            limit = budget_limit(model, condenser.policy, pinned)
            if tokens > limit or self._sizes.fired(messages, lambda: tokens):
                return None
            if session.converted:  # the full path ran: its ledger is not kept besides
                condenser.forget(session.converter.first_core)
            sessions.cool(session)  # nor its stand-ins
        result = CondenseResult(
            (), CondensePlan(0, (), ()), None, tokens, tokens, limit, "under-budget"
        )
        return LangChainResult(messages if own_objects else (), [], None, result)


def _record_tag(message: object, key: bytes | None) -> int:
    """1 + the kept count of a verified digest record (0: none), as ``_find_stale`` reads it."""
    if type(message) is not HumanMessage or not message.additional_kwargs:
        return 0
    record = digest_record(message, key=key)
    if record is None:
        return 0
    kept = record.get("kept")
    return 1 + (kept if isinstance(kept, int) and kept >= 0 else 0)
