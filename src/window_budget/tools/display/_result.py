"""A condense result, as plain lines and as HTML."""

from __future__ import annotations

from typing import TYPE_CHECKING

from window_budget.budget import estimate_message_tokens
from window_budget.tools.display._html import (
    DIGEST_CHARS,
    bar,
    box,
    legend,
    role_colour,
    safe_text,
    table,
)
from window_budget.tools.display._ledger import ledger_table

if TYPE_CHECKING:
    from window_budget.contract import CondenseResult
    from window_budget.pipeline.summarize.facts import FactLedger

__all__ = ["condense_result_html", "condense_result_text"]


def _digest_text(result: CondenseResult) -> str:
    return result.summary.text if result.summary is not None else ""


def condense_result_text(result: CondenseResult) -> str:
    """A condense result in a few plain lines: sizes against the limit, the cut, the digest."""
    plan = result.plan
    lines = [
        f"condense: {result.reason} — {result.tokens_before:,} → "
        f"{result.tokens_after:,} tokens (limit {result.limit:,.0f})"
    ]
    if plan.cut:
        lines.append(
            f"cut before message {plan.cut}: {len(plan.dropped):,} dropped, "
            f"{len(plan.kept):,} kept verbatim"
        )
    if result.masked:
        lines.append(
            f"masked: {len(result.masked)} tool output(s) replaced by a placeholder, "
            f"{result.tokens_freed:,} tokens freed, no digest needed"
        )
    if result.shortened:
        lines.append(f"shortened to fit: {len(result.shortened)} kept message(s)")
    if result.summary is not None:
        how = (
            f"network-free ({result.summary.fallback_reason or 'no model'})"
            if result.summary.fallback
            else "written by the model"
        )
        lines.append(
            f"digest: covers {result.summary.covered_count:,} messages, {how}, "
            f"{len(_digest_text(result)):,} characters"
        )
    if result.audit is not None:
        lines.append(f"audit: {result.audit}")
    ledger = _ledger_of_result(result)
    if ledger is not None:
        lines.append(
            f"ledger: {len(ledger.facts):,} facts after {ledger.generations} compaction(s)"
        )
    return "\n".join(lines)


def _ledger_of_result(result: CondenseResult) -> FactLedger | None:
    from window_budget.pipeline.summarize.facts import ledger_of

    return ledger_of(result.summary.message) if result.summary is not None else None


def condense_result_html(result: CondenseResult) -> str:
    """A condense result as HTML: before/after bars against the limit, the cut, the digest.

    The digest is collapsed (a ``<details>`` element) so a long one does not push the
    rest of the notebook away.
    """
    plan = result.plan
    scale = max(result.tokens_before, result.tokens_after, result.limit, 1) * 1.05
    limit_mark = [(result.limit, f"limit {result.limit:,.0f}", "#c0392b")]
    digest_tokens = estimate_message_tokens(result.summary.message) if result.summary else 0
    kept_tokens = max(0, result.tokens_after - digest_tokens)
    before = bar([("before", result.tokens_before, "#9a9a9a")], scale, limit_mark)
    after = bar(
        [
            ("digest", digest_tokens, role_colour("digest")),
            ("kept verbatim", kept_tokens, "#1f6fb4"),
        ],
        scale,
        limit_mark,
    )
    freed = result.tokens_before - result.tokens_after
    rows = [
        ("before", f"{result.tokens_before:,} tokens", before),
        ("after", f"{result.tokens_after:,} tokens", after),
    ]
    body = table(
        ["", "", f"against the limit ({result.limit:,.0f}, red line)"],
        [(a, b, f'<div style="width:520px">{c}</div>') for a, b, c in rows],
    )
    facts = [f"<b>{safe_text(result.reason)}</b>"]
    if freed > 0:
        facts.append(f"{freed:,} tokens freed")
    if plan.cut:
        facts.append(
            f"cut before message {plan.cut:,}: <b>{len(plan.dropped):,}</b> dropped "
            f"(archived, handed back in <code>plan.dropped</code>), "
            f"<b>{len(plan.kept):,}</b> kept verbatim"
        )
    if result.masked:
        facts.append(
            f"<b>{len(result.masked)}</b> tool output(s) masked (originals in "
            f"<code>plan.dropped</code>), no digest needed"
        )
    if result.shortened:
        facts.append(f"{len(result.shortened)} kept message(s) shortened to fit")
    body += '<div style="margin-top:6px">' + " · ".join(facts) + "</div>"
    body += legend(
        [("digest", role_colour("digest")), ("kept verbatim", "#1f6fb4"), ("before", "#9a9a9a")]
    )
    body += _digest_details(result, digest_tokens)
    return box("window-budget · condense result", body)


def _digest_details(result: CondenseResult, digest_tokens: int) -> str:
    """The collapsed digest, the audit of a model's digest and the ledger, as HTML."""
    body = ""
    if result.summary is not None:
        summary = result.summary
        how = (
            f"network-free digest ({safe_text(summary.fallback_reason or 'no model')})"
            if summary.fallback
            else "digest written by the model"
        )
        body += (
            f'<details style="margin-top:6px"><summary>{how}: covers '
            f"{summary.covered_count:,} messages, {digest_tokens:,} tokens</summary>"
            f'<pre style="white-space:pre-wrap;font-size:12px;background:#fafafa;'
            f'padding:6px;max-height:420px;overflow:auto">'
            f"{safe_text(_digest_text(result), DIGEST_CHARS)}</pre></details>"
        )
    if result.audit is not None:
        audit = result.audit
        colour = "#27ae60" if audit.found == audit.checked else "#e67e22"
        body += (
            f'<div style="margin-top:4px">audit of the model\'s digest: '
            f'<b style="color:{colour}">{audit.found} of {audit.checked}</b> key facts '
            f"found in its text, <b>{audit.appended}</b> pinned under "
            f"<code># Pinned facts</code>"
            + (f", {audit.left_out} left out for room" if audit.left_out else "")
            + f" ({audit.in_ledger:,} facts in the ledger)</div>"
        )
    ledger = _ledger_of_result(result)
    if ledger is not None:
        body += (
            f'<details style="margin-top:4px"><summary>fact ledger: '
            f"{len(ledger.facts):,} facts after {ledger.generations} compaction(s)"
            f"</summary>{ledger_table(ledger)}</details>"
        )
    return body
