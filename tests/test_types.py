"""mypy (the configuration in pyproject.toml) is clean on the package: the annotations say what the code does.

A first run checks every module (about 20 s of CPU); later runs reuse mypy's cache (.mypy_cache, which mypy
invalidates by source hash and configuration) and take about a second."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (pip install mypy)")
def test_mypy_is_clean():
    proc = subprocess.run([sys.executable, "-m", "mypy", "lattice_tools"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "Success: no issues found" in proc.stdout, proc.stdout[-2000:]
