"""How ``inspect`` shows a report to people: aligned lines, transcript text escaped.

The report is the JSON-ready dict :func:`window_budget.cli.inspect.inspect_transcript`
builds (what ``--json`` prints as it is); each line is passed through
:func:`~window_budget.cli._output.terminal_text` as it is joined.
"""

from __future__ import annotations

from typing import Any

from window_budget.budget import format_usd
from window_budget.cli._output import plural, terminal_text

__all__ = ["render_inspect"]


def _pct(part: float, whole: float) -> str:
    return f"{part / whole * 100:.1f}%" if whole else "-"


def _render_digest(digest: dict[str, Any] | None) -> list[str]:
    """The carried digest's ledger, audit and pointer form, for ``inspect``."""
    if digest is None:
        return []
    kinds = ", ".join(f"{kind} {n}" for kind, n in digest["by_kind"].items())
    audit = digest["audit"]
    lines = [
        f"  digest            message #{digest['index'] + 1}, ledger "
        f"{digest['written_by']}: {plural(digest['facts'], 'fact')} after "
        f"{plural(digest['compactions'], 'compaction')} ({kinds})"
    ]
    if digest["objective"]:
        lines.append(f"                    objective: {_short(digest['objective'], 100)}")
    lines.append(
        f"                    audit: {audit['found']} of {audit['checked']} key facts "
        f"in its text, {audit['pinned']} pinned under '# Pinned facts'"
    )
    pointer = digest["pointer"]
    if pointer is not None:
        where = (
            f"archived message #{pointer['source'] + 1} ({pointer['role']}): "
            f"{_short(pointer['text'], 70)}"
            if pointer["archived"]
            else "not in this file (the archive of the store that compacted it)"
        )
        lines.append(
            f"                    pointer: a fact's source N is the Nth folded message "
            f"(digests left out); {pointer['kind']} "
            f"{_short(pointer['fact'], 50)!r} -> source {pointer['source']} = {where}"
        )
    return lines


def _render_provider(found: dict[str, Any] | None) -> list[str]:
    """The provider's own compaction block, when the transcript carries one."""
    if found is None:
        return []
    what = "summary" if found["readable"] else "opaque payload"
    return [
        f"  provider compaction  message #{found['index'] + 1} ({found['provider']}, "
        f"{found['tokens']:,} tokens, {found['chars']:,}-character {what}): the provider "
        f"folded the {plural(found['before'], 'message')} before it; counted from there",
    ]


def _render_cost(cost: dict[str, Any], shows: str) -> list[str]:
    """What the session cost and what the last compaction saves, for ``inspect``."""
    session = cost["session"]
    if session["total_usd"] is None:
        why = "; ".join(session["missing"]) or "no prices"
        priced = (
            f"; the {plural(session['priced_calls'], 'priced call')} cost "
            f"{format_usd(session['priced_usd'])}"
            if session["priced_calls"]
            else ""
        )
        said = f"unknown ({why}: {plural(session['unpriced_calls'], 'call')} unpriced{priced})"
    elif not session["priced_calls"]:
        said = "$0 (no call in the file reports usage)"
    else:
        said = (
            f"{format_usd(session['total_usd'])} over {plural(session['priced_calls'], 'call')} "
            f"(input {format_usd(session['input_usd'])}, cache read "
            f"{format_usd(session['cache_read_usd'])}, cache write "
            f"{format_usd(session['cache_write_usd'])}, output {format_usd(session['output_usd'])})"
        )
    lines = [f"  session cost      {said}"]
    saved = cost["compaction_saved"]
    if saved is None:
        where = (
            "read inline (--whole-file)" if shows == "whole-file" else "no compaction in the file"
        )
        lines.append(f"  compaction saves  nothing to measure: {where}")
        return lines
    lines.append(
        f"  compaction saves  {saved['folded_tokens']:,} tokens a call (what it archived, less "
        f"its digest): {_usd_range(saved['per_call_cached_usd'], saved['per_call_uncached_usd'])}"
        " a call"
    )
    so_far = _usd_range(saved["so_far_cached_usd"], saved["so_far_uncached_usd"])
    lines.append(
        f"                    {so_far} over the {plural(saved['calls_since'], 'call')} since "
        "(at cache-read - input prices)"
    )
    return lines


def _usd_range(low: float | None, high: float | None) -> str:
    if high is None:
        return "unknown (no input price)"
    if low is None:
        return f"{format_usd(high)} (uncached; no cache-read price)"
    return f"{format_usd(low)} - {format_usd(high)}"


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def render_inspect(info: dict[str, Any]) -> str:
    """One transcript's report as text for people, every line escaped for the terminal."""
    lines = [
        *_render_header(info),
        *_render_sizes(info),
        *_render_usage(info),
        *_render_gate(info),
        *_render_provider(info["provider_compaction"]),
        *_render_digest(info["digest"]),
        *_render_cost(info["cost"], info["shows"]),
        *_render_cut(info),
    ]
    return "\n".join(terminal_text(line) for line in lines)


