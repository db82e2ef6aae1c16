"""Where a transcript's tokens go: totals, categories, roles and images against a window.

:func:`analyze` measures (pure, no I/O); :func:`format_report` renders plain text;
:func:`format_report_rich` renders a table with bars when the optional ``rich``
package is installed (``pip install "window-budget[rich]"``) and the plain text when
it is not.

>>> from window_budget import UserMessage
>>> report = analyze([UserMessage("hello")], 1000)
>>> report.total, report.available, report.over_budget
(6, 994, False)
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from types import MappingProxyType
from typing import Any

from window_budget._shown import Shown
from window_budget.budget import (
    Calibration,
    Cost,
    ModelPrices,
    cached_estimates,
    message_parts,
    session_cost,
)
from window_budget.contract import BudgetPolicy, DigestAudit, Model, TokenCounter
from window_budget.errors import ConfigError
from window_budget.messages import AgentMessage, AssistantMessage, DigestMessage
from window_budget.pipeline import (
    Classifier,
    MessageCategory,
    budget_limit,
    classify_message,
    resolve_shares,
)

__all__ = [
    "UsageReport",
    "analyze",
    "audit_lines",
    "carried_digest",
    "cost_line",
    "format_report",
    "format_report_rich",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageReport(Shown):
    """A transcript's token usage against a window; build it with :func:`analyze`."""

    total: int
    """Estimated tokens of the transcript plus ``pinned``."""
    window: int
    """The context window measured against."""
    available: int
    """``max(0, window - total)``."""
    percentage: float
    """``total / window * 100``."""
    limit: float
    """Where ``over_budget`` starts: the gate's limit with a policy, else the window."""
    over_budget: bool
    """True when ``total`` is strictly above ``limit``."""
    per_category: Mapping[MessageCategory, int]
    """Tokens per category, every category present (SYSTEM includes ``pinned``)."""
    category_budgets: Mapping[MessageCategory, int]
    """``limit`` times each category's share, as given (before any lending)."""
    per_role: Mapping[str, int]
    """Tokens per message role, in first-seen order (``"pinned"`` for pinned tokens)."""
    image_count: int
    """Images in the transcript."""
    message_count: int
    """Messages in the transcript."""
    pinned: int = 0
    """Tokens kept outside the transcript (system prompts) that were counted."""
    counter_name: str = "heuristic"
    """Which counter measured it."""
    calibration: Calibration | None = None
    """How the model's provider counts against the estimate, when it was given."""
    calibrated_total: int | None = None
    """``total`` as the provider would count it (ratio and overhead of ``calibration``)."""
    ledger_facts: int | None = None
    """Facts in the ledger the transcript's digest carries (None: no digest with a ledger)."""
    audit: DigestAudit | None = None
    """The audit of the model-written digest that produced this transcript, when given."""
    cost: Cost = field(default_factory=Cost)
    """What the calls recorded in the transcript cost: each assistant message's usage at its
    model's prices (:func:`~window_budget.budget._cost.session_cost`); ``cost.total`` is None
    when a call could not be priced."""

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (category keys are their names)."""
        return {
            "total": self.total,
            "available": self.available,
            "window": self.window,
            "percentage": round(self.percentage, 2),
            "limit": self.limit,
            "over_budget": self.over_budget,
            "per_category": {c.name: n for c, n in self.per_category.items()},
            "category_budgets": {c.name: n for c, n in self.category_budgets.items()},
            "per_role": dict(self.per_role),
            "image_count": self.image_count,
            "message_count": self.message_count,
            "pinned": self.pinned,
            "counter": self.counter_name,
            "calibration": None
            if self.calibration is None
            else {
                "model": self.calibration.model,
                "ratio": round(self.calibration.ratio, 4),
                "overhead_tokens": self.calibration.overhead_tokens,
                "samples": self.calibration.samples,
            },
            "calibrated_total": self.calibrated_total,
            "ledger_facts": self.ledger_facts,
            "audit": None if self.audit is None else asdict(self.audit),
            "cost": self.cost.as_dict(),
        }

    def __str__(self) -> str:
        """Return the plain-text summary."""
        return format_report(self)


def analyze(
    messages: Sequence[AgentMessage],
    window: int | Model,
    *,
    counter: TokenCounter | None = None,
    policy: BudgetPolicy | None = None,
    pinned_tokens: int = 0,
    shares: Mapping[MessageCategory | str, float] | None = None,
    classify: Classifier = classify_message,
    calibration: Calibration | None = None,
    audit: DigestAudit | None = None,
    prices: ModelPrices | None = None,
) -> UsageReport:
    """Measure ``messages`` against ``window`` (tokens, or a :class:`Model`).

    Args:
        messages: The transcript; not modified.
        window: The context window in tokens, or the model whose window it is.
        counter: Exact counter; the heuristic when None.
        policy: When given, ``over_budget`` uses the gate's limit (window less reserve,
            times the trigger ratio) instead of the whole window.
        pinned_tokens: Tokens of system prompts kept outside the transcript.
        shares: Category shares for ``category_budgets`` (the default shares when None).
        classify: How messages are put in categories.
        calibration: How the model's provider counts (see
            :func:`~window_budget.budget._calibrate.calibrate`); adds ``calibrated_total``.
        audit: The audit of the digest that produced ``messages`` (``CondenseResult.audit``),
            shown with the size of the ledger the digest carries.
        prices: What the calls in ``messages`` are priced at; when None, each at the
            models.dev prices of the model it names, else of ``window``'s model.

    Raises:
        ConfigError: a window that is not a positive int, or negative pinned tokens.

    """
    size = window.context_window if isinstance(window, Model) else window
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise ConfigError(f"window must be a positive int of tokens, got {size!r}")
    if isinstance(pinned_tokens, bool) or not isinstance(pinned_tokens, int) or pinned_tokens < 0:
        raise ConfigError(f"pinned_tokens must be a non-negative int, got {pinned_tokens!r}")
    per_category = dict.fromkeys(MessageCategory, 0)
    per_category[MessageCategory.SYSTEM] = pinned_tokens
    per_role: dict[str, int] = {"pinned": pinned_tokens} if pinned_tokens else {}
    images = 0
    # The cache, not a fresh estimate: a report usually follows a gate over the same messages.
    for message, tokens in zip(messages, cached_estimates(messages, counter), strict=True):
        per_category[classify(message)] += tokens
        role = str(getattr(message, "role", "unknown"))
        per_role[role] = per_role.get(role, 0) + tokens
        images += message_parts(message)[2]
    total = sum(per_category.values())
    limit = budget_limit(Model("report", size), policy) if policy is not None else float(size)
    # Shares are applied as given: the default shares add up to 105 % (ERROR is a fallback
    # allowance), so the allowances overlap a little rather than partition the limit.
    norm = resolve_shares(shares)
    budgets = {c: int(limit * norm[c]) for c in MessageCategory}
    return UsageReport(
        total=total,
        window=size,
        available=max(0, size - total),
        percentage=total / size * 100,
        limit=limit,
        over_budget=total > limit,
        per_category=MappingProxyType(per_category),
        category_budgets=MappingProxyType(budgets),
        per_role=MappingProxyType(per_role),
        image_count=images,
        message_count=len(messages),
        pinned=pinned_tokens,
        counter_name=counter.name if counter is not None else "heuristic",
        calibration=calibration,
        calibrated_total=calibration.apply(total) if calibration is not None else None,
        ledger_facts=_ledger_size(messages),
        audit=audit,
        cost=session_cost(
            messages, model=window.id if isinstance(window, Model) else None, prices=prices
        ),
    )


def _ledger_size(messages: Sequence[AgentMessage]) -> int | None:
    for message in messages:
        if isinstance(message, DigestMessage) and isinstance(message.facts, Mapping):
            rows = message.facts.get("facts")
            return len(rows) if isinstance(rows, list) else None
    return None


def _pct(part: float, whole: float) -> float:
    return part / whole * 100 if whole else 0.0


def _calibration_line(cal: Calibration, calibrated_total: int) -> str:
    return (
        f"calibrated: {calibrated_total:,} tokens as the provider counts them (x{cal.ratio:.3f}"
        f" over {cal.samples:,} calls, plus {cal.overhead_tokens:,} it counts outside the "
        "transcript)"
    )


def format_report(report: UsageReport) -> str:
    """Render ``report`` as plain text, one line per category and role."""
    flag = "OVER BUDGET" if report.over_budget else "within budget"
    lines = [
        f"context: {report.total:,} / {report.window:,} tokens ({report.percentage:.1f}%), "
        f"{report.available:,} available — {flag} (limit {report.limit:,.0f})",
        f"messages: {report.message_count:,}, images: {report.image_count:,}, "
        f"counter: {report.counter_name}",
    ]
    if report.calibration is not None and report.calibrated_total is not None:
        lines.append(_calibration_line(report.calibration, report.calibrated_total))
    lines.append("by category:")
    for cat, tokens in report.per_category.items():
        allowance = report.category_budgets.get(cat, 0)
        lines.append(
            f"  {cat.name:<13} {tokens:>9,} tokens  {_pct(tokens, report.total):5.1f}%"
            f"  (allowance {allowance:,})"
        )
    lines.append("by role:")
    for role, tokens in report.per_role.items():
        lines.append(f"  {role:<13} {tokens:>9,} tokens  {_pct(tokens, report.total):5.1f}%")
    lines.extend(audit_lines(report))
    line = cost_line(report)
    if line:
        lines.append(line)
    return "\n".join(lines)


def cost_line(report: UsageReport) -> str:
    """What the transcript's calls cost, as a report line ("" when no call reports usage)."""
    if not report.cost.calls and not report.cost.unpriced:
        return ""
    return f"cost: {report.cost.describe()}"


