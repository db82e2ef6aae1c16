"""Type checks every message and block runs at construction: one sentence naming the field."""

from __future__ import annotations

from collections.abc import Mapping

from window_budget.errors import MessageError

# ----------------------------------------------------------------- validation


_ARTICLES = {"NoneType": "None", "int": "an int", "Mapping": "a mapping"}


def type_names(types: tuple[type, ...]) -> str:
    names = [
        _ARTICLES.get(t.__name__, f"a {t.__name__}")
        for t in types
        if not (t is dict and Mapping in types)
    ]  # dict is listed only for speed
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def check(owner: object, name: str, *types: type) -> None:
    """Refuse a field whose value is not one of ``types`` (a bool is never taken as a number)."""
    value = getattr(owner, name)
    kind = type(value)
    if isinstance(value, types) and not (isinstance(value, bool) and bool not in types):
        return
    # Type names only, never the value: a wrong field may hold 50 MB or a secret.
    raise MessageError(
        f"{type(owner).__name__}.{name} must be {type_names(types)}, not {kind.__name__}"
    )


def check_count(owner: object, name: str, *, optional: bool = False) -> None:
    """Refuse a field that is not a non-negative int (or None, when ``optional``)."""
    value = getattr(owner, name)
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        shown = (
            "a negative int"
            if isinstance(value, int) and not isinstance(value, bool)
            else type(value).__name__
        )
        raise MessageError(
            f"{type(owner).__name__}.{name} must be a non-negative int"
            f"{' or None' if optional else ''}, not {shown}"
        )


# Field kinds; each check first compares the exact type, so a valid field costs one lookup.
TIME = (float, int, type(None))
OPT_STR = (str, type(None))
OPT_INT = (int, type(None))
MAP = (dict, Mapping)
OPT_MAP = (dict, Mapping, type(None))


def set_field(obj: object, name: str, value: object) -> None:
    # Frozen dataclasses normalise their own fields once, at construction.
    object.__setattr__(obj, name, value)
