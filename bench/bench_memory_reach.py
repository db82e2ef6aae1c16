"""After many compactions, can the agent still see or fetch what mattered? (issue 22, core part)

The bench lives in the ``memory_reach`` package beside this file (its docstring says what it
measures and why it can score low); this is its entry point.

Run:  python bench/bench_memory_reach.py [--seeds 3] [--quick] [--check] [-j N] [--json PATH]
"""

from __future__ import annotations

from memory_reach.cli import main

if __name__ == "__main__":
    main((__doc__ or "").split("\n")[0])
