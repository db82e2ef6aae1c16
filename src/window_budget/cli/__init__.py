"""The ``window-budget`` command line: a thin layer over the public functions.

Commands: ``inspect`` (where a transcript's tokens go, where the gate would fire and
the cut would fall), ``compact`` (run the condenser and write the result), ``plot``
(a PNG of the context growing and being condensed) and ``demo``. A bad file or a bad
option ends with one line on stderr and exit status 1, never a traceback.
"""

from __future__ import annotations

try:
    import click
except ImportError as exc:  # pragma: no cover - exercised by __main__
    raise ImportError(
        'the window-budget command line needs click; pip install "window-budget[cli]"'
    ) from exc

import importlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from window_budget.budget._cache import cached_estimates
from window_budget.budget._calibrate import calibrate
from window_budget.budget._counters import resolve_counter
from window_budget.budget._estimate import estimate_message_tokens
from window_budget.budget._ledger import TokenLedger
from window_budget.budget._models import lookup_model, model_for
from window_budget.cli._output import say, show_error, terminal_text
from window_budget.cli.demo import run_demo
from window_budget.contract import BudgetPolicy, Model, SyncCompleteFn, TokenCounter
from window_budget.digest import is_digest
from window_budget.errors import ConfigError, WindowBudgetError
from window_budget.messages import AgentMessage, AssistantMessage, CustomMessage
from window_budget.pipeline._condenser import DEFAULT_POLICY, create_condenser
from window_budget.pipeline._gate import budget_limit, estimate_context
from window_budget.readers import (
    FORMATS,
    RUN_FORMATS,
    ReadError,
    Transcript,
    detect_format,
    iter_transcript_files,
    read_transcript,
    write_transcript,
)
from window_budget.readers._base import PICK_FORMAT, PICK_RUN, SKIP_BAD
from window_budget.tools.report import carried_digest

__all__ = ["main"]

F = TypeVar("F", bound=Callable[..., Any])


class _Group(click.Group):
    """A group whose usage errors exit with status 1, like every other failure."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _silence_stdout()
            raise _PipeClosed from None

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        standalone = standalone_mode
        try:
            return super().main(args, prog_name, complete_var, False, **extra)
        except _PipeClosed:
            # The reader of our output went away (``| head``): nothing left to say to
            # anyone, so exit as a process killed by SIGPIPE would, without a message.
            if not standalone:
                raise
            sys.exit(_SIGPIPE_STATUS)
        except click.exceptions.Exit as exc:
            if standalone:
                sys.exit(exc.exit_code)
            raise
        except click.ClickException as exc:
            if not standalone:
                raise
            show_error(exc)
            sys.exit(1)
        except click.Abort:
            if not standalone:
                raise
            click.echo("Aborted!", err=True)
            sys.exit(1)
        except Exception as exc:
            # The contract is one line and status 1, never a traceback, even for a bug.
            if not standalone:
                raise
            say(
                f"Error: unexpected {type(exc).__name__}: {exc} — please report this "
                "with the command line that caused it",
                err=True,
            )
            sys.exit(1)


_SIGPIPE_STATUS = 128 + 13
"""What a shell reports for a process ended by SIGPIPE (13): the conventional status."""


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real descriptor (a test runner)
        pass


class _PipeClosed(Exception):
    """stdout's reader went away; raised past click, which would exit 1 for it."""


def _fail(message: str) -> NoReturn:
    """End the command with one line on stderr and exit status 1."""
    raise click.ClickException(_cli_wording(message))


def _cli_wording(message: str) -> str:
    """A reader's error as the command line's user needs it: options by their flags."""
    message = message.replace(SKIP_BAD, "--skip-bad").replace(PICK_FORMAT, "--from")
    message = message.replace(PICK_RUN, "--run")
    return re.sub(r"format='([a-z-]+)'", r"--from \1", message)


