"""``trigger=`` / ``keep=`` in the forms of LangChain's ``SummarizationMiddleware``.

``("tokens", N)`` is an absolute count, ``("fraction", f)`` a share of the model's whole
window (``max_input_tokens``, as LangChain reads it), ``("messages", N)`` a message count.
``trigger`` also takes a dict of several of them (all must hold) and a list of tuples or
dicts (any may hold); ``keep`` takes one tuple. As in ``SummarizationMiddleware``, a trigger
only decides *when* to compact (:meth:`SizeTrigger.met`, checked on each run) and ``keep``
*what stays* (:func:`keep_cut`: the last N messages or the longest tail within N tokens,
the cut moved back so a tool call keeps its results).

A trigger the user gives replaces the default policy's 0.75 guard: what is left of the
guard is the window itself (window minus ``reserve_tokens``, so the reply has room), and
nothing that fits it is ever shortened. ``trigger=[]`` is no trigger at all — only that
window guard (``SummarizationMiddleware`` never summarizes then; a window-budget engine
still keeps the request inside the window). ``trigger=None`` is the default policy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

from window_budget.contract import BudgetPolicy
from window_budget.errors import ConfigError

__all__ = [
    "ContextSize",
    "KeepRule",
    "SizeTrigger",
    "TriggerSpec",
    "apply_sizes",
    "needs_window",
]

ContextSize: TypeAlias = tuple[Literal["tokens", "fraction", "messages"], int | float]
"""One threshold: ``("tokens", 4000)``, ``("fraction", 0.8)`` or ``("messages", 50)``."""
TriggerSpec: TypeAlias = (
    ContextSize | Mapping[str, int | float] | Sequence[ContextSize | Mapping[str, int | float]]
)
"""A threshold, a dict of thresholds that must all hold, or a list of either (any holds)."""

_KINDS = ("tokens", "fraction", "messages")


def _check(kind: object, value: object, what: str) -> tuple[str, int | float]:
    if kind not in _KINDS:
        raise ConfigError(
            f"{what}: unsupported kind {kind!r}; use 'tokens', 'fraction' or "
            "'messages', e.g. ('tokens', 4000)"
        )
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{what}: the {kind} value must be a number, got {value!r}")
    if kind == "fraction":
        if not 0 < value <= 1:
            raise ConfigError(f"{what}: a fraction must be in (0, 1], got {value!r}")
    elif not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{what}: {kind} must be a positive int, got {value!r}")
    return str(kind), value


def _clauses(trigger: Any) -> list[dict[str, int | float]]:
    """``trigger`` as a list of AND-clauses (LangChain's normal form)."""

    def one(item: Any) -> dict[str, int | float]:
        if isinstance(item, tuple) and len(item) == 2:
            kind, value = _check(item[0], item[1], f"trigger {item!r}")
            return {kind: value}
        if isinstance(item, Mapping) and item:
            return dict(_check(k, v, f"trigger {dict(item)!r}") for k, v in item.items())
        raise ConfigError(
            f"trigger {item!r} is not a (kind, value) tuple or a dict of them, "
            "e.g. ('tokens', 4000), ('fraction', 0.8) or {'messages': 50}"
        )

    if isinstance(trigger, tuple | Mapping):
        return [one(trigger)]
    if isinstance(trigger, list):
        return [one(item) for item in trigger]
    raise ConfigError(
        f"trigger {trigger!r} is not a (kind, value) tuple, a dict or a "
        "list of them, e.g. [('fraction', 0.8), ('messages', 100)]"
    )


def _tokens(clause: Mapping[str, int | float], window: int | None) -> int | None:
    """The clause's token threshold, if it has one (a fraction is of the whole window)."""
    found = [int(clause["tokens"])] if "tokens" in clause else []
    if "fraction" in clause:
        if window is None:
            raise ConfigError(
                f"trigger {dict(clause)!r}: a fraction needs the model's window; pass "
                "context_window=<tokens> or use ('tokens', N) / ('messages', N)"
            )
        found.append(max(1, int(window * clause["fraction"])))
    return max(found) if found else None


@dataclass(frozen=True, slots=True)
class SizeTrigger:
    """A user's trigger: checked on each run; any clause that holds fires a compaction."""

    clauses: tuple[tuple[int | None, int | None], ...]
    """``(messages or None, tokens or None)`` per clause; each part given must hold."""

    def needs_tokens(self) -> bool:
        """True when some clause needs the transcript's token figure."""
        return any(tokens is not None for _, tokens in self.clauses)

    def met(self, count: int, tokens: int | None) -> bool:
        """True when ``count`` messages (of ``tokens`` tokens) meet any clause."""
        return any(
            (messages is None or count >= messages) and (need is None or (tokens or 0) >= need)
            for messages, need in self.clauses
        )


@dataclass(frozen=True, slots=True)
class KeepRule:
    """What stays verbatim when a compaction runs: ``("messages", N)`` or ``("tokens", N)``."""

    kind: Literal["messages", "tokens"]
    """What ``size`` counts."""
    size: int
    """How many of them the kept tail holds at most."""


def needs_window(trigger: Any, keep: Any) -> bool:
    """True unless the sizes say everything in messages or tokens (no fraction, a trigger)."""
    if trigger is None:
        return True  # the default policy guards a share of the window
    clauses = _clauses(trigger)
    if not clauses:
        return True  # no trigger: only the window guard is left
    uses_fraction = any("fraction" in c for c in clauses)
    return uses_fraction or (isinstance(keep, tuple) and len(keep) == 2 and keep[0] == "fraction")


def apply_sizes(
    policy: BudgetPolicy, context_window: int | None, *, trigger: Any = None, keep: Any = None
) -> tuple[BudgetPolicy, SizeTrigger | None, KeepRule | None]:
    """``policy`` with ``trigger`` / ``keep`` applied, the trigger to check, the keep rule.

    A given trigger sets the policy's ``trigger_ratio`` to 1 and drops its ``prompt_ceiling``
    (the guard is the window itself); the keep rule is None when neither was given (the
    core's own slice then).
    ``context_window`` None: the model's window is unknown (fractions are refused).

    Raises:
        ConfigError: a malformed size, in one sentence naming it.

    """
    rule: KeepRule | None = None
    if keep is not None:
        if not (isinstance(keep, tuple) and len(keep) == 2):
            raise ConfigError(
                f"keep {keep!r} must be one (kind, value) tuple, e.g. "
                "('messages', 20), ('tokens', 3000) or ('fraction', 0.3)"
            )
        kind, value = _check(keep[0], keep[1], f"keep {keep!r}")
        if kind == "messages":
            policy = replace(policy, keep_unit="messages", keep_recent=int(value))
            rule = KeepRule("messages", int(value))
        else:
            if kind == "fraction" and context_window is None:
                raise ConfigError(
                    f"keep {keep!r}: a fraction needs the model's window; pass "
                    "context_window=<tokens> or use ('tokens', N) / ('messages', N)"
                )
            size = int(value) if kind == "tokens" else max(1, int((context_window or 0) * value))
            policy = replace(policy, keep_unit="tokens", keep_recent=size)
            rule = KeepRule("tokens", size)
    if trigger is None:
        return policy, None, rule
    clauses = _clauses(trigger)
    counted = tuple(
        (int(c["messages"]) if "messages" in c else None, _tokens(c, context_window))
        for c in clauses
    )
    if rule is None:
        rule = KeepRule("tokens", policy.keep_recent) if policy.keep_unit == "tokens" else None
    return replace(policy, trigger_ratio=1.0, prompt_ceiling=None), SizeTrigger(counted), rule
