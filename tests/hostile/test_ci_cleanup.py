""".ci/run removes its temporary virtual environment on exit and keeps the exit status.

The real script builds a ~600 MB environment; here ``python3`` is a stand-in on ``PATH``
whose venv holds stub tools, so the script's own control flow runs in milliseconds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAKE_PYTHON3 = """#!/bin/sh
# python3 -m venv DIR: a venv whose tools exit with $FAKE_STATUS (ruff) or 0.
[ "$1" = "-m" ] && [ "$2" = "venv" ] || exit 99
mkdir -p "$3/bin"
printf 'PATH="%s/bin:$PATH"; export PATH\\n' "$3" > "$3/bin/activate"
for tool in python mypy lint-imports window-budget mkdocs; do
    printf '#!/bin/sh\\nexit 0\\n' > "$3/bin/$tool"
done
printf '#!/bin/sh\\nexit %s\\n' "${FAKE_STATUS:-0}" > "$3/bin/ruff"
chmod +x "$3/bin/"*
"""


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("status", [0, 3])
def test_the_temporary_venv_is_removed_and_the_status_kept(tmp_path: Path, status: int) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(FAKE_PYTHON3)
    (bin_dir / "python3").chmod(0o755)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "TMPDIR": str(temp),
        "FAKE_STATUS": str(status),
        "WINDOW_BUDGET_CI_NO_APT": "1",
    }
    done = subprocess.run(
        ["bash", str(ROOT / ".ci" / "run")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == status, done.stderr
    assert list(temp.iterdir()) == []
