"""The options every command shares, and what they mean for one transcript.

The read options (``--from``, ``--skip-bad``, ``--whole-file``, ``--run``) and the policy
options (``--window``, ``--trigger-ratio``, ``--keep-recent`` or ``--keep-turns``,
``--reserve``, ``--no-mask``, ``--counter``) as click decorators; :func:`settings_from` checks
the latter, and :func:`model_for_transcript` picks the window a transcript is measured by.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from window_budget.budget import estimate_message_tokens, lookup_model, model_for, resolve_counter
from window_budget.cli._output import fail
from window_budget.contract import BudgetPolicy, Model, TokenCounter
from window_budget.messages import AssistantMessage, CustomMessage
from window_budget.pipeline import DEFAULT_POLICY
from window_budget.readers import FORMATS, Transcript

__all__ = [
    "ASSUMED_WINDOW",
    "Settings",
    "model_for_transcript",
    "policy_options",
    "read_options",
    "session_model",
    "settings_from",
    "system_tokens",
    "window_note",
    "window_source",
]

F = TypeVar("F", bound=Callable[..., Any])


def read_options(fn: F) -> F:
    """Add the options that say how a transcript file is read."""
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


def policy_options(fn: F) -> F:
    """Add the options that set the window, the policy and the counter."""
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
            "the transcript's model in the models.dev data; 128,000, with a note, "
            "when the transcript names no model the data knows].",
        ),
    ]
    for option in options:
        fn = option(fn)
    return fn


@dataclass(frozen=True, slots=True)
class Settings:
    """What the policy options ask for, checked."""

    window: int | None
    """The window ``--window`` gives; None to take the transcript's model's."""
    policy: BudgetPolicy
    """The gate and the cut, from ``--trigger-ratio``, ``--keep-recent`` and the rest."""
    counter: TokenCounter | None
    """The exact counter ``--counter tiktoken`` asks for; None for the heuristic."""


def settings_from(
    window: int | None,
    trigger_ratio: float,
    keep_recent: int,
    reserve: int,
    keep_turns: int | None,
    counter: str,
    no_mask: bool = False,
) -> Settings:
    """The :class:`Settings` of the policy options; a bad combination ends the command."""
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
        fail(str(exc))
    tokens = resolve_counter("tiktoken") if counter == "tiktoken" else None
    return Settings(window, policy, tokens)


def system_tokens(transcript: Transcript, counter: TokenCounter | None) -> int:
    """The tokens of the transcript's system prompts, which are pinned (never condensed)."""
    return sum(
        estimate_message_tokens(CustomMessage("system", text), counter)
        for text in transcript.system
    )


ASSUMED_WINDOW = 128_000
"""The window of a transcript whose model is not named or not in the models.dev data, when
``--window`` is not given."""


def session_model(transcript: Transcript) -> str | None:
    """The model the transcript was written with: the last one named that the data knows."""
    name = transcript.model
    if lookup_model(name) is None:
        # A failed reply may name a placeholder ("<synthetic>"): the session's model is the
        # last one the data knows.
        name = next(
            (
                m.model
                for m in reversed(transcript.messages)
                if isinstance(m, AssistantMessage) and lookup_model(m.model)
            ),
            name,
        )
    return name


def model_for_transcript(transcript: Transcript, window: int | None) -> Model:
    """The model a transcript is measured against: its own, with ``--window`` if given.

    A model the data does not know (or none named) gets :data:`ASSUMED_WINDOW`;
    :func:`window_source` says so.
    """
    # Naming the model the transcript was written with lets its usage figures anchor the
    # estimate; a figure from another model is never trusted.
    name = session_model(transcript)
    if window is None and lookup_model(name) is None:
        window = ASSUMED_WINDOW
    return model_for(name, context_window=window)


def window_source(transcript: Transcript, window: int | None) -> str:
    """Where the window of :func:`model_for_transcript` came from, in a few words.

    ``--window``, ``models.dev``, ``assumed: no model named`` or ``assumed: model not in
    the models.dev data``.
    """
    if window is not None:
        return "--window"
    name = session_model(transcript)
    if lookup_model(name) is not None:
        return "models.dev"
    return "assumed: model not in the models.dev data" if name else "assumed: no model named"


def window_note(transcript: Transcript, window: int | None) -> str | None:
    """One line for stderr when the window was assumed, None when it was known or given."""
    source = window_source(transcript, window)
    if not source.startswith("assumed"):
        return None
    return (
        f"note: {transcript.path or 'the transcript'}: {source.removeprefix('assumed: ')}; "
        f"assuming a {ASSUMED_WINDOW:,}-token window (--window N sets it)"
    )
