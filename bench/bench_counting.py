"""How close each way of counting comes to what the provider reported, call by call.

For every assistant reply that carries usage, the prompt the provider counted for that call
is compared with each method's figure for the messages before it:

- ``heuristic``: the character/piece heuristic over the messages (plus system prompts);
- ``tiktoken``: exact cl100k_base counts of the same text (what a user with tiktoken gets);
- ``calibrated``: the heuristic scaled by the calibration learned from the calls *before*
  this one (refreshed every few calls; for the first calls, from the other transcripts of
  the same model: a session without usage);
- ``anchored``: the last good reported figure plus the heuristic of what came after it
  (what the gate uses; the heuristic alone before the first figure);
- ``anchored+cal``: the same, with the part after the anchor calibrated.

It also prints, for the heuristic and tiktoken alone, the estimate of the messages between
two successive calls over how much the reported prompt grew: the text rule measured without
a system prompt or an anchor in the way.

It prints, per method, the ratio estimate / reported prompt (median, p10, p90, worst), and
where the gate fires against the first call whose real prompt crosses a limit, for limits
at 30/50/70/90 % of each transcript's largest prompt (calls early is negative, late positive).

Transcripts: a folder of real ones (``--real DIR`` or ``$WINDOW_BUDGET_BENCH_TRANSCRIPTS``;
any format ``read_transcript`` detects: pi and Claude Code sessions carry usage), and
generated ones: tool-loop sessions full of numbers, code, logs and JSON, with a provider
that counts 1.2x cl100k_base plus per-message and per-call framing and a system prompt, an
aborted reply with zero usage and a compaction summary whose kept turns carry stale usage.

Run by hand: ``python bench/bench_counting.py --real ~/transcripts``. Never part of the
test suite.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import os
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from window_budget import (
    AgentMessage,
    AssistantMessage,
    CompactionSummaryMessage,
    CustomMessage,
    Model,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from window_budget.budget import (
    Calibration,
    TiktokenCounter,
    TokenLedger,
    calibrate,
    calibrate_many,
    context_window_for,
    estimate_message_tokens,
    model_key,
)
from window_budget.budget._anchor import anchor_usage
from window_budget.readers import iter_transcript_files, read_transcript

METHODS = ("heuristic", "tiktoken", "calibrated", "anchored", "anchored+cal")
REFRESH_CALLS = 8
LIMIT_SHARES = (0.3, 0.5, 0.7, 0.9)
GROWTH_METHODS = ("heuristic", "tiktoken")
MIN_GROWTH = 30
"""Smaller growths are mostly the provider's rounding and are left out of the growth ratios."""


@dataclass
class Session:
    """One transcript: its messages, system prompts and model."""

    name: str
    messages: list[AgentMessage]
    model: str | None
    system: list[str] = field(default_factory=list)


# ----------------------------------------------------------------- generated sessions


_WORDS = (
    "config",
    "loader",
    "migrate",
    "parser",
    "token",
    "budget",
    "window",
    "cache",
    "digest",
    "anchor",
    "summary",
    "request",
    "server",
    "queue",
    "worker",
    "retry",
    "timeout",
    "schema",
    "column",
    "index",
)


def _noise(r: random.Random) -> str:
    kind = r.randrange(6)
    if kind == 0:  # numbers
        return " ".join(str(r.randint(0, 999)) for _ in range(r.randint(50, 400)))
    if kind == 1:  # code
        return "\n".join(
            f"    def {r.choice(_WORDS)}_{i}(self, x: int) -> int:\n"
            f"        return self.values[{i}] * {r.randint(2, 99)}"
            for i in range(r.randint(5, 60))
        )
    if kind == 2:  # logs
        return "\n".join(
            f"2026-11-{r.randint(10, 28)}T12:{r.randint(10, 59)}:01Z INFO "
            f"{r.choice(_WORDS)} id={r.getrandbits(32):08x} took "
            f"{r.randint(1, 999)}ms"
            for _ in range(r.randint(5, 80))
        )
    if kind == 3:  # json
        return json.dumps(
            [
                {
                    "id": r.randint(0, 10**6),
                    "name": r.choice(_WORDS),
                    "score": round(r.random(), 4),
                    "tags": r.sample(_WORDS, 3),
                }
                for _ in range(r.randint(3, 60))
            ],
            indent=r.choice([None, 2]),
        )
    if kind == 4:  # bullets and a table
        return (
            "\n".join(f"- {r.choice(_WORDS)} {r.randint(0, 99)}" for _ in range(40))
            + "\n"
            + "\n".join(
                f"| {r.choice(_WORDS)} | {r.randint(0, 9999)} | {r.random():.3f} |"
                for _ in range(20)
            )
        )
    return " ".join(r.choice(_WORDS) for _ in range(r.randint(30, 300))) + "."


