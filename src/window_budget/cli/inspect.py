"""``window-budget inspect``: where a transcript's tokens go, and where the gate and the cut fall.

One report per file: a JSON-ready dict (:func:`inspect_transcript`, what ``--json`` prints)
shown to people by :func:`~window_budget.cli._inspect_render.render_inspect`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from window_budget.budget import (
    TokenLedger,
    cached_estimates,
    calibrate,
    compaction_saving,
    estimate_message_tokens,
    lookup_model,
    model_data_version,
    session_cost,
)
from window_budget.cli._batch import Batch
from window_budget.cli._inspect_render import render_inspect
from window_budget.cli._options import (
    Settings,
    model_for_transcript,
    policy_options,
    read_options,
    session_model,
    settings_from,
    system_tokens,
    window_source,
)
from window_budget.contract import Model, TokenCounter
from window_budget.errors import WindowBudgetError
from window_budget.messages import AgentMessage, ProviderCompactionBlock, Usage, message_blocks
from window_budget.pipeline import (
    budget_limit,
    create_condenser,
    estimate_context,
    provider_boundary,
)
from window_budget.readers import Transcript
from window_budget.tools.report import carried_digest

__all__ = ["inspect", "inspect_transcript"]


_FALLBACK_CATEGORY = {
    "user": "dialog",
    "assistant": "dialog",
    "toolResult": "system_output",
    "bashExecution": "system_output",
    "custom": "context",
    "branchSummary": "context",
    "compactionSummary": "context",
}


def _categories(
    transcript: Transcript, settings: Settings, pinned: int, window: int
) -> dict[str, int]:
    try:
        from window_budget.tools.report import analyze
    except ImportError:  # pragma: no cover - report.py ships with the core
        out: dict[str, int] = {"system": pinned} if pinned else {}
        for msg in transcript.messages:
            key = _FALLBACK_CATEGORY.get(str(getattr(msg, "role", "")), "dialog")
            out[key] = out.get(key, 0) + estimate_message_tokens(msg, settings.counter)
        return out
    report = analyze(
        transcript.messages,
        window,
        counter=settings.counter,
        policy=settings.policy,
        pinned_tokens=pinned,
    )
    return {c.value: n for c, n in report.per_category.items()}


def inspect_transcript(transcript: Transcript, settings: Settings) -> dict[str, Any]:
    """Everything ``inspect`` reports about one transcript, as a JSON-ready dict."""
    msgs = transcript.messages
    counter = settings.counter
    pinned = system_tokens(transcript, counter)
    # Through the content cache: the gate, the replay and the plan below reuse these.
    sizes = cached_estimates(msgs, counter)
    model = model_for_transcript(transcript, settings.window)
    limit = budget_limit(model, settings.policy)
    estimate = sum(sizes) + pinned
    # A provider's own compaction: the window (and any cut of ours) starts after it.
    provider = _provider_compaction(msgs, sizes)
    at = provider["end"] if provider else 0
    live, live_pinned = msgs[at:], pinned + (provider["tokens"] if provider else 0)
    context = estimate_context(live, model, counter=counter, pinned_tokens=live_pinned)
    fires_at = _first_firing(live, model, live_pinned, limit, counter)
    fires_at = None if fires_at is None else fires_at + at
    reported = transcript.reported_usage
    cal = calibrate(msgs, model=transcript.model, counter=counter, pinned_tokens=pinned)
    cut = _cut(live, at, sizes, model, settings, live_pinned)
    return {
        "file": transcript.path,
        "format": transcript.format,
        "shows": "whole-file" if transcript.whole_file else "live",
        "archived_messages": len(transcript.archive),
        "compactions": _compactions(transcript),
        "sidechain": bool(transcript.meta.get("sidechain")),
        "run": transcript.meta.get("run"),
        "runs": transcript.meta.get("runs"),
        "messages": len(msgs),
        "ignored_records": transcript.ignored,
        "skipped": [{"line": b.line, "reason": b.reason} for b in transcript.skipped],
        "model": transcript.model,
        "window_source": window_source(transcript, settings.window),
        "model_data": _model_data(model.id),
        "counter": counter.name if counter is not None else "heuristic",
        "system_tokens": pinned,
        "estimated_tokens": estimate,
        "by_role": _by_role(msgs, sizes),
        "by_category": _categories(transcript, settings, pinned, model.context_window),
        "reported_usage": _usage(reported),
        "calibration": None
        if cal is None
        else {
            "model": cal.model,
            "ratio": round(cal.ratio, 4),
            "samples": cal.samples,
            "p10": round(cal.spread[0], 4),
            "p90": round(cal.spread[1], 4),
            "overhead_tokens": cal.overhead_tokens,
            "calibrated_tokens": cal.apply(estimate),
            "calibrated_context_tokens": estimate_context(
                msgs, model, counter=counter, pinned_tokens=pinned, calibration=cal
            ).context_tokens,
        },
        "context_tokens": context.context_tokens,
        "anchored": context.anchored,
        "gate": {
            "window": model.context_window,
            "reserve_tokens": settings.policy.reserve_tokens,
            "trigger_ratio": settings.policy.trigger_ratio,
            "limit": limit,
            "over_budget": context.context_tokens > limit,
            "fires_at": fires_at,
        },
        "cut": cut,
        "provider_compaction": provider,
        "digest": carried_digest(msgs, transcript.archive),
        "cost": _cost(transcript, counter),
    }


def _by_role(msgs: Sequence[AgentMessage], sizes: Sequence[int]) -> dict[str, dict[str, int]]:
    """Messages and estimated tokens per role."""
    by_role: dict[str, dict[str, int]] = {}
    for msg, size in zip(msgs, sizes, strict=True):
        entry = by_role.setdefault(
            str(getattr(msg, "role", "unknown")), {"messages": 0, "tokens": 0}
        )
        entry["messages"] += 1
        entry["tokens"] += size
    return by_role


def _cut(
    live: Sequence[AgentMessage],
    at: int,
    sizes: Sequence[int],
    model: Model,
    settings: Settings,
    live_pinned: int,
) -> dict[str, Any]:
    """Where the condenser would cut the live context (after a provider's compaction at ``at``)."""
    cut: dict[str, Any] = {"index": None, "reason": "under-budget"}
    counter = settings.counter
    try:
        decision = create_condenser(model=model, policy=settings.policy, counter=counter).decide(
            live, pinned_tokens=live_pinned
        )
    except WindowBudgetError as exc:
        cut = {"index": None, "reason": "cannot-fit", "error": str(exc)}
    else:
        if decision.result is not None and decision.result.masked:
            masked = decision.result
            cut = {
                "index": None,
                "reason": "masked",
                "masked_outputs": len(masked.masked),
                "tokens_freed": masked.tokens_freed,
                "tokens_after": masked.tokens_after,
            }
        elif decision.result is not None:
            cut = {"index": None, "reason": decision.result.reason}
        else:
            plan = decision.plan
            cut = {
                "index": plan.cut + at,
                "reason": "over-budget",
                "dropped_messages": len(plan.dropped),
                "dropped_tokens": sum(sizes[at : plan.cut + at]),
                "kept_messages": len(plan.kept),
                "kept_tokens": sum(sizes[plan.cut + at :]),
            }
    return cut


def _usage(reported: Usage | None) -> dict[str, int] | None:
    """The last reply's reported usage, or None."""
    if reported is None:
        return None
    return {
        "input_tokens": reported.input_tokens,
        "cache_read_tokens": reported.cache_read_tokens,
        "cache_creation_tokens": reported.cache_creation_tokens,
        "output_tokens": reported.output_tokens,
        "context_tokens": reported.context_tokens,
    }


def _model_data(model_id: str) -> dict[str, Any] | None:
    """Which models.dev listing the window and prices came from (None: not in the data)."""
    limits = lookup_model(model_id)
    if limits is None:
        return None
    prices = limits.prices
    return {
        "provider": limits.provider,
        "model_id": limits.model_id,
        "version": model_data_version(),
        "prices_per_million": None
        if prices is None
        else {
            "input": prices.input,
            "output": prices.output,
            "cache_read": prices.cache_read,
            "cache_write": prices.cache_write,
        },
    }


def _cost(transcript: Transcript, counter: TokenCounter | None) -> dict[str, Any]:
    """What the session cost and what its last compaction saves (docs/cli.md defines both).

    The session is every call in the file, archived ones included; each is priced at the
    model it names, else at the session's model.
    """
    calls = (*transcript.archive, *transcript.messages)
    name = session_model(transcript)
    limits = lookup_model(name)
    prices = limits.prices if limits is not None else None
    saving = compaction_saving(transcript.archive, transcript.messages, prices, counter)
    return {
        "session": session_cost(calls, model=name).as_dict(),
        "compaction_saved": None
        if saving is None
        else {
            "folded_tokens": saving.folded_tokens,
            "calls_since": saving.calls,
            "per_call_uncached_usd": _usd(saving.per_call_uncached),
            "per_call_cached_usd": _usd(saving.per_call_cached),
            "so_far_uncached_usd": _usd(saving.so_far_uncached),
            "so_far_cached_usd": _usd(saving.so_far_cached),
        },
    }


def _usd(dollars: float | None) -> float | None:
    return None if dollars is None else round(dollars, 6)


def _provider_compaction(
    msgs: Sequence[AgentMessage], sizes: Sequence[int]
) -> dict[str, Any] | None:
    """The newest provider compaction block (Anthropic's or OpenAI's), if the file has one."""
    bound = provider_boundary(msgs)
    if bound is None:
        return None
    start, end = bound
    block = next(b for b in message_blocks(msgs[start]) if isinstance(b, ProviderCompactionBlock))
    return {
        "index": start,
        "end": end,
        "provider": block.provider,
        "readable": block.summary is not None,
        "chars": len(block.text),
        "tokens": sum(sizes[start:end]),
        "before": start,
    }


def _compactions(transcript: Transcript) -> int:
    """How many compactions the file records (readers keep a count or a list of them)."""
    found = transcript.meta.get("compactions")
    if isinstance(found, int):
        return found
    return len(found) if isinstance(found, list) else 0


def _first_firing(
    msgs: Sequence[AgentMessage],
    model: Model,
    pinned: int,
    limit: float,
    counter: TokenCounter | None,
) -> int | None:
    """Index of the first message after which the gate's figure passes ``limit``.

    Replays the transcript through a :class:`~window_budget.budget._ledger.TokenLedger`,
    so each step is the figure :func:`~window_budget.pipeline._gate.estimate_context` gives
    (the trusted usage anchor — same model, plausible, not stale after a digest or on
    the turns kept with it — plus what came after, else the estimate of everything) at
    the cost of the new message only.
    """
    ledger = TokenLedger(counter)
    grown: list[AgentMessage] = []
    for i, msg in enumerate(msgs):
        grown.append(msg)
        if ledger.context(grown, model, pinned_tokens=pinned).context_tokens > limit:
            return i
    return None


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@policy_options
@read_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object per file.")
def inspect(
    paths: tuple[Path, ...],
    as_json: bool,
    fmt: str | None,
    skip_bad: bool,
    whole_file: bool,
    run: int | None,
    **policy: Any,
) -> None:
    """Show where a transcript's tokens go, where the gate fires and where the cut falls.

    PATHS are transcript files or directories of them (.json/.jsonl). For a Claude Code
    or pi session it shows the live context after the last compaction (what the model
    sees), unless --whole-file is given. It also shows what the session's calls cost at
    models.dev's prices and what the last compaction saves on each later call.
    """
    settings = settings_from(**policy)
    batch = Batch(paths, skip_bad=skip_bad, whole_file=whole_file, run=run)
    reports: list[dict[str, Any]] = []
    with batch.progress() as files:
        for path in files:
            transcript = batch.read(path, fmt)
            if transcript is None:
                continue
            reports.append(inspect_transcript(transcript, settings))
    if as_json:
        # A skipped file is listed as {"file": ..., "skipped": reason}.
        click.echo(json.dumps(reports + batch.skipped, indent=2))
    else:
        click.echo("\n\n".join(render_inspect(r) for r in reports))