@click.group(
    cls=_Group,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(package_name="window-budget")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Keep long LLM conversations inside the model's context window."""
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


@main.command()
@click.option("--width", default=78, show_default=True, help="Output width in columns.")
def demo(width: int) -> None:
    """Condense a long bundled coding session offline and show each step."""
    run_demo(say, width=width)


# ----------------------------------------------------------------- shared options


def _read_options(fn: F) -> F:
    fn = click.option(
        "--run",
        "run",
        type=click.IntRange(min=0),
        default=None,
        metavar="INDEX",
        help="Which run (0-based) of a file of many to read: a tau-bench "
        "result file or an OpenHands output.jsonl. The first by "
        "default.",
    )(fn)
    fn = click.option(
        "--whole-file",
        is_flag=True,
        help="Read every message of a Claude Code, pi or OpenHands file, "
        "earlier compactions inline, instead of the live context after "
        "the last compaction.",
    )(fn)
    fn = click.option(
        "--skip-bad",
        is_flag=True,
        help="Skip malformed lines or records (and count them) instead of "
        "stopping at the first one.",
    )(fn)
    fn = click.option(
        "--from",
        "fmt",
        type=click.Choice(list(FORMATS)),
        default=None,
        help="Input format; detected from the file when omitted.",
    )(fn)
    return fn


def _policy_options(fn: F) -> F:
    options = [
        click.option(
            "--counter",
            type=click.Choice(["heuristic", "tiktoken"]),
            default="heuristic",
            show_default=True,
            help="How tokens are counted (tiktoken needs the [tiktoken] extra).",
        ),
        click.option(
            "--keep-turns",
            type=click.IntRange(min=1),
            default=None,
            help="Keep this many recent turns verbatim (a user message and all "
            "that answers it) instead of --keep-recent tokens.",
        ),
        click.option(
            "--reserve",
            type=click.IntRange(min=0),
            default=DEFAULT_POLICY.reserve_tokens,
            show_default=True,
            help="Tokens set aside for the reply before the ratio applies.",
        ),
        click.option(
            "--keep-recent",
            type=click.IntRange(min=0),
            default=DEFAULT_POLICY.keep_recent,
            show_default=True,
            help="Tokens of recent messages kept verbatim.",
        ),
        click.option(
            "--trigger-ratio",
            type=click.FloatRange(0, 1, min_open=True),
            default=DEFAULT_POLICY.trigger_ratio,
            show_default=True,
            help="Fraction of the usable window at which the gate fires.",
        ),
        click.option(
            "--no-mask",
            is_flag=True,
            default=False,
            help="Do not mask old tool outputs before folding (masking keeps the "
            "3 most recent outputs whole and replaces older ones above 2,000 "
            "characters by a one-line placeholder).",
        ),
        click.option(
            "--window",
            type=click.IntRange(min=1),
            default=None,
            help="The model's context window in tokens [default: the window of "
            "the transcript's model when it is well known; 128,000 when the "
            "transcript names no model].",
        ),
    ]
    for option in options:
        fn = option(fn)
    return fn


@dataclass(frozen=True, slots=True)
class _Settings:
    window: int | None
    policy: BudgetPolicy
    counter: TokenCounter | None


def _settings(
    window: int | None,
    trigger_ratio: float,
    keep_recent: int,
    reserve: int,
    keep_turns: int | None,
    counter: str,
    no_mask: bool = False,
) -> _Settings:
    mask = None if no_mask else DEFAULT_POLICY.mask_keep_outputs
    try:
        if keep_turns is not None:
            policy = BudgetPolicy(
                trigger_ratio=trigger_ratio,
                keep_recent=keep_turns,
                reserve_tokens=reserve,
                keep_unit="turns",
                mask_keep_outputs=mask,
            )
        else:
            policy = BudgetPolicy(
                trigger_ratio=trigger_ratio,
                keep_recent=keep_recent,
                reserve_tokens=reserve,
                mask_keep_outputs=mask,
            )
    except ValueError as exc:
        _fail(str(exc))
    tokens = resolve_counter("tiktoken") if counter == "tiktoken" else None
    return _Settings(window, policy, tokens)


class _Batch:
    """The files a command runs over, and the ones it skipped along the way.

    In a directory, a file whose format cannot be told (a ``package.json``, say) is
    skipped; with ``--skip-bad`` so is any file that fails to read, and in ``plot`` with
    several inputs any file that fails to replay. Each skip is listed on stderr (and in
    ``inspect --json``); the rest still run.
    """

    def __init__(
        self,
        paths: Sequence[Path],
        *,
        skip_bad: bool,
        whole_file: bool = False,
        run: int | None = None,
    ) -> None:
        self.whole_file = whole_file
        self.run = run
        self.files: list[Path] = []
        self.scanned: set[Path] = set()
        for path in paths:
            if path.is_dir():
                found = iter_transcript_files(path)
                if not found:
                    _fail(f"{path}: no .json or .jsonl transcripts in this directory")
                self.files.extend(found)
                self.scanned.update(found)
            else:
                self.files.append(path)
        self.many = len(self.files) > 1 or bool(self.scanned)
        self.skip_bad = skip_bad
        self.skipped: list[dict[str, str]] = []

    def skip(self, path: Path, reason: str) -> None:
        """Note a skipped file (reported by :meth:`report`, once the progress bar is done)."""
        self.skipped.append({"file": str(path), "skipped": reason})

    @contextmanager
    def progress(self) -> Iterator[Iterable[Path]]:
        """The files, with a progress bar on stderr when a directory was given.

        The bar is closed before an error propagates, so the error's line is not written
        after a dangling label; skips are reported once it is closed, error or not.
        """
        try:
            if not self.scanned:
                yield self.files
            else:
                with click.progressbar(
                    self.files,
                    label="transcripts",
                    file=sys.stderr,
                    item_show_func=lambda p: terminal_text(p.name) if p else "",
                ) as bar:
                    yield bar
        finally:
            self.report()

    def report(self) -> None:
        """One stderr line per skipped file."""
        for entry in self.skipped:
            file, reason = entry["file"], entry["skipped"]
            # Reader errors already start with the file's name.
            say(
                f"skipped {reason}" if reason.startswith(file) else f"skipped {file}: {reason}",
                err=True,
            )

    def read(self, path: Path, fmt: str | None) -> Transcript | None:
        """Read one file; None when it is skipped (see the class docstring)."""
        if fmt is None and path in self.scanned:
            try:
                fmt = detect_format(path)
            except _CONTENT_ERRORS as exc:
                self.skip(path, _unreadable(path, exc))
                return None
            except OSError as exc:
                self.skip(path, f"{exc.strerror or exc}")
                return None
        # With several files, --run applies to the files of many runs and the others are
        # read as they are; for one file it must fit (the reader says so otherwise).
        run = self.run
        try:
            if run is not None and self.many:
                fmt = fmt or detect_format(path)
                run = run if fmt in RUN_FORMATS else None
            return read_transcript(
                path, format=fmt, skip_bad=self.skip_bad, whole_file=self.whole_file, run=run
            )
        except _CONTENT_ERRORS as exc:
            message = _unreadable(path, exc)
        except OSError as exc:
            message = f"{path}: {exc.strerror or exc} — check the path"
        if self.skip_bad and self.many:
            self.skip(path, message)
            return None
        _fail(message)


_CONTENT_ERRORS = (ValueError, RecursionError)
"""Failures about what a file holds: the readers' errors (``ReadError`` is a ``ValueError``),
undecodable text, and — defensively, for a reader that lets one through — a parse failure
or nesting past the recursion limit. ``MemoryError`` is not one: the machine ran out."""


def _unreadable(path: Path, exc: ValueError | RecursionError) -> str:
    """Why ``path`` could not be read, as one line starting with its name."""
    if isinstance(exc, ReadError):
        return _cli_wording(str(exc))
    if isinstance(exc, UnicodeDecodeError):
        why = "not UTF-8 text — is this a transcript?"
    elif isinstance(exc, RecursionError):
        why = "nested too deeply to read (beyond Python's recursion limit)"
    else:
        why = f"could not be read ({type(exc).__name__}: {exc})"
    return f"{path}: {why}"


def _system_tokens(transcript: Transcript, counter: TokenCounter | None) -> int:
    return sum(
        estimate_message_tokens(CustomMessage("system", text), counter)
        for text in transcript.system
    )


ASSUMED_WINDOW = 128_000
"""The window of a transcript that names no model, when ``--window`` is not given."""


def _model_for(transcript: Transcript, window: int | None) -> Model:
    # Naming the model the transcript was written with lets its usage figures anchor the
    # estimate; a figure from another model is never trusted. Its window comes from the
    # table of well-known models unless --window says otherwise.
    name = transcript.model
    if window is None and lookup_model(name) is None:
        # A failed reply may name a placeholder ("<synthetic>"): the session's model is the
        # last one the table knows.
        name = next(
            (
                m.model
                for m in reversed(transcript.messages)
                if isinstance(m, AssistantMessage) and lookup_model(m.model)
            ),
            name,
        )
    if window is None and not name:
        window = ASSUMED_WINDOW  # nothing to look up; inspect says the window was assumed
    try:
        return model_for(name, context_window=window)
    except ConfigError as exc:
        _fail(f"{transcript.path}: {exc}")


# ------------------------------------------------------------------------ inspect


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
    transcript: Transcript, settings: _Settings, pinned: int, window: int
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


def inspect_transcript(transcript: Transcript, settings: _Settings) -> dict[str, Any]:
    """Everything ``inspect`` reports about one transcript, as a JSON-ready dict."""
    msgs = transcript.messages
    counter = settings.counter
    pinned = _system_tokens(transcript, counter)
    # Through the content cache: the gate, the replay and the plan below reuse these.
    sizes = cached_estimates(msgs, counter)
    by_role: dict[str, dict[str, int]] = {}
    for msg, size in zip(msgs, sizes, strict=True):
        entry = by_role.setdefault(
            str(getattr(msg, "role", "unknown")), {"messages": 0, "tokens": 0}
        )
        entry["messages"] += 1
        entry["tokens"] += size
    model = _model_for(transcript, settings.window)
    limit = budget_limit(model, settings.policy)
    estimate = sum(sizes) + pinned
    context = estimate_context(msgs, model, counter=counter, pinned_tokens=pinned)
    fires_at = _first_firing(msgs, model, pinned, limit, counter)
    reported = transcript.reported_usage
    cal = calibrate(msgs, model=transcript.model, counter=counter, pinned_tokens=pinned)
    cut: dict[str, Any] = {"index": None, "reason": "under-budget"}
    try:
        decision = create_condenser(model=model, policy=settings.policy, counter=counter).decide(
            msgs, pinned_tokens=pinned
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
                "index": plan.cut,
                "reason": "over-budget",
                "dropped_messages": len(plan.dropped),
                "dropped_tokens": sum(sizes[: plan.cut]),
                "kept_messages": len(plan.kept),
                "kept_tokens": sum(sizes[plan.cut :]),
            }
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
        "window_source": "--window"
        if settings.window is not None
        else ("model table" if lookup_model(model.id) else "assumed: no model named"),
        "counter": counter.name if counter is not None else "heuristic",
        "system_tokens": pinned,
        "estimated_tokens": estimate,
        "by_role": by_role,
        "by_category": _categories(transcript, settings, pinned, model.context_window),
        "reported_usage": None
        if reported is None
        else {
            "input_tokens": reported.input_tokens,
            "cache_read_tokens": reported.cache_read_tokens,
            "cache_creation_tokens": reported.cache_creation_tokens,
            "output_tokens": reported.output_tokens,
            "context_tokens": reported.context_tokens,
        },
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
        "digest": carried_digest(msgs, transcript.archive),
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


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


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
        f"{digest['written_by']}: {_n(digest['facts'], 'fact')} after "
        f"{_n(digest['compactions'], 'compaction')} ({kinds})"
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


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _render_inspect(info: dict[str, Any]) -> str:
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
    compactions = _n(info["compactions"], "compaction")
    if info["shows"] == "whole-file" and info["compactions"]:
        lines.append(
            f"  context           the whole file, {compactions} inline (more than the model sees)"
        )
    elif info["archived_messages"]:
        lines.append(
            f"  context           live: after the last of {compactions} "
            f"({_n(info['archived_messages'], 'earlier message')} archived; "
            "--whole-file shows them)"
        )
    total = info["estimated_tokens"] or 1
    lines.append(
        f"  model             {info['model'] or 'not named in the file'}, window "
        f"{info['gate']['window']:,} ({info['window_source']})"
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
    lines.extend(_render_digest(info["digest"]))
    cut = info["cut"]
    if cut["reason"] == "masked":
        outputs = _n(cut["masked_outputs"], "old tool output")
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
    return "\n".join(terminal_text(line) for line in lines)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@_policy_options
@_read_options
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
    sees), unless --whole-file is given.
    """
    settings = _settings(**policy)
    batch = _Batch(paths, skip_bad=skip_bad, whole_file=whole_file, run=run)
    reports: list[dict[str, Any]] = []
    with batch.progress() as files:
        for path in files:
            transcript = batch.read(path, fmt)
            if transcript is None:
                continue
            try:
                reports.append(inspect_transcript(transcript, settings))
            except click.ClickException as exc:  # this file's model has no known window
                if not batch.many:
                    raise
                batch.skip(path, exc.message)
    if as_json:
        # A skipped file is listed as {"file": ..., "skipped": reason}.
        click.echo(json.dumps(reports + batch.skipped, indent=2))
    else:
        click.echo("\n\n".join(_render_inspect(r) for r in reports))


# ------------------------------------------------------------------------ compact


def _load_chat_model(spec: str) -> Any:
    """A LangChain chat model from ``provider:model`` (kept separate so tests can stub it)."""
    try:
        # Imported by name so the core's sources stay free of framework imports.
        init_chat_model = importlib.import_module("langchain.chat_models").init_chat_model
    except ImportError:
        _fail('--model needs LangChain; pip install "window-budget[langchain]"')
    try:
        return init_chat_model(spec)
    except ImportError as exc:
        _fail(
            f"--model {spec}: the provider's package is not installed ({exc}) — install "
            "it, e.g. pip install langchain-openai"
        )
    except Exception as exc:  # provider constructors raise many kinds (missing keys, ...)
        _fail(
            f"--model {spec}: could not create the chat model ({exc}) — check the "
            "provider:model name and its credentials"
        )


def _completer(spec: str | None) -> SyncCompleteFn | None:
    if spec is None:
        return None
    chat_model = _load_chat_model(spec)
    try:
        adapter = importlib.import_module("langchain_window_budget")
    except ImportError:
        _fail('--model needs the LangChain adapter; pip install "window-budget[langchain]"')
    complete_sync: SyncCompleteFn = adapter.make_completers(chat_model)[1]
    return complete_sync


_JSONL_FORMATS = frozenset({"claude-code", "pi", "openai-jsonl"})
_LOG_FORMATS = frozenset({"claude-code", "pi"})
"""Session logs whose writers mark a digest as a compaction their readers start from."""


def _output_path(source: Path, out: Path | None, many: bool, fmt: str) -> Path | None:
    """Where one condensed transcript goes: ``out`` itself, or a file inside it for many."""
    if not many or out is None:
        return out
    return out / f"{source.stem}.compacted{'.jsonl' if fmt in _JSONL_FORMATS else '.json'}"


def _claim(claimed: dict[Path, Path], source: Path, target: Path) -> None:
    """Record that ``source`` is written to ``target``; refuse a second input for it."""
    earlier = claimed.setdefault(target, source)
    if earlier != source:
        _fail(
            f"{earlier} and {source} would both be written to {target} — compact them in "
            "separate runs or rename one"
        )


def _check_outputs(files: Sequence[Path], output: Path, out_format: str) -> None:
    """Refuse, before anything is written, a run whose outputs would collide or hit an input.

    Outputs are named after their input's file name, so two inputs of the same name in
    different folders would overwrite each other in ``output`` (the output's ending is the
    input's, or the one ``--to`` gives; a format that differs from its file's ending is
    caught as it is written, by :func:`_claim`); and an output landing on a file of the
    run (``x.compacted.json`` read from the output folder itself) would destroy an input.
    """
    claimed: dict[Path, Path] = {}
    for path in files:
        suffix = (
            path.suffix
            if out_format == "input"
            else (".jsonl" if out_format in _JSONL_FORMATS else ".json")
        )
        _claim(claimed, path, output / f"{path.stem}.compacted{suffix}")
    inputs = {p.resolve() for p in files}
    for path in files:
        for suffix in (".json", ".jsonl"):
            target = output / f"{path.stem}.compacted{suffix}"
            if target.resolve() in inputs:
                _fail(
                    f"the output for {path} would overwrite the input {target} — pick "
                    "another --output folder"
                )


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@_policy_options
@_read_options
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="Where to write the condensed transcript (a directory for several "
    "inputs); stdout when omitted.",
)
@click.option(
    "--format",
    "--to",
    "out_format",
    type=click.Choice(["input", *FORMATS]),
    default="input",
    show_default=True,
    help="Output format: the input's own, or any reader format (json is this "
    "library's message_to_dict).",
)
@click.option(
    "--model",
    "model_spec",
    default=None,
    metavar="PROVIDER:MODEL",
    help="Write the digest with this LangChain chat model (init_chat_model "
    "name, e.g. openai:gpt-4o-mini); network-free digest when omitted.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Condense even under budget: fold everything before the last user turn.",
)
@click.option("--dry-run", is_flag=True, help="Show the plan only; write nothing.")
def compact(
    paths: tuple[Path, ...],
    output: Path | None,
    out_format: str,
    model_spec: str | None,
    force: bool,
    dry_run: bool,
    fmt: str | None,
    skip_bad: bool,
    whole_file: bool,
    run: int | None,
    **policy: Any,
) -> None:
    """Run the condenser on a transcript and write the condensed transcript.

    PATHS are transcript files or directories of them. The digest is written without a
    network call unless --model names a chat model. A Claude Code or pi session is
    condensed from its live context; written back in its own format, what came before
    its last compaction is kept ahead of the new digest.
    """
    settings = _settings(**policy)
    batch = _Batch(paths, skip_bad=skip_bad, whole_file=whole_file, run=run)
    many = batch.many
    if many and not dry_run:
        if output is None:
            _fail("several transcripts need -o/--output DIRECTORY to write into")
        if output.exists() and not output.is_dir():
            _fail(
                f"{output} is not a directory — several transcripts need -o/--output "
                "DIRECTORY to write into"
            )
        _check_outputs(batch.files, output, out_format)
        try:
            output.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            _fail(f"{output}: {exc.strerror or exc} — cannot create the output directory")
    if output is not None and not many and not dry_run:
        if not output.parent.is_dir():
            _fail(f"{output.parent} does not exist — create it or pick another --output")
        if output.is_dir():
            _fail(f"{output} is a directory — name a file for one transcript")
    complete_sync = None if dry_run else _completer(model_spec)
    claimed: dict[Path, Path] = {}
    with batch.progress() as files:
        for path in files:
            transcript = batch.read(path, fmt)
            if transcript is not None:
                _compact_one(
                    path,
                    transcript,
                    settings,
                    output,
                    out_format,
                    many=many,
                    force=force,
                    dry_run=dry_run,
                    complete_sync=complete_sync,
                    claimed=claimed,
                )


def _compact_one(
    path: Path,
    transcript: Transcript,
    settings: _Settings,
    output: Path | None,
    out_format: str,
    *,
    many: bool,
    force: bool,
    dry_run: bool,
    complete_sync: SyncCompleteFn | None,
    claimed: dict[Path, Path],
) -> None:
    """Condense one transcript and write it (or show the plan, for ``--dry-run``)."""
    pinned = _system_tokens(transcript, settings.counter)
    target_format = transcript.format if out_format == "input" else out_format
    policy = settings.policy
    if target_format in _LOG_FORMATS:
        # A session log keeps what a compaction folds ahead of its boundary; it has no place
        # for the originals of masked outputs, so a log is compacted with a digest.
        policy = replace(policy, mask_keep_outputs=None)
    condenser = create_condenser(
        model=_model_for(transcript, settings.window),
        policy=policy,
        counter=settings.counter,
        complete_sync=complete_sync,
    )
    msgs = list(transcript.messages)
    try:
        if dry_run:
            decision = condenser.decide(msgs, force=force, pinned_tokens=pinned)
            plan, limit = decision.plan, decision.limit
            reason = decision.result.reason if decision.result else "would condense"
            if decision.result is not None and decision.result.masked:
                outputs = _n(len(decision.result.masked), "old tool output")
                reason = (
                    f"would mask {outputs}, freeing {decision.result.tokens_freed:,} "
                    "tokens, no digest"
                )
            say(
                f"{path}: {len(msgs)} messages, {decision.tokens_before:,} tokens, "
                f"limit {limit:,.0f}: {reason}"
                + (
                    f"; cut before message #{plan.cut + 1}: {len(plan.dropped)} "
                    f"fold into a digest, {len(plan.kept)} kept"
                    if plan.cut
                    else ""
                )
            )
            return
        result = condenser.run_sync(msgs, force=force, pinned_tokens=pinned)
    except WindowBudgetError as exc:
        _fail(f"{path}: {exc}")
    target = _output_path(path, output, many, target_format)
    if target is not None and many:
        _claim(claimed, path, target)
    # A session file is a log: written back as one, it keeps what came before its last
    # compaction and what the new digest replaced ahead of that digest, which its reader
    # treats as the new boundary. Formats without boundaries get the live result only.
    archive: list[AgentMessage] = []
    if target_format in _LOG_FORMATS:
        archive.extend(transcript.archive)
        if result.plan.cut and result.messages and is_digest(result.messages[0]):
            archive.extend(result.plan.dropped)
    try:
        # A file is written atomically (see write_transcript): a failure leaves what was
        # there, the input included when it is the target, and a symlink is replaced.
        write_transcript(
            [*archive, *result.messages],
            target or sys.stdout,
            format=target_format,
            system=transcript.system,
            tokens_before=result.tokens_before,
        )
    except BrokenPipeError:
        raise
    except OSError as exc:
        _fail(f"{target or 'stdout'}: {exc.strerror or exc} — check the output path")
    # Only now: a success line before the write would be a lie when the write fails.
    left_out = (
        ""
        if archive or not transcript.archive
        else (
            f"; the {_n(len(transcript.archive), 'message')} before its last compaction are "
            f"left out of the {target_format} output"
        )
    )
    what = (
        f"{_n(len(result.masked), 'old tool output')} masked, "
        f"{result.tokens_freed:,} tokens freed, no digest"
        if result.masked
        else f"{len(result.plan.dropped)} messages folded"
    )
    say(
        f"{path}: {result.reason}, {result.tokens_before:,} -> "
        f"{result.tokens_after:,} tokens ({what}, {len(result.messages)} "
        f"remain{left_out})" + (f" -> {target}" if target else ""),
        err=True,
    )
    from window_budget.tools.report import analyze, audit_lines

    for line in audit_lines(analyze(result.messages, 1, audit=result.audit)):
        say(f"{path}: {line}", err=True)  # the digest's ledger and its audit


# --------------------------------------------------------------------------- plot


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@_policy_options
@_read_options
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    required=True,
    help="PNG file to write (a directory for several inputs).",
)
def plot(
    paths: tuple[Path, ...],
    output: Path,
    fmt: str | None,
    skip_bad: bool,
    whole_file: bool,
    run: int | None,
    **policy: Any,
) -> None:
    """Draw the context growing and being condensed, as a PNG.

    Replays the transcript through the condenser one message at a time and plots the
    cumulative tokens, the window, the trigger line, each point the gate fires and each
    cut. Needs matplotlib (pip install "window-budget[plot]").
    """
    settings = _settings(**policy)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        _fail('plot needs matplotlib; pip install "window-budget[plot]"')
    batch = _Batch(paths, skip_bad=skip_bad, whole_file=whole_file, run=run)
    many = batch.many
    if many:
        output.mkdir(parents=True, exist_ok=True)
    with batch.progress() as files:
        for path in files:
            transcript = batch.read(path, fmt)
            if transcript is not None:
                _plot_one(path, transcript, settings, output, batch)


def _plot_one(
    path: Path, transcript: Transcript, settings: _Settings, output: Path, batch: _Batch
) -> None:
    """Replay one transcript and draw it; with several inputs a failure skips the file."""
    from window_budget.tools.timeline import plot_timeline, simulate

    many = batch.many
    pinned = _system_tokens(transcript, settings.counter)
    try:
        window = _model_for(transcript, settings.window).context_window
        timeline = simulate(
            transcript.messages,
            Model("replay", window),
            settings.policy,
            counter=settings.counter,
            pinned_tokens=pinned,
        )
    except Exception as exc:  # a bad file must not stop a directory run
        if many:
            batch.skip(
                path,
                str(exc)
                if isinstance(exc, WindowBudgetError)
                else f"could not replay it ({type(exc).__name__}: {exc})",
            )
            return
        if isinstance(exc, WindowBudgetError):
            _fail(f"{path}: {exc}")
        raise
    target = output / f"{path.stem}.png" if many else output
    try:
        plot_timeline(timeline, target, title=terminal_text(path.name))
    except OSError as exc:
        _fail(f"{target}: {exc.strerror or exc} — check the output path")
    except Exception as exc:  # matplotlib raises many kinds on odd data
        if not many:
            raise
        batch.skip(path, f"could not draw it ({type(exc).__name__}: {exc})")
        return
    say(
        f"{path}: {len(timeline.firings)} condensations over "
        f"{len(transcript.messages)} messages -> {target}",
        err=many,
    )
