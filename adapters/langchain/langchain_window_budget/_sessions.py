"""What an engine remembers of each conversation between its turns.

A checkpointer or a chat store hands a thread back as new objects every turn. Per
conversation the engine keeps the objects it saw last turn and their conversion, so that
equal new objects are replaced by those stand-ins and every identity cache downstream (the
conversion, the head fingerprints, the core's token ledger) hits: a turn costs what was
appended. Bounded by :data:`SESSIONS` conversations and :data:`SESSION_MESSAGES` messages.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from langchain_core.messages import BaseMessage, SystemMessage, convert_to_messages

from langchain_window_budget._convert import Converted, Converter
from langchain_window_budget._identity import MessageFields, message_fields
from window_budget.budget import KeyedCounts

__all__ = [
    "SESSIONS",
    "SESSION_MESSAGES",
    "Session",
    "Sessions",
    "ahead_name",
    "as_message_list",
    "conversation_key",
    "holds_objects",
]

SESSIONS: Final = 256
"""Conversations one engine remembers between their turns (the least recently used goes)."""

SESSION_MESSAGES: Final = 100_000
"""Messages all remembered conversations may hold together (the engine keeps the objects of
each one's last turn alive; past this the least recently used are forgotten first)."""


@dataclass(eq=False, slots=True)
class Session:
    """What the engine saw of one conversation on its last turn."""

    converter: Converter
    """Its conversion (the core objects its ledger knows by identity)."""
    seen: list[BaseMessage] = field(default_factory=list)
    """The messages it last converted (stand-ins for equal new objects next turn)."""
    seen_fields: MessageFields | None = None
    """:func:`message_fields` of ``seen``, when known."""
    chain_src: list[BaseMessage] = field(default_factory=list)
    """The messages its head fingerprints were taken of (remembered digests)."""
    chain_last: list[int] = field(default_factory=list)
    """Those fingerprints."""
    chain_pinned: int = 0
    """Leading system messages when they were taken."""
    counts: KeyedCounts | None = None
    """What the warm gate learned of its messages, by fingerprint (plain ints only)."""
    converted: bool = False
    """Whether ``converter`` holds a conversion (the full path ran since the last warm turn)."""


def conversation_key(messages: Sequence[Any]) -> Hashable:
    """The id of the first non-system message among the first few, else None."""
    for m in messages[:8]:
        if isinstance(m, SystemMessage):
            continue
        mid = getattr(m, "id", None)
        return ("id", mid) if isinstance(mid, str) else None
    return None


def ahead_name(
    stored_as: str | None, conversation: Hashable | None, messages: Sequence[BaseMessage]
) -> str:
    """The name a conversation's background digest is kept under (its store name if any).

    Without a conversation name, the id of its first message stands in (as for the engine's
    sessions); a wrong guess costs a digest, never a wrong one: each is checked by content.
    """
    if stored_as is not None:
        return stored_as
    if conversation is not None:
        return str(conversation)
    return f"\x00{conversation_key(messages)!r}"


def holds_objects(messages: Sequence[object], known: Sequence[object]) -> bool:
    """True when ``messages`` begins with ``known``'s very objects (or objects equal to them).

    Made for re-gating one list: when the last objects are the same, a list comparison
    finds its items identical by pointer without reading them, so the check costs one
    C-level pass over two arrays of pointers. New objects fail the first test at once.
    """
    k = len(known)
    if not k or len(messages) < k or messages[k - 1] is not known[-1]:
        return False
    if len(messages) == k and type(messages) is list and type(known) is list:
        return messages == known
    return list(messages[:k]) == known


_MESSAGE_TYPES: set[type] = set()
"""Message classes seen so far: a set lookup per message is much cheaper than pydantic's
``isinstance``, which matters when a long thread is re-gated every turn."""


def _is_message(m: object) -> bool:
    if isinstance(m, BaseMessage):
        _MESSAGE_TYPES.add(type(m))
        return True
    return False


def as_message_list(messages: Sequence[Any]) -> Sequence[BaseMessage]:
    """``messages`` itself when it holds only messages, else LangChain's conversion of it.

    Raises:
        TypeError: an item is neither a message nor something ``convert_to_messages``
            understands (a dict with ``role``/``content``, a ``(role, text)`` tuple, a str).

    """
    if isinstance(messages, str | bytes):
        raise TypeError(
            "pass a list of messages, not a single string; wrap it: "
            '[HumanMessage(text)] or [("user", text)]'
        )
    if _MESSAGE_TYPES.issuperset(map(type, messages)) or all(
        type(m) in _MESSAGE_TYPES or _is_message(m) for m in messages
    ):
        return messages
    try:
        return convert_to_messages(messages)
    except (ValueError, TypeError, NotImplementedError, KeyError) as exc:
        raise TypeError(
            f"cannot read these messages ({exc}); pass LangChain messages, dicts with "
            "'role' and 'content', or (role, text) tuples"
        ) from exc


# ------------------------------------------------------------------ LCEL


class Sessions:
    """The engine's per-conversation memory: sessions by key, least recently used first.

    ``make_converter`` builds a new conversation's converter (read at each new session,
    so a change of the engine's options applies to conversations met afterwards).
    """

    def __init__(self, make_converter: Callable[[], Converter]) -> None:
        self._make_converter = make_converter
        self.by_key: OrderedDict[Hashable, Session] = OrderedDict()
        """The sessions, the least recently used first."""
        self.lock = threading.Lock()
        """Held while a session is read or changed (one engine may serve several threads)."""
        self.reused_prefix = 0
        """How many messages of the last run were recognised as the previous run's, field
        for field, though they were new objects (for tests and benchmarks)."""

    def clear(self) -> None:
        """Forget every conversation."""
        with self.lock:
            self.by_key.clear()

    def get(self, messages: Sequence[Any], key: Hashable | None) -> Session:
        """The session of the conversation ``messages`` belongs to (created on first use).

        ``key`` names the conversation (the middleware passes the thread id); without it,
        the id of its first non-system message does (LangGraph and the chat stores give
        every message one), else all id-less conversations share one. A wrong guess costs
        time only: everything remembered is checked against the messages before use.
        Bounded: :data:`SESSIONS` conversations and :data:`SESSION_MESSAGES` messages,
        the least recently used forgotten first.
        """
        if key is None:
            key = conversation_key(messages)
        else:
            try:
                hash(key)
            except TypeError:
                raise TypeError(
                    "conversation must be hashable (a thread or session id), "
                    f"not {type(key).__name__}"
                ) from None
        with self.lock:
            sessions = self.by_key
            session = sessions.get(key)
            if session is None:
                session = sessions[key] = Session(self._make_converter())
            else:
                sessions.move_to_end(key)
            self.bound()
            return session

    def bound(self) -> None:
        """Forget the least recently used conversations past the bounds (lock held)."""
        sessions = self.by_key
        while len(sessions) > 1 and (
            len(sessions) > SESSIONS
            or sum(len(s.seen) + len(s.counts or ()) for s in sessions.values()) > SESSION_MESSAGES
        ):
            sessions.popitem(last=False)

    def message_list(self, messages: Sequence[Any], session: Session) -> Sequence[BaseMessage]:
        """:func:`as_message_list`, without reading a list the previous run already read."""
        seen = session.seen
        k = len(seen)
        if (
            type(messages) is list
            and holds_objects(messages, seen)
            and all(type(m) in _MESSAGE_TYPES or _is_message(m) for m in messages[k:])
        ):
            return messages
        return as_message_list(messages)

    def canonical(self, messages: Sequence[BaseMessage], session: Session) -> Sequence[BaseMessage]:
        """``messages``, with the previous run's objects in place of an equal prefix.

        A checkpointer or a store hands back the thread as new objects every turn. When
        they equal, field for field, the messages the previous run saw (C-level
        comparisons of their classes and field dicts, as in :func:`same_messages`; the
        stand-ins' dicts are kept from the turn before), the previous objects stand in for them, so
        every identity cache downstream (the conversion, the head fingerprints, the
        core's token ledger) hits and a turn costs what was appended. Equal fields
        convert alike, so the core cannot tell; the caller still gets its own objects
        back (results are mapped by position, see ``LangChainCondenser.run``).
        """
        with self.lock:
            last = session.seen
            k = len(last)
            canon: Sequence[BaseMessage] = messages
            fields = None
            if last:  # else a warm gate's count of this run stands (see ``_warm``)
                self.reused_prefix = 0
            if holds_objects(messages, last):
                # The previous run's very objects (the caller's list again, perhaps grown):
                # one comparison of pointers, nothing read from the messages themselves.
                if len(messages) == k:
                    return messages
                if session.seen_fields is not None:
                    grown = message_fields(messages[k:])
                    if grown is not None:
                        fields = (
                            session.seen_fields[0] + grown[0],
                            session.seen_fields[1] + grown[1],
                        )
            elif k and len(messages) >= k:
                mine = message_fields(messages)
                theirs = session.seen_fields or message_fields(last)
                if (
                    mine is not None
                    and theirs is not None
                    and mine[0][:k] == theirs[0]
                    and mine[1][:k] == theirs[1]
                ):
                    canon = [*last, *messages[k:]]
                    fields = (theirs[0] + mine[0][k:], theirs[1] + mine[1][k:])
                    self.reused_prefix = k
            # Only the stand-ins are kept, never a list the caller was given for one turn:
            # it is freed by whoever dropped it, not by this engine on the next turn.
            session.seen = list(canon)
            session.seen_fields = fields
            self.bound()
            return canon

    def convert(self, messages: Sequence[BaseMessage], session: Session) -> Converted:
        """``session``'s conversion of ``messages`` (its converter is a per-conversation cache)."""
        with self.lock:  # the converter is a per-conversation cache
            session.converted = True
            return session.converter.convert(messages)

    def cool(self, session: Session) -> None:
        """Drop what the full path keeps of ``session`` (lock held).

        Its stand-ins and conversion: a warm turn (``_warm``) keeps only the counts.
        """
        if session.seen or session.converted or session.chain_src:
            session.seen, session.seen_fields = [], None
            session.chain_src, session.chain_last = [], []
            session.converter = self._make_converter()
            session.converted = False