class _Provider:
    """Counts like a provider whose tokenizer is 1.2x cl100k_base, with its own framing."""

    def __init__(self, enc: TiktokenCounter, system: str) -> None:
        self.enc = enc
        self.overhead = round(1.2 * enc.count(system)) + 900  # + tool schemas

    def count(self, message: AgentMessage) -> int:
        from window_budget.budget import message_parts

        parts, blocks, _ = message_parts(message)
        calls = len(getattr(message, "tool_calls", ()))
        return round(1.2 * self.enc.count("\n".join(parts))) + 3 + 2 * blocks + 20 * calls


def generated(n_sessions: int, seed: int, enc: TiktokenCounter) -> list[Session]:
    sessions = []
    for s in range(n_sessions):
        r = random.Random(seed + s)
        # One agent: the same system prompt and tools every session, and, as in pi's
        # files, not written to the transcript.
        system = "You are a coding agent. " + _noise(random.Random(seed))
        provider = _Provider(enc, system)
        model = r.choice(["claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805"])
        live: list[AgentMessage] = [UserMessage(f"task {s}: " + _noise(r))]
        written: list[AgentMessage] = list(live)
        for turn in range(r.randint(40, 120)):
            prompt = provider.overhead + sum(map(provider.count, live))
            if turn % 37 == 17:  # an aborted reply: zero usage, then the retry
                aborted = AssistantMessage(
                    "", usage=Usage(0, 0), model=model, stop_reason="aborted"
                )
                live.append(aborted)
                written.append(aborted)
                prompt = provider.overhead + sum(map(provider.count, live))
            call = ToolCallBlock(
                f"c{turn}", "bash", {"command": f"run step {turn}", "content": _noise(r)}
            )
            reply = AssistantMessage((TextBlock(f"Step {turn}."), call), model=model)
            out = provider.count(reply)
            reply = AssistantMessage(
                reply.content, usage=Usage(prompt, out), model=model, stop_reason="toolUse"
            )
            result = ToolResultMessage(f"c{turn}", "bash", _noise(r))
            live += [reply, result]
            written += [reply, result]
            if turn == 60:  # compaction: a summary, then the last 4 turns kept verbatim
                sessions.append(Session(f"generated-{s}", written, model))
                kept = live[-4:]
                summary = CompactionSummaryMessage(
                    "Summary: " + _noise(r), sum(map(provider.count, live)), kept_count=len(kept)
                )
                live = [summary, *kept]
                written = list(live)  # the file's live context, as readers will place it
        sessions.append(
            Session(
                f"generated-{s}" + ("-compacted" if len(written) < len(live) or turn > 60 else ""),
                written,
                model,
            )
        )
    return sessions


# ----------------------------------------------------------------------- measuring


@dataclass
class Results:
    ratios: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in METHODS})
    later: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in METHODS})
    """Ratios of the calls after a transcript's (or a compaction's) first: an anchor exists."""
    firing: dict[str, list[int]] = field(default_factory=lambda: {m: [] for m in METHODS})
    missed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(METHODS, 0))
    growth: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in GROWTH_METHODS})
    """Per pair of successive calls: the estimate of the messages between them over how
    much the reported prompt grew (no system prompt, no anchor: the text rule alone)."""
    calls: int = 0


def _calls(session: Session) -> list[int]:
    """Calls whose figure measured this transcript: not those on turns a compaction kept."""
    out, stale_until = [], -1
    for i, m in enumerate(session.messages):
        kept = getattr(m, "kept_count", None)
        if isinstance(m, CompactionSummaryMessage) and kept:
            stale_until = i + kept
        if i > stale_until and anchor_usage(m) is not None:
            out.append(i)
    return out


