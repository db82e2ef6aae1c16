"""The server fixtures fail with one sentence saying why, never skip."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from . import servers


def test_a_missing_postgres_is_one_sentence_naming_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(servers, "_PG_DIRS", [tmp_path])
    expected = (
        f"cannot start the test server: 'initdb' is not on PATH nor in {tmp_path} "
        "(install the platform's package, as .ci/run does)"
    )
    with (
        pytest.raises(servers.ServerError, match=f"^{re.escape(expected)}$"),
        servers.postgres_server(),
    ):
        pass


def test_a_redis_that_exits_at_once_is_reported_with_its_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "redis-server"
    fake.write_text("#!/bin/sh\necho 'bind: address already in use'\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with (
        pytest.raises(
            servers.ServerError,
            match=r"^cannot start the test server: redis-server exited with status 3: "
            r"'bind: address already in use'$",
        ),
        servers.redis_server(),
    ):
        pass
