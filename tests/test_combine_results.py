"""``combine_systems`` returns a frozen ``CombineSummary`` (the posterior combination's alt-CTM statistics, or
rover's ``RoverSummary``) and ``nbest_to_lattices`` the number of lattices written; what ``combine`` and
``nbest-to-lattices`` print is byte-identical to their output when these returned plain dicts (goldens in
tests/data/combine_results, see its PROVENANCE.md)."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"
GOLDEN = DATA / "combine_results"

CASES = {
    "posterior": ["combine", "nbest/generic.tsv", "nbest/generic.jsonl", "-o", "{t}/c.ctm", "-n", "2"],
    "posterior-ctm": ["combine", "--nbest-format", "ctm", "rover/pocketsphinx_a.ctm", "rover/pocketsphinx_b.ctm", "-o",
                      "{t}/p.ctm"],
    "rover": ["combine", "--method", "rover", "rover/sys1.ctm", "rover/sys2.ctm", "rover/sys3.ctm", "-o", "{t}/r.ctm"],
    "nbest-to-lattices": ["nbest-to-lattices", "nbest/generic.tsv", "-o", "{t}/lats", "--out-format", "slf"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_printed_summary_is_byte_identical(tmp_path, name):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(DATA.parent.parent), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "lattice_tools", *[a.format(t=tmp_path) for a in CASES[name]]],
                          cwd=DATA, capture_output=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr == (GOLDEN / f"{name}.stderr").read_bytes()


def test_combine_returns_a_frozen_summary(tmp_path, monkeypatch):
    from lattice_tools.alternatives.combine import CombineSummary, combine_systems, nbest_to_lattices
    from lattice_tools.alternatives.rover import RoverSummary
    from lattice_tools.io.transcripts.altctm import AltCtmStatistics

    monkeypatch.chdir(DATA)
    post = combine_systems(["nbest/generic.tsv", "nbest/generic.jsonl"], str(tmp_path / "c.ctm"), n=2)
    assert isinstance(post, CombineSummary) and isinstance(post.statistics, AltCtmStatistics) and post.rover is None
    assert (post.method, post.systems, post.utterances, post.statistics.n) == ("posterior", 2, 2, 2)
    assert json.dumps(post.to_dict(), sort_keys=True) == (GOLDEN / "posterior.stderr").read_text().strip()
    rover = combine_systems(["rover/sys1.ctm", "rover/sys2.ctm", "rover/sys3.ctm"], str(tmp_path / "r.ctm"),
                            method="rover")
    assert isinstance(rover.rover, RoverSummary) and rover.statistics is None and rover.utterances is None
    assert rover.rover.lines == len((tmp_path / "r.ctm").read_text().splitlines()) and rover.systems == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        post.systems = 3  # type: ignore[misc]
    assert nbest_to_lattices("nbest/generic.tsv", str(tmp_path / "lats"), out_format="slf") == 2
