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

import html
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from window_budget._shown import register
from window_budget.budget._estimate import estimate_message_tokens, message_parts
from window_budget.contract import CondenseResult
from window_budget.digest import is_digest
from window_budget.messages import (
    AgentMessage,
    BashExecutionMessage,
    ToolResultMessage,
    UserMessage,
    message_text,
    tool_calls,
)
from window_budget.pipeline.summarize.facts import FactLedger
from window_budget.readers import Transcript
from window_budget.tools.report import UsageReport

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

PREVIEW_CHARS = 160
"""How much of a message a table row shows."""
DIGEST_CHARS = 20_000
"""How much of a digest the collapsed section shows."""
MAX_SEGMENTS = 400
"""Slices in a transcript's strip; a longer transcript shares slices between messages."""
MAX_ROWS = 60
"""Messages listed in a transcript's table; the rest are counted, never dropped silently."""

# One colour per role, shared by every bar so a reader learns it once.
ROLE_COLOURS: Mapping[str, str] = {
    "user": "#4c78a8",
    "assistant": "#f58518",
    "toolResult": "#54a24b",
    "bashExecution": "#b279a2",
    "custom": "#9d755d",
    "branchSummary": "#72b7b2",
    "compactionSummary": "#72b7b2",
    "digest": "#e45756",
    "pinned": "#bab0ac",
}
_OTHER = "#999999"
_BOX = (
    "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;"
    "line-height:1.4;max-width:860px;border:1px solid #ddd;border-radius:6px;"
    "padding:10px 12px;margin:4px 0;color:#222;background:#fff"
)
_BAR = "display:flex;height:18px;border-radius:3px;overflow:hidden;background:#f1f1f1"
_TABLE = "border-collapse:collapse;font-size:12px;margin-top:6px"
_CELL = "padding:2px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top"


def safe_text(value: object, limit: int | None = None) -> str:
    """``value`` as HTML text: cut to ``limit`` characters, invisibles shown, escaped.

    Safe inside an element and inside a double- or single-quoted attribute. Control and
    format characters (bidi overrides, zero-width joiners, ...) become a visible
    ``⟨U+XXXX⟩``; newlines and tabs are kept. Look-alike letters are left as they are
    (they are text, not markup) and nothing is normalized, so what is shown is what the
    transcript holds.
    """
    text = value if isinstance(value, str) else str(value)
    suffix = ""
    if limit is not None and len(text) > limit:
        suffix = f" … ({len(text) - limit:,} more characters)"
        text = text[:limit]
    shown = "".join(
        ch
        if ch in "\n\t" or unicodedata.category(ch) not in {"Cc", "Cf", "Co", "Cs", "Zl", "Zp"}
        else f"⟨U+{ord(ch):04X}⟩"
        for ch in text
    )
    return html.escape(shown, quote=True) + suffix


def _role_of(message: AgentMessage) -> str:
    # Only the library's own digests: anyone can type the header into a user turn.
    if is_digest(message) and isinstance(message, UserMessage):
        return "digest"
    return str(getattr(message, "role", "unknown"))


def _colour(role: str) -> str:
    return ROLE_COLOURS.get(role, _OTHER)


def _pct(part: float, whole: float) -> float:
    return max(0.0, min(100.0, part / whole * 100)) if whole > 0 else 0.0


def _segments(parts: Iterable[tuple[str, float, str]], whole: float) -> str:
    """A flex bar: one coloured segment per (label, amount, colour), widths out of ``whole``."""
    cells = []
    for label, amount, colour in parts:
        width = _pct(amount, whole)
        if width <= 0:
            continue
        title = safe_text(f"{label}: {amount:,.0f} tokens")
        cells.append(f'<div title="{title}" style="width:{width:.3f}%;background:{colour}"></div>')
    return "".join(cells)


def _bar(
    parts: Iterable[tuple[str, float, str]],
    scale: float,
    marks: Sequence[tuple[float, str, str]] = (),
) -> str:
    """A bar of segments scaled to ``scale``, with vertical marks (position, label, colour)."""
    lines = "".join(
        f'<div title="{safe_text(label)}" style="position:absolute;top:-3px;bottom:-3px;'
        f'left:{_pct(at, scale):.3f}%;border-left:2px solid {colour}"></div>'
        for at, label, colour in marks
    )
    return (
        f'<div style="position:relative;margin:6px 0 2px 0">'
        f'<div style="{_BAR}">{_segments(parts, scale)}</div>{lines}</div>'
    )