def measure(
    session: Session, enc: TiktokenCounter, prior: Calibration | None, into: Results
) -> None:
    msgs = session.messages
    pinned = sum(estimate_message_tokens(CustomMessage("system", t)) for t in session.system)
    pinned_exact = sum(
        estimate_message_tokens(CustomMessage("system", t), enc) for t in session.system
    )
    heur = [estimate_message_tokens(m) for m in msgs]
    exact = [estimate_message_tokens(m, enc) for m in msgs]
    model = Model(session.model or "transcript", context_window_for(session.model) or 200_000)
    ledger = TokenLedger()
    cal, cal_at = prior, -REFRESH_CALLS
    per_call: list[tuple[int, dict[str, float]]] = []
    for n, j in enumerate(_calls(session)):
        usage = anchor_usage(msgs[j])
        assert usage is not None
        real = usage.prompt_tokens
        if n - cal_at >= REFRESH_CALLS:
            cal = calibrate(msgs[:j], model=session.model, pinned_tokens=pinned) or prior
            cal_at = n
        est = sum(heur[:j]) + pinned
        figures = {
            "heuristic": est,
            "tiktoken": sum(exact[:j]) + pinned_exact,
            "calibrated": cal.apply(est) if cal else est,
        }
        head = msgs[:j]
        context = ledger.context(head, model, pinned_tokens=pinned)
        anchor = ledger.anchor(head, model, pinned_tokens=pinned)
        figures["anchored"] = context.context_tokens
        if anchor is not None:
            a_usage = anchor_usage(msgs[anchor])
            assert a_usage is not None
            after = sum(heur[anchor + 1 : j])
            figures["anchored+cal"] = a_usage.context_tokens + (
                cal.apply(after, overhead=False) if cal else after
            )
        else:
            figures["anchored+cal"] = figures["calibrated"]
        per_call.append((real, figures))
        for method, value in figures.items():
            into.ratios[method].append(value / real)
            if n:
                into.later[method].append(value / real)
        into.calls += 1
    calls = _calls(session)
    for a, b in itertools.pairwise(calls):
        before, after = anchor_usage(msgs[a]), anchor_usage(msgs[b])
        assert before is not None
        assert after is not None
        grew = after.prompt_tokens - before.prompt_tokens
        if grew >= MIN_GROWTH:
            into.growth["heuristic"].append(sum(heur[a:b]) / grew)
            into.growth["tiktoken"].append(sum(exact[a:b]) / grew)
    if not per_call:
        return
    top = max(real for real, _ in per_call)
    for share in LIMIT_SHARES:
        limit = share * top
        crossing = (
            next(k for k, (real, _) in enumerate(per_call) if real > limit) if top > limit else None
        )
        if crossing is None:
            continue
        for method in METHODS:
            fires = next((k for k, (_, f) in enumerate(per_call) if f[method] > limit), None)
            if fires is None:
                into.missed[method] += 1
            else:
                into.firing[method].append(fires - crossing)