def _render_header(info: dict[str, Any]) -> list[str]:
    """The file, its format and counts, and what part of it is the live context."""
    lines = [
        f"{info['file']}  ({info['format']}, {info['messages']} messages"
        + (
            f", {info['ignored_records']} non-conversation records ignored"
            if info["ignored_records"]
            else ""
        )
        + (f", {len(info['skipped'])} bad records skipped" if info["skipped"] else "")
        + ")"
    ]
    if info["sidechain"]:
        lines.append("  context           a side chain: a sub-agent's own conversation")
    if info["runs"]:
        lines.append(
            f"  run               {info['run']} of {info['runs']:,} in the file "
            "(0-based; --run picks another)"
        )
    compactions = plural(info["compactions"], "compaction")
    if info["shows"] == "whole-file" and info["compactions"]:
        lines.append(
            f"  context           the whole file, {compactions} inline (more than the model sees)"
        )
    elif info["archived_messages"]:
        lines.append(
            f"  context           live: after the last of {compactions} "
            f"({plural(info['archived_messages'], 'earlier message')} archived; "
            "--whole-file shows them)"
        )
    return lines


def _render_sizes(info: dict[str, Any]) -> list[str]:
    """The model and window, the estimate, and its split by role and category."""
    lines: list[str] = []
    total = info["estimated_tokens"] or 1
    listing = info["model_data"]
    source = info["window_source"]
    if source == "models.dev" and listing is not None:
        source = f"models.dev: {listing['provider']} {listing['model_id']}"
    elif source.startswith("assumed"):
        source += "; --window N sets it"
    lines.append(
        f"  model             {info['model'] or 'not named in the file'}, window "
        f"{info['gate']['window']:,} ({source})"
    )
    lines.append(
        f"  estimated tokens  {info['estimated_tokens']:>9,}  ({info['counter']}; "
        f"system prompt {info['system_tokens']:,} pinned)"
    )
    lines.append("  by role           messages     tokens   share")
    for role, entry in info["by_role"].items():
        lines.append(
            f"    {role:<16}{entry['messages']:>8}  {entry['tokens']:>9,}  "
            f"{_pct(entry['tokens'], total):>6}"
        )
    lines.append("  by category                    tokens   share")
    for cat, tokens in info["by_category"].items():
        if tokens:
            lines.append(f"    {cat:<26}{tokens:>9,}  {_pct(tokens, total):>6}")
    return lines


def _render_usage(info: dict[str, Any]) -> list[str]:
    """What the provider reported, and the calibration drawn from it."""
    lines: list[str] = []
    usage = info["reported_usage"]
    if usage is None:
        lines.append("  provider usage    none in the file (estimate only)")
    else:
        lines.append(
            f"  provider usage    {usage['context_tokens']:>9,}  (last reply: input "
            f"{usage['input_tokens']:,} + cache read {usage['cache_read_tokens']:,} "
            f"+ cache write {usage['cache_creation_tokens']:,} + output "
            f"{usage['output_tokens']:,}); estimate {info['estimated_tokens']:,}"
        )
    cal = info["calibration"]
    if cal is None:
        lines.append("  calibration       none (needs 3 calls of one model with usage)")
    else:
        lines.append(
            f"  calibration       provider counts x{cal['ratio']:.3f} the estimate (over "
            f"{cal['samples']} calls, {cal['p10']:.2f}-{cal['p90']:.2f} per call) plus "
            f"{cal['overhead_tokens']:,} outside the transcript: "
            f"{cal['calibrated_tokens']:,}; now {cal['calibrated_context_tokens']:,}"
        )
    return lines


def _render_gate(info: dict[str, Any]) -> list[str]:
    """The gate: its limit, where the transcript stands, where it first fires."""
    lines: list[str] = []
    gate = info["gate"]
    lines.append(
        f"  gate              limit {gate['limit']:,.0f} = ({gate['window']:,} window "
        f"- {gate['reserve_tokens'] or 0:,} reserve) x {gate['trigger_ratio']}"
    )
    state = "OVER budget" if gate["over_budget"] else "under budget"
    source = "usage-anchored" if info["anchored"] else "estimate"
    lines.append(
        f"                    now {info['context_tokens']:,} ({source}): {state}, "
        f"{_pct(info['context_tokens'], gate['window'])} of the window"
    )
    if gate["fires_at"] is None:
        lines.append("                    never fires while the transcript grows")
    else:
        lines.append(
            f"                    first fires at message #{gate['fires_at'] + 1} "
            "as the transcript grows"
        )
    return lines


def _render_cut(info: dict[str, Any]) -> list[str]:
    """Where the condenser would cut, or why it would not."""
    lines: list[str] = []
    cut = info["cut"]
    if cut["reason"] == "masked":
        outputs = plural(cut["masked_outputs"], "old tool output")
        lines.append(
            f"  cut               none needed: masking {outputs} frees "
            f"{cut['tokens_freed']:,} tokens ({cut['tokens_after']:,} after), no "
            "digest (--no-mask to fold instead)"
        )
    elif cut["index"] is None:
        why = cut.get("error") or {
            "under-budget": "nothing to cut: under budget",
            "nothing-condensable": "over budget but nothing can be cut",
        }.get(cut["reason"], cut["reason"])
        lines.append(f"  cut               {why}")
    else:
        lines.append(
            f"  cut               before message #{cut['index'] + 1}: "
            f"{cut['dropped_messages']} messages ({cut['dropped_tokens']:,} tokens) "
            f"fold into a digest, {cut['kept_messages']} ({cut['kept_tokens']:,} "
            "tokens) stay verbatim"
        )
    return lines
