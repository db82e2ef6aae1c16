"""What the LLM is handed: views of the stored conversation that fit the token limit.

A view is ``[pinned system messages, digest (in the form ``digest_role`` says), tail]``,
the tail verbatim or shortened where it must be; when a caller's prefix leaves no space
for a digest, the largest verbatim suffix that fits (as ``ChatMemoryBuffer`` shows), and
when not even the newest message fits, the newest turn cut down. A view never exceeds the
limit, never opens on an assistant message or a tool result, and in the pair form never
puts two user messages side by side. What a view adds (the acknowledgement, the resumed
marker) is marked, so a view handed back to ``set`` is stored as the store held it.
Planning only: no I/O, and copies of the stored messages, never the messages themselves.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llama_index.core.base.llms.types import ChatMessage, MessageRole

from llama_index.memory.window_budget.building import DigestRole
from llama_index.memory.window_budget.conversation import copy_message
from llama_index.memory.window_budget.convert import (
    _TOOL_ROLES,
    RECORD_KEY,
    SYSTEM_ROLES,
    digest_covered,
    from_core_shortened,
    is_digest,
    split_pinned,
    to_core,
)
from window_budget import bridge
from window_budget.budget import estimate_message_tokens, estimate_tokens
from window_budget.contract import CondenseResult, TokenCounter
from window_budget.errors import BudgetError
from window_budget.messages import AgentMessage
from window_budget.pipeline import MASK_MARKER, ViewPlan, counted_head, plan_view

logger = logging.getLogger(__name__)

__all__ = [
    "ACK_PART",
    "RESUMED_PART",
    "InitialTokenCountError",
    "Pass",
    "ViewPlanner",
    "ack",
    "full_history",
    "initial_tokens",
    "resumed",
    "stored_form",
    "view_part",
]


class InitialTokenCountError(BudgetError, ValueError):
    """``initial_token_count`` is above the token limit.

    A ``ValueError``, as LlamaIndex's memories raise, and a ``BudgetError``, as everything
    that cannot fit in window-budget.
    """


def initial_tokens(initial_token_count: int, token_limit: int) -> int:
    """The caller's prefix size, checked against the memory's limit.

    Raises:
        InitialTokenCountError: it is above ``token_limit``.

    """
    extra = max(0, int(initial_token_count or 0))
    if extra > token_limit:
        raise InitialTokenCountError(
            f"initial_token_count {extra:,} exceeds the token limit {token_limit:,} "
            "(as in ChatMemoryBuffer); shorten the prefix messages or raise the window",
            needed=extra,
            available=token_limit,
        )
    return extra


ACK_TEXT = "Understood."
"""The assistant's acknowledgement of a ``digest_role="pair"`` digest."""
ACK_PART = "acknowledgement"
"""``additional_kwargs["window_budget"]["part"]`` of the acknowledgement."""
RESUMED_TEXT = "[conversation resumed — earlier turns are not shown]"
"""The user message put first when a view would not open with one."""
RESUMED_PART = "resumed"
"""``additional_kwargs["window_budget"]["part"]`` of the resumed marker."""


def ack() -> ChatMessage:
    """The assistant's acknowledgement that follows a ``digest_role="pair"`` digest.

    Marked as the digest's (``additional_kwargs["window_budget"]["part"]``), so a view
    handed back to ``set`` does not store it as a turn of the conversation.
    """
    return ChatMessage(
        role=MessageRole.ASSISTANT,
        content=ACK_TEXT,
        additional_kwargs={RECORD_KEY: {"part": ACK_PART}},
    )


def resumed() -> ChatMessage:
    """The user message put first when the view would not open with one (counted, marked)."""
    return ChatMessage(
        role=MessageRole.USER,
        content=RESUMED_TEXT,
        additional_kwargs={RECORD_KEY: {"part": RESUMED_PART}},
    )


def view_part(message: ChatMessage) -> str | None:
    """Which message a view added this is (``ACK_PART``, ``RESUMED_PART``), or None."""
    record = message.additional_kwargs.get(RECORD_KEY)
    part = record.get("part") if isinstance(record, dict) else None
    return part if isinstance(part, str) else None


