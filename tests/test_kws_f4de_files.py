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
    assert (1e-05, 1.0000000000000002, 1.5e-07) in times
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
