"""A usage report, as plain text and as HTML."""

from __future__ import annotations

from typing import TYPE_CHECKING

from window_budget.tools.display._html import bar, box, legend, role_colour, safe_text, table

if TYPE_CHECKING:
    from window_budget.tools.report import UsageReport

__all__ = ["usage_report_cell", "usage_report_html", "usage_report_text"]


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
    roles = [(role, float(n), role_colour(role)) for role, n in report.per_role.items()]
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
    body += '<div style="margin-top:6px;color:#555">by category</div>' + bar(cats, scale, marks)
    body += legend((n, c) for n, v, c in cats if v)
    cal = report.calibration
    if cal is not None and report.calibrated_total is not None:
        body += (
            f'<div style="margin-top:6px">as the provider counts it: '
            f"<b>{report.calibrated_total:,}</b> tokens (×{cal.ratio:.3f}, learned from "
            f"{cal.samples:,} calls of {safe_text(cal.model or 'the model', 80)}, plus "
            f"{cal.overhead_tokens:,} it counts outside the transcript; per call the "
            f"ratio ranged {cal.spread[0]:.2f}–{cal.spread[1]:.2f})</div>"
        )
        body += bar(
            [("estimate", float(report.total), "#9a9a9a")],
            max(scale, report.calibrated_total),
            [
                *marks,
                (report.calibrated_total, f"calibrated {report.calibrated_total:,}", "#1f6fb4"),
            ],
        )
        body += legend([("the estimate", "#9a9a9a"), ("calibrated (blue line)", "#1f6fb4")])
    body += '<div style="margin-top:6px;color:#555">by role</div>' + bar(roles, scale, marks)
    body += legend((n, c) for n, v, c in roles if v)
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
        + table(["category", "tokens", "share", "allowance"], rows)
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
    return box("window-budget · usage report", body)


def usage_report_cell(report: UsageReport) -> str:
    """The report as a notebook shows it: the HTML, then what its calls cost."""
    from window_budget.tools.report import cost_line

    line = cost_line(report)
    return usage_report_html(report) + (f"<p>{safe_text(line)}</p>" if line else "")