def stored_form(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """Copies of ``messages`` (a view handed back to ``set``) as the store holds them.

    A digest is stored as the user message it always is there, whatever role the view gave
    it; the acknowledgement right after a digest and the resumed marker where a view puts
    it (first after the system messages, or right after a digest) are the view's own and
    are left out. Anywhere else such a message is kept, as any message the caller gives.
    """
    out: list[ChatMessage] = []
    after_digest = False
    opening = True  # nothing but system messages so far
    for m in messages:
        part = view_part(m)
        if part == ACK_PART and after_digest and m.role == MessageRole.ASSISTANT:
            after_digest = False
            continue
        if part == RESUMED_PART and (after_digest or opening) and m.role == MessageRole.USER:
            after_digest = opening = False
            continue
        copy = copy_message(m)
        after_digest = is_digest(copy)
        if after_digest:
            copy.role = MessageRole.USER
        opening = opening and copy.role in SYSTEM_ROLES and not after_digest
        out.append(copy)
    return out


def unmasked(messages: list[ChatMessage]) -> list[ChatMessage]:
    """``messages`` with each masked output's original put back in its placeholder's place.

    The original was archived when its output was masked; it is not listed there again.
    """

    def call_id(m: ChatMessage) -> object:
        return m.additional_kwargs.get("tool_call_id") if m.role in _TOOL_ROLES else None

    masked = {
        call_id(m)
        for m in messages
        if call_id(m) and m.content and m.content.startswith(MASK_MARKER)
    }
    originals: dict[object, ChatMessage] = {}
    for m in messages:
        cid = call_id(m)
        if cid in masked and cid not in originals and not (m.content or "").startswith(MASK_MARKER):
            originals[cid] = m
    out: list[ChatMessage] = []
    for m in messages:
        cid = call_id(m)
        if cid in originals:
            if m is not originals[cid] and (m.content or "").startswith(MASK_MARKER):
                out.append(originals.pop(cid))
        else:
            out.append(m)
    return out


def full_history(live: list[ChatMessage], archived: list[ChatMessage]) -> list[ChatMessage]:
    """Copies of the whole original conversation: pinned, archived, then live messages.

    A digest is left out only when the archive holds the originals it stands for, so
    this never returns fewer messages than the live store holds.
    """
    n = split_pinned(live)
    unclaimed = len(archived)
    rest: list[ChatMessage] = []
    for m in live[n:]:
        covered = digest_covered(m)
        if 0 < covered <= unclaimed:
            unclaimed -= covered  # its originals are in the archive
        else:
            rest.append(m)
    return [copy_message(m) for m in (*live[:n], *unmasked([*archived, *rest]))]


@dataclass(frozen=True, slots=True)
class Pass:
    """One compaction attempt on a snapshot of the store (no I/O)."""

    snapshot: list[ChatMessage]
    """The store as read."""
    cores: list[AgentMessage]
    """``snapshot`` converted (cached by identity), index for index."""
    pinned: int
    """How many leading system messages are pinned."""
    result: CondenseResult | None
    """What the core decided; None when the pinned part alone cannot fit."""
    extra: int = 0
    """Tokens the caller puts before the history (``initial_token_count``)."""
    prefix_fits: bool = True
    """False when ``result`` was computed without ``extra``, which did not fit."""

    @property
    def body(self) -> list[ChatMessage]:
        """The snapshot after the pinned system messages."""
        return self.snapshot[self.pinned :]


@dataclass(frozen=True, slots=True)
class ViewPlanner:
    """Builds the views of one memory, as its settings stand (one per call; no state)."""

    token_limit: int
    """What a view plus the caller's prefix may hold."""
    counter: TokenCounter | None
    """The memory's counter (None: the heuristic)."""
    count: Callable[[Sequence[ChatMessage]], int]
    """Counts messages with the memory's counter (through its conversion cache)."""
    digest_role: DigestRole
    """How the digest is handed over."""
    resumed_tokens: int
    """What the resumed marker costs."""
    ack_tokens: int
    """What the acknowledgement costs."""

    def pinned_tokens(
        self, snapshot: list[ChatMessage], cores: list[AgentMessage], n: int, extra: int
    ) -> int:
        """Tokens set aside before the body: pinned messages, the prefix, what a view adds."""
        # A history that does not open with a user message gets the resumed marker in
        # front of it (see view); in the pair form a digest followed by a user message gets
        # the acknowledgement. A view shows at most one of them: the larger is reserved.
        lead = 0
        if len(snapshot) > n:
            if snapshot[n].role != MessageRole.USER:
                lead = self.resumed_tokens
            if self.digest_role == "pair":
                lead = max(lead, self.ack_tokens)
        return estimate_tokens(counted_head(cores[:n]), self.counter) + lead + extra

    def view(self, p: Pass, digest: ChatMessage | None) -> list[ChatMessage]:
        """Copies of what the LLM should see: pinned, digest, tail (shortened where needed).

        When that does not fit with the caller's prefix, or the digest leaves room for
        fewer verbatim messages than the prefix would (see :meth:`squeezed`), the largest
        verbatim suffix that fits is handed over instead (see :meth:`suffix_view`).
        """
        view = self.digest_view(p, digest)
        if view is None or self.squeezed(p, view):
            return self.suffix_view(p)
        return view[0]

    def digest_view(
        self,
        p: Pass,
        digest: ChatMessage | None,
    ) -> tuple[list[ChatMessage], int, bool] | None:
        """``(view, verbatim kept, newest turn whole)``, or None when it does not fit."""
        result = p.result
        if result is None or not p.prefix_fits:
            return None
        pinned = [copy_message(m) for m in p.snapshot[: p.pinned]]
        # The bridge maps the result back (as for LangChain): each tail entry is the stored
        # message it stands for, or a copy carrying the core's shortened or masked text.
        body, cores = p.body, p.cores[p.pinned :]
        mapped = bridge.map_result(body, cores, result, copy=from_core_shortened)
        slots = mapped.slots
        kept = [body[s.source] for s in slots]
        short = {i for i, s in enumerate(slots) if s.kind != "kept"}
        tail = [m if i in short else copy_message(m) for i, m in enumerate(mapped.tail)]
        # Counted from the originals' cached cores (a copy converts to an equal core), the
        # shortened entries from their own copies: the view's count, without converting it.
        counter = self.counter
        kept_cores = [cores[s.source] for s in slots]
        tokens = estimate_tokens(counted_head(p.cores[: p.pinned]), counter) + sum(
            estimate_message_tokens(to_core(tail[i]) if i in short else core, counter)
            for i, core in enumerate(kept_cores)
        )
        if digest is None and tail and 0 not in short and is_digest(tail[0]):
            # The stored digest (no new one this time) is handed over in the same form.
            digest = tail.pop(0)
            tokens -= estimate_message_tokens(kept_cores[0], counter)
            kept, short = kept[1:], {i - 1 for i in short}
        head = self.show_digest(digest, bool(tail) and tail[0].role == MessageRole.USER)
        tokens += sum(estimate_message_tokens(to_core(m), counter) for m in head)
        if digest is None and tail and tail[0].role != MessageRole.USER:
            head = [resumed()]  # providers want a user message first
            tokens += self.resumed_tokens
        # The pair's acknowledgement is reserved in the gate (see pinned_tokens): a view
        # never leaves it out, which would put the digest and a user turn side by side.
        if tokens + p.extra > self.token_limit:
            return None
        last_user = max((i for i, m in enumerate(kept) if m.role == MessageRole.USER), default=None)
        whole = last_user is not None and all(i < last_user for i in short)
        return pinned + head + tail, len(kept) - len(short), whole

    def squeezed(self, p: Pass, view: tuple[list[ChatMessage], int, bool]) -> bool:
        """True when the digest crowds out verbatim messages that would fit without it.

        The digest view is kept whenever it holds the newest user turn whole; otherwise
        (the room beside the prefix has no space for a digest) it must keep at least as
        many verbatim messages as the largest verbatim suffix that fits, as
        ``ChatMemoryBuffer`` would show.
        """
        _, verbatim, whole = view
        return not whole and self.plan(p).crowds_out(verbatim)

    def squeezed_by_prefix(self, p: Pass, digest: ChatMessage | None) -> bool:
        """True when a compaction planned beside the caller's prefix must not be stored.

        The prefix left no space for a digest (see :meth:`squeezed`): the view will be
        the verbatim suffix, and the store is compacted as for the window alone rather
        than rewritten into that smallest shape.
        """
        if not p.extra or not p.prefix_fits or digest is None:
            return False
        view = self.digest_view(p, digest)
        return view is None or self.squeezed(p, view)

    def plan(self, p: Pass) -> ViewPlan:
        """The view without a digest, as the core plans it (see ``plan_view``)."""
        room = (
            self.token_limit
            - p.extra
            - estimate_tokens(counted_head(p.cores[: p.pinned]), self.counter)
        )
        return plan_view(
            p.cores[p.pinned :], room, counter=self.counter, resumed_tokens=self.resumed_tokens
        )

    def suffix_view(self, p: Pass) -> list[ChatMessage]:
        """Pinned messages and the largest verbatim suffix that fits (tool groups whole).

        What ``ChatMemoryBuffer`` shows, without ever opening on an assistant message or
        a tool result. When not even the newest message fits verbatim, the newest turn
        (its tool group whole) is shortened to fit, and the ``[conversation resumed …]``
        marker goes first when it does not open with a user message. Only the view is
        cut: the store keeps every message.

        Raises:
            BudgetError: not even the newest turn, cut down, fits beside the system
                messages and the prefix.

        """
        pinned = [copy_message(m) for m in p.snapshot[: p.pinned]]
        plan = self.plan(p)
        short = set(plan.shortened)
        shown = [
            from_core_shortened(m, plan.messages[i]) if i in short else copy_message(m)
            for i, m in enumerate(p.body[plan.start :])
        ]
        view = [*pinned, *([resumed()] if plan.resumed else []), *shown]
        if plan.suffix:
            return view
        total = self.count(view) + p.extra
        if total > self.token_limit and p.extra:
            return self.no_room(p, pinned, total)
        if total > self.token_limit:
            # The same promise as the core and the LangChain adapter: fits or BudgetError.
            # Nothing was lost: the store still holds every message.
            pinned_tokens = estimate_tokens(counted_head(p.cores[: p.pinned]), self.counter)
            raise BudgetError(
                f"the smallest view (the system messages, {pinned_tokens:,} tokens, and the "
                f"newest turn cut down) needs {total:,} tokens with a prefix of {p.extra:,}, "
                f"over the limit of {self.token_limit:,} — shorten the system prompt or "
                "prefix messages, or raise the window",
                needed=total,
                available=self.token_limit,
            )
        return view

    def show_digest(
        self,
        digest: ChatMessage | None,
        tail_opens_with_user: bool,
    ) -> list[ChatMessage]:
        """The messages that stand for ``digest`` in a view, in :attr:`digest_role`'s form.

        Each form keeps the first non-system message a user message and, when the tail
        opens with a user message, user and assistant messages alternating (``"user"``
        excepted, chosen knowingly). The digest record travels in every form.
        """
        if digest is None:
            return []
        shown = copy_message(digest)
        if self.digest_role == "system":
            shown.role = MessageRole.SYSTEM
            return [shown] if tail_opens_with_user else [shown, resumed()]
        if self.digest_role == "pair" and tail_opens_with_user:
            return [shown, ack()]
        return [shown]

    def no_room(self, p: Pass, pinned: list[ChatMessage], total: int) -> list[ChatMessage]:
        """The view when the caller's prefix leaves no room for the newest turn: none of it.

        As ``ChatMemoryBuffer`` (its tests: "the history should be empty"): the history
        is left out (the pinned system messages stay when they fit beside the prefix),
        the store keeps every message, and a warning names the numbers, so the caller
        learns why the LLM did not see the turn.
        """
        keep = pinned if pinned and self.count(pinned) + p.extra <= self.token_limit else []
        logger.warning(
            "window-budget: initial_token_count %s leaves no room under the token limit "
            "%s for the newest turn (the view would need %s tokens); returning %s, as "
            "ChatMemoryBuffer does — shorten the prefix messages or raise the limit",
            f"{p.extra:,}",
            f"{self.token_limit:,}",
            f"{total:,}",
            "the system messages only" if keep else "no message",
        )
        return keep
