"""``--weak``: the library with its escaping and quoting switched off, to show the checks fire."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def weakened() -> Iterator[None]:
    """A weak implementation, to show the checks catch one: no tag escaping in the summary
    prompt, no quoting in recall, no escaping on the terminal."""
    import importlib

    from window_budget.cli import _output
    from window_budget.pipeline.summarize import _prompt

    recall_module = importlib.import_module("window_budget.memory.recall")

    saved = (_prompt.escape_block_tags, recall_module._quoted, _output._escape)
    _prompt.escape_block_tags = lambda text: text
    recall_module._quoted = lambda text: text
    _output._escape = lambda char: char
    try:
        yield
    finally:
        _prompt.escape_block_tags, recall_module._quoted, _output._escape = saved
