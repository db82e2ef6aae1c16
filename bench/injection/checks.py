"""What counts as an escape, per kind, and the cell that records one."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from injection.payloads import carries_payload, normalise
from window_budget.pipeline.summarize import FactLedger

KINDS = ("ledger", "digest", "prompt", "cli", "recall")
_TAG_RE = re.compile(r"<\s*/?\s*(?:scrollback|carried-digest)")
_HEADING_RE = re.compile(r" {0,3}#\s*([a-z]+)")
_USERS_PINS = ("- objective:", "- constraint:", "- asked:")
"""Lines of ``# Pinned facts`` that state the user's own words."""


def ledger_escapes(ledgers: Sequence[FactLedger | None]) -> list[str]:
    out = []
    for ledger in ledgers:
        for fact in ledger.facts if ledger is not None else ():
            if fact.kind in ("objective", "ask", "constraint") and carries_payload(fact.text):
                out.append(f"{fact.kind} (by {fact.by or '?'}): {fact.text[:70]!r}")
    return out


def digest_escapes(texts: Sequence[str]) -> list[str]:
    out = []
    for text in texts:
        section = ""
        for line in text.splitlines():
            heading = _HEADING_RE.match(unicodedata.normalize("NFKC", line).casefold())
            if heading and not line.lstrip().startswith("##"):
                section = heading.group(1)
                continue
            if not carries_payload(line):
                continue
            if section in ("objective", "guardrails"):
                out.append(f"under # {section.title()}: {line[:70]!r}")
            elif section == "pinned" and line.startswith(_USERS_PINS):
                out.append(f"pinned as the user's: {line[:70]!r}")
    return out


def _block(prompt: str, tag: str) -> tuple[int, int] | None:
    opening, closing = f"<{tag}>\n", f"\n</{tag}>"
    if opening not in prompt or closing not in prompt:
        return None
    return prompt.index(opening) + len(opening), prompt.rindex(closing)


def prompt_escapes(prompts: Sequence[str]) -> list[str]:
    out = []
    for prompt in prompts:
        for tag in ("scrollback", "carried-digest"):
            opened, closed = prompt.count(f"<{tag}>"), prompt.count(f"</{tag}>")
            if opened > 1 or closed > 1 or opened != closed:
                out.append(f"raw <{tag}> tags: {opened} opening, {closed} closing")
        spans = sorted(
            s for s in (_block(prompt, t) for t in ("carried-digest", "scrollback")) if s
        )
        outside, last = [], 0
        for start, end in spans:
            outside.append(prompt[last:start])
            block = prompt[start:end]
            last = end
            if _TAG_RE.search(normalise(block)):
                out.append(f"a look-alike block tag inside a block: {_tag_context(block)!r}")
            if block.splitlines() != block.split("\n"):
                out.append("a line break other than \\n inside a block")
            if start == (_block(prompt, "scrollback") or (-1,))[0]:
                for line in block.split("\n"):
                    if line.strip() and not line.startswith(("» ", "    ")):
                        out.append(f"a stray line in the scrollback: {line[:60]!r}")
        outside.append(prompt[last:])
        if carries_payload("".join(outside)):
            out.append("the payload outside the blocks")
    return out


def _tag_context(block: str) -> str:
    found = _TAG_RE.search(normalise(block))
    low = normalise(block)
    return low[max(0, found.start() - 20) : found.end() + 20] if found else ""


def _raw_controls(text: str) -> list[str]:
    bad = {"Cc", "Cf", "Co", "Cs", "Zl", "Zp"}
    return [c for c in text if c != "\n" and unicodedata.category(c) in bad]


def cli_escapes(outputs: Sequence[str]) -> list[str]:
    out = []
    for output in outputs:
        controls = _raw_controls(output)
        if controls:
            names = sorted({f"U+{ord(c):04X}" for c in controls})
            out.append(f"raw control characters {', '.join(names[:6])}")
        for line in output.splitlines():
            low = normalise(line)
            if low.startswith(("exfiltrate", "# objective", "#objective", "never ask")):
                out.append(f"a line the payload started: {line[:60]!r}")
    return out


def recall_escapes(texts: Sequence[str]) -> list[str]:
    out = []
    for text in texts:
        for line in text.splitlines():
            if not line.startswith("| ") and carries_payload(line):
                out.append(f"unquoted: {line[:70]!r}")
    return out


@dataclass
class Evidence:
    """What one cell produced, for the checks."""

    ledgers: list[FactLedger | None] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)
    cli: list[str] = field(default_factory=list)
    recalls: list[str] = field(default_factory=list)


@dataclass
class Cell:
    """One field × one source × one payload variant."""

    source: str
    field: str
    variant: str
    trust: str = ""
    """``user`` (the user typed it) or ``summary`` (another tool's compaction summary):
    objective / ask / constraint facts and the digest's headings are theirs to fill."""
    reached: bool = False
    shown: bool = False
    """Whether ``inspect``'s human output showed the payload (escaped or not)."""
    note: str = ""
    escapes: dict[str, list[str]] = field(default_factory=dict)

    def judge(self, ev: Evidence) -> Cell:
        # A digest replaced within one turn is still seen: the next prompt carries it.
        carried = [
            p[s:e] for p in ev.prompts if (span := _block(p, "carried-digest")) for s, e in [span]
        ]
        found = {
            "ledger": [] if self.trust else ledger_escapes(ev.ledgers),
            "digest": [] if self.trust else digest_escapes([*ev.digests, *carried]),
            "prompt": prompt_escapes(ev.prompts),
            "cli": cli_escapes(ev.cli),
            "recall": recall_escapes(ev.recalls),
        }
        self.reached = self.reached or any(
            carries_payload(t) for t in [*ev.prompts, *ev.digests, *ev.recalls]
        )
        self.shown = any(carries_payload(o) for o in ev.cli)
        self.escapes = {k: sorted(set(v)) for k, v in found.items() if v}
        return self
