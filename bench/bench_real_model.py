"""A real small model as the summarizer: three successive compactions per session, audited.

The other benchmarks script the model. This one drives the core condenser with a real one,
Qwen2.5-Coder 1.5B Instruct (Q4_K_M) run by llama.cpp on the CPU (``bench/real_model``; set
it up first with ``bench/real_model/setup.sh``), through the LangChain completers
(``langchain_window_budget.completer.make_completers``). Each session is fed to
``create_condenser`` in three stretches; after each, a forced compaction folds everything
before the kept tail, so the digest of generation 2 and 3 carries the one before it.

Recorded per generation:

- whether the model's reply was kept or the network-free digest stood in, and why
  (``Summary.fallback_reason`` and the WARNING the library logs), what cleaning removed;
- the audit (``result.audit``): key facts checked, found in the model's own prose, only in
  lines copied from the carried digest, pinned, invented names, objective replaced;
- coverage of the ledger's objective, constraints, edited files and open errors in the
  digest's text, by the audit's own rule (``mentions``) and by a verbatim probe;
- shapes the library should have caught and did not: a template heading description kept,
  more than one ``Pinned facts`` section, a ``scrollback`` / ``carried-digest`` or thinking
  tag, a path in the model's prose that the transcript never names and the audit did not
  flag, an objective that is not the user's, a degenerate loop (a line or phrase kept three
  times or more), a ``# Guardrails`` rule whose words the user never typed (under 60 %), a
  user constraint in no line of the digest, a pins section cut by a marker; and invented-name
  flags on a name the reply wrote whole (cut short by the digest's own cut).

Sessions: ``examples/long_session.jsonl``, and a real public agent trajectory when given
(``--traj``; measured with SWE-agent's GPT-4 run on pydicom-1458 from the SWE-agent
repository's test data, kept out of this repo), else the second half of the first session.
The model is slow on a small CPU (about 15-20 prompt tokens/s, 2-9 generated tokens/s on 2
cores), so the prompts are kept small: the agent's window is 8,192 tokens, the summarizer's
is given as 3,000 (``summarizer_model``), which gives each call about 4,000 characters of
scrollback, one call per compaction; the digest budget, also the reply's ``max_tokens``, is
500 tokens. Six model calls in all, about 11 minutes.

Run:  python bench/bench_real_model.py [--traj FILE --traj-source URL]
      --dry            a canned reply instead of the model, to check the prompt sizes
      --replay FILE    re-score a saved run with its recorded replies (seconds, no model)
      --reuse FILE     run the model only for prompts the saved run did not send
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from real_model.scoring import (
    copied_share,
    coverage,
    false_flags,
    model_part,
    source_text,
    table,
    uncaught,
)

from langchain_window_budget.completer import make_completers
from window_budget import (
    AgentMessage,
    AssistantMessage,
    BudgetPolicy,
    Model,
    TextBlock,
    ToolResultMessage,
    UserMessage,
    create_condenser,
)
from window_budget.budget import count_text
from window_budget.contract import CompleteOptions, Context
from window_budget.digest import digest_body
from window_budget.messages import message_text
from window_budget.pipeline.summarize.facts import FactLedger
from window_budget.readers import read_transcript

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


# ------------------------------------------------------------------ the model, recorded


@dataclass
class Call:
    prompt_sha256: str
    """The prompt is not saved (it quotes the transcript): its hash checks a replay."""
    prompt_chars: int
    reply: str
    wall_s: float
    prompt_tokens: int | None = None
    reply_tokens: int | None = None
    finish: str | None = None
    timings: dict[str, Any] = field(default_factory=dict)
    load: float = 0.0


class Recorder:
    """The completer the condenser calls, keeping every prompt and reply."""

    def __init__(
        self,
        chat_model: Any | None,
        replay: list[dict[str, Any]] | None = None,
        reuse: list[dict[str, Any]] | None = None,
    ) -> None:
        self.chat_model = chat_model
        self.replay = replay
        # --reuse: a recorded call whose prompt hashes the same gets its reply back (greedy
        # decoding with a fixed seed gives the same reply for the same prompt).
        self.reuse = {c["prompt_sha256"]: c for c in reuse or ()}
        self.reused = 0
        self.mismatched = 0
        self.calls: list[Call] = []
        self.metadata: list[dict[str, Any]] = []
        if chat_model is not None:
            from langchain_core.callbacks import BaseCallbackHandler

            recorder = self

            class Meta(BaseCallbackHandler):
                def on_llm_end(self, response: Any, **kwargs: Any) -> None:
                    message = response.generations[0][0].message
                    recorder.metadata.append(dict(message.response_metadata))

            chat_model.callbacks = [Meta()]
            self.complete_sync = make_completers(chat_model)[1]

    def __call__(
        self, model: Model, context: Context, options: CompleteOptions | None = None
    ) -> AssistantMessage:
        prompt = "\n\n".join(message_text(m) for m in context.messages)
        if self.replay is not None:
            return self._replayed(context, prompt)
        sent = f"[system]\n{context.system_prompt}\n\n[user]\n{prompt}"
        if _sha(sent) in self.reuse:
            self.reused += 1
            self.calls.append(Call(**self.reuse[_sha(sent)]))
            print(f"      model call {len(self.calls)}: reused the recorded reply", flush=True)
            return AssistantMessage((TextBlock(self.calls[-1].reply),))
        load = os.getloadavg()[0]
        started = time.perf_counter()
        if self.chat_model is None:  # --dry: a canned digest, the prompt measured only
            reply = AssistantMessage((TextBlock(_canned(prompt)),))
        else:
            reply = self.complete_sync(model, context, options)
        wall = time.perf_counter() - started
        meta = self.metadata[-1] if self.chat_model is not None and self.metadata else {}
        usage = reply.usage
        call = Call(
            prompt_sha256=_sha(sent),
            prompt_chars=len(sent),
            reply=message_text(reply),
            wall_s=round(wall, 1),
            prompt_tokens=getattr(usage, "input_tokens", None) if usage else None,
            reply_tokens=getattr(usage, "output_tokens", None) if usage else None,
            finish=meta.get("finish_reason"),
            timings={k: round(v, 1) for k, v in meta.get("timings", {}).items()},
            load=round(load, 2),
        )
        if call.prompt_tokens is None and self.chat_model is None and _TOKENIZER:
            call.prompt_tokens = len(_TOKENIZER(sent))
        self.calls.append(call)
        print(
            f"      model call {len(self.calls)}: {call.prompt_tokens} prompt tokens, "
            f"{call.reply_tokens} reply tokens, {call.wall_s} s (load {load:.2f})",
            flush=True,
        )
        return reply

    def _replayed(self, context: Context, prompt: str) -> AssistantMessage:
        """The recorded reply of the next call (``--replay``), its timings kept."""
        recorded = dict(self.replay.pop(0)) if self.replay else None
        if recorded is None:
            raise RuntimeError("--replay: more summary calls than the recording holds")
        call = Call(**recorded)
        sent = f"[system]\n{context.system_prompt}\n\n[user]\n{prompt}"
        if _sha(sent) != call.prompt_sha256:
            self.mismatched += 1
            call.prompt_sha256, call.prompt_chars = _sha(sent), len(sent)
        self.calls.append(call)
        return AssistantMessage((TextBlock(call.reply),))


_TOKENIZER: Any = None


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _canned(prompt: str) -> str:
    first = re.search(r"you: (.{20,120}?)[.\n]", prompt)
    goal = first.group(1) if first else "Continue the work."
    return (
        f"# Objective\n{goal}\n\n# Guardrails\nnone\n\n# Status\n## Shipped\nnone\n"
        "## Active\nnone\n## Stuck\nnone\n\n# Rationale\nnone\n\n# Plan\nnone\n\n"
        "# Carryover\nnone"
    )


class Warnings(logging.Handler):
    """The summarizer's log lines (WARNING on a fallback, DEBUG on a cleaned reply)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname}: {record.getMessage()}")


