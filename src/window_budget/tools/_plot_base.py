"""What every plot shares: the figure, the axis format, the palette (matplotlib loaded lazily)."""

from __future__ import annotations

from typing import Any

__all__ = ["PALETTE"]

# Colour-blind-safe (Okabe-Ito), one per policy in the order given.
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000")


def _figure(**kwargs: Any) -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError('plotting needs matplotlib; pip install "window-budget[plot]"') from exc
    return Figure(**kwargs)


def _thousands(ax: Any) -> None:
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
