"""The Kaldi latbin jobs (:mod:`lattice_tools.pipelines.latbin`) return typed, frozen summaries (``MbrSummary``,
``BestPathSummary``, ``NbestSummary``, ``DepthSummary``, ``OracleSummary``); what the commands print (and
``oracle-path --json`` writes) is byte-identical to their output when the jobs returned plain dicts (goldens in
tests/data/latbin_results, see its PROVENANCE.md)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"
GOLDEN = DATA / "latbin_results"
LATTICES = ["ark,t:kaldi/lats/bundled.ark.gz", "--words", "kaldi/lats/bundled.words.txt"]

CASES = {
    "mbr-decode": ["mbr-decode", *LATTICES, "--acoustic-scale", "0.1"],
    "best-path": ["best-path", *LATTICES, "--acoustic-scale", "0.1", "--word-penalty", "0.5"],
    "nbest-paths": ["nbest-paths", *LATTICES, "-n", "5"],
    "depth": ["depth", *LATTICES],
    "oracle-path": ["oracle-path", *LATTICES, "-r", "kaldi/lats/bundled.ref.txt"],
    "oracle-path-missing": ["oracle-path", *LATTICES, "-r", "latbin_results/cards.ref.txt", "--wildcard-symbols", "13",
                            "--json", "-"],
}


def _run(args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(DATA.parent.parent), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "lattice_tools", *args], cwd=DATA, capture_output=True, env=env,
                          timeout=300)


@pytest.mark.parametrize("name", sorted(CASES))
def test_printed_summary_is_byte_identical(name):
    proc = _run(CASES[name])
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr == (GOLDEN / f"{name}.stderr").read_bytes()
    if "--json" in CASES[name]:
        assert proc.stdout == (GOLDEN / f"{name}.json").read_bytes()