def carried_digest(
    messages: Sequence[AgentMessage], archive: Sequence[AgentMessage] = ()
) -> dict[str, Any] | None:
    """What the transcript's carried digest holds, JSON-ready; None when it carries none.

    The last digest in ``messages`` (one window-budget wrote, or a compaction summary another
    tool wrote, read by heading): its ledger's facts per kind, the objective, the audit of its
    text against the ledger (:func:`~window_budget.pipeline.summarize._audit.check_digest`), and
    how a
    fact's ``source`` points back into the archive — resolved against ``archive`` (the
    messages before the compaction, digests left out) when the transcript keeps them.
    """
    from window_budget.digest import digest_body, is_digest
    from window_budget.messages import message_text
    from window_budget.pipeline.summarize import check_digest
    from window_budget.pipeline.summarize.facts import FACT_KINDS, ledger_of

    found = None
    for i, message in enumerate(messages):
        ledger = ledger_of(message)
        if ledger is not None:
            found = (i, message, ledger)
    if found is None:
        return None
    index, message, ledger = found
    text = digest_body(message) or message_text(message)
    audit = check_digest(text, ledger)
    by_kind = {k: n for k in FACT_KINDS if (n := len(ledger.of_kind(k)))}
    objective = next((f.text for f in ledger.facts if f.kind == "objective"), None)
    sources = [f for f in ledger.facts if f.source is not None]
    # An error, then a file or a decision: the facts a reader most wants the original of.
    rank = {"error": 0, "file": 1, "decision": 2}
    example = min(sources, key=lambda f: (rank.get(f.kind, 3), -f.last), default=None)
    pointer: dict[str, Any] | None = None
    if example is not None and example.source is not None:
        kept = [m for m in archive if not is_digest(m)]
        target = kept[example.source] if example.source < len(kept) else None
        said = None
        if target is not None:
            said = " ".join(message_text(target).split())[:160]
            calls = target.tool_calls if isinstance(target, AssistantMessage) else ()
            if not said and calls:  # an error's or a file's source is the call; then its result
                said = (
                    f"calls {calls[0].name} "
                    f"{json.dumps(dict(calls[0].arguments), default=repr)[:100]}"
                    " (its result is the next archived message)"
                )
        pointer = {
            "kind": example.kind,
            "fact": example.text,
            "source": example.source,
            "archived": target is not None,
            "role": None if target is None else str(getattr(target, "role", "?")),
            "text": said,
        }
    return {
        "index": index,
        "written_by": "window-budget"
        if isinstance(message, DigestMessage) and message.facts
        else "read from its text",
        "facts": len(ledger.facts),
        "by_kind": by_kind,
        "objective": objective,
        "compactions": ledger.generations,
        "archived": ledger.archived,
        "audit": {
            "in_ledger": audit.in_ledger,
            "checked": audit.checked,
            "found": audit.found,
            "pinned": audit.appended,
        },
        "pointer": pointer,
    }


