"""The ``window-budget`` command line: a thin layer over the public functions."""

from __future__ import annotations

try:
    import click
except ImportError as exc:  # pragma: no cover - exercised by __main__
    raise ImportError(
        'the window-budget command line needs click; pip install "window-budget[cli]"'
    ) from exc

from window_budget.demo import run_demo

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="window-budget")
def main() -> None:
    """Keep long LLM conversations inside the model's context window."""


@main.command()
@click.option("--width", default=78, show_default=True, help="Output width in columns.")
def demo(width: int) -> None:
    """Condense a long bundled coding session offline and show each step."""
    run_demo(click.echo, width=width)
