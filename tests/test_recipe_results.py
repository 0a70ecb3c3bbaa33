"""``measure_ctm`` returns a frozen ``CtmSize``; ``merge --stats`` (which measures with it) writes what it wrote
when ``measure_ctm`` returned a plain dict (goldens in tests/data/recipe_results, see its PROVENANCE.md)."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"
GOLDEN = DATA / "recipe_results"


@pytest.mark.parametrize("name, measure", [("merged", []), ("merged-measured", ["--measure",
                                                                               "recipe_results/merged.ctm.gz"])])
def test_merged_statistics_are_byte_identical(tmp_path, name, measure):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(DATA.parent.parent), os.environ.get("PYTHONPATH", "")]))
    out = tmp_path / f"{name}.json"
    proc = subprocess.run([sys.executable, "-m", "lattice_tools", "merge", "--stats", "recipe_results/a.json",
                           "recipe_results/b.json", *measure, "-o", str(out)], cwd=DATA, capture_output=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    assert out.read_bytes() == (GOLDEN / f"{name}.json").read_bytes()


def test_measure_ctm_returns_a_frozen_size():
    from lattice_tools.pipelines.recipe import CtmSize, measure_ctm

    size = measure_ctm(str(GOLDEN / "merged.ctm.gz"))
    assert isinstance(size, CtmSize) and json.dumps(size.to_dict()) + "\n" == (GOLDEN / "measure.json").read_text()
    assert size.MB == round(size.gzip_bytes / 1e6, 6) and size.bytes > size.gzip_bytes
    with pytest.raises(dataclasses.FrozenInstanceError):
        size.MB = 0.0  # type: ignore[misc]