def _legend(items: Iterable[tuple[str, str]]) -> str:
    return (
        '<div style="font-size:11px;color:#555">'
        + " ".join(
            f'<span style="white-space:nowrap;margin-right:10px"><span style="display:inline-block;'
            f'width:10px;height:10px;background:{colour};margin-right:3px"></span>'
            f"{safe_text(label)}</span>"
            for label, colour in items
        )
        + "</div>"
    )


def _table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A table; cells are HTML already (callers escape what they put in)."""
    th = "".join(f'<th style="{_CELL};color:#555">{h}</th>' for h in head)
    body = "".join(
        "<tr>" + "".join(f'<td style="{_CELL}">{c}</td>' for c in row) + "</tr>" for row in rows
    )
    return f'<table style="{_TABLE}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def _box(title: str, body: str) -> str:
    return (
        f'<div class="window-budget" style="{_BOX}">'
        f'<div style="font-weight:600;margin-bottom:4px">{title}</div>{body}</div>'
    )


# ------------------------------------------------------------------ condense result


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
    before = _bar([("before", result.tokens_before, "#9a9a9a")], scale, limit_mark)
    after = _bar(
        [("digest", digest_tokens, _colour("digest")), ("kept verbatim", kept_tokens, "#1f6fb4")],
        scale,
        limit_mark,
    )
    freed = result.tokens_before - result.tokens_after
    rows = [
        ("before", f"{result.tokens_before:,} tokens", before),
        ("after", f"{result.tokens_after:,} tokens", after),
    ]
    body = _table(
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
    body += _legend(
        [("digest", _colour("digest")), ("kept verbatim", "#1f6fb4"), ("before", "#9a9a9a")]
    )
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
            f"</summary>{_ledger_table(ledger)}</details>"
        )
    return _box("window-budget · condense result", body)


# ------------------------------------------------------------------ usage report


_CATEGORY_COLOURS = (
    "#bab0ac",
    "#4c78a8",
    "#f58518",
    "#54a24b",
    "#e45756",
    "#72b7b2",
    "#b279a2",
    "#9d755d",
)


def usage_report_text(report: UsageReport) -> str:
    """The usage report's plain-text form (the same as ``str(report)``)."""
    from window_budget.tools.report import format_report

    return format_report(report)


