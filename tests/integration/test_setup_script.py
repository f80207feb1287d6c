"""tools/setup.sh's python step when installing fails: the tool's own error lines are shown, and the half-made
.venv is removed so that the next `make setup` starts clean. Runs in a copy of the checkout, offline."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_failed_install_shows_pips_own_error_and_leaves_no_venv(tmp_path: Path):
    for name in ("tools", "requirements"):
        shutil.copytree(ROOT / name, tmp_path / name)
    shutil.copy2(ROOT / "pyproject.toml", tmp_path)
    result = subprocess.run(
        ["bash", "tools/setup.sh", "python"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
        # no index and nowhere to find wheels: pip must fail, and say why
        env={**os.environ, "PYTHON": sys.executable, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path / "none")},
    )
    assert result.returncode == 1
    assert "setup: python: making .venv from requirements/dev.lock" in result.stdout
    assert "setup: pip-install failed" in result.stderr
    assert "No matching distribution found" in result.stderr  # pip's own line, not just an exit code
    assert "it was removed, so the next make setup starts clean" in result.stderr
    assert not (tmp_path / ".venv").exists()
    assert (tmp_path / "build" / "setup" / "pip-install.log").is_file()


def test_an_unknown_step_is_refused():
    result = subprocess.run(["bash", "tools/setup.sh", "coffee"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "unknown step coffee" in result.stderr
