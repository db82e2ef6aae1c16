"""Every ``>>>`` example in the docstrings of the core and the adapters runs as shown.

Modules are found by walking the packages, so a module added or moved is checked without a
list to update. Each module's examples run in a temporary directory (some write files).
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil
from pathlib import Path

import pytest

PACKAGES = ("window_budget", "langchain_window_budget", "llama_index.memory.window_budget")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _has_examples(origin: str | None) -> bool:
    return origin is not None and ">>>" in Path(origin).read_text(encoding="utf-8")


def _module_names() -> list[str]:
    """The modules of the packages whose source holds a ``>>>`` example."""
    names: list[str] = []
    for top in PACKAGES:
        try:
            spec = importlib.util.find_spec(top)
        except ModuleNotFoundError:  # llama_index itself is missing
            spec = None
        if spec is None or spec.submodule_search_locations is None:
            continue
        if _has_examples(spec.origin):
            names.append(top)
        # Only the file system is walked: a module is imported by its own test, so an
        # optional extra that is missing skips that module instead of failing collection.
        for info in pkgutil.walk_packages(
            list(spec.submodule_search_locations), f"{top}.", onerror=lambda _name: None
        ):
            found = info.module_finder.find_spec(info.name.rpartition(".")[2], None)
            if found is not None and _has_examples(found.origin):
                names.append(info.name)
    return names


MODULES = _module_names()


def test_the_walk_finds_the_core() -> None:
    assert {"window_budget", "window_budget.messages"} <= set(MODULES)
    assert len(MODULES) >= 30


# LlamaIndex's agent workflows use pydantic APIs deprecated upstream; that is theirs to fix.
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and not exc.name.startswith(PACKAGES):
            pytest.skip(f"{name} needs {exc.name}")
        raise
    tests = [t for t in doctest.DocTestFinder(exclude_empty=True).find(module, name) if t.examples]
    if not tests:
        pytest.skip(f"{name} has no examples")
    monkeypatch.chdir(tmp_path)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    for test in tests:
        runner.run(test, out=report.append)
    failed, attempted = runner.summarize(verbose=False)
    assert failed == 0, "".join(report)
    assert attempted > 0
