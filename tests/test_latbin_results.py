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


def test_the_jobs_return_frozen_typed_summaries(monkeypatch):
    import dataclasses
    import json

    from lattice_tools.pipelines import latbin

    monkeypatch.chdir(DATA)
    inputs = dict(lattices=LATTICES[0], words=LATTICES[2])

    def golden(name):
        return json.loads((GOLDEN / f"{name}.stderr").read_text().splitlines()[-1])

    mbr = latbin.mbr_decode(**inputs, acoustic_scale=0.1)
    assert isinstance(mbr, latbin.MbrDecodeSummary) and mbr.to_dict() == golden("mbr-decode")
    best = latbin.best_path(**inputs, acoustic_scale=0.1, word_penalty=0.5)
    assert isinstance(best, latbin.BestPathSummary) and best.to_dict() == golden("best-path")
    assert best.cost_per_frame == pytest.approx(best.graph_per_frame + best.acoustic_per_frame)
    nb = latbin.nbest_paths(inputs["lattices"], 5, words=inputs["words"])
    assert isinstance(nb, latbin.NbestPathsSummary) and nb.to_dict() == golden("nbest-paths")
    d = latbin.depth(**inputs)
    assert isinstance(d, latbin.DepthSummary) and d.to_dict() == golden("depth") and d.lattices == mbr.lattices
    o = latbin.oracle(inputs["lattices"], "latbin_results/cards.ref.txt", words=inputs["words"], wildcard_symbols=[13])
    assert isinstance(o, latbin.OraclePathSummary) and o.missing_references == 5 and list(o.utterances) == [
        "001", "002", "003", "004", "005"]
    assert all(isinstance(u, latbin.UtteranceErrors) for u in o.utterances.values())
    assert (o.errors, o.words) == (sum(u.errors for u in o.utterances.values()),
                                   sum(u.words for u in o.utterances.values()))
    assert o.to_dict() == json.loads((GOLDEN / "oracle-path-missing.json").read_text())
    for summary in (mbr, best, nb, d, o):
        with pytest.raises(dataclasses.FrozenInstanceError):
            summary.lattices = 0  # type: ignore[union-attr]