def _q(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _worst(ratios: Sequence[float]) -> float:
    return max(ratios, key=lambda x: abs(math.log(x)) if x > 0 else math.inf)


def report(title: str, results: Results) -> None:
    print(f"\n{title}: {results.calls:,} calls")
    print(
        f"  {'method':<13} {'median':>7} {'p10':>6} {'p90':>6} {'worst':>6} {'w/o 1st':>7}  "
        f"gate vs real crossing: median, early-most, late-most, within 2, late >1, never"
    )
    for method in METHODS:
        ratios = results.ratios[method]
        if not ratios:
            continue
        worst = _worst(ratios)
        later = _worst(results.later[method]) if results.later[method] else math.nan
        fire = results.firing[method]
        within = sum(abs(d) <= 2 for d in fire)
        late = sum(d > 1 for d in fire)
        fire_text = (
            (
                f"{statistics.median(fire):+.0f}, {min(fire):+d}, {max(fire):+d}, "
                f"{within}/{len(fire) + results.missed[method]}, {late}, "
                f"{results.missed[method]}"
            )
            if fire
            else "-"
        )
        print(
            f"  {method:<13} {statistics.median(ratios):7.3f} {_q(ratios, 0.1):6.3f} "
            f"{_q(ratios, 0.9):6.3f} {worst:6.3f} {later:7.3f}  {fire_text}"
        )
    for method, ratios in results.growth.items():
        if ratios:
            print(
                f"  growth between calls, {method}: median {statistics.median(ratios):.3f}, "
                f"p10 {_q(ratios, 0.1):.3f}, p90 {_q(ratios, 0.9):.3f} "
                f"({len(ratios)} calls that grew the prompt by {MIN_GROWTH}+ tokens)"
            )


def _real_sessions(folder: Path, *, as_read: bool = False) -> list[Session]:
    out = []
    for path in iter_transcript_files(folder):
        try:
            t = read_transcript(path, whole_file=True)
        except Exception as exc:  # a bench over other people's files skips what it cannot read
            print(f"skipped {path}: {exc}", file=sys.stderr)
            continue
        parts = (
            [list(t.messages)] if as_read else _live_segments(t.messages, t.meta.get("compactions"))
        )
        for k, messages in enumerate(parts):
            session = Session(
                f"{path.name}#{k}" if k else path.name, messages, t.model, list(t.system)
            )
            if _calls(session):
                out.append(session)
    return out


def _live_segments(
    messages: Sequence[AgentMessage], compactions: object
) -> list[list[AgentMessage]]:
    """The file cut at its compactions, each part as the model saw it.

    Read whole (``whole_file=True``), a file holds its compactions inline; the readers
    place the live context after the last boundary: the summary, the turns it kept (with
    ``kept_count``), then what followed. This does the same for every boundary, so each
    part is measured against what its calls really sent. Where the reader records no
    compactions as a list (Claude Code files), the file is one part.
    """
    marks = [c for c in compactions if isinstance(c, dict)] if isinstance(compactions, list) else []
    if not marks:
        return [list(messages)]
    parts = [list(messages[: marks[0]["index"]])]
    for n, mark in enumerate(marks):
        at = mark["index"]
        first = mark.get("first_kept")
        kept = list(messages[first:at]) if isinstance(first, int) and first < at else []
        end = marks[n + 1]["index"] if n + 1 < len(marks) else len(messages)
        summary = messages[at]
        if isinstance(summary, CompactionSummaryMessage):
            summary = dataclasses.replace(summary, kept_count=len(kept))
        parts.append([summary, *kept, *messages[at + 1 : end]])
    return parts


def run(
    sessions: list[Session],
    enc: TiktokenCounter,
    title: str,
    measure_one: Callable[..., None] = measure,
) -> None:
    results = Results()
    for i, session in enumerate(sessions):
        # A session's own first calls are calibrated from the others of its model: what a
        # session without usage gets.
        others = calibrate_many(s.messages for k, s in enumerate(sessions) if k != i)
        prior = others.get(model_key(session.model))
        per = Results()
        measure_one(session, enc, prior, per)
        for m in METHODS:
            results.ratios[m] += per.ratios[m]
            results.later[m] += per.later[m]
            results.firing[m] += per.firing[m]
            results.missed[m] += per.missed[m]
        for m in GROWTH_METHODS:
            results.growth[m] += per.growth[m]
        results.calls += per.calls
        if len(sessions) <= 12:
            report(f"  {session.name} ({session.model})", per)
    report(title, results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--real",
        type=Path,
        default=os.environ.get("WINDOW_BUDGET_BENCH_TRANSCRIPTS"),
        help="folder of real transcripts that carry provider usage",
    )
    parser.add_argument(
        "--as-read",
        action="store_true",
        help="measure each real file whole (read_transcript(whole_file=True)) "
        "instead of cut at its compactions",
    )
    parser.add_argument("--generated", type=int, default=6, help="generated sessions")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    enc = TiktokenCounter("cl100k_base")
    if args.real:
        run(
            _real_sessions(Path(args.real), as_read=args.as_read),
            enc,
            f"real transcripts in {args.real}" + (" (whole files)" if args.as_read else ""),
        )
    if args.generated:
        run(generated(args.generated, args.seed, enc), enc, "generated sessions")


if __name__ == "__main__":
    main()
