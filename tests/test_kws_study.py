"""The spoken-term-detection study (lattice_tools.kws.study, `lattice-tools kws study`, the demo's KWS section)
on real pocketsphinx lattices: the bundled recordings' lattices vendored in tests/data/kaldi/lats."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from lattice_tools.core.errors import LatticeToolsError, MismatchError
from lattice_tools.io import read_lattice_inputs
from lattice_tools.io.keyword_search.kwlist import write_kwlist
from lattice_tools.io.keyword_search.rttm import check_overlaps
from lattice_tools.kws.kwlist_make import make_kwlist
from lattice_tools.kws.score import score_kws_files
from lattice_tools.kws.store import TermIndex
from lattice_tools.kws.study import (
    DEFAULT_REPRESENTATIONS,
    KwsStudyRow,
    Representation,
    check_invariants,
    ecf_from_lattices,
    parse_representation,
    run_kws_study,
)

LATS = os.path.join(os.path.dirname(__file__), "data", "kaldi", "lats")
ARK = f"ark,t:{os.path.join(LATS, 'bundled.ark.gz')}"
WORDS = os.path.join(LATS, "bundled.words.txt")
# A slice: the five card recordings and two LibriVox clips.
SLICE = ("001", "002", "003", "004", "005", "sense_and_sensibility_01_austen_64kb-0880",
         "sense_and_sensibility_01_austen_64kb-0930")
REPS = tuple(parse_representation(s) for s in ("1best", "nbest:1", "nbest:10", "nbest:100", "sausage:3",
                                               "phrase:1:0.1", "phrase:10:0.1", "phrase:100:0.1", "phrase:10:0.5",
                                               "lattice"))


def _transcripts() -> dict:
    from lattice_tools.oracle.representations import load_references

    data = os.path.join(os.path.dirname(__file__), "..", "lattice_tools", "data")
    out = {}
    for corpus in ("cards", "librivox"):
        out.update(load_references(os.path.join(data, corpus, "transcription.trn")))
    return out


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from lattice_tools.pipelines.demo import oracle_reference_times

    lats = [lat for lat in read_lattice_inputs(ARK, words=WORDS) if lat.key in SLICE]
    assert len(lats) == len(SLICE)
    refs = oracle_reference_times(lats, _transcripts())
    terms = make_kwlist(refs, num_terms=30, seed=0)
    return lats, refs, terms


@pytest.fixture(scope="module")
def study(setup, tmp_path_factory):
    lats, refs, terms = setup
    out = str(tmp_path_factory.mktemp("kws_study"))
    return run_kws_study(lats, refs, terms, out_dir=out, representations=REPS, plots=True), out


def test_reference_times_are_a_valid_reference(setup):
    lats, refs, _ = setup
    check_overlaps(refs)  # no overlapping words
    trans = _transcripts()
    for lat in lats:
        words = [r.ortho for r in refs if r.file == lat.key]
        assert words == trans[lat.key].split()
        assert all(0 <= r.tbeg and r.tend <= lat.duration + 1e-6 for r in refs if r.file == lat.key)


def test_invariants_hold_on_real_lattices(study):
    result, _ = study
    rules = {inv.rule for inv in result.invariants}
    assert {"lattice>=phrase", "phrase>=1best", "lattice>=1best", "lattice>=nbest", "nbest_rises",
            "phrase_rises"} <= rules
    failed = [inv.check for inv in result.invariants if not inv.holds]
    assert not failed, failed
    by = {r.representation.slug: r for r in result.rows}
    # lattice recall strictly above the 1-best's on this slice (otherwise the check would be vacuous)
    assert by["lattice"].stwv > by["1best"].stwv
    assert by["nbest-100"].stwv > by["nbest-1"].stwv


def test_rows_agree_with_the_files(study, setup):
    """Each row's numbers are those of its written index and of `kws score` on its written kwslist."""
    result, out = study
    lats, refs, terms = setup
    from lattice_tools.io.keyword_search.ecf import write_ecf
    from lattice_tools.io.keyword_search.rttm import write_rttm

    ecf_path, rttm_path, kwl_path = (os.path.join(out, n) for n in ("t.ecf.xml", "t.rttm", "kwlist.xml"))
    write_ecf(ecf_path, ecf_from_lattices(lats))
    write_rttm(rttm_path, refs)
    write_kwlist(kwl_path, terms, compare_normalize="lowercase")
    for row in result.rows:
        with TermIndex(row.index) as idx:
            assert idx.counts().hits == row.entries
        ev = score_kws_files(ecf_path, kwl_path, row.kwslist, rttm=rttm_path).overall
        assert (ev.atwv.twv, ev.mtwv.twv, ev.otwv.twv, ev.stwv.twv) == (row.atwv, row.mtwv, row.otwv, row.stwv)
        assert row.bytes == os.path.getsize(row.index) and row.search_seconds >= 0
        assert row.n_corr == ev.counts()["n_corr"] and row.to_dict()["n_true"] == ev.counts()["n_true"]


