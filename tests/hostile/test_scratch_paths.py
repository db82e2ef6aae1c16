"""The scratch writer never writes outside its folder, never follows a link, never tears.

Every path it takes (the ``dirname``, the ``.context`` folder, each of the five files, the
temporary files) is tried with symbolic links (to existing and to missing targets), with
other kinds of file, and with names that would leave the folder; and appends are killed
mid-write by a real signal.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from window_budget.errors import ConfigError
from window_budget.tools.scratch import (
    ARTIFACTS_FILE,
    DEAD_ENDS_FILE,
    HUMAN_INPUT_FILE,
    SCRATCH_FILE,
    STATE_CHANGES_FILE,
    ScratchModel,
    ScratchWriter,
)
from window_budget.tools.scratch._disk import os as scratch_os

pytestmark = pytest.mark.skipif(os.name != "posix", reason="symbolic links and signals: POSIX")

FILES = [SCRATCH_FILE, HUMAN_INPUT_FILE, STATE_CHANGES_FILE, DEAD_ENDS_FILE, ARTIFACTS_FILE]
BASHRC = "export PATH=/usr/bin\n"


def _model(*inputs: str) -> ScratchModel:
    model = ScratchModel()
    for text in inputs or ("echo pwned >> ~/.bashrc",):
        model.add_human_input(text)
    model.add_dead_end("tried the shim: failed twice")
    model.record_state_change("DRAFT", "REVIEW")
    model.add_file_modification("src/app.py")
    return model


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    work = tmp_path / "repo"
    work.mkdir()
    (work / "README.md").write_text("mine\n", encoding="utf-8")
    return work


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text(BASHRC, encoding="utf-8")
    return home


def _snapshot(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        out[rel] = (
            f"-> {os.readlink(path)}"
            if path.is_symlink()
            else "dir"
            if path.is_dir()
            else path.read_bytes()
        )
    return out


WRITES = {
    "write_scratch": lambda w: w.write_scratch(_model()),
    "append_human_input": lambda w: w.append_human_input("echo pwned"),
    "append_dead_end": lambda w: w.append_dead_end("echo pwned"),
}


# --------------------------------------------------------------- the folder itself


@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("target", ["existing", "dangling"])
def test_a_linked_context_folder_is_refused(
    repo: Path, outside: Path, write: str, target: str
) -> None:
    dest = outside if target == "existing" else outside / "made-by-writer"
    (repo / ".context").symlink_to(dest, target_is_directory=True)
    before = _snapshot(outside)
    with pytest.raises(ConfigError, match=r"\.context is a symbolic link") as info:
        WRITES[write](ScratchWriter(repo))
    assert str(repo / ".context") in str(info.value)
    assert "\n" not in str(info.value)
    assert _snapshot(outside) == before
    assert not (outside / "made-by-writer").exists()


@pytest.mark.parametrize("write", list(WRITES))
def test_a_context_that_is_a_file_is_refused(repo: Path, write: str) -> None:
    (repo / ".context").write_text("not a folder", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\.context is not a directory"):
        WRITES[write](ScratchWriter(repo))
    assert (repo / ".context").read_text(encoding="utf-8") == "not a folder"


def test_cleanup_refuses_a_linked_folder_and_removes_nothing(repo: Path, outside: Path) -> None:
    (repo / ".context").symlink_to(outside, target_is_directory=True)
    before = _snapshot(outside)
    with pytest.raises(ConfigError, match="symbolic link"):
        ScratchWriter(repo).cleanup()
    assert _snapshot(outside) == before
    assert (repo / ".context").is_symlink()


def test_cleanup_removes_links_inside_never_their_targets(repo: Path, outside: Path) -> None:
    writer = ScratchWriter(repo)
    writer.write_scratch(_model())
    (repo / ".context" / "planted").symlink_to(outside / ".bashrc")
    (repo / ".context" / "planted-dir").symlink_to(outside, target_is_directory=True)
    before = _snapshot(outside)
    writer.cleanup()
    assert not (repo / ".context").exists()
    assert _snapshot(outside) == before
    assert (repo / "README.md").read_text(encoding="utf-8") == "mine\n"
    writer.cleanup()  # idempotent


# ------------------------------------------------------------------- each file


@pytest.mark.parametrize("filename", FILES)
@pytest.mark.parametrize("target", ["existing", "dangling"])
def test_a_linked_file_is_refused_and_its_target_untouched(
    repo: Path, outside: Path, filename: str, target: str
) -> None:
    context = repo / ".context"
    context.mkdir()
    dest = outside / (".bashrc" if target == "existing" else "created")
    (context / filename).symlink_to(dest)
    before = _snapshot(outside)
    writer = ScratchWriter(repo)
    with pytest.raises(ConfigError, match=re.escape(f"{context / filename} is a symbolic link")):
        writer.write_scratch(_model())
    if filename == HUMAN_INPUT_FILE:
        with pytest.raises(ConfigError, match="symbolic link"):
            writer.append_human_input("echo pwned")
    if filename == DEAD_ENDS_FILE:
        with pytest.raises(ConfigError, match="symbolic link"):
            writer.append_dead_end("echo pwned")
    assert _snapshot(outside) == before
    assert (context / filename).is_symlink()  # the link itself is left for the user to see
    assert not [p for p in context.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("filename", FILES)
@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_file_of_another_kind_is_refused(repo: Path, filename: str, kind: str) -> None:
    context = repo / ".context"
    context.mkdir()
    if kind == "directory":
        (context / filename).mkdir()
    else:
        os.mkfifo(context / filename)  # reading it would block forever
    with pytest.raises(ConfigError, match="is not a regular file"):
        ScratchWriter(repo).write_scratch(_model())


@pytest.mark.parametrize("filename", FILES)
def test_a_hard_linked_file_is_replaced_never_written_through(
    repo: Path, outside: Path, filename: str
) -> None:
    context = repo / ".context"
    context.mkdir()
    try:
        os.link(outside / ".bashrc", context / filename)
    except OSError:
        pytest.skip("hard links across these folders are not supported here")
    writer = ScratchWriter(repo)
    writer.write_scratch(_model())
    writer.append_human_input("echo pwned")
    writer.append_dead_end("echo pwned")
    assert (outside / ".bashrc").read_text(encoding="utf-8") == BASHRC
    assert (context / filename).stat().st_nlink == 1  # its own file now


def test_a_planted_temp_name_is_not_written_through(
    repo: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = iter(["aaaaaaaaaaaa", "bbbbbbbbbbbb"])
    monkeypatch.setattr(
        "window_budget.tools.scratch._disk.secrets.token_hex", lambda n: next(names)
    )
    context = repo / ".context"
    context.mkdir()
    planted = context / f".{HUMAN_INPUT_FILE}.aaaaaaaaaaaa.tmp"
    planted.symlink_to(outside / ".bashrc")
    ScratchWriter(repo).append_human_input("hello")
    assert (outside / ".bashrc").read_text(encoding="utf-8") == BASHRC
    assert "hello" in (context / HUMAN_INPUT_FILE).read_text(encoding="utf-8")


# -------------------------------------------------------------------- dirname


@pytest.mark.parametrize(
    "dirname",
    [
        "",
        ".",
        "..",
        "../escape",
        "/abs",
        "/",
        "a/b",
        "a\\b",
        "x\x00y",
        ".context/..",
        "./.context",
    ],
)
def test_dirname_must_be_one_plain_folder_name(repo: Path, dirname: str) -> None:
    with pytest.raises(ConfigError, match="dirname must be one plain folder name"):
        ScratchWriter(repo, dirname=dirname)


@pytest.mark.parametrize("dirname", [None, 3, b".context", Path(".context")])
def test_dirname_must_be_a_str(repo: Path, dirname: object) -> None:
    with pytest.raises(ConfigError, match="dirname must be a str"):
        ScratchWriter(repo, dirname=dirname)  # type: ignore[arg-type]


def test_dot_dirname_can_no_longer_delete_the_repository(repo: Path) -> None:
    with pytest.raises(ConfigError):
        ScratchWriter(repo, dirname=".").cleanup()
    assert (repo / "README.md").exists()


def test_another_plain_name_works(repo: Path) -> None:
    writer = ScratchWriter(repo, dirname="notes")
    writer.write_scratch(_model())
    assert sorted(p.name for p in (repo / "notes").iterdir()) == sorted(FILES)
    writer.cleanup()
    assert sorted(p.name for p in repo.iterdir()) == ["README.md"]


# -------------------------------------------------------------------- atomicity


def _entries(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# Human input\n\n")
    return [e.strip() for e in text[len("# Human input\n\n") :].split("\n---\n")]


def test_a_failure_between_write_and_rename_keeps_the_old_file(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = ScratchWriter(repo)
    writer.append_human_input("first")
    path = repo / ".context" / HUMAN_INPUT_FILE
    before = path.read_bytes()
    real = scratch_os.replace

    def fail(src: str, dst: str, **dir_fds: int) -> None:
        raise OSError("disk full at the rename")

    monkeypatch.setattr(scratch_os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        writer.append_human_input("second, lost with the failed write")
    assert path.read_bytes() == before
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    monkeypatch.setattr(scratch_os, "replace", real)
    writer.append_human_input("third")
    assert _entries(path) == ["first", "third"]


def test_a_torn_file_is_never_continued(repo: Path) -> None:
    context = repo / ".context"
    context.mkdir()
    path = context / HUMAN_INPUT_FILE
    path.write_bytes(b"# Human input\n\nfirst\n\n---\n\nsecond, cut sho\xe2\x82")  # torn mid-char
    ScratchWriter(repo).append_human_input("third")
    data = path.read_bytes()
    assert data.startswith(b"# Human input\n\nfirst\n\n---\n\nsecond, cut sho\xe2\x82\n")
    assert data.endswith(b"\n---\n\nthird\n")  # its own entry, on its own line


def test_a_killed_writer_leaves_stray_temps_that_the_next_write_removes(repo: Path) -> None:
    context = repo / ".context"
    context.mkdir()
    stray = context / f".{SCRATCH_FILE}.0123456789ab.tmp"
    stray.write_text("half", encoding="utf-8")
    mine = context / "notes.tmp"  # not the writer's: left alone
    mine.write_text("keep", encoding="utf-8")
    ScratchWriter(repo).write_scratch(_model())
    assert not stray.exists()
    assert mine.read_text(encoding="utf-8") == "keep"


# One child imports the library once (the import costs more than the test), then forks a
# writer per round and kills it with SIGKILL at a random moment: a real kill, mid-write.
CHILD = textwrap.dedent("""
    import os, random, signal, sys, time
    from window_budget.tools.scratch import ScratchWriter
    repo, rounds = sys.argv[1], int(sys.argv[2])
    rng = random.Random(12)
    r = 0
    # At least `rounds` kills, and on until entries exist (a loaded machine is slow to start).
    while r < rounds or not os.path.exists(os.path.join(repo, ".context", "human-input.md")):
        pid = os.fork()
        if pid == 0:
            writer = ScratchWriter(repo)
            n = r * 1000
            while True:
                writer.append_human_input(f"entry-{n} " + "x" * 200_000 + f" end-{n}")
                n += 1
        time.sleep(rng.uniform(0.0, 0.04))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        r += 1
    print("done", flush=True)
