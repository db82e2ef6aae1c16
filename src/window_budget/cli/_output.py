r"""What the command line prints for people, made safe for a terminal.

Transcript text, file names and error messages that quote them are data: a terminal must
not run what they hold. :func:`terminal_text` is the one helper for that destination (the
HTML one is :func:`window_budget.tools.display.safe_text`): it turns every control character
(C0, DEL, C1), every invisible format character (the bidi overrides and isolates, zero-width
joiners, ...) and every line or paragraph separator into a visible Python-style escape, so
``\x1b]52;...`` shows as text instead of writing the clipboard and a newline in a file name
shows as ``\n`` instead of starting a forged line. Nothing here is markup either: the CLI
prints with ``click.echo``, which reads no ``[bold]``. ``--json`` output is exact text in
JSON's own escaping and never goes through here.

The rest is what every command says the same way: an error ends in one line
(:func:`fail`), in the command line's words (:func:`cli_wording`), and counts are plural
when they should be (:func:`plural`).
"""

from __future__ import annotations

import re
import unicodedata
from typing import NoReturn

import click

from window_budget.readers import (
    PICK_FORMAT,
    PICK_RUN,
    SKIP_BAD,
)

__all__ = ["cli_wording", "fail", "plural", "say", "show_error", "terminal_text"]

_HIDDEN = frozenset({"Cc", "Cf", "Co", "Cs", "Zl", "Zp"})
"""Unicode categories a terminal acts on or draws as nothing (controls, format, private,
lone surrogates from undecodable file names, line and paragraph separators)."""

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if unicodedata.category(char) not in _HIDDEN:
        return char
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def terminal_text(value: object) -> str:
    r"""``value`` as one line a terminal shows as it is: control characters escaped visibly.

    Newlines are escaped too, so a caller passes one line at a time. Backslashes and
    look-alike letters are left alone: what is shown is what the text holds.

    >>> terminal_text("a\x1b]0;title\x07b\nc \u202eexe")
    'a\\x1b]0;title\\x07b\\nc \\u202eexe'
    """
    text = value if isinstance(value, str) else str(value)
    # isprintable() is False for every hidden category (and a few harmless spaces).
    return text if text.isprintable() else "".join(_escape(char) for char in text)


def say(text: object, *, err: bool = False) -> None:
    """Print one line for people (stdout, or stderr with ``err``), escaped for the terminal."""
    click.echo(terminal_text(text), err=err)


def show_error(exc: click.ClickException) -> None:
    """Print a click error as click would, with its message escaped for the terminal.

    A usage error keeps click's usage line and hint (the command's own text) above it.
    """
    if isinstance(exc, click.UsageError) and exc.ctx is not None:
        ctx = exc.ctx
        hint = ""
        if ctx.command.get_help_option(ctx) is not None:
            option = max(ctx.command.get_help_option_names(ctx), key=len)
            hint = f"Try '{ctx.command_path} {option}' for help.\n"
        click.echo(f"{ctx.get_usage()}\n{hint}", err=True, color=ctx.color)
    say(f"Error: {exc.format_message()}", err=True)


def fail(message: str) -> NoReturn:
    """End the command with one line on stderr and exit status 1."""
    raise click.ClickException(cli_wording(message))


def cli_wording(message: str) -> str:
    """A reader's error as the command line's user needs it: options by their flags."""
    message = message.replace(SKIP_BAD, "--skip-bad").replace(PICK_FORMAT, "--from")
    message = message.replace(PICK_RUN, "--run")
    return re.sub(r"format='([a-z-]+)'", r"--from \1", message)


def plural(count: int, noun: str) -> str:
    """``count`` with thousands separators and ``noun``, plural unless it is 1."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"
