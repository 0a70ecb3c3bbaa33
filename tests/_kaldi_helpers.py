"""Shared helpers of the Kaldi parity tests: the vendored fixtures and the Kaldi binaries."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "kaldi"
LATS = DATA / "lats"
EXPECTED = DATA / "expected"

#: the three inputs: name -> rspecifier of the vendored archive
INPUTS = {
    "kgraph": f"ark:{LATS / 'kgraph_lat.1'}",
    "bundled": f"ark:{LATS / 'bundled.ark.gz'}",
    "insertion": f"ark:{LATS / 'insertion.ark'}",
}
SCALES = ("1.0", "0.1")


def kaldi_bin(name: str) -> str | None:
    """Path of a Kaldi binary: $LATTICE_TOOLS_KALDI_BIN first, then PATH; None if absent."""
    d = os.environ.get("LATTICE_TOOLS_KALDI_BIN")
    if d and os.access(os.path.join(d, name), os.X_OK):
        return os.path.join(d, name)
    return shutil.which(name)


def require_kaldi(*names: str) -> dict[str, str]:
    found = {n: kaldi_bin(n) for n in names}
    missing = [n for n, p in found.items() if p is None]
    if missing:
        pytest.skip(f"Kaldi binaries {', '.join(missing)} not on PATH or in $LATTICE_TOOLS_KALDI_BIN")
    return found


def kaldi_env() -> dict:
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", LC_ALL="C")
    return env
