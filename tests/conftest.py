"""Fixtures for the whole suite: one Spark session per test run (the verifier's, quiet)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The verifier's Spark session on local[2], started once and stopped at the end of the run."""
    from verifier.session import get_session

    session, _ = get_session("local[2]")
    try:
        yield session
    finally:
        session.stop()