def usage_report_html(report: UsageReport) -> str:
    """A usage report as HTML: stacked bars by category and by role against the window."""
    scale = max(report.window, report.total, 1)
    cats = [
        (c.name, float(n), _CATEGORY_COLOURS[i % len(_CATEGORY_COLOURS)])
        for i, (c, n) in enumerate(report.per_category.items())
    ]
    roles = [(role, float(n), _colour(role)) for role, n in report.per_role.items()]
    marks = [(report.limit, f"limit {report.limit:,.0f}", "#c0392b")]
    if report.total > report.window:  # the bar runs past the window: show where it ends
        marks.append((report.window, f"window {report.window:,}", "#222222"))
    flag = (
        '<b style="color:#c0392b">over budget</b>'
        if report.over_budget
        else '<b style="color:#27ae60">within budget</b>'
    )
    body = (
        f"<div>{report.total:,} / {report.window:,} tokens "
        f"({report.percentage:.1f}%) · {report.available:,} available · {flag} "
        f"(limit {report.limit:,.0f}, red line"
        f"{'; the window ends at the black line' if report.total > report.window else ''})"
        "</div>"
    )
    body += '<div style="margin-top:6px;color:#555">by category</div>' + _bar(cats, scale, marks)
    body += _legend((n, c) for n, v, c in cats if v)
    cal = report.calibration
    if cal is not None and report.calibrated_total is not None:
        body += (
            f'<div style="margin-top:6px">as the provider counts it: '
            f"<b>{report.calibrated_total:,}</b> tokens (×{cal.ratio:.3f}, learned from "
            f"{cal.samples:,} calls of {safe_text(cal.model or 'the model', 80)}, plus "
            f"{cal.overhead_tokens:,} it counts outside the transcript; per call the "
            f"ratio ranged {cal.spread[0]:.2f}–{cal.spread[1]:.2f})</div>"
        )
        body += _bar(
            [("estimate", float(report.total), "#9a9a9a")],
            max(scale, report.calibrated_total),
            [
                *marks,
                (report.calibrated_total, f"calibrated {report.calibrated_total:,}", "#1f6fb4"),
            ],
        )
        body += _legend([("the estimate", "#9a9a9a"), ("calibrated (blue line)", "#1f6fb4")])
    body += '<div style="margin-top:6px;color:#555">by role</div>' + _bar(roles, scale, marks)
    body += _legend((n, c) for n, v, c in roles if v)
    total = max(report.total, 1)
    rows = [
        (
            safe_text(c.name),
            f"{n:,}",
            f"{n / total * 100:.1f}%",
            f"{report.category_budgets.get(c, 0):,}",
        )
        for c, n in report.per_category.items()
    ]
    body += (
        "<details><summary>table</summary>"
        + _table(["category", "tokens", "share", "allowance"], rows)
        + "</details>"
    )
    body += (
        f'<div style="font-size:11px;color:#555;margin-top:4px">'
        f"messages: {report.message_count:,} · images: {report.image_count:,} · "
        f"counter: {safe_text(report.counter_name)}</div>"
    )
    extra = []
    if report.ledger_facts is not None:
        extra.append(f"the digest carries a ledger of {report.ledger_facts:,} facts")
    if report.audit is not None:
        extra.append(f"digest audit: {safe_text(str(report.audit))}")
    if extra:
        body += f'<div style="font-size:11px;color:#555">{" · ".join(extra)}</div>'
    return _box("window-budget · usage report", body)


# ------------------------------------------------------------------ transcript


def _shape(messages: Sequence[AgentMessage]) -> tuple[Counter[str], Counter[str], int, int, int]:
    roles: Counter[str] = Counter(_role_of(m) for m in messages)
    tools: Counter[str] = Counter(c.name for m in messages for c in tool_calls(m))
    errors = sum(1 for m in messages if isinstance(m, ToolResultMessage) and m.is_error)
    images = sum(message_parts(m)[2] for m in messages)
    turns = sum(1 for m in messages if _role_of(m) == "user")
    return roles, tools, errors, images, turns


def transcript_text(transcript: Transcript) -> str:
    """A transcript at a glance, in plain lines: where from, turns, roles, tool calls."""
    roles, tools, errors, images, turns = _shape(transcript.messages)
    lines = [
        f"transcript ({transcript.format}) {transcript.path or '<stream>'}: "
        f"{len(transcript.messages):,} messages, {turns:,} user turns, "
        f"{len(transcript.system)} system prompt(s)",
        "roles: " + (", ".join(f"{r} {n:,}" for r, n in roles.most_common()) or "none"),
        f"tool calls: {sum(tools.values()):,} ({errors:,} failed results)"
        + ("; " + ", ".join(f"{t} {n:,}" for t, n in tools.most_common(8)) if tools else ""),
        f"images: {images:,}",
    ]
    usage = transcript.reported_usage
    if usage is not None:
        lines.append(f"provider reported: {usage.context_tokens:,} tokens at the last reply")
    if transcript.skipped:
        lines.append(f"skipped bad records: {len(transcript.skipped):,}")
    return "\n".join(lines)


def _preview(message: AgentMessage) -> str:
    if isinstance(message, BashExecutionMessage):
        return f"$ {message.command}"
    text = message_text(message).strip()
    if not text and tool_calls(message):
        text = "(tool calls only)"
    return " ".join(text.split())


