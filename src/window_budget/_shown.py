"""How a result shows itself in a notebook, with the renderers supplied from above.

Results live on low floors (a condense result in the contract, the fact ledger in the pipeline,
a transcript among the readers); drawing them is the display tool's concern, a floor higher.
A result class mixes in :class:`Shown`; :mod:`window_budget.tools.display` registers its
renderers with :func:`register` when it is imported (the package's face imports it), so no low
module imports the display, and a class without a renderer falls back to its ``repr``. A class
is registered by its module and name, as IPython's ``for_type_by_name`` does, so registering
imports nothing: the readers and the report load when a caller uses them, not with the package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Shown", "register", "registered"]

Render = Callable[[Any], str]

_HTML: dict[str, Render] = {}
_TEXT: dict[str, Render] = {}


def register(cls: str, *, html: Render, text: Render) -> None:
    """Show class ``cls`` (``"module.Name"``) and its subclasses with ``html`` and ``text``.

    ``html`` serves Jupyter's ``_repr_html_``, ``text`` IPython's ``_repr_pretty_``.
    """
    _HTML[cls] = html
    _TEXT[cls] = text


def registered() -> list[str]:
    """The classes that have renderers, as ``"module.Name"``."""
    return sorted(_HTML)


def _renderer(table: dict[str, Render], obj: object) -> Render | None:
    for cls in type(obj).__mro__:
        render = table.get(f"{cls.__module__}.{cls.__qualname__}")
        if render is not None:
            return render
    return None


class Shown:
    """Mixin: Jupyter's ``_repr_html_`` and IPython's ``_repr_pretty_`` through the registry."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # IPython's printer takes the first class of the MRO that defines ``__repr__`` or
        # ``_repr_pretty_``: a dataclass's own ``__repr__`` would win over an inherited one.
        setattr(cls, "_repr_pretty_", Shown._repr_pretty_)  # noqa: B010

    def _repr_html_(self) -> str | None:
        render = _renderer(_HTML, self)
        return None if render is None else render(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        render = _renderer(_TEXT, self)
        printer.text(repr(self) if render is None else render(self))
