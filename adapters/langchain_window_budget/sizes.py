"""``trigger=`` / ``keep=`` in the forms of LangChain's ``SummarizationMiddleware``.

``("tokens", N)`` is an absolute count, ``("fraction", f)`` a share of the model's whole
window (``max_input_tokens``, as LangChain reads it), ``("messages", N)`` a message count.
``trigger`` also takes a dict of several of them (all must hold) and a list of tuples or
dicts (any may hold); ``keep`` takes one tuple. :func:`apply_sizes` maps them onto a
:class:`~window_budget.BudgetPolicy` in one place: a token trigger becomes the policy's
``trigger_ratio`` (the earliest one wins), ``keep`` its ``keep_recent`` / ``keep_unit``;
a clause that counts messages cannot be a ratio and is checked on each run instead
(:meth:`SizeTrigger.met`), forcing a compaction when it holds.

The window guard stays on whatever the trigger says: a trigger later than the window minus
``reserve_tokens`` fires there instead, so the reply always has room.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

from window_budget.contract import BudgetPolicy
from window_budget.errors import ConfigError

__all__ = ["ContextSize", "SizeTrigger", "TriggerSpec", "apply_sizes"]

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
    if isinstance(trigger, list) and trigger:
        return [one(item) for item in trigger]
    raise ConfigError(
        f"trigger {trigger!r} is not a (kind, value) tuple, a dict or a "
        "non-empty list of them, e.g. [('fraction', 0.8), ('messages', 100)]"
    )


def _tokens(clause: Mapping[str, int | float], window: int) -> int | None:
    """The clause's token threshold, if it has one (a fraction is of the whole window)."""
    found = [int(clause["tokens"])] if "tokens" in clause else []
    if "fraction" in clause:
        found.append(max(1, int(window * clause["fraction"])))
    return max(found) if found else None


@dataclass(frozen=True, slots=True)
class SizeTrigger:
    """The clauses of a trigger that count messages: checked on each run."""

    clauses: tuple[tuple[int, int | None], ...]
    """``(messages, tokens or None)`` per clause; any clause that holds fires."""

    def needs_tokens(self) -> bool:
        """True when some clause also needs the transcript's token figure."""
        return any(tokens is not None for _, tokens in self.clauses)

    def met(self, count: int, tokens: int | None) -> bool:
        """True when ``count`` messages (of ``tokens`` tokens) meet any clause."""
        return any(
            count >= messages and (need is None or (tokens or 0) >= need)
            for messages, need in self.clauses
        )


def apply_sizes(
    policy: BudgetPolicy, context_window: int, *, trigger: Any = None, keep: Any = None
) -> tuple[BudgetPolicy, SizeTrigger | None]:
    """``policy`` with ``trigger`` / ``keep`` applied, and the message clauses left to check.

    Raises:
        ConfigError: a malformed size, in one sentence naming it.

    """
    if keep is not None:
        if not (isinstance(keep, tuple) and len(keep) == 2):
            raise ConfigError(
                f"keep {keep!r} must be one (kind, value) tuple, e.g. "
                "('messages', 20), ('tokens', 3000) or ('fraction', 0.3)"
            )
        kind, value = _check(keep[0], keep[1], f"keep {keep!r}")
        if kind == "messages":
            policy = replace(policy, keep_unit="messages", keep_recent=int(value))
        else:
            size = int(value) if kind == "tokens" else max(1, int(context_window * value))
            policy = replace(policy, keep_unit="tokens", keep_recent=size)
    if trigger is None:
        return policy, None
    clauses = _clauses(trigger)
    token_only = [
        t for c in clauses if "messages" not in c if (t := _tokens(c, context_window)) is not None
    ]
    if token_only:
        usable = max(1, context_window - (policy.reserve_tokens or 0))
        policy = replace(policy, trigger_ratio=min(1.0, max(min(token_only) / usable, 1e-9)))
    counted = tuple(
        (int(c["messages"]), _tokens(c, context_window)) for c in clauses if "messages" in c
    )
    return policy, SizeTrigger(counted) if counted else None
