"""``window-budget plot``: a PNG of the context growing and being condensed."""

from __future__ import annotations

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
from window_budget.cli._output import fail, say, terminal_text
from window_budget.contract import Model
from window_budget.errors import WindowBudgetError
from window_budget.readers import Transcript

__all__ = ["plot"]


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@policy_options
@read_options
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
    settings = settings_from(**policy)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        fail('plot needs matplotlib; pip install "window-budget[plot]"')
    batch = Batch(paths, skip_bad=skip_bad, whole_file=whole_file, run=run)
    many = batch.many
    if many:
        output.mkdir(parents=True, exist_ok=True)
    with batch.progress() as files:
        for path in files:
            transcript = batch.read(path, fmt)
            if transcript is not None:
                _plot_one(path, transcript, settings, output, batch)


def _plot_one(
    path: Path, transcript: Transcript, settings: Settings, output: Path, batch: Batch
) -> None:
    """Replay one transcript and draw it; with several inputs a failure skips the file."""
    from window_budget.tools.timeline import plot_timeline, simulate

    many = batch.many
    pinned = system_tokens(transcript, settings.counter)
    try:
        note = window_note(transcript, settings.window)
        if note is not None:
            say(note, err=True)
        window = model_for_transcript(transcript, settings.window).context_window
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
            fail(f"{path}: {exc}")
        raise
    target = output / f"{path.stem}.png" if many else output
    try:
        plot_timeline(timeline, target, title=terminal_text(path.name))
    except OSError as exc:
        fail(f"{target}: {exc.strerror or exc} — check the output path")
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
