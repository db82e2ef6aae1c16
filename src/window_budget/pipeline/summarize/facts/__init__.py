"""The fact ledger: typed facts taken from the folded messages, carried from digest to digest.

A digest is prose for the model *and* a ledger. Each :class:`Fact` has a kind (the
objective, an ask, a constraint, a file, a command, an error, a decision, an
identifier, a plan item, the last step), a stable key, where it was first and last
seen, how often, and a pointer to its source message in the archive, so a user or a
tool can fetch the original.

The ledger rides with the digest (:attr:`DigestMessage.facts`, as :func:`ledger_to_json`)
and the next compaction merges it with the new facts: :func:`extract_facts` starts from
the carried ledger and folds the new messages into it. Rendering (:func:`render_ledger`)
fills the six headings within a token budget and compresses before it evicts: repeated
and uninformative commands collapse into one line, files are grouped by directory,
long prose is cut at a word boundary; only then are facts left out, lowest priority and
oldest first, the last few of a kind after the rest of it, and the digest's floor
(:func:`is_floor_fact`: the objective, the user's constraints, the files the session
created, edited or deleted, the errors still open) after every other fact; the objective
and the user's newest constraints never. A path is never cut in the middle: it is
shortened by dropping the workspace root the transcript reveals, then by grouping.

Same input, same ledger, same text: nothing depends on time, hashing or the environment.
"""

from window_budget.pipeline.summarize.facts.calls import classify_tool_call as classify_tool_call
from window_budget.pipeline.summarize.facts.calls import key_error_line as key_error_line
from window_budget.pipeline.summarize.facts.lines import fact_line as fact_line
from window_budget.pipeline.summarize.facts.lines import pin_lines as pin_lines
from window_budget.pipeline.summarize.facts.model import (
    FACT_KINDS,
    Fact,
    FactKind,
    FactLedger,
    Provenance,
)
from window_budget.pipeline.summarize.facts.model import LEDGER_FORMAT as LEDGER_FORMAT
from window_budget.pipeline.summarize.facts.model import is_floor_fact as is_floor_fact
from window_budget.pipeline.summarize.facts.model import pin_priority as pin_priority
from window_budget.pipeline.summarize.facts.render import render_ledger as render_ledger
from window_budget.pipeline.summarize.facts.rules import extract_facts as extract_facts
from window_budget.pipeline.summarize.facts.rules import ledger_of
from window_budget.pipeline.summarize.facts.rules import merge_ledgers as merge_ledgers
from window_budget.pipeline.summarize.facts.serial import ledger_from_json as ledger_from_json
from window_budget.pipeline.summarize.facts.serial import ledger_from_text as ledger_from_text
from window_budget.pipeline.summarize.facts.serial import ledger_to_json as ledger_to_json

__all__ = [
    "FACT_KINDS",
    "Fact",
    "FactKind",
    "FactLedger",
    "Provenance",
    "ledger_of",
]
