"""What /proc says of a process, for tests that stop, kill or wait for one."""

from __future__ import annotations

from pathlib import Path


def process_state(pid: int) -> str:
    """The one-letter state of a process in /proc (R, S, T for stopped, Z for a zombie...), '' if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return ""
