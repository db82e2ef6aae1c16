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
from window_budget.pipeline.summarize._audit import mentions
from window_budget.pipeline.summarize._prompt import DIGEST_TEMPLATE, flatten_message
from window_budget.pipeline.summarize.facts import FactLedger
from window_budget.readers import read_transcript

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
KINDS = ("objective", "constraint", "file", "error")
PINS = "# Pinned facts"


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

    def __init__(self, chat_model: Any | None, replay: list[dict[str, Any]] | None = None) -> None:
        self.chat_model = chat_model
        self.replay = replay
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
        load = os.getloadavg()[0]
        started = time.perf_counter()
        if self.chat_model is None:  # --dry: a canned digest, the prompt measured only
            reply = AssistantMessage((TextBlock(_canned(prompt)),))
        else:
            reply = self.complete_sync(model, context, options)
        wall = time.perf_counter() - started
        meta = self.metadata[-1] if self.chat_model is not None and self.metadata else {}
        usage = reply.usage
        sent = f"[system]\n{context.system_prompt}\n\n[user]\n{prompt}"
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


# ------------------------------------------------------------------ checks


def _norm(text: str) -> str:
    return " ".join(text.replace("`", " ").lower().split())


def _source_text(messages: Sequence[AgentMessage]) -> str:
    """Everything the session says, tool arguments and whole outputs included."""
    return "\n".join(e for m in messages for e in flatten_message(m, tool_output_chars=10**9))


def four_kinds(ledger: Any) -> dict[str, list[Any]]:
    by: dict[str, list[Any]] = {k: [] for k in KINDS}
    for fact in ledger.facts:
        if fact.kind == "objective" or fact.kind == "constraint":
            by[fact.kind].append(fact)
        elif fact.kind == "file" and fact.status in ("created", "edited", "deleted"):
            by["file"].append(fact)
        elif fact.kind == "error" and fact.status == "open":
            by["error"].append(fact)
    return by


def verbatim(fact: Any, text: str, root: str | None) -> bool:
    """The fact's own words in the text: the objective's first sentence, the rule, the
    path (or relative to the root, or a directory and the rest on one line), the error's
    key line."""
    hay = _norm(text)
    said = fact.text
    if fact.kind == "objective":
        said = re.split(r"(?<=[.!?])\s+", said, maxsplit=1)[0]
    if _norm(said) in hay:
        return True
    if fact.kind != "file":
        return False
    rel = said[len(root) + 1 :] if root and said.startswith(root + "/") else said
    if _norm(rel) in hay:
        return True
    parts = rel.split("/")
    return any(
        _norm("/".join(parts[:i]) + "/") in _norm(line)
        and _norm("/".join(parts[i:])) in _norm(line)
        for line in text.splitlines()
        for i in range(1, len(parts))
    )


def coverage(ledger: Any, text: str) -> dict[str, dict[str, Any]]:
    """Per kind: facts, how many the text states (the audit's rule, ``mentions``, or the
    verbatim / grouped probe), and by each rule alone."""
    root = ledger.root
    out: dict[str, dict[str, Any]] = {}
    for kind, facts in four_kinds(ledger).items():
        rule = [mentions(text, f, root) for f in facts]
        probe = [verbatim(f, text, root) for f in facts]
        out[kind] = {
            "facts": len(facts),
            "stated": sum(a or b for a, b in zip(rule, probe, strict=True)),
            "audit_rule": sum(rule),
            "verbatim": sum(probe),
            "missing": [
                f.text[:120] for f, a, b in zip(facts, rule, probe, strict=True) if not (a or b)
            ],
        }
    return out


_TEMPLATE_LINES = [
    line.strip()
    for line in DIGEST_TEMPLATE.splitlines()
    if line.strip() and not line.lstrip().startswith("#")
]
_TAG_RE = re.compile(r"<\s*/?\s*(scrollback|carried-digest|think|thinking)\b|<\|im_", re.I)
_PATH_RE = re.compile(
    r"(?<![\w/.~-])(?:~?/)?(?:[\w.-]+/)+[\w.-]*\w|(?<![\w/.-])[\w-]+\.[a-z]{1,5}\b"
)
_NOTE = "not in the transcript"


