"""The alternatives commands' statistics are typed and frozen (``AltCtmStatistics`` of the written file,
``AlternativesCtmSummary`` of a whole ``nbest``/``sausage``/``phrases`` job); what the commands print and write with
``--json`` and what ``write_alternatives_ctm`` returns (``to_dict()``) are byte-identical to the dict-era output
(goldens in tests/data/altctm_statistics, see its PROVENANCE.md)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"
GOLDEN = DATA / "altctm_statistics"

CASES = {
    "nbest": (["nbest", "inputs/003.lat", "inputs/004.lat", "-n", "5", "-o", "{t}/n.ctm", "--json", "-"], True),
    "sausage": (["sausage", "inputs/003.lat", "inputs/004.lat", "-n", "3", "-o", "{t}/s.ctm", "--json", "-"], True),
    "phrases": (["phrases", "inputs/003.lat", "inputs/004.lat", "-n", "10", "--posterior-threshold", "0.2", "-o",
                 "{t}/p.ctm.gz"], False),
    "sausage-bare": (["sausage", "inputs/insertion.ark", "-o", "{t}/b.ctm", "--json", "-"], True),
    "nbest-best-effort": (["nbest", "inputs/003.lat", "inputs/004.lat", "-n", "5", "-o", "{t}/be.ctm",
                           "--best-effort", "--json", "-"], True),
    "sausage-inf": (["sausage", "inputs/003.lat", "-n", "inf", "-o", "{t}/si.ctm", "--json", "-"], True),
}


def _run(args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(DATA.parent.parent), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "lattice_tools", *args], cwd=DATA, capture_output=True, env=env,
                          timeout=300)


@pytest.mark.parametrize("name", sorted(CASES))
def test_command_output_is_byte_identical(tmp_path, name):
    args, to_stdout = CASES[name]
    proc = _run([a.format(t=tmp_path) for a in args])
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr == (GOLDEN / f"{name}.stderr").read_bytes()
    assert proc.stdout == (GOLDEN / (f"{name}.json" if to_stdout else f"{name}.stdout")).read_bytes()


def test_json_file_is_byte_identical(tmp_path):
    proc = _run(["nbest", "inputs/003.lat", "-o", str(tmp_path / "x.ctm"), "--json", str(tmp_path / "x.json")])
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr == (GOLDEN / "nbest-all.stderr").read_bytes()
    assert (tmp_path / "x.json").read_bytes() == (GOLDEN / "nbest-all.json").read_bytes()


def test_write_alternatives_ctm_statistics(tmp_path):
    from lattice_tools.alternatives import sausage
    from lattice_tools.io import read_lattices
    from lattice_tools.io.transcripts.altctm import write_alternatives_ctm

    lats = [lat for key in ("003", "004") for lat in read_lattices(str(DATA / "inputs" / f"{key}.lat"))]
    got = [json.dumps(write_alternatives_ctm(str(tmp_path / "w.ctm.gz"), [sausage(lat, None) for lat in lats]).to_dict()),
           json.dumps(write_alternatives_ctm(str(tmp_path / "w1.ctm"), [sausage(lat, None) for lat in lats],
                                             n=1).to_dict())]
    assert "\n".join(got) + "\n" == (GOLDEN / "write_alternatives_ctm.jsonl").read_text()


def test_make_alternatives_ctm_returns_a_frozen_summary(tmp_path):
    import dataclasses

    from lattice_tools.alternatives.lattices_to_ctm import AlternativesCtmSummary, make_alternatives_ctm
    from lattice_tools.io.transcripts.altctm import AltCtmStatistics

    lats = [str(DATA / "inputs" / "003.lat"), str(DATA / "inputs" / "004.lat")]
    s = make_alternatives_ctm(lats, "phrases", 10, str(tmp_path / "p.ctm.gz"), posterior_threshold=0.2,
                              json_out=str(tmp_path / "p.json"), progress=False)
    assert isinstance(s, AlternativesCtmSummary) and isinstance(s.statistics, AltCtmStatistics)
    assert (s.kind, s.posterior_threshold, s.warnings, s.best_effort) == ("phrases", 0.2, (), None)
    assert s.statistics.n == 10 and s.statistics.utterances == 2 and len(s.statistics.depths) == s.statistics.blocks
    assert json.loads((tmp_path / "p.json").read_text()) == s.to_dict() == json.loads(
        (GOLDEN / "phrases.stderr").read_text())
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.kind = "nbest"  # type: ignore[misc]
    # a search stopped by its time limit: the summary lists it (and says so in the JSON)
    stopped = make_alternatives_ctm(lats[:1], "nbest", 20, str(tmp_path / "n.ctm"), time_limit=1e-9,
                                    best_effort=True, progress=False)
    assert stopped.best_effort is not None and [e["key"] for e in stopped.best_effort] == ["003"]
    assert stopped.best_effort[0]["stopped_by"] == "time" and stopped.posterior_threshold is None
    assert stopped.to_dict()["best_effort"] == [dict(e) for e in stopped.best_effort]
