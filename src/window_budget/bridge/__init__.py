"""What both framework adapters share: native messages in, core messages out, and back.

An adapter supplies a small :class:`Codec` — how to fingerprint, convert and recognise
its framework's messages — and this package does the rest the same way for every
framework, a module a concern: a process-wide conversion cache keyed by *content* (equal
messages rebuilt as new objects every turn, by a checkpointer or a per-request memory, convert
once per process) and the count of pinned leading system messages (``codec``), digests
remembered by the head they folded (``digests``), the completer pair built from a framework's
model calls (``completers``), the walk that maps the core's result back onto native messages
(``results``), one registry of named token counters (``counters``) and what the two memory
stores and recall tools share (``stores``). The digest record it hands on comes from
:mod:`window_budget.digest`. Nothing here imports a framework.
"""

from __future__ import annotations

from window_budget.bridge.codec import CONVERSIONS as CONVERSIONS
from window_budget.bridge.codec import RECOGNISED, Codec, convert, pinned_count
from window_budget.bridge.codec import Recognised as Recognised
from window_budget.bridge.completers import ModelCalls, make_completers
from window_budget.bridge.counters import CounterFactory as CounterFactory
from window_budget.bridge.counters import CounterRecogniser as CounterRecogniser
from window_budget.bridge.counters import (
    register_counter,
    register_counter_kind,
    resolve_counter_spec,
)
from window_budget.bridge.digests import DIGESTS as DIGESTS
from window_budget.bridge.digests import head_chain, recall_digest, remember_digest
from window_budget.bridge.results import Mapped, map_result
from window_budget.bridge.results import Slot as Slot
from window_budget.bridge.results import result_slots as result_slots
from window_budget.digest import (
    RECORD_KEY,
    digest_from_record,
    digest_of,
    digest_record,
    head_counts,
    read_digest_record,
    record_key,
    verified_record,
)
from window_budget.digest import SEAL_FIELD as SEAL_FIELD
from window_budget.digest import SECRET_ENV as SECRET_ENV
from window_budget.digest import TEXT_FIELD as TEXT_FIELD
from window_budget.digest import resealed as resealed

__all__ = [
    "RECOGNISED",
    "RECORD_KEY",
    "Codec",
    "Mapped",
    "ModelCalls",
    "convert",
    "digest_from_record",
    "digest_of",
    "digest_record",
    "head_chain",
    "head_counts",
    "make_completers",
    "map_result",
    "pinned_count",
    "read_digest_record",
    "recall_digest",
    "record_key",
    "register_counter",
    "register_counter_kind",
    "remember_digest",
    "resolve_counter_spec",
    "verified_record",
]
