"""sclite parity on real-world inputs.

Every case compares our reports with what sclite wrote: once against the outputs stored in
tests/data/sclite-parity (regenerate.sh says how Debian's SCTK 2.4.10 made them) and
tests/data/sctk/rt04s (SCTK's RT-04S test files), so the default suite needs no sclite, and once
against Debian sclite run now on the same inputs (skipped when sclite is absent).

Debian's sclite 2.4.10 writes "with substitions" in its .dtl report, where NIST's current SCTK
(tests/data/sctk goldens: test1.dtl) writes "with substitutions"; we write the latter, and the
comparisons with Debian's .dtl undo its typo.
"""
from __future__ import annotations

import dataclasses
import gzip
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from _data import TEST_DATA
from _nist_helpers import have_debian_csrfilt, run_debian_csrfilt
from _scoring_helpers import BASE, SCLITE, SCTK_DATA, parse_summary
from click.testing import CliRunner

from lattice_tools.cli import main
from lattice_tools.core.errors import FormatError, MismatchError
from lattice_tools.scoring.reports import dtl_report, pra_report, sys_report
from lattice_tools.scoring.sclite import score_files

REPO = Path(__file__).resolve().parent.parent
PARITY = TEST_DATA / "sclite-parity"
RT04S = TEST_DATA / "sctk" / "rt04s"
RT03_GLM = str(TEST_DATA / "sctk" / "glm" / "en20030506.glm")
needs_sclite = pytest.mark.skipif(SCLITE is None, reason="Debian sclite (apt-get install sctk) is not installed")

DEBIAN_TYPO = ("   with substitions                 ", "   with substitutions               ")


def _render(result, kind: str, encoding: str = "utf-8") -> bytes:
    text = {"sys": lambda: sys_report(result), "raw": lambda: sys_report(result, raw=True),
            "pra": lambda: pra_report(result), "dtl": lambda: dtl_report(result)}[kind]()
    return text.encode(encoding)


def _read(path: Path) -> bytes:
    data = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
    return data.replace(DEBIAN_TYPO[0].encode(), DEBIAN_TYPO[1].encode())


def _assert_reports(result, expected_dir: Path, stem: str, title: str, kinds=("sys", "raw", "pra", "dtl"),
                    encoding: str = "utf-8"):
    """Our reports of ``result`` (titled ``title``, as sclite titles them with the path it was given)
    equal ``expected_dir/stem.<kind>`` byte for byte."""
    result = dataclasses.replace(result, hyp_name=title)
    checked = 0
    for kind in kinds:
        path = expected_dir / f"{stem}.{kind}"
        if not path.exists():
            path = expected_dir / f"{stem}.{kind}.gz"
        if not path.exists():
            continue
        assert _render(result, kind, encoding) == _read(path), f"{path.name} differs"
        checked += 1
    assert checked, f"no expected report {stem}.* in {expected_dir}"


def _sclite(tmp: Path, args: list, stem: str = "live") -> Path:
    """Run Debian sclite in ``tmp`` (inputs relative to it); returns the directory of its reports."""
    proc = subprocess.run([SCLITE, *args, "-o", "sum", "rsum", "pra", "dtl", "-O", ".", "-f", "0", "-n", stem],
                          cwd=tmp, capture_output=True, text=True, timeout=300)
    assert (tmp / f"{stem}.raw").exists(), proc.stdout + proc.stderr
    return tmp


def _copy(case: str, tmp: Path, *names: str) -> Path:
    for n in names:
        shutil.copy(PARITY / case / n, tmp / n)
    return tmp


# ------------------------------------------------------------------------------------------------
# Item 6: a GLM that nests ALT blocks in an alternatives CTM
# ------------------------------------------------------------------------------------------------
def _nested_result():
    return score_files(str(PARITY / "nested" / "ref.stm"), str(PARITY / "nested" / "alt.ctm"), glms=[RT03_GLM])


