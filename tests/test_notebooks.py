"""Execute every notebook in notebooks/ top to bottom, offline, with nbclient.

A notebook is skipped only when a module it imports is not installed (a core-only
job has no LangChain, say); any error in a cell fails the test with the cell's output.
Each notebook runs once per session: :func:`executed` keeps the result for the tests
that look at the rendered pages (``test_rendered_notebooks.py``).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import warnings
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).parents[1] / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")


def imported_modules(notebook: object) -> set[str]:
    """Top-level names of the modules a notebook's code cells import."""
    names: set[str] = set()
    for cell in notebook.cells:  # type: ignore[attr-defined]
        if cell.cell_type != "code":
            continue
        source = "\n".join(
            line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!"))
        )
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names


def missing_modules(notebook: object) -> list[str]:
    """Modules a notebook imports that cannot be found."""
    missing = []
    for name in sorted(imported_modules(notebook)):
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


@functools.cache
def _execute(path: Path) -> object:
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    # The notebooks run on their own fixture: a variable set for a manual run must not
    # point the suite at another file.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"WINDOW_BUDGET_TRANSCRIPT", "WINDOW_BUDGET_WINDOW"}
    }
    with warnings.catch_warnings():
        # Deprecation notices from the Jupyter plumbing are not the notebook's failures.
        warnings.simplefilter("ignore")
        client.execute(env=env)
    return notebook


def executed(path: Path) -> object:
    """``path`` run top to bottom (once per session); skips when an import is missing."""
    missing = missing_modules(nbformat.read(path, as_version=4))
    if missing:
        pytest.skip(f"{path.name} imports {', '.join(missing)}, which is not installed")
    return _execute(path)


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_notebook_runs(path: Path) -> None:
    executed(path)


def test_the_four_notebooks_are_there() -> None:
    names = {p.name for p in PATHS}
    assert names >= {
        "core_tour.ipynb",
        "policy_explorer.ipynb",
        "langchain.ipynb",
        "llama_index.ipynb",
    }