# ------------------------------------------------------------------ sessions


def _stretches(messages: Sequence[AgentMessage], parts: int = 3) -> list[list[AgentMessage]]:
    """``messages`` in ``parts`` stretches, never starting a stretch on a tool result."""
    cuts = [0]
    for k in range(1, parts):
        i = len(messages) * k // parts
        while i < len(messages) and isinstance(messages[i], ToolResultMessage):
            i += 1
        cuts.append(i)
    cuts.append(len(messages))
    return [list(messages[a:b]) for a, b in itertools.pairwise(cuts)]


def sessions(traj: Path | None, traj_source: str) -> list[tuple[str, str, list[AgentMessage]]]:
    path = REPO / "examples" / "long_session.jsonl"
    first = list(read_transcript(path).messages)
    out = [("long_session", str(path.relative_to(REPO)), first)]
    if traj is not None and traj.is_file():
        msgs = list(read_transcript(traj).messages)
        out.append((traj.stem, traj_source or str(traj), msgs))
    else:
        half = len(first) // 2
        while half < len(first) and not isinstance(first[half], UserMessage):
            half += 1
        out.append(("long_session (2nd half)", f"{path.relative_to(REPO)}[{half}:]", first[half:]))
    return out


# ------------------------------------------------------------------ the run


def run_session(
    name: str,
    source: str,
    messages: list[AgentMessage],
    recorder: Recorder,
    log: Warnings,
    *,
    window: int,
    summarizer_window: int,
    digest_tokens: int,
    keep_recent: int,
) -> list[dict[str, Any]]:
    condenser = create_condenser(
        model=Model("agent", window),
        summarizer_model=Model("qwen2.5-coder-1.5b-instruct-q4_k_m", summarizer_window),
        complete_sync=recorder,
        policy=BudgetPolicy(
            keep_recent=keep_recent, digest_max_tokens=digest_tokens, max_summary_calls=1
        ),
    )
    print(f"\n{name} ({source}): {len(messages)} messages", flush=True)
    history: list[AgentMessage] = []
    seen: list[AgentMessage] = []
    rows: list[dict[str, Any]] = []
    carried = ""
    for gen, stretch in enumerate(_stretches(messages), 1):
        seen += stretch
        history = [*history, *stretch]
        calls_before, logs_before = len(recorder.calls), len(log.lines)
        started = time.perf_counter()
        result = condenser.run_sync(history, force=True)
        wall = time.perf_counter() - started
        history = list(result.messages)
        summary = result.summary
        audit = result.audit
        row: dict[str, Any] = {
            "session": name,
            "generation": gen,
            "messages_in": len(seen),
            "folded": result.plan.cut,
            "reason": result.reason,
            "wall_s": round(wall, 1),
            "calls": [vars(c) for c in recorder.calls[calls_before:]],
            "log": log.lines[logs_before:],
        }
        if summary is None:
            row["accepted"] = None
            rows.append(row)
            print(f"   generation {gen}: no digest ({result.reason})", flush=True)
            continue
        body = digest_body(summary.message) or ""
        ledger = condenser.ledger(summary.message) or FactLedger()
        objective = next((f.text for f in ledger.facts if f.kind == "objective"), None)
        reply = "\n".join(c["reply"] for c in row["calls"])
        transcript = source_text(seen)
        users = "\n".join(message_text(m) for m in seen if isinstance(m, UserMessage))
        row.update(
            accepted=not summary.fallback,
            fallback_reason=summary.fallback_reason,
            digest_tokens=count_text(summary.text, None),
            audit=None
            if audit is None
            else {
                "in_ledger": audit.in_ledger,
                "checked": audit.checked,
                "found": audit.found,
                "copied": audit.copied,
                "pinned": audit.appended,
                "left_out": audit.left_out,
                "invented": list(audit.invented),
                "objective_replaced": audit.objective_replaced,
                "invented_rules": list(audit.invented_rules),
            },
            coverage=coverage(ledger, body),
            objective=objective,
            objective_from_user=objective is not None
            and any(
                isinstance(m, UserMessage) and objective.strip() in message_text(m) for m in seen
            ),
            copied_line_share=copied_share(model_part(body), carried) if carried else 0.0,
            uncaught=[] if summary.fallback else uncaught(body, audit, transcript, ledger, users),
            false_flags=false_flags(audit, reply, transcript),
            digest=body,
        )
        carried = body
        rows.append(row)
        cov = " ".join(f"{k} {v['stated']}/{v['facts']}" for k, v in row["coverage"].items())
        state = "accepted" if row["accepted"] else f"fallback ({summary.fallback_reason})"
        print(f"   generation {gen}: folded {result.plan.cut}, {state}; {audit}; {cov}", flush=True)
        for problem in row["uncaught"]:
            print(f"      uncaught: {problem}", flush=True)
        for flag in row["false_flags"]:
            print(f"      false flag: {flag}", flush=True)
    return rows


