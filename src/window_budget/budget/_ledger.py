"""The incremental view of a growing transcript: prefix sums, tool groups and the usage anchor.

Agents and chat memories re-check the same transcript after every message. The ledger
remembers what it last saw; when the next transcript starts with the same message
objects it only processes the new ones, so a re-check costs the appended messages,
not the history.
"""

from __future__ import annotations

from collections.abc import Sequence

from window_budget.budget._anchor import anchor_usage, same_model, usage_is_plausible
from window_budget.budget._cache import cached_estimates
from window_budget.budget._groups import ToolGroups
from window_budget.contract import Model, TokenCounter, TokenEstimate
from window_budget.digest import is_digest
from window_budget.errors import MessageError
from window_budget.messages import (
    KNOWN_MESSAGE_TYPES,
    AgentMessage,
    AssistantMessage,
)

__all__ = ["TokenLedger"]


class TokenLedger:
    """Incremental prefix sums, tool-group boundaries and usage anchor for one transcript.

    When the transcript passed in starts with the message objects seen last time
    (compared by identity, at C speed), only the new messages are processed; any other
    change reprocesses from the first difference. When it is the *same list object* as
    last time, grown by appends, only its first and last known items are checked, so a
    re-check costs the appended messages alone; after replacing items of a list in place
    (rather than appending), pass a new list.

    >>> from window_budget import UserMessage
    >>> ledger = TokenLedger()
    >>> history = [UserMessage("hello")]
    >>> ledger.total(history)
    6
    >>> history.append(UserMessage("again"))
    >>> ledger.total(history)   # only the second message is estimated
    12
    """

    __slots__ = (
        "_counter",
        "_digest_at",
        "_groups",
        "_last_digest",
        "_last_usage",
        "_messages",
        "_prefix",
        "_source",
        "estimated",
    )

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self._counter = counter
        self._messages: list[AgentMessage] = []
        self._prefix: list[int] = [0]
        self._source: Sequence[AgentMessage] | None = None
        self._reset_structure()
        self.estimated = 0
        """How many message estimates this ledger has computed (for tests and benchmarks)."""

    def _reset_structure(self) -> None:
        self._groups = ToolGroups()
        self._last_usage = -1
        self._last_digest = -1
        self._digest_at = 0

    @property
    def counter(self) -> TokenCounter | None:
        """The counter in use (None is the heuristic)."""
        return self._counter

    def _index(self, j: int, msg: AgentMessage) -> None:
        """Note the usage anchor and the last digest (tool groups are indexed by the caller)."""
        if isinstance(msg, AssistantMessage) and anchor_usage(msg) is not None:
            self._last_usage = j  # failed replies' figures never anchor
        if is_digest(msg):
            # Usage figures on the turns kept with a digest predate it: they are stale too.
            self._last_digest = j + (getattr(msg, "kept_count", None) or 0)
            self._digest_at = j

    def _sync(self, messages: Sequence[AgentMessage]) -> None:
        known = self._messages
        k = len(known)
        source, self._source = self._source, messages
        if (
            len(messages) >= k
            and (
                k == 0
                or (
                    messages[k - 1] is known[-1]
                    and messages[0] is known[0]
                    # The very list seen last time, grown by appends: checking its ends is
                    # enough, so a re-check costs the appended messages, not the history.
                    and (messages is source or list(messages[:k]) == known)
                )
            )
        ):
            common = k
        else:
            common = 0
            for a, b in zip(messages, known, strict=False):
                if a is not b:
                    break
                common += 1
            del known[common:]
            del self._prefix[common + 1 :]
            self._reset_structure()
            for j, msg in enumerate(known):
                self._index(j, msg)
            self._groups.extend(known)
        if common < len(messages):
            new = messages[common:]
            for j, msg in enumerate(new, start=common):
                if not isinstance(msg, KNOWN_MESSAGE_TYPES) and not isinstance(
                    getattr(msg, "role", None), str
                ):
                    raise MessageError(
                        f"message {j} is a {type(msg).__name__} with no string 'role'; pass "
                        "window_budget messages (or objects with a role) — convert framework "
                        "messages with an adapter"
                    )
            # Through the content cache: a transcript rebuilt from new but equal objects
            # (a fresh memory per request, a deserialized thread) costs lookups, not estimates.
            total = self._prefix[-1]
            append = self._prefix.append
            for j, (msg, tokens) in enumerate(
                zip(new, cached_estimates(new, self._counter), strict=True), start=common
            ):
                total += tokens
                append(total)
                known.append(msg)
                self._index(j, msg)
            self._groups.extend(new)
            self.estimated += len(new)

    def prefix(self, messages: Sequence[AgentMessage]) -> list[int]:
        """Prefix sums for ``messages`` (length n + 1). Treat the result as read-only."""
        self._sync(messages)
        return self._prefix

    def total(self, messages: Sequence[AgentMessage]) -> int:
        """Estimated tokens of ``messages``."""
        self._sync(messages)
        return self._prefix[-1]

    def blocked(self, messages: Sequence[AgentMessage]) -> list[bool]:
        """Per index, whether a cut there would split a tool group (see ``blocked_cuts``)."""
        self._sync(messages)
        return self._groups.blocked

    def anchor(
        self,
        messages: Sequence[AgentMessage],
        model: Model | None = None,
        *,
        pinned_tokens: int = 0,
    ) -> int | None:
        """Index of the usage figure that may anchor the estimate (see ``anchor_index``)."""
        self._sync(messages)
        i = self._last_usage
        if i < 0 or self._last_digest >= i:
            return None
        msg = messages[i]
        if (
            not isinstance(msg, AssistantMessage)
            or msg.usage is None
            or not same_model(msg.model, model)
        ):
            return None
        # Plausible for what it measured: from the last digest (what came before it is gone).
        measured = self._prefix[i + 1] - self._prefix[self._digest_at]
        if not usage_is_plausible(msg.usage.context_tokens, measured + pinned_tokens):
            return None
        return i

    def context(
        self, messages: Sequence[AgentMessage], model: Model, *, pinned_tokens: int = 0
    ) -> TokenEstimate:
        """The gate's figure for ``messages`` (what ``estimate_context`` returns).

        The trusted usage anchor plus what follows it, else the estimate of every message
        plus ``pinned_tokens``.
        """
        prefix = self.prefix(messages)
        i = self.anchor(messages, model, pinned_tokens=pinned_tokens)
        usage = messages[i].usage if i is not None else None  # type: ignore[union-attr]
        if i is not None and usage is not None:
            # A provider's figure already includes the system prompt: no pinned tokens here.
            return TokenEstimate(
                usage.context_tokens + prefix[-1] - prefix[i + 1], model.context_window, True
            )
        return TokenEstimate(prefix[-1] + pinned_tokens, model.context_window, False)
