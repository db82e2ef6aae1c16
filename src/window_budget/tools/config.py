"""Configuration from ``WINDOW_BUDGET_*`` environment variables, read in one place.

Every variable the library understands is listed in :data:`ENV_VARS`, parsed and
validated here; a bad value raises :class:`~window_budget.errors.ConfigError` naming
the variable, its value and what it accepts. Explicit arguments always win over the
environment, which wins over the defaults.

=====================================  ==========================================
variable                               meaning
=====================================  ==========================================
``WINDOW_BUDGET_TRIGGER_RATIO``        gate fires at this fraction (``0.8`` or ``80%``)
``WINDOW_BUDGET_KEEP_RECENT``          verbatim tail, in tokens or turns
``WINDOW_BUDGET_RESERVE_TOKENS``       headroom for the reply (``none`` for no reserve)
``WINDOW_BUDGET_KEEP_UNIT``            ``tokens``, ``turns`` or ``messages``
``WINDOW_BUDGET_STRATEGY``             ``summarize`` or ``trim``
``WINDOW_BUDGET_DIGEST_MAX_TOKENS``    cap on a digest's length
``WINDOW_BUDGET_TOOL_OUTPUT_CHARS``    tool output clamp in the summary prompt
``WINDOW_BUDGET_ON_SUMMARIZER_ERROR``  ``fallback`` or ``raise``
``WINDOW_BUDGET_COUNTER``              ``heuristic`` or ``tiktoken``
``WINDOW_BUDGET_ENCODING``             tiktoken encoding name (``cl100k_base``)
``WINDOW_BUDGET_TIKTOKEN_FILE``        local ``.tiktoken`` file (read by the counter loader)
``WINDOW_BUDGET_MODEL``                model id for :func:`model_from_env`
``WINDOW_BUDGET_CONTEXT_WINDOW``       context window for :func:`model_from_env`
=====================================  ==========================================

>>> policy_from_env(environ={"WINDOW_BUDGET_KEEP_RECENT": "4000"}, trigger_ratio=0.5)
BudgetPolicy(trigger_ratio=0.5, keep_recent=4000, reserve_tokens=2048, ...)
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from window_budget.contract import BudgetPolicy, Model, TokenCounter
from window_budget.errors import ConfigError

__all__ = [
    "ENV_PREFIX",
    "ENV_VARS",
    "EnvVar",
    "counter_from_env",
    "describe_env",
    "env_name",
    "model_from_env",
    "policy_from_env",
    "read_env",
    "read_raw",
    "read_setting",
    "settings_from_env",
    "unknown_env_vars",
]

ENV_PREFIX = "WINDOW_BUDGET"
"""The prefix :func:`env_name` puts on every variable."""


def env_name(suffix: str) -> str:
    """Return the variable name for ``suffix``: upper-cased, ``-`` to ``_``, prefixed.

    >>> env_name("keep-recent")
    'WINDOW_BUDGET_KEEP_RECENT'
    """
    name = suffix.strip().upper().replace("-", "_")
    return name if name.startswith(ENV_PREFIX + "_") else f"{ENV_PREFIX}_{name}"


def read_raw(name: str, *, environ: Mapping[str, str] | None = None) -> str | None:
    """Return the variable ``name`` as written (no prefix added); blank counts as unset."""
    value = (os.environ if environ is None else environ).get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


def read_env(suffix: str, *, environ: Mapping[str, str] | None = None) -> str | None:
    """Return the raw text of ``WINDOW_BUDGET_<SUFFIX>``, or None when unset or blank."""
    return read_raw(env_name(suffix), environ=environ)


# --------------------------------------------------------------------- parsers


def _parse_ratio(text: str) -> float:
    percent = text.endswith("%")
    value = float(text.rstrip("%").strip()) / (100 if percent else 1)
    if not math.isfinite(value) or not 0 < value <= 1:
        raise ValueError
    return value


def _parse_count(text: str) -> int:
    if not re.fullmatch(r"\d[\d_,]*", text):
        raise ValueError
    return int(text.replace("_", "").replace(",", ""))


def _parse_optional_count(text: str) -> int | None:
    return None if text.lower() in ("none", "null", "off") else _parse_count(text)


def _choice(*options: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.lower()
        if value not in options:
            raise ValueError
        return value

    return parse


def _text(text: str) -> str:
    return text


def _parse_encoding(text: str) -> str:
    """A tiktoken encoding name, checked against tiktoken's registry when it is installed.

    Without tiktoken nothing can be checked (and nothing needs to be: the tiktoken
    counter falls back to the heuristic anyway).
    """
    from window_budget.budget import LOCAL_SPECS

    name = text.strip()
    if not name:
        raise ValueError
    try:
        import tiktoken.registry
    except ImportError:
        return name
    known = set(tiktoken.registry.list_encoding_names()) | set(LOCAL_SPECS)
    if name not in known and f"{name}_offline" not in known:
        raise ValueError
    return name


@dataclass(frozen=True, slots=True)
class EnvVar:
    """One variable of the registry."""

    suffix: str
    """The part after ``WINDOW_BUDGET_``."""
    accepts: str
    """What values are valid, for the error message and :func:`describe_env`."""
    parse: Callable[[str], Any]
    """Turns the text into a value; raises ``ValueError`` on a bad one."""
    doc: str
    """What it controls."""
    field: str | None = None
    """The ``BudgetPolicy`` field it sets, when it sets one."""

    @property
    def name(self) -> str:
        """The full variable name."""
        return env_name(self.suffix)


ENV_VARS: tuple[EnvVar, ...] = (
    EnvVar(
        "TRIGGER_RATIO",
        "a number in (0, 1] or a percentage such as 80%",
        _parse_ratio,
        "fraction of the usable window at which the gate fires",
        "trigger_ratio",
    ),
    EnvVar(
        "KEEP_RECENT",
        "a non-negative integer",
        _parse_count,
        "size of the verbatim tail (tokens, or turns / messages with KEEP_UNIT)",
        "keep_recent",
    ),
    EnvVar(
        "RESERVE_TOKENS",
        "a non-negative integer or 'none'",
        _parse_optional_count,
        "headroom carved off the window for the reply",
        "reserve_tokens",
    ),
    EnvVar(
        "KEEP_UNIT",
        "'tokens', 'turns' or 'messages'",
        _choice("tokens", "turns", "messages"),
        "what KEEP_RECENT counts",
        "keep_unit",
    ),
    EnvVar(
        "STRATEGY",
        "'summarize' or 'trim'",
        _choice("summarize", "trim"),
        "digest the head with a model, or trim by category without one",
        "strategy",
    ),
    EnvVar(
        "DIGEST_MAX_TOKENS",
        "an integer of at least 64",
        _parse_count,
        "upper bound for a digest",
        "digest_max_tokens",
    ),
    EnvVar(
        "TOOL_OUTPUT_CHARS",
        "a non-negative integer",
        _parse_count,
        "clamp on each tool output in the summary prompt",
        "tool_output_chars",
    ),
    EnvVar(
        "ON_SUMMARIZER_ERROR",
        "'fallback' or 'raise'",
        _choice("fallback", "raise"),
        "what a failing summary call does",
        "on_summarizer_error",
    ),
    EnvVar(
        "COUNTER",
        "'heuristic' or 'tiktoken'",
        _choice("heuristic", "tiktoken"),
        "how tokens are counted",
    ),
    EnvVar(
        "ENCODING",
        "a tiktoken encoding name such as cl100k_base or o200k_base",
        _parse_encoding,
        "encoding used with COUNTER=tiktoken (default cl100k_base)",
    ),
    EnvVar(
        "TIKTOKEN_FILE",
        "a path to a .tiktoken file",
        _text,
        "local encoding file, so tiktoken needs no download",
    ),
    EnvVar("MODEL", "a model id", _text, "model id for model_from_env"),
    EnvVar(
        "CONTEXT_WINDOW", "a positive integer", _parse_count, "context window for model_from_env"
    ),
)
"""Every variable the library reads."""

_BY_SUFFIX = {v.suffix: v for v in ENV_VARS}
_BY_FIELD = {v.field: v for v in ENV_VARS if v.field}
_POLICY_FIELDS = frozenset(f.name for f in dataclasses.fields(BudgetPolicy))


def read_setting(suffix: str, *, environ: Mapping[str, str] | None = None) -> Any:
    """Return the parsed value of a registered variable, or None when it is unset.

    Raises:
        ConfigError: the value is invalid (the message names the variable) or
            ``suffix`` is not in the registry.

    """
    key = env_name(suffix).removeprefix(ENV_PREFIX + "_")
    var = _BY_SUFFIX.get(key)
    if var is None:
        raise ConfigError(
            f"{env_name(suffix)} is not a window-budget setting; known: "
            + ", ".join(v.name for v in ENV_VARS)
        )
    text = read_env(var.suffix, environ=environ)
    if text is None:
        return None
    try:
        return var.parse(text)
    except ValueError:
        raise ConfigError(
            f"{var.name}={text!r} is invalid; it must be {var.accepts} — fix or unset the variable"
        ) from None


def settings_from_env(*, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Return every registered variable that is set, parsed, keyed by suffix."""
    out: dict[str, Any] = {}
    for var in ENV_VARS:
        value = read_setting(var.suffix, environ=environ)
        if value is not None:
            out[var.suffix] = value
    return out


