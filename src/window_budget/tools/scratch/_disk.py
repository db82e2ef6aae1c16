"""Files in a folder an agent can write: never through a link, every replacement atomic.

Each function works relative to an already-opened directory (``dir_fd``), so a link swapped
in after a check cannot redirect it; a symbolic link or anything but a plain file (a folder
where a folder is wanted) is refused with a :class:`~window_budget.errors.ConfigError` naming
the path. A replacement is a whole new file in the same directory, then ``os.replace``: a
reader sees the old file or the new one, and a kill mid-write leaves the old one intact.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from window_budget.errors import ConfigError

__all__ = [
    "atomic_write",
    "opened_folder",
    "read_bytes",
    "refuse_link_or_special",
    "remove_folder",
    "remove_stale_temps",
    "valid_dirname",
]

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# No O_NOFOLLOW (Windows): the lstat checks below still refuse links, only not race-free.
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def refuse_link_or_special(name: str, dir_fd: int, shown: Path, *, want_dir: bool) -> bool:
    """True when ``name`` exists (as the kind wanted); refuses a link or any other kind."""
    try:
        st = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode):
        raise ConfigError(
            f"{shown} is a symbolic link; the scratch writer never follows "
            "links — remove it and write again"
        )
    if want_dir and not stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{shown} is not a directory; remove it or pick another dirname")
    if not want_dir and not stat.S_ISREG(st.st_mode):
        raise ConfigError(
            f"{shown} is not a regular file; the scratch writer only replaces "
            "plain files — remove it and write again"
        )
    return True


def read_bytes(name: str, dir_fd: int, shown: Path) -> bytes:
    """The current bytes of a detail file, or empty when it does not exist yet."""
    if not refuse_link_or_special(name, dir_fd, shown, want_dir=False):
        return b""
    # Non-blocking and checked again once open: a FIFO swapped in after the check must not
    # hang the writer.
    fd = os.open(
        name, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | getattr(os, "O_NONBLOCK", 0), dir_fd=dir_fd
    )
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(
                f"{shown} is not a regular file; the scratch writer only "
                "replaces plain files — remove it and write again"
            )
        return fh.read()


def atomic_write(name: str, data: bytes, dir_fd: int, shown: Path) -> None:
    """Replace ``name`` in ``dir_fd`` with ``data``: readers see the old file or the new.

    The temporary file is created exclusively and without following links; ``os.replace``
    renames over the entry itself, never through a link at it.
    """
    refuse_link_or_special(name, dir_fd, shown, want_dir=False)
    while True:
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(
                tmp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC,
                0o644,
                dir_fd=dir_fd,
            )
        except FileExistsError:
            continue  # a leftover (or planted) entry of that name: draw another
        break
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def remove_stale_temps(dir_fd: int, owned: Iterable[str]) -> None:
    """Remove the temporary files a killed write of one of the ``owned`` files left behind."""
    prefixes = tuple(f".{name}." for name in owned)
    with os.scandir(dir_fd) as entries:
        stale = [e.name for e in entries if e.name.endswith(".tmp") and e.name.startswith(prefixes)]
    for name in stale:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)  # unlink removes a link itself, never its target


def valid_dirname(dirname: object) -> str:
    """``dirname`` when it is one plain folder name (so removing it removes only that folder)."""
    if not isinstance(dirname, str):
        raise ConfigError(f"dirname must be a str, not {type(dirname).__name__}")
    seps = {os.sep, "/", "\\"} | ({os.altsep} if os.altsep else set())
    if (
        dirname in ("", ".", "..")
        or any(sep in dirname for sep in seps)
        or "\x00" in dirname
        or Path(dirname).is_absolute()
        or Path(dirname).drive
    ):
        raise ConfigError(
            "dirname must be one plain folder name inside the worktree (like "
            f"'.context'), not a path, '.' or '..', got {dirname!r}"
        )
    return dirname


@contextlib.contextmanager
def opened_folder(worktree: Path, dirname: str) -> Iterator[int]:
    """``worktree/dirname``, created if missing, opened without following links.

    Raises:
        ConfigError: the folder is a symbolic link or not a directory, or became one while
            being opened.

    """
    shown = worktree / dirname
    worktree.mkdir(parents=True, exist_ok=True)
    tree = os.open(worktree, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    try:
        if not refuse_link_or_special(dirname, tree, shown, want_dir=True):
            with contextlib.suppress(FileExistsError):  # made meanwhile: checked below
                os.mkdir(dirname, 0o755, dir_fd=tree)
            refuse_link_or_special(dirname, tree, shown, want_dir=True)
        try:
            folder = os.open(
                dirname, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=tree
            )
        except OSError as exc:  # swapped for a link between the check and the open
            raise ConfigError(
                f"{shown} changed into a link or a file while being opened; the scratch "
                "writer never follows links"
            ) from exc
    finally:
        os.close(tree)
    try:
        yield folder
    finally:
        os.close(folder)


def remove_folder(worktree: Path, dirname: str) -> None:
    """Remove ``worktree/dirname`` and everything in it; nothing when either is missing.

    Raises:
        ConfigError: the folder is a symbolic link or not a directory; nothing was removed.

    """
    try:
        tree = os.open(worktree, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if refuse_link_or_special(dirname, tree, worktree / dirname, want_dir=True):
            # Relative to the opened worktree: a swapped path cannot redirect it, and
            # rmtree removes links inside instead of following them.
            shutil.rmtree(dirname, dir_fd=tree)
    finally:
        os.close(tree)
