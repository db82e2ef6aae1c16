"""Scoring: whether a text tells a planted fact, and what one trajectory holds at checkpoints.

Every generation is appended turn by turn to a condenser with the network-free digest and an
``InProcessMemoryStore`` (``condenser.run_sync(history)`` after each turn, as an agent loop
calls it; the gate fires on its own in small windows), then compacted once more at its end
(``force=True``, as a user's ``/compact`` between tasks does). At each checkpoint, for every
fact planted so far: in the digest's text, in digest or kept tail, reachable through recall.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from memory_reach.generator import Session, session
from memory_reach.names import CONVERSATION, EARLIER, KINDS, ROWS, SUBROWS, Planted
from memory_reach.recall import kind_pages, searched, verify_recall
from window_budget import (
    AgentMessage,
    AssistantMessage,
    BudgetPolicy,
    Model,
    ToolCallBlock,
    UserMessage,
    create_condenser,
    estimate_tokens,
)
from window_budget.budget import count_text
from window_budget.digest import digest_body, is_digest
from window_budget.memory import InProcessMemoryStore
from window_budget.messages import message_text

Hit = tuple[bool, bool, bool]
"""Per planted fact: (in the digest, in digest or tail, reachable)."""


def _norm(text: str) -> str:
    return " ".join(text.replace("`", "").split()).casefold()


def _has(probe: str, hay: str) -> bool:
    """``probe`` in ``hay`` (normalized) with no word character glued to either end."""
    p = re.escape(_norm(probe))
    return re.search(rf"(?<![\w]){p}(?![\w])", hay) is not None


def found(fact: Planted, text: str, norm: str | None = None) -> bool:
    """True when ``text`` tells the fact: its probe verbatim (backticks and runs of whitespace
    aside, any case), never a longer name that contains it (``api_07`` is not ``api_17``,
    ``JournalLine`` is not ``JournalLineItem``). A file also counts grouped under its directory
    on one line (``services/billing/ (4 files): api_07.py, …``), a command grouped by program
    on one line (``pytest …`` … ``-q -k amber_falcon``).
    """
    hay = norm if norm is not None else _norm(text)
    if _has(fact.probe, hay):
        return True
    if fact.kind not in ("file", "command"):
        return False
    sep = "/" if fact.kind == "file" else " "
    parts = fact.probe.split(sep)
    if len(parts) < 2:
        return False
    for line in text.splitlines():
        low = _norm(line)
        if _norm(parts[-1]) not in low:
            continue
        for i in range(1, len(parts)):
            head = sep.join(parts[:i]) + (sep if fact.kind == "file" else "")
            rest = sep.join(parts[i:])
            if (fact.kind == "command" and len(rest) < 8) or not head.strip():
                continue
            if _has(head.strip(), low) and _has(rest, low):
                return True
    return False


def flat_text(messages: Iterable[AgentMessage]) -> str:
    """What a model reads of ``messages``: text, tool-call arguments, shell commands."""
    out = []
    for m in messages:
        if is_digest(m):
            out.append(digest_body(m) or "")
            continue
        out.append(message_text(m))
        if isinstance(m, AssistantMessage) and not isinstance(m.content, str):
            for b in m.content:
                if isinstance(b, ToolCallBlock):
                    out.extend(str(v) for v in b.arguments.values())
    return "\n".join(out)


def check_generator(seed: int = 0, head_tokens: int = 60_000) -> None:
    """The self-check: >= 120 facts in the first head, each one present in the messages."""
    sessions = session(seed, 2, head_tokens)
    for s in sessions:
        msgs = [m for step in s.steps for m in step]
        text = flat_text(msgs)
        norm = _norm(text)
        missing = [f for f in s.facts if not found(f, text, norm)]
        assert not missing, f"generation {s.g}: planted facts not in the messages: {missing[:3]}"
        kinds = {f.kind for f in s.facts}
        assert kinds >= set(KINDS) - ({"objective"} if s.g else set()), kinds
        subrows = {f.subrow for f in s.facts if f.subrow}
        assert subrows == {r for rows in SUBROWS.values() for r in rows}, subrows
        probes = [(f.kind, f.probe.casefold()) for f in s.facts]
        assert len(set(probes)) == len(probes), "a probe is planted twice"
        print(
            f"generation {s.g}: {len(s.facts)} planted facts, {len(msgs)} messages, "
            f"{estimate_tokens(msgs):,} tokens; all present"
        )
    assert len(sessions[0].facts) >= 120, len(sessions[0].facts)
    # The store's word index answers as the library's plain recall does, on a run with
    # compactions and masking (a 16k window): word searches of every kind.
    store = InProcessMemoryStore()
    condenser = create_condenser(model=Model("m", 16_000), memory=store, conversation=CONVERSATION)
    history: list[AgentMessage] = []
    for step in (step for s in sessions for step in s.steps):
        history = list(condenser.run_sync([*history, *step]).messages)
    facts = [f for s in sessions for f in s.facts]
    verify_recall(store, [f.query for f in facts[::12]])
    print(f"recall: {len(facts[::12])} searches answered as the plain path answers")


@dataclass
class Snapshot:
    """What one trajectory held after ``generations`` stretches of work."""

    generations: int
    compactions: int
    """Digests written so far: the gate's and the one closing each generation."""
    masked: int
    """Masking passes so far (old tool outputs replaced, no digest written)."""
    digest_tokens: int
    record_tokens: int
    """``json.dumps(digest.facts)``, counted."""
    record_compact_tokens: int
    """As the library measures it (no spaces, no ``\\u`` escapes): what ``record_budget`` bounds."""
    ledger: dict[str, int]
    """Facts per kind in the stored (full) ledger."""
    hits: dict[str, list[Hit]] = field(default_factory=dict)
    """Per row (``ROWS`` and the split rows of ``SUBROWS``), per planted fact."""

    def rows(self, row: str | None) -> list[Hit]:
        """The hits of one row, or of every fact once (``None``)."""
        if row is not None:
            return self.hits.get(row, [])
        return [h for r in ROWS for h in self.hits.get(r, [])]

    def share(self, row: str | None, which: int) -> float:
        rows = self.rows(row)
        return sum(r[which] for r in rows) / len(rows) if rows else float("nan")