def model_part(body: str) -> str:
    return body.split(PINS, 1)[0]


_RULE_RE = re.compile(r"\b(must|never|only|always|don'?t|do not|avoid|make sure)\b", re.I)
_WORD_RE = re.compile(r"[a-z][a-z0-9_.'/-]{3,}")
_FILLER = frozenset(
    {
        "user",
        "must",
        "never",
        "only",
        "always",
        "avoid",
        "make",
        "sure",
        "ensure",
        "that",
        "this",
        "with",
        "from",
        "into",
        "they",
        "their",
        "should",
        "will",
        "when",
        "which",
        "what",
        "have",
        "been",
        "does",
        "don't",
        "there",
    }
)
_MARK_RE = re.compile(r"\[… [\d,]+ chars removed by window-budget …\]")


def _section(text: str, heading: str) -> str | None:
    found = re.search(rf"^# {heading}\n(.*?)(?=^# |\Z)", text, re.S | re.M)
    return found.group(1) if found else None


def repeats(own: str) -> list[str]:
    """A degenerate loop: a line three times or more, or a phrase repeated back to back."""
    out: list[str] = []
    counts: dict[str, int] = {}
    for line in own.splitlines():
        key = _norm(line).lstrip("-* ")
        if len(key) > 20:
            counts[key] = counts.get(key, 0) + 1
    out += [f"line kept {n}x: {k[:70]!r}" for k, n in counts.items() if n >= 3]
    loop = re.search(r"(.{30,300}?)(?:\s*\1){2,}", _norm(own))
    if loop and not out:
        times = len(re.findall(re.escape(loop.group(1)), _norm(own)))
        out.append(f"phrase kept {times}x: {loop.group(1)[:70]!r}")
    return out


def uncaught(body: str, audit: Any, source: str, ledger: Any, users: str) -> list[str]:
    """Shapes the library should have caught in a kept digest, each said in one line.

    ``users`` is what the user typed (a guardrail should come from it)."""
    return _markup(body, audit, source) + _claims(body, ledger, users)


def _markup(body: str, audit: Any, source: str) -> list[str]:
    """Template text, a second pins section, tags, a made-up path left unflagged."""
    problems: list[str] = []
    own = model_part(body)
    for line in _TEMPLATE_LINES:
        if _norm(line) in _norm(body):
            problems.append(f"template line kept: {line!r}")
    pins = len(re.findall(r"pinned facts", body, re.I))
    if pins > 1:
        problems.append(f"{pins} 'Pinned facts' headings")
    for match in _TAG_RE.finditer(body):
        problems.append(f"tag kept: {match.group(0)!r}")
    flagged = set(audit.invented) if audit is not None else set()
    for line in own.splitlines():
        if _NOTE in line:
            continue
        for match in _PATH_RE.finditer(line):
            name = match.group(0).rstrip(".")
            if len(name) < 4 or name in flagged or re.fullmatch(r"[\d.]+\w?", name):
                continue
            if name not in source and name.lstrip("/") not in source:
                problems.append(f"path not in the transcript, not flagged: {name!r}")
    return problems


def _claims(body: str, ledger: Any, users: str) -> list[str]:
    """The objective, loops, rules the user never stated, constraints lost, the pins."""
    problems: list[str] = []
    root = ledger.root
    own = model_part(body)
    goal = next((f for f in ledger.facts if f.kind == "objective"), None)
    head = _section(body, "Objective")
    if goal is not None and head is None:
        problems.append("no '# Objective' section")
    elif goal is not None and head is not None and not mentions(head, goal, root):
        problems.append(f"objective section is the model's: {head.strip()[:100]!r}")
    problems += repeats(own)
    for line in (_section(own, "Guardrails") or "").splitlines():
        said = line.strip().lstrip("-* ")
        words = {w.strip(".'/-") for w in _WORD_RE.findall(_norm(said))} - _FILLER
        if _RULE_RE.search(said) and words:
            share = sum(w in _norm(users) for w in words) / len(words)
            if share < 0.6:
                problems.append(f"guardrail the user never stated ({share:.0%}): {said[:90]!r}")
    rules = ledger.of_kind("constraint")
    missing = [f for f in rules if not mentions(body, f, root) and not verbatim(f, body, root)]
    if missing:
        problems.append(f"{len(missing)} of {len(rules)} user constraints in no line of the digest")
    pinned = body.split(PINS + "\n", 1)[1] if PINS + "\n" in body else ""
    if _MARK_RE.search(pinned):
        problems.append("the pins section is cut by a marker")
    return problems