""")
ENTRY = re.compile(r"^entry-(\d+) x{200000} end-(\d+)$")


def test_appends_killed_mid_write_never_tear(repo: Path) -> None:
    path = repo / ".context" / HUMAN_INPUT_FILE
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(repo), "30"],
        env=env,
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert done.stdout == b"done\n"
    # A torn entry would stay in the file whatever came after it: the end state shows all.
    entries = _entries(path)
    assert entries
    for entry in entries:
        match = ENTRY.match(entry)
        assert match, f"torn entry: {entry[:40]}…{entry[-40:]}"
        assert match.group(1) == match.group(2)
    ScratchWriter(repo).append_human_input("after the kills")
    assert _entries(path)[-1] == "after the kills"


def test_a_fifo_swapped_in_after_the_check_does_not_hang(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = repo / ".context"
    context.mkdir()
    (context / HUMAN_INPUT_FILE).write_text("# Human input\n\nfirst\n", encoding="utf-8")
    real_open = scratch_os.open

    def swap_then_open(path: str, flags: int, *args: object, **kw: object) -> int:
        if path == HUMAN_INPUT_FILE and not flags & os.O_WRONLY:
            os.unlink(context / HUMAN_INPUT_FILE)
            os.mkfifo(context / HUMAN_INPUT_FILE)  # the race: after lstat, before open
        return real_open(path, flags, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(scratch_os, "open", swap_then_open)
    with pytest.raises(ConfigError, match="is not a regular file"):
        ScratchWriter(repo).append_human_input("second")