def measure(
    history: Sequence[AgentMessage],
    store: InProcessMemoryStore,
    facts: Sequence[Planted],
    *,
    with_recall: bool,
    current: int,
) -> dict[str, list[Hit]]:
    """For each planted fact: in the digest text, in digest or tail, reachable by recall."""
    text = digest_body(history[0]) or ""
    norm = _norm(text)
    tail = flat_text(history[1:])
    tail_norm = _norm(tail)
    pages = {kind: kind_pages(store, kind) for kind in KINDS} if with_recall else {}
    hits: dict[str, list[Hit]] = {}
    for f in facts:
        in_digest = found(f, text, norm)
        seen = in_digest or found(f, tail, tail_norm)
        reach = seen
        if with_recall and not reach:
            reach = any(found(f, page) for page in pages[f.kind])
        if with_recall and not reach:
            reach = found(f, searched(store, f.query))
        row = EARLIER if f.kind == "plan" and f.generation < current else f.kind
        hits.setdefault(row, []).append((in_digest, seen, reach))
        if f.subrow is not None:
            hits.setdefault(f.subrow, []).append((in_digest, seen, reach))
    return hits


def trajectory(
    sessions: Sequence[Session],
    window: int,
    *,
    budget: int | None = None,
    checkpoints: Sequence[int] = (1, 5, 10),
    with_recall: bool = True,
) -> list[Snapshot]:
    """Feed the generations turn by turn; compact at each one's end; measure at checkpoints."""
    store = InProcessMemoryStore()
    policy = BudgetPolicy() if budget is None else BudgetPolicy(digest_max_tokens=budget)
    condenser = create_condenser(
        model=Model("m", window), memory=store, conversation=CONVERSATION, policy=policy
    )
    history: list[AgentMessage] = []
    facts: list[Planted] = []
    compactions = masked = 0
    out: list[Snapshot] = []
    for s in sessions:
        facts += s.facts
        for step in s.steps:  # one turn at a time, as an agent loop calls the condenser
            history = [*history, *step]
            result = condenser.run_sync(history)
            compactions += result.reason == "condensed"
            masked += result.reason == "masked"
            history = list(result.messages)
        history = [*history, UserMessage("Let's stop here; the next part comes later.")]
        result = condenser.run_sync(history, force=True)
        compactions += result.summary is not None
        history = list(result.messages)
        if s.g + 1 not in checkpoints:
            continue
        digest = history[0]
        assert is_digest(digest), "a compaction leaves a digest at the head"
        if with_recall and not out:
            verify_recall(store, [facts[0].query, facts[-1].query, facts[len(facts) // 2].query])
        hits = measure(history, store, facts, with_recall=with_recall, current=s.g)
        record = getattr(digest, "facts", None) or {}
        stored = store.ledger(CONVERSATION)
        rows = stored.ledger.get("facts", ()) if stored is not None else ()
        out.append(
            Snapshot(
                generations=s.g + 1,
                compactions=compactions,
                masked=masked,
                digest_tokens=count_text(digest_body(digest) or ""),
                record_tokens=count_text(json.dumps(record)),
                record_compact_tokens=count_text(
                    json.dumps(record, ensure_ascii=False, separators=(",", ":"))
                ),
                ledger=dict(Counter(row[0] for row in rows)),
                hits=hits,
            )
        )
    return out