def false_flags(audit: Any, reply: str, source: str) -> list[str]:
    """Invented-name flags on a name the reply wrote whole and the transcript holds: the
    flagged form is the name cut short by the digest's own cut marker."""
    out = []
    for name in audit.invented if audit is not None else ():
        whole = re.search(re.escape(name) + r"[\w.-]+", reply)
        if whole and whole.group(0) in source:
            out.append(f"`{name}` flagged, but the reply wrote `{whole.group(0)}` (cut short)")
    return out


def copied_share(own: str, carried: str) -> float:
    lines = [_norm(x).lstrip("-* ") for x in own.splitlines() if len(x.strip()) > 12]
    prior = {_norm(x).lstrip("-* ") for x in carried.splitlines()}
    return round(sum(x in prior for x in lines) / len(lines), 2) if lines else 0.0


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
        source_text = _source_text(seen)
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
            },
            coverage=coverage(ledger, body),
            objective=objective,
            objective_from_user=objective is not None
            and any(
                isinstance(m, UserMessage) and objective.strip() in message_text(m) for m in seen
            ),
            copied_line_share=copied_share(model_part(body), carried) if carried else 0.0,
            uncaught=[] if summary.fallback else uncaught(body, audit, source_text, ledger, users),
            false_flags=false_flags(audit, reply, source_text),
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


def _pct(a: int, b: int) -> str:
    return f"{a}/{b}" if b else "–"


def _tokens(call: dict[str, Any], which: str) -> Any:
    """A call's prompt or reply tokens: the usage the completer passed on, else llama.cpp's."""
    timing = call["timings"].get("prompt_eval_tokens" if which == "prompt" else "eval_tokens")
    value = call[f"{which}_tokens"]
    return value if value is not None else (int(timing) if timing is not None else "?")


def table(rows: list[dict[str, Any]]) -> str:
    out = [
        "| session | gen | folded | prompt / reply tokens | s | reply | checked / found / copied"
        " / pinned | invented | obj. replaced | objective / constraints / edited files / open"
        " errors in digest | uncaught |",
        "| --- | ---: | ---: | --- | ---: | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        if r.get("accepted") is None:
            out.append(f"| {r['session']} | {r['generation']} | 0 | | | {r['reason']} | | | | | |")
            continue
        calls = r["calls"]
        tok = ", ".join(f"{_tokens(c, 'prompt')} / {_tokens(c, 'reply')}" for c in calls)
        secs = sum(c["wall_s"] for c in calls)
        reply = "accepted" if r["accepted"] else f"fallback: {r['fallback_reason'][:70]}"
        a = r["audit"]
        aud = f"{a['checked']} / {a['found']} / {a['copied']} / {a['pinned']}" if a else "–"
        inv = ", ".join(f"`{n}`" for n in a["invented"]) if a and a["invented"] else "0"
        rep = ("yes" if a["objective_replaced"] else "no") if a else "–"
        cov = " · ".join(_pct(r["coverage"][k]["stated"], r["coverage"][k]["facts"]) for k in KINDS)
        unc = len(r["uncaught"])
        out.append(
            f"| {r['session']} | {r['generation']} | {r['folded']} | {tok} | {secs:.0f} | {reply}"
            f" | {aud} | {inv} | {rep} | {cov} | {unc} |"
        )
    return "\n".join(out)


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
    recorder = Recorder(chat_model, replay)
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
        "generations": rows,
    }
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"saved {args.out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
