"""How results show themselves in a notebook: HTML displays and their plain-text twins.

Each object a notebook user holds — a :class:`~window_budget.contract.CondenseResult`, a
:class:`~window_budget.tools.report.UsageReport`, a :class:`~window_budget.readers.Transcript`,
a digest's :class:`~window_budget.pipeline.summarize.facts.FactLedger` — shows itself through
:mod:`window_budget._shown`: this module registers the matching ``*_html`` function for
Jupyter's ``_repr_html_`` and the ``*_text`` one for IPython's ``_repr_pretty_`` when it is
imported (``import window_budget`` imports it), so Jupyter draws a picture and a plain console
(or a text-only export) still gets a readable summary instead of a dataclass repr.

Every string that came from a transcript is untrusted: it is escaped (quotes too, since
some land in attributes), cut to a bounded length *before* escaping so an entity is never
split, and invisible or direction-changing characters are shown as ``⟨U+202E⟩`` so text
cannot masquerade as something else. The HTML is inline-styled and has no script.

>>> from window_budget import UserMessage

>>> from window_budget.tools.report import analyze
>>> html = usage_report_html(analyze([UserMessage("<script>alert(1)</script>")], 1000))
>>> "<script>" in html
False
"""

from __future__ import annotations

from window_budget._shown import register
from window_budget.tools.display._html import Table, safe_text
from window_budget.tools.display._ledger import ledger_html, ledger_text
from window_budget.tools.display._report import (
    usage_report_cell,
    usage_report_html,
    usage_report_text,
)
from window_budget.tools.display._result import condense_result_html, condense_result_text
from window_budget.tools.display._transcript import transcript_html, transcript_text

__all__ = [
    "Table",
    "condense_result_html",
    "condense_result_text",
    "ledger_html",
    "ledger_text",
    "safe_text",
    "transcript_html",
    "transcript_text",
    "usage_report_html",
    "usage_report_text",
]

register(
    "window_budget.contract.CondenseResult", html=condense_result_html, text=condense_result_text
)
register(
    "window_budget.pipeline.summarize.facts.model.FactLedger", html=ledger_html, text=ledger_text
)
register("window_budget.readers._base.Transcript", html=transcript_html, text=transcript_text)
register("window_budget.tools.report.UsageReport", html=usage_report_cell, text=usage_report_text)