def test_outputs_written(study):
    result, out = study
    assert set(result.files) == {"markdown", "json", "plot"}
    md = open(result.files["markdown"], encoding="utf-8").read()
    assert "| lattice |" in md and "invariants hold" in md
    data = json.load(open(result.files["json"], encoding="utf-8"))
    assert [r["slug"] for r in data["rows"]] == [r.slug for r in REPS]
    assert data["rows"] == [r.to_dict() for r in result.rows]
    assert data["invariants"] == [i.to_dict() for i in result.invariants]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.rows[0].stwv = 1.0  # type: ignore[misc]
    with open(result.files["plot"], "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_invariant_checker_reports_failures():
    rows = [KwsStudyRow(parse_representation(spec), stwv=stwv)
            for spec, stwv in (("1best", 0.7), ("nbest:10", 0.6), ("nbest:100", 0.5), ("lattice", 0.65))]
    rows.append(KwsStudyRow(parse_representation("nbest:1000"), skipped="over the memory budget"))
    checks = {inv.check: inv.holds for inv in check_invariants(rows)}
    assert not any("1000" in check for check in checks)  # a skipped row is in no check
    assert checks["STWV(N-best N=100) ≥ STWV(N-best N=10)"] is False
    assert checks["STWV(lattice) ≥ STWV(1-best)"] is False
    assert checks["STWV(lattice) ≥ STWV(N-best N=10)"] is True


def test_parse_representation():
    assert parse_representation("nbest:10") == Representation("nbest", 10)
    assert parse_representation("phrase:inf:0.5") == Representation("phrase", None, 0.5)
    assert parse_representation("sausage") == Representation("sausage", None)
    assert [r.slug for r in DEFAULT_REPRESENTATIONS][:2] == ["1best", "nbest-10"]
    for bad in ("nbest", "lattice:3", "phrase:10:0", "phrase:10:2", "nbest:x", "nbest:0", "words", "phrase:1:0.1:3"):
        with pytest.raises(LatticeToolsError):
            parse_representation(bad)


def test_mismatched_inputs_are_refused(setup, tmp_path):
    lats, refs, terms = setup
    from lattice_tools.io.keyword_search.ecf import Ecf

    with pytest.raises(MismatchError, match="not in the ECF"):
        run_kws_study(lats, refs, terms, out_dir=str(tmp_path / "a"), ecf=Ecf(ecf_from_lattices(lats).excerpts[:2]))
    with pytest.raises(MismatchError, match="no reference word"):
        run_kws_study(lats[:1], [r for r in refs if r.file != lats[0].key], terms, out_dir=str(tmp_path / "b"))
    with pytest.raises(LatticeToolsError, match="keyword list is empty"):
        run_kws_study(lats, refs, [], out_dir=str(tmp_path / "c"))
    assert not os.path.exists(tmp_path / "a") and not os.path.exists(tmp_path / "b")


# ----------------------------------------------------------------------------------------------
# The command
def _cli(*args, cwd):
    """`lattice-tools kws study ARGS` in-process (the start-up of a process per case would dominate)."""
    from click.testing import CliRunner

    from lattice_tools.cli import main

    here = os.getcwd()
    os.chdir(cwd)
    try:
        r = CliRunner().invoke(main, ["kws", "study", *map(str, args)])
    finally:
        os.chdir(here)
    r.returncode = r.exit_code
    return r


@pytest.fixture(scope="module")
def files(setup, tmp_path_factory):
    lats, refs, terms = setup
    d = tmp_path_factory.mktemp("kws_study_cli")
    from lattice_tools.io.keyword_search.ecf import write_ecf
    from lattice_tools.io.lattices.slf import write_slf

    (d / "lats").mkdir()
    cards = [lat for lat in lats if lat.key.isdigit()]  # the five short card recordings
    for lat in cards:
        write_slf(lat, str(d / "lats" / f"{lat.key}.lat"))
    with open(d / "ref.ctm", "w") as f:
        for r in refs:
            f.write(f"{r.file} {r.channel} {r.tbeg:.3f} {r.dur:.3f} {r.ortho}\n")
    write_ecf(str(d / "ecf.xml"), ecf_from_lattices(cards))
    write_kwlist(str(d / "kwlist.xml"), terms, compare_normalize="lowercase")
    (d / "bad.xml").write_text("<kwlist><kw kwid='a'><kwtext>x</kwtext></kw>")
    (d / "small.ecf.xml").write_text('<ecf source_signal_duration="1" language="" version="">\n'
                                     '<excerpt audio_filename="001" channel="1" tbeg="0" dur="1" '
                                     'source_type=""/>\n</ecf>\n')
    (d / "overlap.ctm").write_text("001 1 0.0 1.0 ten\n001 1 0.5 1.0 of\n")
    return d


def test_cli_runs_and_writes_json(files):
    r = _cli("lats", "--ctm", "ref.ctm", "--ecf", "ecf.xml", "--kwlist", "kwlist.xml",
             "--representation", "1best", "--representation", "phrase:10:0.1", "--representation", "lattice",
             "-o", "out", "--json", "rows.json", "--no-plots", cwd=files)
    assert r.returncode == 0, r.stderr
    assert "| phrases N=10 θ=0.1 |" in r.stdout and "invariants hold" in r.stdout
    rows = json.load(open(files / "rows.json"))["rows"]
    assert [row["slug"] for row in rows] == ["1best", "phrase-10-0.1", "lattice"]
    assert os.path.exists(files / "out" / "kws_study.md") and not os.path.exists(files / "out" / "kws_study.png")


@pytest.mark.parametrize("args, message", [
    (("--representation", "lattice"), "exactly one of an RTTM or a CTM"),
    (("--ctm", "ref.ctm", "--rttm", "ref.ctm"), "exactly one of an RTTM or a CTM"),
    (("--ctm", "ref.ctm", "--representation", "nbest"), "bad representation"),
    (("--ctm", "ref.ctm", "--representation", "phrase:10:1.5"), "theta"),
    (("--ctm", "missing.ctm"), "missing.ctm"),
    (("--ctm", "ref.ctm", "--kwlist", "bad.xml"), "bad.xml"),
    (("--ctm", "ref.ctm", "--ecf", "small.ecf.xml"), "not in the ECF"),
    (("--ctm", "overlap.ctm"), "overlap"),
    (("--ctm", "ref.ctm", "--max-length", "0"), "max-length"),
])
def test_cli_bad_input_exits_2(files, args, message):
    out = files / "bad-out"
    r = _cli("lats", *args, "-o", out, cwd=files)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert message in r.stderr
    assert r.exception is None or isinstance(r.exception, SystemExit)  # handled, not a crash
    assert not out.exists()


def test_cli_bad_input_process(files):
    """The real process: one line on stderr, exit 2, no traceback, nothing written."""
    r = subprocess.run([sys.executable, "-m", "lattice_tools", "kws", "study", "lats", "--ctm",
                        "ref.ctm", "--ecf", "small.ecf.xml", "-o", "bad-out2"], cwd=files, capture_output=True,
                       text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "not in the ECF" in r.stderr and not (files / "bad-out2").exists()


# ----------------------------------------------------------------------------------------------
# The demo's KWS section
def test_demo_kws_section(setup, tmp_path):
    """What `lattice-tools demo` adds to study.md (the demo itself decodes audio: too slow here)."""
    from lattice_tools.decode.pocketsphinx import bundled_audio
    from lattice_tools.pipelines.demo import KWS_MARKER, _append_kws_section, run_demo_kws

    lats = setup[0]
    paths = [p for c in ("cards", "librivox") for p in bundled_audio(c)
             if os.path.splitext(os.path.basename(p))[0] in SLICE]
    study_md = tmp_path / "study" / "study.md"
    study_md.parent.mkdir()
    oracle_part = "# Oracle study\n\n| x | 1.00 |\n"
    study_md.write_text(oracle_part)
    kws_dir = str(tmp_path / "kws")
    res = run_demo_kws(lats, lats, _transcripts(), paths, kws_dir, echo=lambda *_: None)
    for _ in range(2):  # a rerun replaces the section
        _append_kws_section(str(study_md), res, kws_dir)
    text = study_md.read_text()
    assert text.startswith(oracle_part) and text.count(KWS_MARKER) == 1
    assert "## Spoken term detection" in text and "### Invariants" in text and "invariants hold" in text
    assert "FAILS" not in text
    for name in ("reference.ctm", "ecf.xml", "kwlist.xml", "kws_study.png"):
        assert os.path.exists(os.path.join(kws_dir, name))


@pytest.mark.slow
def test_demo_end_to_end_has_the_kws_section(tmp_path):
    """`lattice-tools demo` (decoding included): study.md ends with the KWS table and its invariants."""
    r = subprocess.run([sys.executable, "-m", "lattice_tools", "demo", "-o", str(tmp_path / "demo"), "--density",
                        "default", "--bootstrap", "0", "-n", "1", "-n", "10", "--no-progress"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "demo" / "study" / "study.md").read_text()
    oracle, kws = text.split("<!-- kws study -->")
    assert "## Spoken term detection" in kws and "| lattice |" in kws and "invariants hold" in kws
    assert "FAILS" not in kws
    assert (tmp_path / "demo" / "kws" / "kws_study.png").exists()
