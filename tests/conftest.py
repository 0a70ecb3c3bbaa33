"""Shared pytest configuration: paths to the bundled data and the shared golden files."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "lattice_tools" / "data"
# CI lays shared/ beside the clone; developers have it at ../shared as well.
_SHARED_CANDIDATES = [REPO.parent / "shared", Path(os.environ.get("LATTICE_TOOLS_SHARED", "/nonexistent")),
                      Path("/work/shared")]
SHARED = next((p for p in _SHARED_CANDIDATES if p.is_dir()), REPO.parent / "shared")
SCLITE = shutil.which("sclite") or ("/usr/lib/sctk/bin/sclite" if os.path.exists("/usr/lib/sctk/bin/sclite") else None)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip("shared/ (golden files, k2 fixtures) is not beside the repository")
    return SHARED


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA
