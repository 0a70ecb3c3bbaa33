"""Shared pytest configuration: paths to the bundled data and the shared golden files."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run by default, so a submission's CI result does not depend
# on the luck of the draw; `HYPOTHESIS_PROFILE=explore pytest ...` draws fresh random examples to look for
# new counterexamples, which then go into the test as @example(...).
settings.register_profile("default", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "lattice_tools" / "data"
# Third-party golden data the tests need, vendored with its provenance (tests/data/README.md):
# NIST SCTK's sclite/csrfilt test files and the RT-03 GLM (sctk/), k2's lattice fixtures (k2-fixtures/).
TEST_DATA = REPO / "tests" / "data"
SCLITE = shutil.which("sclite") or ("/usr/lib/sctk/bin/sclite" if os.path.exists("/usr/lib/sctk/bin/sclite") else None)


@pytest.fixture(scope="session")
def test_data_dir() -> Path:
    return TEST_DATA


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA
