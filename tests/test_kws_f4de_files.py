"""Every ECF, KWlist, kwslist and RTTM the toolkit writes is one NIST F4DE accepts: valid against F4DE's own
schemas (``xmllint --schema KWSEval/data/*.xsd``), accepted by F4DE's ``KWSEval-XMLvalidator.pl``, and read
by ``KWSEval.pl`` without complaint.  F4DE is found through $LATTICE_TOOLS_F4DE (skipped without it); what
the writers refuse rather than write an invalid file is checked without F4DE."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import pytest
from _kws_helpers import f4de_root, f4de_skip_reason, run_kwseval

from lattice_tools.core.errors import FormatError
from lattice_tools.decode.align import AlignedUtterance, AlignedWord, write_alignment
from lattice_tools.io.keyword_search.ecf import Ecf, EcfExcerpt, read_ecf, write_ecf
from lattice_tools.io.keyword_search.kwlist import KeywordTerm, write_kwlist
from lattice_tools.io.keyword_search.kwslist import Detection, read_kwslist, write_kwslist

REPO = Path(__file__).resolve().parent.parent
ROOT = f4de_root()
needs_f4de = pytest.mark.skipif(ROOT is None or shutil.which("xmllint") is None,
                                reason=f4de_skip_reason() if ROOT is None else "xmllint is not installed")


def _wav(path: Path, seconds: float) -> str:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\0\0" * int(8000 * seconds))
    return str(path)


def _written_files(d: Path) -> dict[str, Path]:
    """An ECF from ``kws ecf``, an ECF, RTTM and CTM from the aligner's writer, a KWlist from ``kws kwlist``
    and a kwslist from ``write_kwslist`` with awkward numbers (exponents, many digits)."""
    audio = [_wav(d / "utt_a.wav", 4.0), _wav(d / "utt_b.wav", 3.5)]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-m", "lattice_tools", "kws", "ecf", *audio, "-o", str(d / "cli.ecf.xml")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    utts = [AlignedUtterance("utt_a", audio[0], 4.0, (AlignedWord("utt_a", 0.5, 0.3, "hello"),
                                                       AlignedWord("utt_a", 0.8, 0.4, "world"),
                                                       AlignedWord("utt_a", 2.0, 0.25, "hello"))),
            AlignedUtterance("utt_b", audio[1], 3.5, (AlignedWord("utt_b", 0.25, 0.5, "world"),))]
    write_alignment(utts, ctm=str(d / "ref.ctm"), rttm=str(d / "ref.rttm"), ecf=str(d / "align.ecf.xml"))
    r = subprocess.run([sys.executable, "-m", "lattice_tools", "kws", "kwlist", "-r", str(d / "ref.rttm"),
                        "--num-terms", "3", "--min-chars", "1", "-o", str(d / "kwlist.xml")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    dets = [Detection("KW-0001", "utt_a", "1", 0.5, 0.3, 0.9, True),
            Detection("KW-0001", "utt_a", "1", 1e-05, 1.0000000000000002, 1.5e-07, False),
            Detection("KW-0003", "utt_b", "1", 0.25, 0.5, 0.5, True)]
    write_kwslist(str(d / "kwslist.xml"), dets, kwlist_filename="kwlist.xml", language="english",
                  kwids=["KW-0001", "KW-0002", "KW-0003"])
    return {"ecf": d / "cli.ecf.xml", "align_ecf": d / "align.ecf.xml", "kwlist": d / "kwlist.xml",
            "kwslist": d / "kwslist.xml", "rttm": d / "ref.rttm"}


def test_written_kwslist_reads_back_exactly(tmp_path):
    files = _written_files(tmp_path)
    kws = read_kwslist(str(files["kwslist"]))
    times = [(d.tbeg, d.dur, d.score) for d in kws.detections]
    assert (1e-05, 1.0, 1.5e-07) in times      # a time's binary rounding error (1.0000000000000002) is dropped
    assert 'tbeg="0.00001"' in files["kwslist"].read_text()  # an xsd:decimal: no exponent
    assert {e.source_type for e in read_ecf(str(files["ecf"])).excerpts} == {"bnews"}


@needs_f4de
@pytest.mark.parametrize("kind", ["ecf", "align_ecf", "kwlist", "kwslist"])
def test_written_xml_is_valid_against_f4de_schemas(kind, tmp_path):
    files = _written_files(tmp_path)
    xsd = {"ecf": "ecf", "align_ecf": "ecf", "kwlist": "kwlist", "kwslist": "kwslist"}[kind]
    schema = ROOT / "KWSEval" / "data" / f"KWSEval-{xsd}.xsd"
    r = subprocess.run(["xmllint", "--noout", "--schema", str(schema), str(files[kind])], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    flag = {"ecf": "--ecf", "kwlist": "--termlist", "kwslist": "--kwslist"}[xsd]
    env = dict(os.environ, PERL_PERTURB_KEYS="0", PERL_HASH_SEED="0")
    tool = ROOT / "KWSEval" / "tools" / "KWSEval-XMLvalidator" / "KWSEval-XMLvalidator.pl"
    r = subprocess.run(["perl", "-x", str(tool), flag, str(files[kind])], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert r.returncode == 0 and "validates" in r.stdout, r.stdout + r.stderr


@needs_f4de
def test_kwseval_reads_the_written_files(tmp_path):
    files = _written_files(tmp_path)
    r = run_kwseval(ROOT, ["-e", str(files["ecf"]), "-r", str(files["rttm"]), "-t", str(files["kwlist"]),
                           "-s", str(files["kwslist"]), "-o", "-f", str(tmp_path / "out")], cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "Occurrence" in r.stdout or (tmp_path / "out.sum.txt").exists(), r.stdout[-2000:]


def test_writers_refuse_what_f4de_refuses(tmp_path):
    out = tmp_path / "x.xml"
    with pytest.raises(FormatError, match="source_type 'read'.*bnews"):
        write_ecf(str(out), Ecf((EcfExcerpt("a.wav", "1", 0.0, 1.0, "read"),)))
    with pytest.raises(FormatError, match="integer channel"):
        write_ecf(str(out), Ecf((EcfExcerpt("a.wav", "A", 0.0, 1.0, "bnews"),)))
    with pytest.raises(FormatError, match="integer channel"):
        write_kwslist(str(out), [Detection("K", "a", "A", 0.0, 1.0, 0.5, True)], kwlist_filename="k.xml")
    with pytest.raises(FormatError, match="UTF-8 and GB2312"):
        write_kwlist(str(out), [KeywordTerm("K", "a")], encoding="latin-1")
    with pytest.raises(FormatError, match="compareNormalize"):
        write_kwlist(str(out), [KeywordTerm("K", "a")], compare_normalize="upper")
    assert list(tmp_path.iterdir()) == []


def _frame_time_case(seed: int, d: Path):
    """A random case whose detections have Kaldi frame times (frame k at k * 0.01 s, so 0.6900000000000001
    for frame 69), written to ``frames.kwslist.xml``; returns (case, in-memory kwslist, written path, number of
    times whose double is not the one of its decimal)."""
    import dataclasses

    from _kws_helpers import random_case

    from lattice_tools.io.keyword_search.kwslist import KwsList

    c = random_case(seed, d)
    kws = read_kwslist(str(c["kwslist"]))
    dets = []
    for x in kws.detections:
        b, e = round(x.tbeg * 100), round((x.tbeg + x.dur) * 100)
        dets.append(dataclasses.replace(x, tbeg=b * 0.01, dur=e * 0.01 - b * 0.01))
    noisy = sum(repr(v) != repr(float(f"{v:.2f}")) for x in dets for v in (x.tbeg, x.dur))
    out = d / "frames.kwslist.xml"
    write_kwslist(str(out), dets, kwlist_filename="case.kwlist.xml", language="english", kwids=kws.kwids)
    return c, KwsList(tuple(dets), kws.lists, kws.kwlist_filename, kws.language, kws.system_id), out, noisy


def test_frame_times_score_the_same_written_or_in_memory(tmp_path):
    """Writing a time's intended decimal changes no score: our F4DE reports of the written kwslist equal those of
    the detections in memory (whose times carry the binary rounding error), alignment CSV included."""
    from lattice_tools.io.keyword_search.ecf import read_ecf as _read_ecf
    from lattice_tools.io.keyword_search.kwlist import read_kwlist_file
    from lattice_tools.io.keyword_search.rttm import read_rttm
    from lattice_tools.kws.f4de_report import f4de_stdout
    from lattice_tools.kws.score import score_kws

    total_noisy = 0
    for seed in range(16):
        c, in_memory, written, noisy = _frame_time_case(seed, tmp_path / f"c{seed}")
        total_noisy += noisy
        reports = []
        for kws in (in_memory, read_kwslist(str(written))):
            ev = score_kws(_read_ecf(str(c["ecf"])), read_rttm(str(c["rttm"])), read_kwlist_file(str(c["kwlist"])),
                           kws, include_no_targets=c["inc"], outside_ecf="ignore", segment_based=c["segment"])
            # (the alignment's hit start is printed as written: 12.0 in the file, 12 from memory)
            rows = [(r.kwid, r.file, r.channel, r.ref_tbeg, r.ref_tend, r.sys_tend, r.sys_score, r.sys_decision,
                     r.alignment, float(r.sys_tbeg) if r.sys_tbeg else None) for r in ev.alignment]
            reports.append((f4de_stdout(ev, ecf="e", rttm="r", kwslist="s", kwlist="t", summary=True, block=True,
                                        supremum=True), rows))
        assert reports[0] == reports[1], seed
    assert total_noisy > 100


@needs_f4de
def test_f4de_scores_the_written_frame_times_as_ours_in_memory(tmp_path):
    """F4DE's report of the written kwslist (times as their intended decimals) equals ours of the detections in
    memory (times with their binary rounding error)."""
    from _kws_helpers import compare_reports

    from lattice_tools.io.keyword_search.ecf import read_ecf as _read_ecf
    from lattice_tools.io.keyword_search.kwlist import read_kwlist_file
    from lattice_tools.io.keyword_search.rttm import read_rttm
    from lattice_tools.kws.f4de_report import f4de_stdout
    from lattice_tools.kws.score import score_kws

    compared = 0
    for seed in range(8):
        d = tmp_path / f"c{seed}"
        c, in_memory, written, _noisy = _frame_time_case(seed, d)
        ev = score_kws(_read_ecf(str(c["ecf"])), read_rttm(str(c["rttm"])), read_kwlist_file(str(c["kwlist"])),
                       in_memory, outside_ecf="ignore", segment_based=c["segment"])
        if any(b.n_true >= ev.overall.tot_trials for b in ev.overall.blocks.values()):
            continue
        args = ["-e", str(c["ecf"]), "-r", str(c["rttm"]), "-s", str(written), "-t", str(c["kwlist"]), "-o", "-b",
                "-f", "-", "-zG", "Supremum"] + (["-g"] if c["segment"] else [])
        p = run_kwseval(ROOT, args, d)
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
        if compared == 0:
            schema = ROOT / "KWSEval" / "data" / "KWSEval-kwslist.xsd"
            r = subprocess.run(["xmllint", "--noout", "--schema", str(schema), str(written)], capture_output=True,
                               text=True)
            assert r.returncode == 0, r.stderr
        got = f4de_stdout(ev, ecf=str(c["ecf"]), rttm=str(c["rttm"]), kwslist=str(written), kwlist=str(c["kwlist"]),
                          summary=True, block=True, supremum=True)
        problems, _stats = compare_reports(p.stdout, got)
        assert not problems, (seed, problems[:5])
        compared += 1
    assert compared >= 6
