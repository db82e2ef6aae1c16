"""The ``window-budget`` command line: a thin layer over the public functions.

Commands: ``inspect`` (where a transcript's tokens go, where the gate would fire and
the cut would fall), ``compact`` (run the condenser and write the result), ``plot``
(a PNG of the context growing and being condensed) and ``demo``, one module each. A bad
file or a bad option ends with one line on stderr and exit status 1, never a traceback;
what is printed for people is escaped for the terminal (:mod:`window_budget.cli._output`).
"""

from __future__ import annotations

try:
    import click
except ImportError as exc:  # pragma: no cover - exercised by __main__
    raise ImportError(
        'the window-budget command line needs click; pip install "window-budget[cli]"'
    ) from exc

import os
import sys
from collections.abc import Sequence
from typing import Any

from window_budget.cli import compact, demo, inspect, plot
from window_budget.cli._output import say, show_error
from window_budget.cli.inspect import _first_firing  # noqa: F401  (tests import it from here)

__all__ = ["main"]


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
        click.echo(ctx.get_help())  # the command's own text


main.add_command(demo.demo)
main.add_command(inspect.inspect)
main.add_command(compact.compact)
main.add_command(plot.plot)
