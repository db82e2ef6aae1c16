"""The two tiers: what a digest carries in the window, what goes to the memory store.

A digest message carries a *bounded* record: the ledger's most important facts within
:func:`record_budget` tokens, and — when a memory store is bound — a pointer to the full
ledger version stored beside the conversation. The folded originals go to the store at their
archive positions, so every fact's pointer resolves. The next compaction reads the full
ledger back when the pointer resolves and the stored version's seal matches the digest;
otherwise it works from the bounded record (and the digest's text), never from nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from window_budget.budget import count_text
from window_budget.contract import MemoryStore, SummarizeDeps, TokenCounter
from window_budget.digest import is_digest, make_seal
from window_budget.messages import AgentMessage, DigestMessage, content_text, message_to_dict
from window_budget.pipeline.summarize.facts import (
    FactLedger,
    is_floor_fact,
    ledger_from_json,
    ledger_of,
    ledger_to_json,
    pin_priority,
)
from window_budget.pipeline.summarize.facts.text import cut_words

__all__ = [
    "MEMORY_KEY",
    "MIN_RECORD_TOKENS",
    "bounded_ledger",
    "carried_ledger",
    "record_budget",
    "resolve_ledger",
    "seal_fields",
    "store_digest",
]

MEMORY_KEY: Final = "memory"
"""Key of the store pointer inside a digest's facts record."""
# What a framework record adds around the ledger: the seal (64 hex), the text hash (32 hex),
# the counts and an adapter's bookkeeping (compactions, archive range, audit).
_RECORD_OVERHEAD: Final = 90
_FACT_CHARS: Final = 160  # a fact's text in a bounded record
MIN_RECORD_TOKENS: Final = 200
"""The smallest room a digest's record gets; 1 % of the window when that is larger."""


def record_budget(context_window: int | None) -> int:
    """Tokens a digest's record may hold: 200, or 1 % of the window when that is larger."""
    return max(MIN_RECORD_TOKENS, (context_window or 0) // 100)


def _size(record: Mapping[str, Any], counter: TokenCounter | None) -> int:
    # As a framework's serializer writes it (JSON with spaces), not the tightest form.
    return count_text(json.dumps(record), counter)


def bounded_ledger(
    ledger: FactLedger, max_tokens: int, counter: TokenCounter | None = None
) -> dict[str, Any]:
    """``ledger`` as JSON within ``max_tokens``: the most important facts, the rest left out.

    Facts leave lowest priority and oldest first, the digest's floor (the objective, the
    user's constraints, the files changed, open errors) last, and the order of those kept is the
    ledger's. The counters (``archived``,
    ``generations``) are kept whole, so positions stay right.
    """
    full = ledger_to_json(ledger)
    if _size(full, counter) <= max_tokens:
        return full
    # Long texts (a pasted task, an error) are cut first: the record points, the text tells.
    ledger = replace(
        ledger,
        facts=tuple(replace(f, text=cut_words(f.text, _FACT_CHARS)) for f in ledger.facts),
    )
    ranked = sorted(
        range(len(ledger.facts)),
        key=lambda i: (
            not is_floor_fact(ledger.facts[i]),
            -pin_priority(ledger.facts[i]),
            -ledger.facts[i].last,
            i,
        ),
    )

    def keeping(n: int) -> dict[str, Any]:
        chosen = sorted(ranked[:n])
        return ledger_to_json(replace(ledger, facts=tuple(ledger.facts[i] for i in chosen)))

    lo, hi = 0, len(ranked)
    while lo < hi:  # the most facts that fit
        mid = (lo + hi + 1) // 2
        if _size(keeping(mid), counter) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:  # not even the top fact whole: the objective, shorter, rather than nothing
        top = [f for f in ledger.facts if f.kind == "objective"][:1]
        for chars in (120, 80, 40):
            short = tuple(replace(f, text=cut_words(f.text, chars)) for f in top)
            candidate = ledger_to_json(replace(ledger, facts=short))
            if _size(candidate, counter) <= max_tokens:
                return candidate
    return keeping(lo)


def seal_fields(message: DigestMessage) -> dict[str, Any]:
    """What ties a stored ledger version to its digest: the text and the bounded record.

    (Counts are left out: adapters restate them; the framework record's own seal covers
    them, see ``bridge.digest_record``.)
    """
    facts = dict(message.facts or {})
    facts.pop(MEMORY_KEY, None)
    return {"text": content_text(message.content), "facts": facts}


def _pointer(message: DigestMessage) -> tuple[str, int] | None:
    ref = (message.facts or {}).get(MEMORY_KEY)
    if not isinstance(ref, Mapping):
        return None
    conversation, version = ref.get("conversation"), ref.get("version")
    if isinstance(conversation, str) and type(version) is int and 0 < version < 1 << 31:
        return conversation, version
    return None


def resolve_ledger(
    message: AgentMessage, memory: MemoryStore | None = None, conversation: str = "default"
) -> FactLedger | None:
    """The whole ledger a digest stands for; None for a message that is not a digest.

    The version stored in ``memory`` when the digest's pointer names ``conversation`` and the
    version's seal matches the digest; else the bounded ledger the digest carries (or, for a
    digest without one, what its text states).

    >>> from window_budget.messages import UserMessage
    >>> resolve_ledger(UserMessage("hi")) is None
    True
    """
    if isinstance(message, DigestMessage) and memory is not None:
        pointer = _pointer(message)
        if pointer is not None and pointer[0] == conversation:
            stored = memory.ledger(*pointer)
            if stored is not None and stored.seal == make_seal(memory.key, seal_fields(message)):
                try:
                    return ledger_from_json(stored.ledger)
                except ValueError:
                    pass  # a damaged version: the bounded record still stands
    return ledger_of(message)


def carried_ledger(message: AgentMessage, deps: SummarizeDeps) -> FactLedger | None:
    """The ledger a carried digest stands for, read through ``deps``' store."""
    return resolve_ledger(message, deps.memory, deps.conversation)


def archive_start(deps: SummarizeDeps, prior: FactLedger | None) -> FactLedger | None:
    """``prior`` with its archive counter past everything the store holds already.

    A digest whose full ledger could not be read back (another store, a lost pointer)
    must not number the new originals over the ones kept before.
    """
    if deps.memory is None:
        return prior
    held = deps.memory.archived(deps.conversation)
    base = prior or FactLedger()
    return replace(base, archived=held) if held > base.archived else prior


def store_digest(
    digest: DigestMessage,
    ledger: FactLedger,
    folded: Sequence[AgentMessage],
    deps: SummarizeDeps,
    *,
    record_tokens: int,
) -> DigestMessage:
    """``digest`` with its bounded record; with a store, the originals and the ledger stored.

    ``folded`` are the messages the ledger numbered in this compaction (digests among them
    take no position), ending at ``ledger.archived``.
    """
    store = deps.memory
    # The pointer rides beside the bounded ledger, not in its room: when the store cannot be
    # read (a restarted process's in-process store, another store), the record stands alone.
    room = max(32, record_tokens - _RECORD_OVERHEAD)
    facts = bounded_ledger(ledger, room, deps.counter)
    digest = replace(digest, facts=facts)
    if store is None:
        return digest
    originals = [m for m in folded if not is_digest(m)]
    start = ledger.archived - len(originals)
    store.archive(deps.conversation, start, [message_to_dict(m) for m in originals])
    seal = make_seal(store.key, seal_fields(digest))
    version = store.save_ledger(deps.conversation, ledger_to_json(ledger), seal=seal)
    pointer = {"conversation": deps.conversation, "version": version}
    return replace(digest, facts={**facts, MEMORY_KEY: pointer})