def main() -> None:
    global _TOKENIZER
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traj", type=Path, default=None, help="a public agent trajectory")
    parser.add_argument("--traj-source", default="", help="where --traj came from (printed)")
    parser.add_argument("--window", type=int, default=8192, help="the agent's window")
    parser.add_argument(
        "--summarizer-window",
        type=int,
        default=3000,
        help="the summarizer's window as the condenser is told it: sizes each call's scrollback",
    )
    parser.add_argument("--digest-tokens", type=int, default=500)
    parser.add_argument("--keep-recent", type=int, default=500)
    parser.add_argument("--dry", action="store_true", help="a canned reply, no model")
    parser.add_argument(
        "--replay",
        type=Path,
        default=None,
        help="re-score a saved run: its recorded replies stand in for the model (seconds)",
    )
    parser.add_argument(
        "--reuse",
        type=Path,
        default=None,
        help="a saved run: calls whose prompt is unchanged get its reply, the rest run the model",
    )
    parser.add_argument("--out", type=Path, default=HERE / "results" / "real_model.json")
    args = parser.parse_args()

    log = Warnings()
    logger = logging.getLogger("window_budget.pipeline.summarize")
    logger.addHandler(log)
    logger.setLevel(logging.DEBUG)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    load_start = os.getloadavg()
    started = time.perf_counter()
    measured: dict[str, Any] = {}
    replay = None
    if args.replay is not None:
        measured = json.loads(args.replay.read_text(encoding="utf-8"))
        replay = [c for g in measured["generations"] for c in g["calls"]]
        chat_model = None
    elif args.dry:
        chat_model = None
        try:
            from real_model.chat import load_chat_model

            llama = load_chat_model(n_ctx=4096).client
            _TOKENIZER = lambda text: llama.tokenize(text.encode(), add_bos=False)  # noqa: E731
        except (ImportError, FileNotFoundError):
            pass
    else:
        from real_model.chat import load_chat_model

        chat_model = load_chat_model(n_ctx=4096, max_tokens=args.digest_tokens)
    reuse = None
    if args.reuse is not None:
        saved = json.loads(args.reuse.read_text(encoding="utf-8"))
        reuse = [c for g in saved["generations"] for c in g["calls"]]
    recorder = Recorder(chat_model, replay, reuse)
    rows: list[dict[str, Any]] = []
    picked = sessions(args.traj, args.traj_source)
    for name, source, messages in picked:
        rows += run_session(
            name,
            source,
            messages,
            recorder,
            log,
            window=args.window,
            summarizer_window=args.summarizer_window,
            digest_tokens=args.digest_tokens,
            keep_recent=args.keep_recent,
        )
    wall = time.perf_counter() - started
    load_end = os.getloadavg()
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    print()
    print(table(rows))
    if measured:  # the figures of the run that recorded the replies
        wall = measured["wall_min"] * 60
        load_start, load_end = measured["load_average"]["start"], measured["load_average"]["end"]
    print(
        f"\n{len(recorder.calls)} model calls, {wall / 60:.1f} min wall; load average "
        f"{load_start[0]:.2f} at the start, {load_end[0]:.2f} / {load_end[1]:.2f} / "
        f"{load_end[2]:.2f} (1/5/15 min) at the end; commit {measured.get('commit', commit)}"
    )
    if reuse is not None:
        print(f"reused {recorder.reused} recorded replies of {args.reuse} (same prompt)")
    if replay is not None:
        print(
            f"replayed {len(recorder.calls)} recorded replies; "
            f"prompts differing from the recording: {recorder.mismatched}"
        )
    if args.dry:
        return
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit,
        **{k: measured[k] for k in ("date", "commit", "wall_min", "load_average") if k in measured},
        "scored_at_commit": commit,
        "model": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf (llama-cpp-python, greedy, seed 0)",
        "settings": {
            "window": args.window,
            "summarizer_window": args.summarizer_window,
            "digest_max_tokens": args.digest_tokens,
            "keep_recent": args.keep_recent,
            "max_summary_calls": 1,
        },
        "sessions": [{"name": n, "source": s, "messages": len(m)} for n, s, m in picked],
        **(
            {}
            if measured
            else {
                "wall_min": round(wall / 60, 1),
                "load_average": {"start": load_start, "end": load_end},
            }
        ),
        "cpus": os.cpu_count(),
        "reused_replies": recorder.reused,
        "generations": rows,
    }
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
