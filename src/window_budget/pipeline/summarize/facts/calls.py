"""Reading a tool call: what it did to the workspace, and which line of its output says what failed.

Every part of the library that looks at tool calls reads them here: the fact rules, masking
(which keeps a failure's key line in its placeholder) and the scratch file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

from window_budget.pipeline._placeholder import masked_failure
from window_budget.pipeline.summarize._prompt import clamp_text

__all__ = ["COMMAND_KEYS", "PATH_KEYS", "classify_tool_call", "key_error_line"]

PATH_KEYS: Final = (
    "file_path",
    "path",
    "filePath",
    "filename",
    "file",
    "target_file",
    "notebook_path",
    "target",
    "destination",
)
"""Tool-call argument names that hold a file path."""
COMMAND_KEYS: Final = ("command", "cmd", "script")
"""Tool-call argument names that hold a shell command."""

_WRITE_RE = re.compile(
    r"write|edit|create|patch|replace|insert|update|delete|remove|rename"
    r"|move|apply|save|append|str_replace",
    re.IGNORECASE,
)
_READ_RE = re.compile(
    r"read|view|cat|open|glob|grep|search|list|\bls\b|find|fetch|show|head"
    r"|tail|inspect",
    re.IGNORECASE,
)
_SHELL_RE = re.compile(r"bash|shell|terminal|exec|run|^sh$|^cmd$|powershell|console", re.IGNORECASE)
_FILE_SUBCOMMANDS: Final = {
    "view": "read",
    "create": "write",
    "str_replace": "write",
    "insert": "write",
    "undo_edit": "write",
    "write": "write",
}

_ERROR_LINE_RE = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception|Failure|Fault)\b|\bFAILED\b|\bFATAL\b|\bfatal:|\berror(?:\[\w+\])?:"
    r"|\bERROR\b|\bpanic(?:ked)?\b|\bSegmentation fault\b|\bcommand not found\b"
    r"|\bNo such file or directory\b|\bPermission denied\b"
    r"|^(?:[A-Za-z_]\w*\.)*[A-Z][A-Za-z0-9]+: \S"
)  # a Python exception line, whatever its name
_ERROR_TALLY_RE = re.compile(r"\b\d+ (?:failed|errors?)\b")


def _arg_str(args: Mapping[str, object], keys: Iterable[str]) -> str | None:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def classify_tool_call(name: str, arguments: Mapping[str, object]) -> tuple[str, str | None]:
    """What a tool call did to the workspace, from its name and arguments.

    Returns ``("write" | "read" | "touch", path)``, ``("shell", command)`` or
    ``("other", None)``. Works on the tool names agents commonly use (``Write``,
    ``Edit``, ``edit_file``, ``bash``, ``read_file``, ``str_replace_based_edit_tool``
    with its ``command`` sub-op, ...).

    >>> classify_tool_call("Edit", {"file_path": "src/app.py"})
    ('write', 'src/app.py')
    >>> classify_tool_call("bash", {"command": "pytest -q"})
    ('shell', 'pytest -q')
    """
    path = _arg_str(arguments, PATH_KEYS)
    command = _arg_str(arguments, COMMAND_KEYS)
    if path is not None:
        sub = command.lower() if command else ""
        if sub in _FILE_SUBCOMMANDS:  # an editor tool's sub-operation, not a shell command
            return _FILE_SUBCOMMANDS[sub], path
        if _WRITE_RE.search(name):
            return "write", path
        if _READ_RE.search(name):
            return "read", path
        if command is None or not _SHELL_RE.search(name):
            return "touch", path
    if command is not None:
        return "shell", command
    return "other", None


def key_error_line(text: str, *, limit: int = 240) -> str:
    r"""The line of a failed tool's output that says what went wrong, verbatim and shortened.

    Prefers the last line naming an error (a traceback ends with it, pytest's short
    summary lists it last) and appends the failure tally (``1 failed, 3 passed``) when
    the output has one. Of a masked output, the line its placeholder quotes (the key line of
    the original), so a failure reads the same before and after masking.

    >>> key_error_line("Traceback (most recent call last):\n  File 'a.py'\nKeyError: 'port'")
    "KeyError: 'port'"
    """
    quoted = masked_failure(text)
    if quoted is not None:
        return clamp_text(quoted, limit)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return "(no output)"
    key: str | None = None
    tally: str | None = None
    for line in lines:
        if _ERROR_LINE_RE.search(line) and not line.startswith(("Traceback", "File ")):
            key = line
        if _ERROR_TALLY_RE.search(line):
            tally = line.strip("= ")
    if key is None:
        # Nothing names the error: the first line says what ran, the last how it ended.
        key = lines[0] if len(lines) == 1 else f"{lines[0]} … {lines[-1]}"
    out = key if tally is None or tally in key else f"{key} ({tally})"
    return clamp_text(out, limit)