def test_glm_on_alt_ctm_is_flattened_and_scored_like_sclite_on_the_flat_ctm():
    result = _nested_result()
    assert any("nested ALT block" in w and "flattened" in w for w in result.warnings)
    _assert_reports(result, PARITY / "nested", "flat", "alt.flat.ctm")
    # csrfilt's own output nests the blocks and sclite silently mis-scores it (a deletion that is not one)
    nested = parse_summary(str(PARITY / "nested" / "csrfilt-nested.raw"))["Sum"]
    flat = parse_summary(str(PARITY / "nested" / "flat.raw"))["Sum"]
    assert flat[2:8] == [9, 0, 0, 0, 0, 0] and nested[4] == 1


def test_flattened_ctm_keeps_the_listed_order(tmp_path):
    # the flat CTM sclite scored is what `filter --flatten-alternations` writes
    out = tmp_path / "flat.ctm"
    res = CliRunner().invoke(main, ["filter", "--glm", RT03_GLM, "-i", "ctm", "--flatten-alternations",
                                    str(PARITY / "nested" / "alt.ctm"), str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes() == (PARITY / "nested" / "alt.flat.ctm").read_bytes()
    from lattice_tools.io.transcripts.ctm import CtmAltBlock, read_ctm

    blocks = [it for it in read_ctm(str(out)) if isinstance(it, CtmAltBlock)]
    # HIS first, then HE'S expanded in the rule's order (HE IS before HE HAS), then IS IT: the order of
    # the alternatives is kept, so sclite's ties still favour the earlier one
    assert [[w.word for w in alt] for alt in blocks[0].alternatives] == [["HIS"], ["HE", "IS"], ["HE", "HAS"],
                                                                          ["IS", "IT"]]
    assert [[w.word for w in alt] for alt in blocks[1].alternatives] == [["HE", "IS"], ["HE", "HAS"], ["HIS"], []]


def test_nested_alternatives_error_refuses_naming_the_option():
    res = CliRunner().invoke(main, ["score", "--glm", RT03_GLM, "-r", str(PARITY / "nested" / "ref.stm"),
                                    "-h", str(PARITY / "nested" / "alt.ctm"), "--nested-alternatives", "error"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "--nested-alternatives flatten" in res.output and "alt.ctm" in res.output


@needs_sclite
@pytest.mark.skipif(not have_debian_csrfilt(), reason="Debian csrfilt.sh (apt-get install sctk) is not installed")
def test_nested_against_debian_sclite(tmp_path):
    status, ref_filt = run_debian_csrfilt(RT03_GLM, (PARITY / "nested" / "ref.stm").read_bytes(), "stm")
    assert status == 0 and ref_filt
    (tmp_path / "ref.filt.stm").write_bytes(ref_filt)
    status, nested = run_debian_csrfilt(RT03_GLM, (PARITY / "nested" / "alt.ctm").read_bytes(), "ctm")
    assert nested.count(b"<ALT_BEGIN>") > (PARITY / "nested" / "alt.ctm").read_bytes().count(b"<ALT_BEGIN>")
    _copy("nested", tmp_path, "alt.flat.ctm")
    _sclite(tmp_path, ["-r", "ref.filt.stm", "stm", "-h", "alt.flat.ctm", "ctm"])
    _assert_reports(_nested_result(), tmp_path, "live", "alt.flat.ctm")


LIBRIVOX = PARITY / "librivox-alt"
ALT_KINDS = ["nbest", "sausage", "phrases"]


def _librivox(kind):
    return score_files(str(LIBRIVOX / "ref.stm"), str(LIBRIVOX / f"{kind}.ctm.gz"), glms=[RT03_GLM],
                       optional_deletable=True)


@pytest.mark.parametrize("kind", ALT_KINDS)
def test_glm_on_real_alternatives_ctms(kind):
    # lattice-tools' own N-best, sausage and phrase CTMs of real lattices: the RT-03 GLM nests blocks
    result = _librivox(kind)
    assert any("flattened" in w for w in result.warnings)
    _assert_reports(result, LIBRIVOX, kind, f"{kind}.flat.ctm")
    # what sclite makes of csrfilt's nested output is another number
    nested = parse_summary(str(LIBRIVOX / f"{kind}.csrfilt-nested.raw"))["Sum"]
    assert nested[2:7] != [result.total.correct, result.total.substitutions, result.total.deletions,
                           result.total.insertions, result.total.errors]


@needs_sclite
@pytest.mark.skipif(not have_debian_csrfilt(), reason="Debian csrfilt.sh (apt-get install sctk) is not installed")
@pytest.mark.parametrize("kind", ALT_KINDS)
def test_glm_on_real_alternatives_ctms_against_debian_sclite(kind, tmp_path):
    status, ref_filt = run_debian_csrfilt(RT03_GLM, (LIBRIVOX / "ref.stm").read_bytes(), "stm")
    assert status == 0
    (tmp_path / "ref.filt.stm").write_bytes(ref_filt)
    res = CliRunner().invoke(main, ["filter", "--glm", RT03_GLM, "-i", "ctm", "--flatten-alternations",
                                    str(LIBRIVOX / f"{kind}.ctm.gz"), str(tmp_path / f"{kind}.flat.ctm")])
    assert res.exit_code == 0, res.output
    _sclite(tmp_path, ["-r", "ref.filt.stm", "stm", "-h", f"{kind}.flat.ctm", "ctm", "-D"])
    _assert_reports(_librivox(kind), tmp_path, "live", f"{kind}.flat.ctm")


# ------------------------------------------------------------------------------------------------
# Item 7: inputs read as sclite reads them
# ------------------------------------------------------------------------------------------------
CASES = [
    # (case, stem of the stored sclite reports, reference, hypothesis, score_files options, sclite options)
    ("null-word", "sclite", "ref.stm", "hyp.ctm", {}, []),
    ("empty-hyp", "sclite", "ref.stm", "hyp.ctm", {}, []),
    ("empty-hyp", "trn", "ref.trn", "hyp.trn", {}, ["-i", "spu_id"]),
    ("rt-ctm", "sclite", "ref.stm", "hyp.ctm", {}, []),
    ("buckwalter", "sclite", "ref.trn", "hyp.trn", {"fragments": True}, ["-i", "spu_id", "-F"]),
    ("speaker-stats", "sclite", "ref.trn", "hyp.trn", {}, ["-i", "spu_id"]),
    ("nce", "sclite", "ref.stm", "hyp.ctm", {}, []),
    ("encoding", "l1", "l1.stm", "l1.ctm", {"encoding": "latin-1"}, []),
    ("encoding", "gb", "gb.stm", "gb.ctm", {"encoding": "gb2312"}, []),
]
IDS = [f"{c[0]}-{c[1]}" for c in CASES]


def _score_case(case, ref, hyp, opts):
    return score_files(str(PARITY / case / ref), str(PARITY / case / hyp), **opts)


@pytest.mark.parametrize("case, stem, ref, hyp, opts, _sclite_opts", CASES, ids=IDS)
def test_reports_equal_stored_sclite_reports(case, stem, ref, hyp, opts, _sclite_opts):
    _assert_reports(_score_case(case, ref, hyp, opts), PARITY / case, stem, hyp,
                    encoding=opts.get("encoding", "utf-8"))


@needs_sclite
@pytest.mark.parametrize("case, stem, ref, hyp, opts, sclite_opts", CASES, ids=IDS)
def test_reports_equal_debian_sclite(case, stem, ref, hyp, opts, sclite_opts, tmp_path):
    _copy(case, tmp_path, ref, hyp)
    kind = "stm" if ref.endswith(".stm") else "trn"
    _sclite(tmp_path, ["-r", ref, kind, "-h", hyp, "ctm" if kind == "stm" else "trn", *sclite_opts])
    _assert_reports(_score_case(case, ref, hyp, opts), tmp_path, "live", hyp, encoding=opts.get("encoding", "utf-8"))


LONG_TITLE = ("/tmp/long_directory_name_for_testing_the_report_generator_of_sclite_width/another_level_deep/"
              "hypothesis_with_a_long_name.ctm")


def test_report_layout_like_sclites_report_generator():
    # a title wider than the table: sclite spreads the difference over the columns
    result = _score_case("nce", "ref.stm", "hyp.ctm", {})
    _assert_reports(result, PARITY / "layout", "long-title", LONG_TITLE, kinds=("sys", "raw"))
    # a long speaker name widens the first column
    result = _score_case("layout", "ref.trn", "hyp.trn", {})
    _assert_reports(result, PARITY / "layout", "long-speaker", "hyp.trn")


def test_undefined_nce_is_null_in_json():
    import json

    res = CliRunner().invoke(main, ["score", "-r", str(PARITY / "null-word" / "ref.stm"), "-h",
                                    str(PARITY / "null-word" / "hyp.ctm"), "--json", "-"])
    assert res.exit_code == 0
    data = json.loads(res.output, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert data["overall"]["nce"] is None  # sclite prints -2147483.648


def test_bare_at_outside_blocks_is_the_null_word():
    result = _score_case("null-word", "ref.stm", "hyp.ctm", {})
    assert (result.total.correct, result.total.deletions, result.total.insertions) == (3, 2, 0)
    # the exact (non-columnar) path agrees: -F takes it
    slow = _score_case("null-word", "ref.stm", "hyp.ctm", {"fragments": True})
    assert slow.total == result.total


def test_empty_hypothesis_is_all_deletions_with_a_warning():
    result = _score_case("empty-hyp", "ref.stm", "hyp.ctm", {})
    assert result.total.deletions == result.total.ref_words == 5 and result.total.errors == 5
    assert any("no words" in w for w in result.warnings)
    # a hypothesis that misses only some files still needs --allow-missing
    with pytest.raises(Exception) as err:
        score_files(str(PARITY / "null-word" / "ref.stm"), str(PARITY / "nce" / "hyp.ctm"))
    assert "allow" in str(err.value)


def test_empty_reference_is_refused(tmp_path):
    # (sclite crashes on an empty trn reference; a WER of 0 over nothing is no result)
    (tmp_path / "e.trn").write_text("")
    (tmp_path / "e.stm").write_text(";; only a comment\n")
    for ref in ("e.trn", "e.stm"):
        res = CliRunner().invoke(main, ["score", "-r", str(tmp_path / ref), "-h", str(tmp_path / "e.trn"),
                                        "--ref-format", ref[-3:], "--hyp-format", "trn" if ref == "e.trn" else "ctm"])
        assert res.exit_code == 2 and "in the reference, found none" in res.output, res.output


def test_rt_ctm_types_and_na_confidence(tmp_path):
    result = _score_case("rt-ctm", "ref.stm", "hyp.ctm", {})
    assert any("non-lexical" in w and "--ctm-type lex" in w for w in result.warnings)
    # only 'lex' tokens, as hubscr -h rt-stt: equal to sclite on hubscr's filtered CTM
    lex = _score_case("rt-ctm", "ref.stm", "hyp.ctm", {"ctm_types": ("lex",)})
    _assert_reports(lex, PARITY / "rt-ctm", "lex", "hyp.lex.ctm", kinds=("sys", "raw", "pra"))
    res = CliRunner().invoke(main, ["score", "-r", str(PARITY / "rt-ctm" / "ref.stm"), "-h",
                                    str(PARITY / "rt-ctm" / "hyp.ctm"), "--ctm-type", "lex"])
    assert res.exit_code == 0 and "%WER 40.00 [ 2 / 5, 0 ins, 2 del, 0 sub ]" in res.output
    # with a GLM: the type and speaker fields are cut before csrfilt (which would filter them as
    # words: 560 % WER), as hubscr does
    glm = score_files(str(PARITY / "rt-ctm" / "ref.stm"), str(PARITY / "rt-ctm" / "hyp.ctm"), glms=[RT03_GLM])
    _assert_reports(glm, PARITY / "rt-ctm", "glm", "hyp.glm.ctm", kinds=("sys", "raw", "pra"))
    bad = tmp_path / "bad.ctm"
    bad.write_text("f A 0.1 0.2 A 0.9 lexx s1\n")
    with pytest.raises(FormatError, match="token type"):
        score_files(str(PARITY / "rt-ctm" / "ref.stm"), str(bad))


def test_na_confidence_in_six_field_lines():
    from lattice_tools.io.transcripts.ctm import parse_ctm_line

    assert parse_ctm_line("f A 0.1 0.2 B NA").confidence is None
    assert parse_ctm_line("f A 0.1 0.2 B na lex spk").type == "lex"
    with pytest.raises(FormatError, match="confidence"):
        parse_ctm_line("f A 0.1 0.2 B NAN-ish", "x.ctm", 4)


def test_buckwalter_words_with_braces_and_escapes():
    result = _score_case("buckwalter", "ref.trn", "hyp.trn", {"fragments": True})
    words = {p.ref for s in result.segments for p in s.alignment.pairs}
    assert "alr}ys" in words and "alw*yr" in words and "tnfy" in words  # '}' kept, '\' dropped, then '*'
    # a word that starts with '{' is an alternation to sclite (it swallows the line): refused
    with pytest.raises(FormatError, match="alternation"):
        from lattice_tools.scoring.network import parse_transcript
        parse_transcript("{ntxAbAt Alrbyp", where="x.trn:1")
    with pytest.raises(FormatError, match="'\\{' only at the start"):
        parse_transcript("A{b c", where="x.trn:1")


def test_ser_line():
    res = CliRunner().invoke(main, ["score", "-r", str(PARITY / "buckwalter" / "ref.trn"), "-h",
                                    str(PARITY / "buckwalter" / "hyp.trn"), "-F"])
    assert res.exit_code == 0
    assert res.output.rstrip("\n").split("\n")[-2:] == ["%WER 18.92 [ 7 / 37, 1 ins, 2 del, 4 sub ]",
                                                         "%SER 100.00 [ 5 / 5 ]"]


def test_speaker_statistics_sclite_and_corrected(tmp_path):
    result = _score_case("speaker-stats", "ref.trn", "hyp.trn", {})
    sclite_rows = [line for line in sys_report(result).split("\n") if "Mean" in line or "Median" in line]
    # sclite's shifted arrays: spa, spc's counts (0 0 0 2 2) and spd -> Corr mean (75 + 0 + 66.7) / 3
    assert "47.2+" in sclite_rows[0] and "4.8+" in sclite_rows[0]
    corrected = [line for line in sys_report(result, speaker_stats="corrected").split("\n") if "Mean" in line][0]
    # spa 75.0/12.5/12.5/12.5/37.5, spd and spe 66.7/0/33.3/0/33.3 -> 69.4, 4.2, 26.4, 4.2, 34.7
    assert [x.strip("+") for x in corrected.split("|")[3].split()] == ["69.4", "4.2", "26.4", "4.2", "34.7", "100.0"]
    res = CliRunner().invoke(main, ["score", "-r", str(PARITY / "speaker-stats" / "ref.trn"), "-h",
                                    str(PARITY / "speaker-stats" / "hyp.trn"), "--speaker-stats", "corrected",
                                    "-o", str(tmp_path), "--name", "c"])
    assert res.exit_code == 0 and "69.4+" in (tmp_path / "c.sys").read_text()


def test_one_empty_speaker_is_the_same_either_way():
    # NIST's test7 has one speaker without reference words: sclite's statistic is right there
    c = score_files(os.path.join(SCTK_DATA, "tests.ref"), os.path.join(SCTK_DATA, "tests.hyp"),
                    optional_deletable=True, fragments=True)
    assert sys_report(c) == sys_report(c, speaker_stats="corrected")


def test_glm_in_latin1(tmp_path):
    result = score_files(str(PARITY / "encoding" / "l1.stm"), str(PARITY / "encoding" / "l1.ctm"),
                         glms=[str(PARITY / "encoding" / "l1.glm")], encoding="latin-1")
    _assert_reports(result, PARITY / "encoding", "l1-glm", "l1.filt.ctm", kinds=("sys", "raw", "pra"),
                    encoding="latin-1")
    res = CliRunner().invoke(main, ["score", "-r", str(PARITY / "encoding" / "l1.stm"), "-h",
                                    str(PARITY / "encoding" / "l1.ctm"), "--encoding", "latin-1", "-o",
                                    str(tmp_path), "--name", "l1"])
    assert res.exit_code == 0
    assert (tmp_path / "l1.pra").read_bytes() == (PARITY / "encoding" / "l1.pra").read_bytes().replace(
        b"System name:   l1.ctm", f"System name:   {PARITY / 'encoding' / 'l1.ctm'}".encode())


@pytest.mark.parametrize("argv", [
    ["score", "-r", "gb.stm", "-h", "gb.ctm"],
    ["score", "-r", "../null-word/ref.stm", "-h", "../null-word/hyp.ctm", "--glm", "l1.glm"],  # a Latin-1 GLM
    ["ladder", "-r", "l1.stm", "-h", "l1.ctm", "--glm", "l1.glm"],
    ["oracle", "l1.ctm", "-r", "l1.stm"],
    ["filter", "--glm", "l1.glm", "-i", "stm", "gb.stm", "-"],
    ["convert-ctm", "l1.ctm", "-", "--reco2file-and-channel", "l1.stm"],
])
def test_undecodable_bytes_name_the_line_and_the_option(argv, monkeypatch):
    monkeypatch.chdir(PARITY / "encoding")
    res = CliRunner().invoke(main, argv)
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert "--encoding" in res.output and re.search(r"\.(stm|ctm|glm):\d+: ", res.output), res.output


def test_encoding_reaches_every_text_reading_command(tmp_path, monkeypatch):
    monkeypatch.chdir(PARITY / "encoding")
    runner = CliRunner()
    assert runner.invoke(main, ["ladder", "-r", "l1.stm", "-h", "l1.ctm", "--glm", "l1.glm",
                                "--encoding", "latin-1"]).exit_code == 0
    res = runner.invoke(main, ["oracle", "gb.ctm", "-r", "gb.stm", "--encoding", "gb2312"])
    assert res.exit_code == 0 and "%WER 33.33 [ 2 / 6" in res.output
    out = tmp_path / "l1.filt.stm"
    assert runner.invoke(main, ["filter", "--glm", "l1.glm", "-i", "stm", "--encoding", "latin-1", "l1.stm",
                                str(out)]).exit_code == 0
    assert out.read_bytes() == (PARITY / "encoding" / "l1.filt.stm").read_bytes()


# ------------------------------------------------------------------------------------------------
# SCTK's own RT-04S MDM test files (alt-CTM with confidences) and the NIST dtl goldens
# ------------------------------------------------------------------------------------------------
def _rt04s():
    return score_files(str(RT04S / "rt04s.040420.mdm.overlap.stm.filt.gz"),
                       str(RT04S / "rt04s.040810.mdm.overlap.ctm.filt.gz"), ref_format="stm", hyp_format="ctm")


def test_rt04s_reports_equal_sclite():
    _assert_reports(_rt04s(), RT04S, "sclite", "rt04s.040810.mdm.overlap.ctm.filt")


@needs_sclite
def test_rt04s_against_debian_sclite(tmp_path):
    for name in ("rt04s.040420.mdm.overlap.stm.filt", "rt04s.040810.mdm.overlap.ctm.filt"):
        (tmp_path / name).write_bytes(gzip.open(RT04S / (name + ".gz")).read())
    _sclite(tmp_path, ["-r", "rt04s.040420.mdm.overlap.stm.filt", "stm", "-h", "rt04s.040810.mdm.overlap.ctm.filt",
                       "ctm"])
    _assert_reports(_rt04s(), tmp_path, "live", "rt04s.040810.mdm.overlap.ctm.filt")


@pytest.mark.parametrize("name", ["test1", "test1e"])
def test_dtl_equals_nist_golden(name):
    result = score_files(os.path.join(SCTK_DATA, "csrnab.ref"), os.path.join(SCTK_DATA, "csrnab.hyp"),
                         id_type="wsj")
    result = dataclasses.replace(result, hyp_name="./csrnab.hyp")
    with open(os.path.join(BASE, f"{name}.dtl"), encoding="utf-8") as f:
        assert dtl_report(result) == f.read()


def test_dtl_written_with_the_report_set(tmp_path):
    res = CliRunner().invoke(main, ["score", "-r", str(PARITY / "nce" / "ref.stm"), "-h",
                                    str(PARITY / "nce" / "hyp.ctm"), "-o", str(tmp_path), "--name", "n"])
    assert res.exit_code == 0
    assert (tmp_path / "n.dtl").read_text().startswith("DETAILED OVERALL REPORT FOR THE SYSTEM: ")


# ------------------------------------------------------------------------------------------------
# Recipes leave no temporary file behind when a stage fails
# ------------------------------------------------------------------------------------------------
@pytest.mark.skipif(shutil.which("lattice-tools") is None, reason="the lattice-tools console script is not on PATH")
def test_score_recipe_failure_leaves_no_tmp(tmp_path):
    out = tmp_path / "score"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([str(REPO / "recipes" / "score_ctm.sh"), str(PARITY / "null-word" / "ref.stm"),
                           str(PARITY / "nce" / "hyp.ctm"), str(out)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode != 0 and "sw_4390" in proc.stderr
    left = [p.name for p in out.rglob("*")] if out.exists() else []
    assert not [n for n in left if "tmp" in n], left
    assert not (out / ".done").exists()


def test_oracle_glm_leaves_no_temporary_reference(tmp_path, monkeypatch):
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    nested = PARITY / "nested"
    ok = CliRunner().invoke(main, ["oracle", str(nested / "alt.ctm"), "-r", str(nested / "ref.stm"), "--glm", RT03_GLM])
    assert ok.exit_code == 0, ok.output
    trn = tmp_path / "ref.trn"
    trn.write_text("he's here (s-1)\n")
    bad = CliRunner().invoke(main, ["oracle", str(PARITY / "buckwalter" / "hyp.trn"), "-r", str(trn), "--glm", RT03_GLM])
    assert bad.exit_code == 2, bad.output
    assert list(scratch.iterdir()) == []


# ------------------------------------------------------------------------------------------------
# The talhanai/wer-sigtest files (no licence, so not vendored): 3071/12322 and 2955/12322 in sclite
# ------------------------------------------------------------------------------------------------
WER_SIGTEST = os.environ.get("LATTICE_TOOLS_WER_SIGTEST")


@pytest.mark.skipif(not WER_SIGTEST, reason="set LATTICE_TOOLS_WER_SIGTEST to a checkout of talhanai/wer-sigtest")
@pytest.mark.parametrize("hyp, errors", [("hyp.A.trn", 3071), ("hyp.B.trn", 2955)])
def test_wer_sigtest_buckwalter_numbers(hyp, errors):
    result = score_files(os.path.join(WER_SIGTEST, "ref.trn"), os.path.join(WER_SIGTEST, hyp), fragments=True,
                         id_type="wsj")
    assert (result.total.errors, result.total.ref_words) == (errors, 12322)



@pytest.mark.parametrize(("fmt", "side"), [("text", "hyp"), ("text", "ref"), ("ctm", "hyp")])
def test_word_ids_against_words_are_refused(tmp_path, fmt, side):
    """Kaldi's lattice-best-path / nbest-to-ctm output before utils/int2sym.pl scores as ~100 % WER
    against a text reference; it is refused, naming the file, instead of printed as a result."""
    words = "the cat sat on the mat".split()
    ids = [str(7 + 3 * i) for i in range(len(words))]
    if fmt == "text":
        ref_text, ref_ids = "spk1-u1 " + " ".join(words) + "\n", "spk1-u1 " + " ".join(ids) + "\n"
        hyp_text, hyp_ids = ref_text, ref_ids
        ref_name, hyp_name, kw = "ref.txt", "hyp.txt", dict(ref_format="text", hyp_format="text")
    else:
        ref_text = "f1 1 spk 0.00 9.00 " + " ".join(words) + "\n"
        hyp_text = "".join(f"f1 1 {i:.2f} 0.50 {w}\n" for i, w in enumerate(words))
        hyp_ids = "".join(f"f1 1 {i:.2f} 0.50 {w}\n" for i, w in enumerate(ids))
        ref_name, hyp_name, kw = "ref.stm", "hyp.ctm", {}
    (tmp_path / ref_name).write_text(ref_ids if side == "ref" else ref_text)
    (tmp_path / hyp_name).write_text(hyp_ids if side == "hyp" else hyp_text)
    bad = str(tmp_path / (hyp_name if side == "hyp" else ref_name))
    with pytest.raises(MismatchError, match="integers .* word ids") as err:
        score_files(str(tmp_path / ref_name), str(tmp_path / hyp_name), **kw)
    assert err.value.path == bad
    # both sides in ids (an int2sym-free pipeline end to end) and both in words score as usual
    (tmp_path / ref_name).write_text(ref_ids if fmt == "text" else ref_text)
    (tmp_path / hyp_name).write_text(hyp_ids if fmt == "text" else hyp_text)
    assert score_files(str(tmp_path / ref_name), str(tmp_path / hyp_name), **kw).total.errors == 0
