"""The version is written in one place: ``window_budget.__version__``, which packaging reads."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import window_budget

ROOT = Path(__file__).resolve().parent.parent


def test_pyproject_reads_the_version_from_the_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in config["project"]
    assert "version" in config["project"]["dynamic"]
    source = ROOT / config["tool"]["hatch"]["version"]["path"]
    found = re.findall(r'^__version__ = "([^"]+)"$', source.read_text(encoding="utf-8"), re.M)
    assert found == [window_budget.__version__]


def test_the_version_is_a_release_number() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.dev\d+)?", window_budget.__version__)


def test_installed_metadata_agrees_when_installed_from_here() -> None:
    try:
        dist = metadata.distribution("window-budget")
    except metadata.PackageNotFoundError:
        return  # run from the source tree without installing: nothing to compare
    # An editable install points back to this tree; any other copy may be another version.
    files = [str(f) for f in dist.files or ()]
    if any(str(ROOT) in f or f.endswith(".pth") for f in files):
        assert dist.version == window_budget.__version__