def unknown_env_vars(*, environ: Mapping[str, str] | None = None) -> list[str]:
    """Return ``WINDOW_BUDGET_*`` names that are set but not in the registry (likely typos)."""
    env = os.environ if environ is None else environ
    known = {v.name for v in ENV_VARS}
    return sorted(k for k in env if k.startswith(ENV_PREFIX + "_") and k not in known)


def policy_from_env(
    base: BudgetPolicy | None = None, *, environ: Mapping[str, str] | None = None, **explicit: Any
) -> BudgetPolicy:
    """Build a :class:`BudgetPolicy`: explicit arguments, then the environment, then defaults.

    Keyword arguments are ``BudgetPolicy`` fields; one passed as ``None`` counts as not
    given (use ``reserve_tokens=0`` for no reserve). With ``base``, its values replace
    the defaults. With ``keep_unit="turns"`` and no base, unset fields take the turn
    policy's defaults (8 turns, ratio 0.8, no reserve) instead of the token ones.

    Raises:
        ConfigError: an invalid variable or argument; the message names it.

    """
    unknown = sorted(set(explicit) - _POLICY_FIELDS)
    if unknown:
        raise ConfigError(
            f"{unknown} are not BudgetPolicy fields; use " + ", ".join(sorted(_POLICY_FIELDS))
        )
    values: dict[str, Any] = {}
    source: dict[str, str] = {}
    if base is not None:
        values.update({f: getattr(base, f) for f in _POLICY_FIELDS})
    for field_name, var in _BY_FIELD.items():
        value = read_setting(var.suffix, environ=environ)
        if value is not None or (
            var.suffix == "RESERVE_TOKENS" and read_env(var.suffix, environ=environ) is not None
        ):
            values[field_name] = value
            source[field_name] = var.name
    for field_name, value in explicit.items():
        if value is not None:
            values[field_name] = value
            source[field_name] = f"argument {field_name}"
    if base is None and values.get("keep_unit") == "turns":
        turn_defaults = BudgetPolicy.turns()
        for f in ("keep_recent", "trigger_ratio", "reserve_tokens"):
            values.setdefault(f, getattr(turn_defaults, f))
    try:
        return BudgetPolicy(**values)
    except ValueError as exc:
        match = re.search(r"BudgetPolicy\.(\w+)", str(exc))
        where = source.get(match.group(1)) if match else None
        if where is None:
            raise ConfigError(str(exc)) from None
        raise ConfigError(f"{where}: {exc} — fix or unset it") from None


