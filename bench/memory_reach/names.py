"""The generator's vocabulary: constants, the planted-fact record, unique names, paths."""

from __future__ import annotations

import random
from dataclasses import dataclass

ROOT = "/srv/work/harbor"
CONVERSATION = "bench"
KINDS = (
    "objective",
    "constraint",
    "ask",
    "file",
    "command",
    "error",
    "decision",
    "identifier",
    "plan",
)
EARLIER = "plan (earlier)"
"""Plan items a later generation's plan superseded: reported apart (they leave the digest
first, by design; they should stay reachable)."""
SUBROWS = {
    "file": ("file (edited)", "file (created)"),
    "error": ("error (open)", "error (resolved)"),
}
"""Rows that split a kind (each fact also counts in its kind's row): files the session edited
(it found them) apart from those it created, errors still open at the end of their stretch
apart from those a later run fixed. The first of each belongs to the digest's floor."""
ROWS = (*KINDS, EARLIER)
"""Every fact in exactly one of these (the overall figure sums them)."""
REPORTED = (
    "objective",
    "constraint",
    "ask",
    "file",
    *SUBROWS["file"],
    "command",
    "error",
    *SUBROWS["error"],
    "decision",
    "identifier",
    "plan",
    EARLIER,
)
"""The rows of the report, in order."""
SERVICES = (
    "billing",
    "accounts",
    "payouts",
    "ledger",
    "invoices",
    "refunds",
    "disputes",
    "fx",
    "treasury",
    "notify",
    "risk",
    "catalog",
)
_ADJ_WORDS = (
    "amber copper silent rapid hollow crimson frozen gentle lunar polar rustic "
    "scarlet tidal velvet woven arctic brisk cobalt dusty ember fallow gilded hazel "
    "ivory jade kindred lofty misty noble opal pale quiet russet sable tawny umber "
    "vivid wintry zesty bold"
)
_NOUN_WORDS = (
    "falcon harbor meadow canyon ridge willow otter beacon cinder delta ferry glacier "
    "heron island juniper kestrel lagoon marsh nectar orchard pebble quarry raven "
    "summit thicket upland valley walrus yarrow zephyr badger cobble dune ember fjord "
    "grove hollow inlet jetty knoll"
)
_ADJ, _NOUN = _ADJ_WORDS.split(), _NOUN_WORDS.split()
FIRST_HEADS = (55_000, 120_000, 250_000)
"""Tokens of the first generation's head, by seed; later generations are about 50k each."""
# File stems: a prefix and two digits, with the directory the prefix lives in.
_STEMS = {
    "api": "",
    "handler": "handlers/",
    "model": "models/",
    "job": "jobs/",
    "client": "clients/",
    "view": "views/",
    "schema": "schemas/",
    "test_api": "tests/",
}


@dataclass(frozen=True)
class Planted:
    """One planted fact: what must be found, what an agent would search for, what was said."""

    kind: str
    probe: str
    """The distinguishing text (a file's path relative to the root, a command, a clause)."""
    query: str
    """One distinguishing word for ``recall(query=...)``."""
    text: str
    """The full text as planted (the sentence, the output line, the message)."""
    generation: int
    sub: str = ""
    """A file: ``edited`` or ``created``; an error: ``open`` or ``resolved`` (see ``SUBROWS``)."""

    @property
    def subrow(self) -> str | None:
        """The split row this fact also counts in, if its kind is split."""
        return f"{self.kind} ({self.sub})" if self.kind in SUBROWS else None


class Names:
    """Unique names for one seed: word pairs, file stems, ticket numbers, never reused."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(f"names-{seed}")
        self.pairs = [f"{a}_{n}" for a in _ADJ for n in _NOUN]
        rng.shuffle(self.pairs)
        self.stems = [(p, k) for p in _STEMS for k in range(100)]
        rng.shuffle(self.stems)
        self.tickets = rng.sample(range(1000, 9999), 2000)

    def pair(self) -> str:
        return self.pairs.pop()

    def stem(self) -> tuple[str, int]:
        return self.stems.pop()

    def ticket(self) -> str:
        return f"HB-{self.tickets.pop()}"


def _camel(pair: str) -> str:
    return "".join(w.capitalize() for w in pair.split("_"))


def file_path(svc: str, prefix: str, k: int) -> str:
    """A path relative to the workspace root (tests live under ``tests/<service>/``)."""
    if prefix == "test_api":
        return f"tests/{svc}/test_api_{k:02d}.py"
    return f"services/{svc}/{_STEMS[prefix]}{prefix}_{k:02d}.py"
