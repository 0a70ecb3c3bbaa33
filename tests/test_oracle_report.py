"""The oracle report is a typed, frozen OracleReport; its JSON (``to_dict``, ``--json``) and the printed report
are byte-identical to what the command wrote when the report was a plain dict (goldens in
tests/data/oracle_report, see its PROVENANCE.md)."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lattice_tools.core.counts import ErrorCounts
from lattice_tools.oracle import OracleReport, OracleResult, oracle_wer
from lattice_tools.oracle.bootstrap import Interval

DATA = Path(__file__).resolve().parent / "data"
GOLDEN = DATA / "oracle_report"

CASES = {
    "nbest-bootstrap": ["inputs/003.lat", "inputs/004.lat", "-r", "oracle_report/cards.stm", "--representation",
                        "nbest", "-n", "4", "--bootstrap", "50", "--seed", "3"],
    "lattice": ["inputs/003.lat", "inputs/004.lat", "-r", "oracle_report/cards.stm"],
    "sausage-missing": ["inputs/003.lat", "inputs/004.lat", "-r", "oracle_report/cards-003.trn", "--representation",
                        "sausage", "-n", "2", "-D", "--allow-missing", "--mode", "levenshtein"],
    "altctm-missing": ["sctk/sclite-testdata/stm2ctm_missing.hyp-extra.ctm", "-r",
                       "sctk/sclite-testdata/stm2ctm_missing.ref.stm", "--allow-missing", "--bootstrap", "20"],
}


def _oracle(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(DATA.parent.parent), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "lattice_tools", "oracle", *args], cwd=DATA, capture_output=True,
                          env=env, timeout=300)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_json_is_byte_identical_to_the_dict_report(name):
    proc = _oracle(*CASES[name], "--json", "-")
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == (GOLDEN / f"{name}.json").read_bytes()


@pytest.mark.parametrize("name", ["nbest-bootstrap", "altctm-missing"])
def test_printed_report_is_unchanged(name):
    proc = _oracle(*CASES[name])
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == (GOLDEN / f"{name}.txt").read_bytes()


def test_the_api_returns_a_frozen_typed_report(monkeypatch, tmp_path):
    monkeypatch.chdir(DATA)
    out = tmp_path / "report.json"
    report = oracle_wer(["inputs/003.lat", "inputs/004.lat"], "oracle_report/cards.stm", representation="nbest", n=4,
                        bootstrap=50, seed=3, json_out=str(out), progress=False)
    assert isinstance(report, OracleReport)
    assert isinstance(report.counts, ErrorCounts) and all(isinstance(u, OracleResult) for u in report.utterances)
    assert isinstance(report.wer_interval, Interval) and set(report.intervals) == {"wer", "precision", "recall"}
    assert [u.key for u in report.utterances] == ["003", "004"] and report.warnings == ()
    assert report.counts == ErrorCounts.sum(u.counts for u in report.utterances)
    assert (report.wer, report.precision, report.recall) == (report.counts.wer, report.counts.precision,
                                                             report.counts.recall)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.n = 5  # type: ignore[misc]
    # the file --json writes is to_dict(), and to_dict() is the golden
    assert json.loads(out.read_text()) == report.to_dict() == json.loads((GOLDEN / "nbest-bootstrap.json").read_text())
    plain = oracle_wer(["inputs/003.lat", "inputs/004.lat"], "oracle_report/cards.stm", progress=False)
    assert plain.wer_interval is None and plain.intervals == {} and "intervals" not in plain.to_dict()
