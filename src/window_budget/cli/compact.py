"""``window-budget compact``: run the condenser on transcripts and write what it returns.

One file is written to ``-o`` (or stdout, in its format: data, not text for people), several
into an ``-o`` directory, each output named after its input and checked for collisions
before anything is written. ``--model`` writes the digest with a LangChain chat model.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from window_budget.cli._batch import Batch
from window_budget.cli._options import (
    Settings,
    model_for_transcript,
    policy_options,
    read_options,
    settings_from,
    system_tokens,
    window_note,
)
from window_budget.cli._output import fail, plural, say
from window_budget.contract import CondenseResult, SyncCompleteFn
from window_budget.digest import is_digest
from window_budget.errors import WindowBudgetError
from window_budget.messages import AgentMessage
from window_budget.pipeline import CondenseDecision, create_condenser
from window_budget.readers import FORMATS, Transcript, write_transcript

__all__ = ["compact"]


def _load_chat_model(spec: str) -> Any:
    """A LangChain chat model from ``provider:model`` (kept separate so tests can stub it)."""
    try:
        # Imported by name so the core's sources stay free of framework imports.
        init_chat_model = importlib.import_module("langchain.chat_models").init_chat_model
    except ImportError:
        fail('--model needs LangChain; pip install "window-budget[langchain]"')
    try:
        return init_chat_model(spec)
    except ImportError as exc:
        fail(
            f"--model {spec}: the provider's package is not installed ({exc}) — install "
            "it, e.g. pip install langchain-openai"
        )
    except Exception as exc:  # provider constructors raise many kinds (missing keys, ...)
        fail(
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
        fail('--model needs the LangChain adapter; pip install "window-budget[langchain]"')
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
        fail(
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
                fail(
                    f"the output for {path} would overwrite the input {target} — pick "
                    "another --output folder"
                )


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@policy_options
@read_options
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
    settings = settings_from(**policy)
    batch = Batch(paths, skip_bad=skip_bad, whole_file=whole_file, run=run)
    many = batch.many
    if many and not dry_run:
        if output is None:
            fail("several transcripts need -o/--output DIRECTORY to write into")
        if output.exists() and not output.is_dir():
            fail(
                f"{output} is not a directory — several transcripts need -o/--output "
                "DIRECTORY to write into"
            )
        _check_outputs(batch.files, output, out_format)
        try:
            output.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            fail(f"{output}: {exc.strerror or exc} — cannot create the output directory")
    if output is not None and not many and not dry_run:
        if not output.parent.is_dir():
            fail(f"{output.parent} does not exist — create it or pick another --output")
        if output.is_dir():
            fail(f"{output} is a directory — name a file for one transcript")
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
    settings: Settings,
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
    pinned = system_tokens(transcript, settings.counter)
    target_format = transcript.format if out_format == "input" else out_format
    policy = settings.policy
    if target_format in _LOG_FORMATS:
        # A session log keeps what a compaction folds ahead of its boundary; it has no place
        # for the originals of masked outputs, so a log is compacted with a digest.
        policy = replace(policy, mask_keep_outputs=None)
    note = window_note(transcript, settings.window)
    if note is not None:
        say(note, err=True)
    condenser = create_condenser(
        model=model_for_transcript(transcript, settings.window),
        policy=policy,
        counter=settings.counter,
        complete_sync=complete_sync,
    )
    msgs = list(transcript.messages)
    try:
        if dry_run:
            _say_plan(path, len(msgs), condenser.decide(msgs, force=force, pinned_tokens=pinned))
            return
        result = condenser.run_sync(msgs, force=force, pinned_tokens=pinned)
    except WindowBudgetError as exc:
        fail(f"{path}: {exc}")
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
        fail(f"{target or 'stdout'}: {exc.strerror or exc} — check the output path")
    # Only now: a success line before the write would be a lie when the write fails.
    _say_done(path, transcript, result, bool(archive), target, target_format)


def _say_plan(path: Path, count: int, decision: CondenseDecision) -> None:
    """What ``--dry-run`` prints: the sizes, the limit, and what a run would do."""
    plan, limit = decision.plan, decision.limit
    reason = decision.result.reason if decision.result else "would condense"
    if decision.result is not None and decision.result.masked:
        outputs = plural(len(decision.result.masked), "old tool output")
        reason = f"would mask {outputs}, freeing {decision.result.tokens_freed:,} tokens, no digest"
    say(
        f"{path}: {count} messages, {decision.tokens_before:,} tokens, "
        f"limit {limit:,.0f}: {reason}"
        + (
            f"; cut before message #{plan.cut + 1}: {len(plan.dropped)} "
            f"fold into a digest, {len(plan.kept)} kept"
            if plan.cut
            else ""
        )
    )


def _say_done(
    path: Path,
    transcript: Transcript,
    result: CondenseResult,
    archived: bool,
    target: Path | None,
    target_format: str,
) -> None:
    """The success line, then the digest's ledger and its audit."""
    left_out = (
        ""
        if archived or not transcript.archive
        else (
            f"; the {plural(len(transcript.archive), 'message')} before its last compaction are "
            f"left out of the {target_format} output"
        )
    )
    what = (
        f"{plural(len(result.masked), 'old tool output')} masked, "
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
