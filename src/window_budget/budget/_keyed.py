"""Token counts by key: the gate's figure for a transcript known only by per-message keys.

An adapter whose framework hands back the thread as new objects every turn (a LangGraph
checkpointer deserializes it on each ``invoke``) can key each message by a cheap
fingerprint of what its conversion reads and learn, once per distinct key, what the gate
needs of that message: its estimate, whether its usage figure may anchor, whether it is a
digest. :class:`KeyedCounts` keeps exactly that, as plain ints in dicts of ints (the cyclic
garbage collector never tracks them, so keeping a long thread's worth between turns costs
no collection), and computes from a list of keys the figure
:meth:`TokenLedger.context <window_budget.budget.TokenLedger.context>` computes from the
converted messages: same prefix sums, same usage anchor, same digest and plausibility rules.

>>> from window_budget import Model, UserMessage
>>> counts = KeyedCounts()
>>> counts.learn(101, UserMessage("hello"), 6)
>>> counts.learn(102, UserMessage("again"), 6)
>>> counts.missing([101, 102, 103])
[2]
>>> counts.context([101, 102], Model("m", 1000)).context_tokens
12
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from window_budget.budget._anchor import anchor_usage, same_model, usage_is_plausible
from window_budget.contract import Model, TokenEstimate
from window_budget.digest import is_digest
from window_budget.messages import AgentMessage, AssistantMessage, ProviderCompactionBlock

__all__ = ["KeyedCounts"]

_ANCHORS: Final = 1
"""Its usage figure anchors (``anchor_usage`` of the message as learned is not None)."""
_SAME_MODEL: Final = 2
"""That figure's model may stand for the guarded one (``same_model``)."""
_DIGEST: Final = 4
"""It is a digest (``is_digest``): usage before it, and ``kept`` after it, is stale."""

_FLAGS: Final = 8
_FIELD: Final = 48
_MASK: Final = (1 << _FIELD) - 1