def audit_lines(report: UsageReport) -> list[str]:
    """The digest's ledger and audit, as report lines (none when there is neither)."""
    lines = []
    if report.ledger_facts is not None:
        lines.append(f"digest ledger: {report.ledger_facts:,} facts carried")
    if report.audit is not None:
        lines.append(f"digest audit: {report.audit}")
    return lines


def format_report_rich(report: UsageReport, *, width: int = 88, color: bool = False) -> str:
    """Render ``report`` as a table with usage bars when ``rich`` is installed.

    Falls back to :func:`format_report` when it is not. ``color=True`` keeps the ANSI
    colour codes (for a terminal); the default is plain characters.
    """
    try:
        from rich.console import Console
        from rich.progress_bar import ProgressBar
        from rich.table import Table
    except ImportError:
        return format_report(report)

    style = "bold red" if report.over_budget else "bold green"
    title = (
        f"{report.total:,} / {report.window:,} tokens ({report.percentage:.1f}%) — "
        f"{report.available:,} available" + (" — OVER BUDGET" if report.over_budget else "")
    )
    table = Table(title=title, title_style=style, expand=False)
    table.add_column("category")
    table.add_column("tokens", justify="right")
    table.add_column("allowance", justify="right")
    table.add_column("use of allowance", min_width=24)
    for cat, tokens in report.per_category.items():
        allowance = report.category_budgets.get(cat, 0)
        over = tokens > allowance
        bar = ProgressBar(
            total=max(allowance, 1),
            completed=min(tokens, max(allowance, 1)),
            width=24,
            complete_style="red" if over else "green",
        )
        table.add_row(cat.name, f"{tokens:,}", f"{allowance:,}", bar)
    limit = max(report.limit, 1.0)
    table.add_row(
        "total",
        f"{report.total:,}",
        f"{report.limit:,.0f}",
        ProgressBar(
            total=limit,
            completed=min(report.total, limit),
            width=24,
            complete_style="red" if report.over_budget else "green",
        ),
    )
    roles = ", ".join(f"{r} {n:,}" for r, n in report.per_role.items()) or "none"
    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width,
        force_terminal=color,
        color_system=("standard" if color else None),
        legacy_windows=False,
    )
    console.print(table)
    # One fact a line: wrapped at a narrow width, a "; "-joined line left a separator
    # dangling at the end of a line.
    console.print(f"roles: {roles}", highlight=False)
    console.print(
        f"images: {report.image_count:,}, counter: {report.counter_name}", highlight=False
    )
    if report.calibration is not None and report.calibrated_total is not None:
        console.print(
            _calibration_line(report.calibration, report.calibrated_total), highlight=False
        )
    for line in audit_lines(report):
        console.print(line, highlight=False)
    cost = cost_line(report)
    if cost:
        console.print(cost, highlight=False, markup=False)  # a model name is data, not markup
    return buf.getvalue().rstrip("\n")