def _strip_segments(
    messages: Sequence[AgentMessage], sizes: Sequence[int]
) -> list[tuple[str, float, str]]:
    """One segment a message; past :data:`MAX_SEGMENTS`, runs of messages share one.

    A shared segment takes the colour of the role with the most tokens in it, so a
    session of thousands of messages still draws as a bounded strip.
    """
    n = len(messages)
    step = max(1, -(-n // MAX_SEGMENTS))
    out = []
    for start in range(0, n, step):
        chunk = range(start, min(n, start + step))
        by_role: Counter[str] = Counter()
        for i in chunk:
            by_role[_role_of(messages[i])] += sizes[i]
        role = max(by_role, key=lambda r: by_role[r])
        tokens = float(sum(sizes[i] for i in chunk))
        if step == 1:
            label = f"#{start + 1} {role} — {_preview(messages[start])[:80]}"
        else:
            label = f"#{chunk[0] + 1}–#{chunk[-1] + 1}, mostly {role}"
        out.append((label, tokens, _colour(role)))
    return out


def transcript_html(transcript: Transcript) -> str:
    """A transcript as HTML: a strip of its messages by role, counts, and the first rows.

    Each message is one slice of the strip (width by tokens; hover shows its start).
    The table lists at most :data:`MAX_ROWS` messages, head and tail, and says how many
    it left out.
    """
    messages = transcript.messages
    roles, tools, errors, images, turns = _shape(messages)
    sizes = [estimate_message_tokens(m) for m in messages]
    total = sum(sizes)
    strip = _bar(_strip_segments(messages, sizes), max(total, 1))
    where = safe_text(transcript.path or "<stream>", 200)
    body = (
        f"<div><code>{where}</code> · {safe_text(transcript.format)} · "
        f"<b>{len(messages):,}</b> messages · <b>{turns:,}</b> user turns · "
        f"about {total:,} tokens · {len(transcript.system)} system prompt(s)</div>"
    )
    body += strip + _legend((f"{r} {n:,}", _colour(r)) for r, n in roles.most_common())
    tool_list = ", ".join(f"{safe_text(t, 60)} ×{n:,}" for t, n in tools.most_common(10))
    body += (
        f'<div style="margin-top:4px">tool calls: <b>{sum(tools.values()):,}</b>'
        f" ({errors:,} failed results){': ' + tool_list if tool_list else ''}"
        f" · images: <b>{images:,}</b></div>"
    )
    usage = transcript.reported_usage
    if usage is not None:
        body += (
            f"<div>provider reported <b>{usage.context_tokens:,}</b> tokens at the last "
            f"reply (model {safe_text(transcript.model or 'unknown', 80)})</div>"
        )
    if transcript.skipped:
        body += f"<div>skipped bad records: {len(transcript.skipped):,}</div>"
    indexes = list(range(len(messages)))
    if len(indexes) > MAX_ROWS:
        half = MAX_ROWS // 2
        indexes = [*indexes[:half], -1, *indexes[-half:]]
    rows = []
    for i in indexes:
        if i < 0:
            rows.append(("…", "", "", f"<i>{len(messages) - MAX_ROWS:,} messages not listed</i>"))
            continue
        m = messages[i]
        role = _role_of(m)
        calls = ", ".join(c.name for c in tool_calls(m))
        chip = f'<span style="color:{_colour(role)};font-weight:600">{safe_text(role)}</span>' + (
            " ⚠" if isinstance(m, ToolResultMessage) and m.is_error else ""
        )
        text = safe_text(_preview(m), PREVIEW_CHARS)
        if calls:
            text += f' <span style="color:#888">→ {safe_text(calls, 120)}</span>'
        rows.append((str(i + 1), chip, f"{sizes[i]:,}", text))
    body += (
        "<details><summary>messages</summary>"
        + _table(["#", "role", "tokens", "start"], rows)
        + "</details>"
    )
    return _box("window-budget · transcript", body)


# ------------------------------------------------------------------ fact ledger


LEDGER_ROWS = 12
"""Facts listed per kind; the rest are counted."""


def _fact_where(fact: Any) -> str:
    where = [] if fact.source is None else [f"archive #{fact.source}"]
    if fact.resolved_by is not None:
        where.append(f"resolved at #{fact.resolved_by}")
    if fact.count > 1:
        where.append(f"×{fact.count}")
    return ", ".join(where) or "from a carried digest's text"


def _ledger_table(ledger: FactLedger) -> str:
    from window_budget.pipeline.summarize.facts import FACT_KINDS

    rows = []
    for kind in FACT_KINDS:
        facts = ledger.of_kind(kind)
        for i, fact in enumerate(facts[:LEDGER_ROWS]):
            head = (
                f'<b>{safe_text(kind)}</b> <span style="color:#888">{len(facts):,}</span>'
                if i == 0
                else ""
            )
            status = (
                f' <span style="color:#888">({safe_text(fact.status)})</span>'
                if fact.status
                else ""
            )
            rows.append(
                (head, safe_text(fact.text, PREVIEW_CHARS) + status, safe_text(_fact_where(fact)))
            )
        if len(facts) > LEDGER_ROWS:
            rows.append(
                ("", f"<i>{len(facts) - LEDGER_ROWS:,} more {safe_text(kind)} facts</i>", "")
            )
    return _table(["kind", "fact", "where (archive position)"], rows)


def ledger_text(ledger: FactLedger) -> str:
    """A fact ledger in plain lines: counts by kind, then each fact with its pointer."""
    from window_budget.pipeline.summarize.facts import FACT_KINDS

    counts = [(k, len(ledger.of_kind(k))) for k in FACT_KINDS]
    lines = [
        f"fact ledger: {len(ledger.facts):,} facts after {ledger.generations} "
        f"compaction(s), {ledger.archived:,} messages archived",
        "by kind: " + (", ".join(f"{k} {n:,}" for k, n in counts if n) or "none"),
    ]
    for kind in FACT_KINDS:
        for fact in ledger.of_kind(kind)[:LEDGER_ROWS]:
            status = f" ({fact.status})" if fact.status else ""
            lines.append(f"  {kind:<10} {fact.text[:PREVIEW_CHARS]}{status} — {_fact_where(fact)}")
    return "\n".join(lines)


def ledger_html(ledger: FactLedger) -> str:
    """A fact ledger as HTML: a table by kind, each fact with a pointer into the archive.

    The archive is the messages the condensers dropped, in order across every
    compaction (``plan.dropped``, digests left out; the adapters keep it in their stores),
    so ``archive #N`` is where to read the original.
    """
    head = (
        f"<div>{len(ledger.facts):,} facts after {ledger.generations} compaction(s) · "
        f"{ledger.archived:,} messages archived</div>"
    )
    return _box("window-budget · fact ledger", head + _ledger_table(ledger))


# ------------------------------------------------------------------ tables


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    return str(value)


@dataclass(frozen=True, slots=True)
class Table:
    """Rows of figures that show themselves as a table in a notebook (no pandas needed).

    Each row is a mapping from column name to value; the columns are those of the first
    row. Numbers get thousands separators; every value is escaped.

    >>> print(Table([{"policy": "default", "compactions": 3}]))
    policy   compactions
    default  3
    """

    rows: Sequence[Mapping[str, object]]
    """The rows, in order."""

    def _columns(self) -> list[str]:
        return list(self.rows[0]) if self.rows else []

    def __str__(self) -> str:
        """Return the rows as aligned plain text."""
        columns = self._columns()
        cells = [columns, *([_cell(r.get(c, "")) for c in columns] for r in self.rows)]
        widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
        return "\n".join(
            "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
            for row in cells
        )

    def _repr_html_(self) -> str:
        columns = self._columns()
        rows = [[safe_text(_cell(r.get(c, "")), PREVIEW_CHARS) for c in columns] for r in self.rows]
        return (
            f'<div class="window-budget" style="{_BOX}">'
            + _table([safe_text(c) for c in columns], rows)
            + "</div>"
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


def _usage_report_cell(report: UsageReport) -> str:
    from window_budget.tools.report import cost_line

    line = cost_line(report)
    return usage_report_html(report) + (f"<p>{safe_text(line)}</p>" if line else "")


register(
    "window_budget.contract.CondenseResult", html=condense_result_html, text=condense_result_text
)
register(
    "window_budget.pipeline.summarize.facts.model.FactLedger", html=ledger_html, text=ledger_text
)
register("window_budget.readers._base.Transcript", html=transcript_html, text=transcript_text)
register("window_budget.tools.report.UsageReport", html=_usage_report_cell, text=usage_report_text)