def counter_from_env(
    counter: Any = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> TokenCounter | None:
    """Resolve the token counter: ``counter`` if given, else ``WINDOW_BUDGET_COUNTER``.

    Goes through :func:`~window_budget.budget._counters.resolve_counter`, so
    ``"tiktoken"`` falls back to the heuristic (warning once) when no encoding can be
    loaded; ``None`` means the heuristic.
    """
    from window_budget.budget import DEFAULT_ENCODING, resolve_counter

    chosen = counter if counter is not None else read_setting("COUNTER", environ=environ)
    encoding = read_setting("ENCODING", environ=environ) or DEFAULT_ENCODING
    return resolve_counter(chosen, encoding=encoding)


def model_from_env(
    model_id: str | None = None,
    context_window: int | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> Model | None:
    """Build a :class:`Model` from arguments, else ``WINDOW_BUDGET_MODEL`` / ``_CONTEXT_WINDOW``.

    Returns None when no window is known. The id defaults to ``"default"``.

    Raises:
        ConfigError: the window is not a positive int.

    """
    window = (
        context_window
        if context_window is not None
        else read_setting("CONTEXT_WINDOW", environ=environ)
    )
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        where = "context_window" if context_window is not None else env_name("CONTEXT_WINDOW")
        raise ConfigError(f"{where} must be a positive int of tokens, got {window!r}")
    name = model_id or read_setting("MODEL", environ=environ) or "default"
    return Model(name, window)


def describe_env() -> str:
    """Return a plain-text table of every variable, what it accepts and what it does."""
    width = max(len(v.name) for v in ENV_VARS)
    return "\n".join(f"{v.name:<{width}}  {v.doc} ({v.accepts})" for v in ENV_VARS)
