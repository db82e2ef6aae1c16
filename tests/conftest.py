"""Shared test configuration: hypothesis profiles and small transcript fixtures."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# CI explores the same examples every run (derandomized): a red CI then means a change, not
# the luck of the draw. Local runs keep searching at random and find the rare cases.
settings.register_profile(
    "ci",
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=60, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
