"""``python -m window_budget`` and the ``window-budget`` console script."""

from __future__ import annotations

import sys


def main() -> None:
    """Run the command line, or say which extra to install when click is missing."""
    try:
        from window_budget.cli import main as cli_main
    except ImportError as exc:
        sys.exit(str(exc))
    cli_main()


if __name__ == "__main__":
    main()