class KeyedCounts:
    """What the gate needs of each message, by key; nothing the collector tracks.

    ``learn`` a key once (its message as converted with usage trusted, and its estimate),
    then ask :meth:`context` about any list of learned keys. Keys are ints (a 64-bit hash
    of what a message's conversion reads, say: two messages that collide share one entry,
    so a collision is a wrong count; a hash over the fields makes that a 2**-64 event).
    A key whose message carries a provider's compaction block is remembered as such and
    :meth:`context` declines a list holding one (the caller's full path handles it).
    """

    __slots__ = ("_anchors", "_compaction", "_digests", "_info", "_tagged", "_tokens")

    def __init__(self) -> None:
        self._tokens: dict[int, int] = {}
        """Per key, its estimate."""
        self._info: dict[int, int] = {}
        """Per key that anchors or is a digest: flags, usage figure, kept count and tag."""
        self._digests: dict[int, int] = {}
        """The keys of ``_info`` that are digests (a set of ints, as a dict: untracked)."""
        self._anchors: dict[int, int] = {}
        """The keys of ``_info`` whose usage figure anchors."""
        self._tagged: dict[int, int] = {}
        """The keys of ``_info`` learned with a tag."""
        self._compaction: dict[int, int] = {}
        """Keys whose message carries a provider's compaction block."""

    def __len__(self) -> int:
        return len(self._tokens)

    def estimates(self, keys: Sequence[int]) -> list[int | None]:
        """Per key its estimate; None for a key not learned yet."""
        return list(map(self._tokens.get, keys))

    def missing(self, keys: Sequence[int]) -> list[int]:
        """Indices of the keys not learned yet."""
        return self.lookup(keys)[1]

    def lookup(self, keys: Sequence[int]) -> tuple[list[int | None], list[int]]:
        """:meth:`estimates` of ``keys`` and :meth:`missing` ``keys``, in one pass."""
        looked = self.estimates(keys)
        return looked, _nones(looked)

    def learn(
        self, key: int, message: AgentMessage, tokens: int, model: Model | None = None, tag: int = 0
    ) -> None:
        """Remember ``message``'s estimate ``tokens`` and what the gate reads of it.

        ``message`` is converted with its usage figure trusted (a position that makes it
        stale is the caller's to say, see :meth:`context`); ``model`` is the guarded model
        (for ``same_model``); ``tag`` is a small non-negative int of the caller's own, read
        back with :meth:`tags`.
        """
        self._tokens[key] = tokens
        flags, figure, kept = 0, 0, 0
        usage = anchor_usage(message)
        if usage is not None:
            flags |= _ANCHORS
            figure = usage.context_tokens
            self._anchors[key] = 1
            if same_model(getattr(message, "model", None), model):
                flags |= _SAME_MODEL
        if is_digest(message):
            flags |= _DIGEST
            kept = getattr(message, "kept_count", None) or 0
            self._digests[key] = 1
        if isinstance(message, AssistantMessage) and any(
            type(b) is ProviderCompactionBlock for b in message.content
        ):
            self._compaction[key] = 1
        if tag:
            self._tagged[key] = 1
        if flags or tag:
            self._info[key] = (
                flags | figure << _FLAGS | kept << (_FLAGS + _FIELD) | tag << (_FLAGS + 2 * _FIELD)
            )

    def holds_compaction(self, keys: Sequence[int]) -> bool:
        """True when a key of ``keys`` is a message carrying a provider's compaction block."""
        return bool(self._compaction) and not self._compaction.keys().isdisjoint(keys)

    def tags(self, keys: Sequence[int]) -> tuple[int, int]:
        """``(index, tag)`` of the last key in ``keys`` learned with a tag; ``(-1, 0)`` if none."""
        info = self._info
        if not self._tagged or self._tagged.keys().isdisjoint(keys):
            return -1, 0
        looked = list(map(info.get, keys))
        for j in range(len(looked) - 1, -1, -1):
            v = looked[j]
            if v is not None and v >> (_FLAGS + 2 * _FIELD):
                return j, v >> (_FLAGS + 2 * _FIELD)
        return -1, 0

    def context(
        self,
        keys: Sequence[int],
        model: Model,
        *,
        pinned_tokens: int = 0,
        trusted_from: int = 0,
        estimates: Sequence[int] | None = None,
    ) -> TokenEstimate:
        """The gate's figure for the transcript ``keys`` stand for (every key learned).

        As ``TokenLedger.context``: the newest anchoring usage figure plus the estimates
        after it, else every estimate plus ``pinned_tokens``. Usage figures of keys before
        index ``trusted_from`` do not anchor (the caller's converter reads them untrusted).
        ``estimates``: :meth:`estimates` of ``keys``, when the caller has them.
        """
        tokens = list(map(self._tokens.__getitem__, keys)) if estimates is None else estimates
        anchored = self._anchor(keys, tokens, model, pinned_tokens, trusted_from)
        if anchored is None:
            return TokenEstimate(sum(tokens) + pinned_tokens, model.context_window, False)
        i, figure = anchored
        return TokenEstimate(figure + sum(tokens[i + 1 :]), model.context_window, True)

    def _anchor(
        self, keys: Sequence[int], tokens: Sequence[int], model: Model, pinned: int, start: int
    ) -> tuple[int, int] | None:
        """``(index, usage figure)`` of the anchor, as ``TokenLedger.anchor`` chooses it."""
        if not self._anchors:
            return None
        info = self._info.get
        last_usage, v = -1, 0
        for j in range(len(keys) - 1, max(start, 0) - 1, -1):  # the newest, near the end
            got = info(keys[j])
            if got is not None and got & _ANCHORS:
                last_usage, v = j, got
                break
        if last_usage < 0:
            return None
        last_digest, digest_at = -1, 0
        if self._digests and not self._digests.keys().isdisjoint(keys):
            looked = list(map(info, keys))
            for j in range(len(looked) - 1, -1, -1):
                d = looked[j]
                if d is not None and d & _DIGEST:
                    last_digest, digest_at = j + ((d >> (_FLAGS + _FIELD)) & _MASK), j
                    break
        if last_digest >= last_usage or not v & _SAME_MODEL:
            return None
        figure = (v >> _FLAGS) & _MASK
        # Plausible for what it measured: from the last digest (what came before it is gone).
        measured = sum(tokens[digest_at : last_usage + 1])
        if not usage_is_plausible(figure, measured + pinned):
            return None
        return last_usage, figure

    def keep_only(self, keys: Sequence[int]) -> None:
        """Forget every key but ``keys`` (what a conversation no longer holds)."""
        wanted = dict.fromkeys(keys, 1)
        tables = (self._tokens, self._info, self._digests, self._anchors, self._tagged)
        for table in (*tables, self._compaction):
            for k in [k for k in table if k not in wanted]:
                del table[k]


def _nones(looked: list[int | None]) -> list[int]:
    """Indices of the Nones in ``looked`` (what was appended, as a rule: at the end)."""
    if None not in looked:
        return []
    return [i for i in range(looked.index(None), len(looked)) if looked[i] is None]
