"""The replica verifier's verdict for the chaos runner: `verifier.verify` over the brokers' log directories with
the producers' history, as the JSON of `minikafka verify --json`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def verify_log_dirs(log_dirs: list[Path], history: Path, progress: Callable[[str], None]) -> dict[str, Any]:
    """The verifier's JSON report (PySpark is imported only when a soak ends)."""
    from verifier import verify

    return verify(log_dirs, history, progress=progress).to_json()
