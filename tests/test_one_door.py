"""One input door for score, oracle and study: the same files give the same number through every command.

Differential checks on files other tools wrote: pocketsphinx lattices of the bundled "cards" clips
(tests/data/inputs), NIST's sclite test data and the RT-03 GLM (tests/data/sctk).  Each of
``oracle --representation 1best`` / ``oracle`` of an alt-CTM / ``study`` is held equal to ``score``
of the same hypothesis, with and without a GLM, and the CLI to the API.  Then the silent wrong
numbers the old per-command readers printed, each on a small equivalent, and the memory budget of
the oracle searches under a real address-space limit.
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from lattice_tools.cli import main
from lattice_tools.core.errors import FormatError, LatticeToolsError, MismatchError
from lattice_tools.oracle.report import oracle_wer
from lattice_tools.scoring.sclite import score_files

HERE = Path(__file__).resolve().parent
INPUTS = HERE / "data" / "inputs"
SCLITE_DATA = HERE / "data" / "sctk" / "sclite-testdata"
RT03_GLM = str(HERE / "data" / "sctk" / "glm" / "en20030506.glm")
LAT3, LAT4 = str(INPUTS / "003.lat"), str(INPUTS / "004.lat")
CARDS_TRN = HERE.parent / "lattice_tools" / "data" / "cards" / "transcription.trn"
LIBRIVOX_TRN = HERE.parent / "lattice_tools" / "data" / "librivox" / "transcription.trn"
DENSE = {"nbest": INPUTS / "sense_and_sensibility_01_austen_64kb-0930.lat.gz",
         "phrase": INPUTS / "sense_and_sensibility_01_austen_64kb-0890.lat.gz"}
COUNTS = ("correct", "substitutions", "deletions", "insertions", "ref_words")


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _counts(c) -> tuple:
    return tuple(c[k] if isinstance(c, dict) else getattr(c, k) for k in COUNTS)


@pytest.fixture()
def cards(tmp_path):
    """References of the two cards lattices, from the bundled transcription, as STM, Kaldi text and
    trn; a GLM that rewrites a word of both (SEVEN => SIX)."""
    utts = {}
    for line in CARDS_TRN.read_text().splitlines():
        words, key = line.rsplit("(", 1)
        utts[key.rstrip(")")] = words.strip()
    utts = {k: utts[k] for k in ("003", "004")}
    (tmp_path / "ref.stm").write_text("".join(f"{k} 1 spk{k} 0.00 30.00 {w}\n" for k, w in utts.items()))
    (tmp_path / "text").write_text("".join(f"{k} {w}\n" for k, w in utts.items()))
    (tmp_path / "ref.trn").write_text("".join(f"{w} ({k})\n" for k, w in utts.items()))
    (tmp_path / "six.glm").write_text(";; t\n* case_sensitive = 'F'\nSEVEN => SIX / [ ] __ [ ]\n")
    return tmp_path


def _one_best_files(tmp_path):
    """The 1-best of the cards lattices (the oracle's own 1best representation) as a CTM and a text."""
    from lattice_tools.io import read_lattice_inputs
    from lattice_tools.io.transcripts.altctm import write_alternatives_ctm
    from lattice_tools.oracle.representations import one_best

    alts = [one_best(lat) for lat in read_lattice_inputs([LAT3, LAT4])]
    write_alternatives_ctm(str(tmp_path / "1best.ctm"), [a.with_location(a.key, "1", 0.0) for a in alts])
    (tmp_path / "1best.txt").write_text("".join(
        f"{a.key} {' '.join(w for s in a.slots for w in s.alternatives[0].words)}\n" for a in alts))
    return str(tmp_path / "1best.ctm"), str(tmp_path / "1best.txt")


# ------------------------------------------------------------------------------------------------
# score = oracle = study on the same inputs
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("glm", [None, "six", "rt03"])
@pytest.mark.parametrize("ref", ["ref.stm", "text"])
def test_oracle_1best_equals_score_of_its_ctm(cards, ref, glm):
    glms = {None: [], "six": [str(cards / "six.glm")], "rt03": [RT03_GLM]}[glm]
    ctm, txt = _one_best_files(cards)
    report = oracle_wer([LAT3, LAT4], str(cards / ref), representation="1best", glm=glms)
    scored = score_files(str(cards / ref), ctm if ref == "ref.stm" else txt, glms=glms, id_type="sp",
                         hyp_format="ctm" if ref == "ref.stm" else "text")
    assert _counts(report.counts) == _counts(scored.total)
    if glm == "six":   # the GLM reached both sides: 'seven' and SEVEN both became SIX
        assert report.counts.correct == 5 and report.wer == 0


@pytest.mark.parametrize("glm", [None, RT03_GLM])
@pytest.mark.parametrize("mode", ["sclite", "levenshtein"])
def test_oracle_1best_equals_score_on_librivox(tmp_path, mode, glm):
    """The same on two LibriVox clips (lattices vendored in tests/data/inputs) against the bundled trn
    of five clips: --allow-missing leaves the other three out in both commands."""
    from lattice_tools.io import read_lattice_inputs
    from lattice_tools.oracle.representations import one_best

    lats = [str(DENSE["phrase"]), str(DENSE["nbest"])]
    (tmp_path / "hyp.txt").write_text("".join(
        f"{a.key} {' '.join(w for s in a.slots for w in s.alternatives[0].words)}\n"
        for a in (one_best(lat) for lat in read_lattice_inputs(lats))))
    glms = [glm] if glm else []
    report = oracle_wer(lats, str(LIBRIVOX_TRN), representation="1best", mode=mode, glm=glms, allow_missing=True)
    scored = score_files(str(LIBRIVOX_TRN), str(tmp_path / "hyp.txt"), hyp_format="text", mode=mode, glms=glms,
                         allow_missing=True, id_type="sp")
    assert _counts(report.counts) == _counts(scored.total) and len(report.utterances) == 2
    assert len(report.warnings) == 1 and "3 reference utterance" in report.warnings[0]


@pytest.mark.parametrize("glm", [None, "six"])
def test_oracle_of_an_altctm_equals_score_of_it(cards, glm):
    """An N-best alt-CTM written by `nbest`, scored by `score` and by `oracle` (both CLI)."""
    r = _cli("nbest", "-n", "5", "-o", cards / "nbest.ctm", LAT3, LAT4)
    assert r.exit_code == 0, r.output
    extra = ["--glm", cards / "six.glm"] if glm else []
    for ref in ("ref.stm", "ref.trn"):
        if ref == "ref.trn":   # an alt-CTM keyed by file against a trn: the oracle's own per-utterance path
            o = _cli("oracle", cards / "nbest.ctm", "-r", cards / ref, "--json", "-", *extra)
            assert o.exit_code == 0, o.output
            lat = _cli("oracle", LAT3, LAT4, "-r", cards / ref, "--representation", "nbest", "-n", "5", "--json", "-",
                       *extra)
            assert _counts(json.loads(o.output)["counts"]) == _counts(json.loads(lat.output)["counts"])
            continue
        s = _cli("score", "-r", cards / ref, "-h", cards / "nbest.ctm", "--json", "-", *extra)
        o = _cli("oracle", cards / "nbest.ctm", "-r", cards / ref, "--json", "-", *extra)
        assert s.exit_code == 0 and o.exit_code == 0, s.output + o.output
        assert _counts(json.loads(s.output)["overall"]) == _counts(json.loads(o.output)["counts"])


@pytest.mark.parametrize("glm", [None, RT03_GLM])
@pytest.mark.parametrize(("stm", "ctm", "allow_missing"), [
    ("lvc_ref.stm", "lvc_hyp.ctm", False),                       # ALT blocks, tags
    ("lvc_refe.stm", "lvc_hypc.ctm", False),
    ("stm2ctm_missing.ref.stm", "stm2ctm_missing.hyp.ctm", False),
    ("stm2ctm_missing.ref.stm", "stm2ctm_missing.hyp-missfile1.ctm", True),   # an STM file without CTM words
    ("stm2ctm_missing.ref.stm", "stm2ctm_missing.hyp-extra.ctm", True),       # CTM words of no STM file
])
def test_oracle_equals_score_on_sclite_test_data(stm, ctm, allow_missing, glm):
    kw = dict(glm=glm, allow_missing=allow_missing)
    scored = score_files(str(SCLITE_DATA / stm), str(SCLITE_DATA / ctm), glms=[glm] if glm else [],
                         allow_missing=allow_missing)
    report = oracle_wer(str(SCLITE_DATA / ctm), str(SCLITE_DATA / stm), **kw)
    assert _counts(report.counts) == _counts(scored.total)
    assert list(report.warnings) == [w for w in scored.warnings if "GLM" not in w or "nested" in w]
    if allow_missing:   # without allow_missing both refuse, with the same error
        with pytest.raises(MismatchError) as s_err:
            score_files(str(SCLITE_DATA / stm), str(SCLITE_DATA / ctm))
        with pytest.raises(MismatchError) as o_err:
            oracle_wer(str(SCLITE_DATA / ctm), str(SCLITE_DATA / stm))
        assert str(s_err.value) == str(o_err.value)


@pytest.mark.parametrize("ref", ["ref.stm", "text"])
def test_study_cells_equal_oracle_and_score(cards, tmp_path, ref):
    from lattice_tools.oracle.study import run_study

    res = run_study({"cards": [LAT3, LAT4]}, str(cards / ref), ns=(1, 3), representations=("nbest", "lattice"),
                    include_infinity=False, out_dir=str(tmp_path / "study"), bootstrap=0, plots=False, progress=False)
    rows = {r.cell: r.to_dict() for r in res.rows}
    ctm, txt = _one_best_files(cards)
    scored = score_files(str(cards / ref), ctm if ref == "ref.stm" else txt, id_type="sp",
                         hyp_format="ctm" if ref == "ref.stm" else "text")
    one = rows[("1best", "1")]
    assert (one["C"], one["S"], one["D"], one["I"], one["ref_words"]) == _counts(scored.total)
    for rep, n in (("nbest", "1"), ("nbest", "3"), ("lattice", "inf")):
        report = oracle_wer([LAT3, LAT4], str(cards / ref), representation=rep, n=None if n == "inf" else int(n))
        r = rows[(rep, n)]
        assert (r["C"], r["S"], r["D"], r["I"], r["ref_words"]) == _counts(report.counts)
    # the CLI runs the same function: same rows
    r = _cli("study", f"cards={LAT3}", f"cards={LAT4}", "-r", cards / ref, "-o", tmp_path / "cli", "-n", "1,3",
             "--no-infinity", "--representations", "nbest,lattice", "--bootstrap", "0", "--no-plots")
    assert r.exit_code == 0, r.output
    cli_rows = json.loads((tmp_path / "cli" / "study.json").read_text())["rows"]
    assert _timeless(cli_rows) == _timeless([r.to_dict() for r in res.rows])


def _timeless(rows: list) -> list:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


@pytest.mark.parametrize("args", [
    dict(representation="lattice"),
    dict(representation="1best", mode="levenshtein"),
    dict(representation="nbest", n=4),
    dict(representation="sausage", n=2, optional_deletable=True),
    dict(representation="phrase", n=3, glm="six"),
])
def test_oracle_cli_equals_api(cards, args):
    args = dict(args)
    if args.get("glm") == "six":
        args["glm"] = [str(cards / "six.glm")]
    api = oracle_wer([LAT3, LAT4], str(cards / "ref.stm"), **args)
    cli = ["oracle", LAT3, LAT4, "-r", cards / "ref.stm", "--json", "-"]
    for k, v in args.items():
        if k == "optional_deletable":
            cli.append("-D")
        elif k == "glm":
            cli += ["--glm", v[0]]
        else:
            cli += [f"--{k.replace('_', '-')}" if k != "n" else "-n", v]
    r = _cli(*cli)
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert got["counts"] == api.to_dict()["counts"] and got["utterances"] == api.to_dict()["utterances"]


# ------------------------------------------------------------------------------------------------
# The silent wrong numbers, each on a small equivalent
# ------------------------------------------------------------------------------------------------
MR_STM = "f1 1 spk1 0.00 3.00 mister smith went home\nf2 1 spk2 0.00 3.00 hello mister jones how are you\n"
MR_CTM = "".join(f"{f} 1 {0.1 + 0.4 * i:.2f} 0.30 {w}\n" for f, ws in
                 (("f1", "mr smith went"), ("f2", "hello mr jones how are you")) for i, w in enumerate(ws.split()))


@pytest.fixture()
def mr(tmp_path):
    (tmp_path / "ref.stm").write_text(MR_STM)
    (tmp_path / "hyp.ctm").write_text(MR_CTM)
    (tmp_path / "hypA.ctm").write_text(MR_CTM.replace(" 1 ", " A "))
    return tmp_path


def test_oracle_glm_filters_the_hypothesis_too(mr):
    """`oracle --glm` filtered only the reference: 'mr' stayed a substitution of MISTER (30 %)."""
    s = score_files(str(mr / "ref.stm"), str(mr / "hyp.ctm"), glms=[RT03_GLM])
    report = oracle_wer(str(mr / "hyp.ctm"), str(mr / "ref.stm"), glm=RT03_GLM)
    assert _counts(report.counts) == _counts(s.total) == (9, 0, 1, 0, 10)
    r = _cli("oracle", mr / "hyp.ctm", "-r", mr / "ref.stm", "--glm", RT03_GLM)
    assert r.exit_code == 0 and "%WER 10.00 [ 1 / 10," in r.output, r.output


def test_oracle_refuses_a_channel_mismatch_as_score_does(mr):
    """Channel A against an STM with channel 1 gave 100 % deletions, exit 0."""
    for cmd in (["oracle", mr / "hypA.ctm", "-r", mr / "ref.stm"], ["score", "-r", mr / "ref.stm", "-h", mr / "hypA.ctm"]):
        r = _cli(*cmd)
        assert r.exit_code == 2 and "--channel 1" in r.output, r.output


def test_oracle_refuses_ctm_files_absent_from_the_stm(mr):
    (mr / "extra.ctm").write_text(MR_CTM + "f9 1 0.10 0.20 stray\n")
    r = _cli("oracle", mr / "extra.ctm", "-r", mr / "ref.stm")
    assert r.exit_code == 2 and "f9 1" in r.output and "--allow-missing" in r.output, r.output
    r = _cli("oracle", mr / "extra.ctm", "-r", mr / "ref.stm", "--allow-missing")
    assert r.exit_code == 0 and "f9 1" in r.output and "warning" in r.output, r.output


def test_ladder_refuses_a_channel_mismatch_too(mr):
    """The ladder scored with allow_missing always on: channel A against 1 was 100 % deletions."""
    r = _cli("ladder", "-r", mr / "ref.stm", "-h", f"sys={mr / 'hypA.ctm'}", "--glm", RT03_GLM)
    assert r.exit_code == 2 and "--channel 1" in r.output, r.output
    r = _cli("ladder", "-r", mr / "ref.stm", "-h", f"sys={mr / 'hyp.ctm'}", "--glm", RT03_GLM, "--json", "-")
    assert r.exit_code == 0, r.output
    first = json.loads(r.output)["rows"][0]
    assert first["wer"]["sys"] == round(100 * score_files(str(mr / "ref.stm"), str(mr / "hyp.ctm"),
                                                          glms=[RT03_GLM], optional_deletable=True,
                                                          fragments=True).total.wer, 2)


@pytest.mark.parametrize("cmd", ["oracle", "score"])
def test_an_stm_is_never_read_as_kaldi_text(mr, cmd):
    """`oracle -r stm --ref-format text --allow-missing` scored the STM's fields as words (41 %)."""
    args = ([cmd, mr / "hyp.ctm", "-r", mr / "ref.stm"] if cmd == "oracle" else
            [cmd, "-r", mr / "ref.stm", "-h", mr / "hyp.ctm"]) + ["--ref-format", "text", "--allow-missing"]
    r = _cli(*args)
    assert r.exit_code == 2 and "--ref-format stm" in r.output, r.output
    with pytest.raises(FormatError, match="--ref-format stm"):
        oracle_wer(str(mr / "hyp.ctm"), str(mr / "ref.stm"), ref_format="text", allow_missing=True)


def test_a_kaldi_text_of_word_ids_is_still_text(tmp_path):
    """Integer 'times' (word ids) are no STM: the plausibility check needs decimal times."""
    from lattice_tools.io.transcripts.detect import detect_transcript_format

    (tmp_path / "ids").write_text("spk1-u1 7 10 13 16 19 22\n")
    assert detect_transcript_format(str(tmp_path / "ids"), "text") == "text"


@pytest.mark.parametrize("representation", ["lattice", "1best", "nbest", "sausage", "phrase"])
def test_levenshtein_folds_the_reference_like_the_hypothesis(cards, representation):
    """An upper-case reference: 100 % in Levenshtein mode for 1best/nbest, 0 % for the lattice."""
    lines = (cards / "ref.trn").read_text().splitlines()
    (cards / "upper.trn").write_text("".join(f"{line.rsplit('(', 1)[0].upper()}({line.rsplit('(', 1)[1]}\n"
                                             for line in lines))
    for mode in ("levenshtein", "sclite"):
        report = oracle_wer([LAT3, LAT4], str(cards / "upper.trn"), representation=representation, n=3, mode=mode)
        assert report.counts.correct == 5 and report.wer == 0, (mode, report.counts)


def test_study_joins_the_archives_of_one_set(cards, tmp_path):
    """`study NAME=lat.1 NAME=lat.2` kept only the last input, silently."""
    base = ["-r", cards / "text", "-n", "1,2", "--no-infinity", "--representations", "nbest,lattice",
            "--bootstrap", "0", "--no-plots"]
    r = _cli("study", f"cards={LAT3}", f"cards={LAT4}", "-o", tmp_path / "a", *base)
    assert r.exit_code == 0, r.output
    rows = json.loads((tmp_path / "a" / "study.json").read_text())["rows"]
    assert {r["utterances"] for r in rows} == {2}
    # a quoted pattern joins the same two lattices
    r = _cli("study", f"cards={INPUTS / '00[34].lat'}", "-o", tmp_path / "b", *base)
    assert r.exit_code == 0, r.output
    assert _timeless(json.loads((tmp_path / "b" / "study.json").read_text())["rows"]) == _timeless(rows)
    r = _cli("study", f"cards={INPUTS / 'nothing*.lat'}", "-o", tmp_path / "c", *base)
    assert r.exit_code == 2 and "nothing*.lat" in r.output


def test_study_glm_reaches_both_sides(cards, tmp_path):
    base = ["study", f"cards={LAT3}", f"cards={LAT4}", "-r", cards / "text", "-n", "1,2", "--no-infinity",
            "--bootstrap", "0", "--no-plots", "--glm", cards / "six.glm"]
    r = _cli(*base, "-o", tmp_path / "s", "--representations", "nbest,sausage")
    assert r.exit_code == 0, r.output
    rows = json.loads((tmp_path / "s" / "study.json").read_text())["rows"]
    one = next(x for x in rows if x["representation"] == "1best")
    report = oracle_wer([LAT3, LAT4], str(cards / "text"), representation="1best", glm=str(cards / "six.glm"))
    assert (one["C"], one["S"], one["D"], one["I"], one["ref_words"]) == _counts(report.counts)
    assert one["C"] == 5
    # the tables say which GLM made their numbers
    assert json.loads((tmp_path / "s" / "study.json").read_text())["glm"] == ["six.glm"]
    assert "GLM six.glm" in (tmp_path / "s" / "study.md").read_text().splitlines()[0]
    r = _cli(*base, "-o", tmp_path / "t", "--representations", "nbest,lattice")
    assert r.exit_code == 2 and "whole lattice" in r.output


def test_a_rerun_with_other_settings_recomputes_the_cells(cards, tmp_path):
    from lattice_tools.oracle.study import run_study

    kw = dict(ns=(1, 2), representations=("nbest", "lattice"), include_infinity=False, out_dir=str(tmp_path / "s"),
              bootstrap=0, plots=False, progress=False)
    (cards / "bad.trn").write_text("nine of hearts (003)\nsix six (004)\n")
    good = run_study({"cards": [LAT3, LAT4]}, str(cards / "ref.trn"), **kw)
    bad = run_study({"cards": [LAT3, LAT4]}, str(cards / "bad.trn"), **kw)
    assert [r.wer for r in good.rows] != [r.wer for r in bad.rows]


def test_study_refuses_tables_it_cannot_check(cards, tmp_path):
    from lattice_tools.oracle.study import run_study

    with pytest.raises(LatticeToolsError, match="invariants can be checked"):
        run_study({"cards": [LAT3, LAT4]}, str(cards / "ref.trn"), ns=(1,), representations=("nbest",),
                  include_infinity=False, out_dir=str(tmp_path / "s"), bootstrap=0, plots=False, progress=False)
    assert not (tmp_path / "s" / "study.md").exists()


def test_lattices_and_references_are_matched_both_ways(cards):
    """The same errors and --allow-missing as score: a lattice without reference, and a reference
    without lattice (STM: scored as deletions, as score does for an STM file without CTM words)."""
    (cards / "one.stm").write_text("003 1 spk3 0.00 30.00 seven of clubs\n")
    with pytest.raises(MismatchError, match="'004'.*--allow-missing"):
        oracle_wer([LAT3, LAT4], str(cards / "one.stm"))
    report = oracle_wer([LAT3, LAT4], str(cards / "one.stm"), allow_missing=True)
    assert [u.key for u in report.utterances] == ["003"] and report.warnings
    # a reference without lattice: refused, or (STM) all deletions -- what score says of a CTM without that file
    with pytest.raises(MismatchError, match="'004'.*--allow-missing"):
        oracle_wer([LAT3], str(cards / "ref.stm"), representation="1best")
    report = oracle_wer([LAT3], str(cards / "ref.stm"), representation="1best", allow_missing=True)
    ctm, _ = _one_best_files(cards)
    (cards / "only3.ctm").write_text("".join(x for x in Path(ctm).read_text().splitlines(True) if x.startswith("003")))
    scored = score_files(str(cards / "ref.stm"), str(cards / "only3.ctm"), allow_missing=True)
    assert _counts(report.counts) == _counts(scored.total) and report.counts.deletions >= 2


def test_segments_key_an_stm_by_utterance(cards):
    """Kaldi's utterance-keyed lattices against an STM keyed by recording (`oracle --segments`):
    each STM segment is the reference of the utterance it overlaps most; the numbers equal those of
    the same STM keyed by utterance."""
    (cards / "segments").write_text("003 rec 0.00 2.00\n004 rec 3.00 5.00\n")
    (cards / "rec.stm").write_text("rec 1 spk 0.50 1.50 seven of clubs\nrec 1 spk 3.20 4.80 five five\n")
    for rep in ("lattice", "1best", "nbest"):
        keyed = oracle_wer([LAT3, LAT4], str(cards / "ref.stm"), representation=rep, n=3)
        mapped = oracle_wer([LAT3, LAT4], str(cards / "rec.stm"), representation=rep, n=3,
                            segments=str(cards / "segments"))
        assert mapped.counts == keyed.counts and mapped.counts.correct == 5
    with pytest.raises(MismatchError, match="--segments"):
        oracle_wer([LAT3, LAT4], str(cards / "rec.stm"))
    # a segment no utterance overlaps is a reference without hypothesis: refused, or all deletions
    (cards / "rec3.stm").write_text((cards / "rec.stm").read_text() + "rec 1 spk 8.00 9.00 nobody said this\n")
    r = _cli("oracle", LAT3, LAT4, "-r", cards / "rec3.stm", "--segments", cards / "segments")
    assert r.exit_code == 2 and "rec 8.00-9.00" in r.output and "--allow-missing" in r.output, r.output
    r = _cli("oracle", LAT3, LAT4, "-r", cards / "rec3.stm", "--segments", cards / "segments", "--allow-missing")
    assert r.exit_code == 0 and "%WER 37.50 [ 3 / 8, 0 ins, 3 del, 0 sub ]" in r.output, r.output
    r = _cli("oracle", LAT3, LAT4, "-r", cards / "text", "--segments", cards / "segments")
    assert r.exit_code == 2 and "leave --segments out" in r.output


def test_empty_references_are_refused(cards):
    (cards / "empty.trn").write_text("")
    for fmt in (None, "trn"):
        with pytest.raises(LatticeToolsError):
            oracle_wer([LAT3], str(cards / "empty.trn"), ref_format=fmt)


# ------------------------------------------------------------------------------------------------
# Memory budget of the oracle searches, under a real address-space limit
# ------------------------------------------------------------------------------------------------
# address space the process may map: the interpreter, numpy and the package take ~300 MB of it; the
# budget below is 100M of resident memory, so this leaves a wide margin for the budget to act first
ADDRESS_SPACE = 800 << 20


def _limited(*args):
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    code = "import sys; from lattice_tools.cli import main; sys.argv[0] = 'lattice-tools'; main()"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                          preexec_fn=limit, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("representation", ["nbest", "phrase"])
def test_oracle_without_depth_stops_at_the_budget(representation, tmp_path):
    """`oracle --representation nbest|phrase` with no -n reached 11.9 / 7.9 GB; under --max-memory
    it must stop with one clean budget line and exit 2, well inside the address-space limit."""
    r = _limited("oracle", DENSE[representation], "-r", LIBRIVOX_TRN, "--allow-missing", "--representation",
                 representation, "--max-memory", "100M")
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "out of memory" not in r.stderr, r.stderr[-2000:]
    err = [line for line in r.stderr.splitlines() if line.startswith("lattice-tools: error:")]
    assert len(err) == 1 and ("memory budget" in err[0] or "search nodes" in err[0]), r.stderr
    assert "sense_and_sensibility_01_austen_64kb-" in err[0]


@pytest.mark.slow
def test_study_stays_inside_the_budget(tmp_path):
    r = _limited("study", f"dense={DENSE['nbest']}", f"dense={DENSE['phrase']}", "-r", LIBRIVOX_TRN,
                 "--allow-missing", "-o", tmp_path / "s", "-n", "1,10", "--representations", "nbest,phrase",
                 "--bootstrap", "0", "--no-plots", "--max-memory", "100M")
    assert "Traceback" not in r.stderr and "out of memory" not in r.stderr, r.stderr[-2000:]
    if r.returncode == 0:   # N=inf cells the budget stopped are marked, not computed past it
        assert "stopped by the search budget" in (tmp_path / "s" / "study.md").read_text()
    else:
        assert r.returncode == 2 and "budget" in r.stderr, r.stderr[-2000:]


def test_a_reference_in_word_ids_against_lattices_in_words_is_refused(tmp_path):
    """Kaldi's text after sym2int.pl against lattices read with --words would score near 100 % WER
    (score refuses the same mix of ids and words): oracle and study refuse it; without --words the
    ids are compared with ids."""
    from lattice_tools.oracle.study import run_study

    lats = HERE / "data" / "kaldi" / "lats"
    ark, ref, words = f"ark:{lats / 'bundled.ark.gz'}", str(lats / "bundled.ref.txt"), str(lats / "bundled.words.txt")
    with pytest.raises(MismatchError, match="integer ids but the lattice's words are text"):
        oracle_wer(ark, ref, words=words, representation="1best")
    with pytest.raises(MismatchError, match="integer ids but the lattice's words are text"):
        run_study({"K": ark}, ref, words=words, ns=(1,), representations=("nbest",), include_infinity=False,
                  out_dir=str(tmp_path / "s"), bootstrap=0, plots=False, progress=False)
    assert not (tmp_path / "s" / "study.md").exists()
    assert oracle_wer(ark, ref, representation="1best").counts.correct == 64
    r = CliRunner().invoke(main, ["oracle", "-r", ref, "--words", words, ark])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "int2sym.pl" in r.output


@pytest.mark.parametrize("representation", ["nbest", "sausage"])
def test_glm_on_lattice_alternatives_equals_score_glm_of_their_alt_ctm(tmp_path, representation):
    """oracle --glm over a lattice representation = score --glm of the alt-CTM of the same
    alternatives.  Posteriors as small as 1e-06 once came back from the GLM filter as extra words."""
    glm = HERE / "data" / "sctk" / "glm" / "en20030506.glm"
    lats = [DENSE["nbest"], INPUTS / "sense_and_sensibility_01_austen_64kb-0890.lat.gz"]
    trn = {line.rsplit("(", 1)[1].rstrip(")\n"): line.rsplit("(", 1)[0].strip()
           for line in LIBRIVOX_TRN.read_text().splitlines(keepends=True)}
    stm = tmp_path / "r.stm"
    stm.write_text("".join(f"{p.name[:-7]} 1 spk 0.000 100.000 {trn[p.name[:-7]]}\n" for p in sorted(lats)))
    ctm = tmp_path / "a.ctm"
    r = _cli(representation, *lats, "-n", "10", "-o", ctm)
    assert r.exit_code == 0, r.output
    lattice = oracle_wer([str(p) for p in lats], str(stm), representation=representation, n=10, glm=str(glm))
    scored = score_files(str(stm), str(ctm), glms=[str(glm)])
    assert _counts(lattice.counts) == _counts(scored.total)
    assert not any("e-" in " ".join(u.words) for u in lattice.utterances)


# ------------------------------------------------------------------------------------------------------------
# --keys: one option, one meaning, on every command that reads lattices


def _keys_commands(cards, out):
    """Every command that reads lattices, on the two cards lattices (003, 004), writing under ``out``."""
    lats = [LAT3, LAT4]
    ref = str(cards / "text")
    return {
        "info": ["info", *lats],
        "convert": ["convert", *lats, "-o", f"ark:{out}/o.ark"],
        "nbest": ["nbest", *lats, "-o", f"{out}/o.ctm"],
        "sausage": ["sausage", *lats, "-o", f"{out}/o.ctm"],
        "phrases": ["phrases", *lats, "-o", f"{out}/o.ctm"],
        "best-path": ["best-path", *lats, "--tra", f"{out}/o.tra"],
        "nbest-paths": ["nbest-paths", *lats, "--tra", f"{out}/o.tra"],
        "scale": ["scale", *lats, "-o", f"ark:{out}/o.ark"],
        "add-penalty": ["add-penalty", *lats, "--word-penalty", "1", "-o", f"ark:{out}/o.ark"],
        "prune": ["prune", *lats, "-o", f"ark:{out}/o.ark"],
        "depth": ["depth", *lats],
        "mbr-decode": ["mbr-decode", *lats, "--tra", f"{out}/o.tra"],
        "oracle-path": ["oracle-path", *lats, "-r", f"{out}/ref.int"],
        "oracle": ["oracle", *lats, "-r", ref],
        "study": ["study", *(f"cards={lat}" for lat in lats), "-r", ref, "-o", f"{out}/study", "-n", "1", "--bootstrap", "0", "--no-plots"],
        "view": ["view", *lats, "-o", f"{out}/v.html"],
        "kws index": ["kws", "index", *lats, "-o", f"{out}/i.sqlite"],
        "kws study": ["kws", "study", *lats, "--ctm", f"{out}/ref.ctm", "-o", f"{out}/kws"],
        "kws search": ["kws", "search", f"{out}/i1.sqlite", "--kwlist", f"{out}/kw.txt", "-o", f"{out}/k.tsv",
                       "--lattices", LAT3, "--lattices", LAT4],
        "combine": ["combine", "--nbest-format", "lattice", f"{INPUTS}/00[34].lat", f"{INPUTS}/00[34].lat", "-o",
                    f"{out}/c.ctm"],
    }


KEYS_COMMANDS = sorted(_keys_commands(Path("."), Path(".")))


@pytest.mark.parametrize("name", KEYS_COMMANDS)
def test_keys_file_of_the_wrong_length_is_refused_by_every_command(name, cards, tmp_path):
    """A --keys file names the lattices of all the inputs in order, one key per lattice: one key for two
    lattices is refused by every command the same way (one line, exit 2, the file and the counts named)."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "ref.int").write_text("003 1 2\n004 3\n")
    (out / "ref.ctm").write_text("003 1 0.00 0.50 seven\n")
    if name == "kws search":  # a keyword longer than the index's terms is searched in the lattices
        assert _cli("kws", "index", LAT3, LAT4, "--max-length", "1", "-o", out / "i1.sqlite").exit_code == 0
        (out / "kw.txt").write_text("KW-1 seven of\n")
    keys = tmp_path / "keys.txt"
    keys.write_text("003\n")
    r = _cli(*_keys_commands(cards, out)[name], "--keys", keys)
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.startswith("lattice-tools: error")]
    assert len(lines) == 1 and str(keys) in lines[0] and "1 keys" in lines[0], r.output


def test_keys_name_the_lattices_everywhere(cards, tmp_path):
    """The keys of a --keys file are the lattices' names in every output: info's rows, the alt-CTM's file ids,
    Kaldi tables; and oracle with renamed lattices against a reference keyed by the new names counts what it
    counts with the original names."""
    keys = tmp_path / "keys.txt"
    keys.write_text("utt-a\nutt-b\n")
    info = tmp_path / "info.json"
    assert _cli("info", LAT3, LAT4, "--keys", keys, "--json", info).exit_code == 0
    assert [r["key"] for r in json.loads(info.read_text())["lattices"]] == ["utt-a", "utt-b"]
    ctm = tmp_path / "o.ctm"
    assert _cli("sausage", LAT3, LAT4, "--keys", keys, "-o", ctm).exit_code == 0
    assert {line.split()[0] for line in ctm.read_text().splitlines()} == {"utt-a", "utt-b"}
    tra = tmp_path / "o.tra"
    assert _cli("best-path", LAT3, LAT4, "--keys", keys, "--tra", tra).exit_code == 0
    assert [line.split()[0] for line in tra.read_text().splitlines()] == ["utt-a", "utt-b"]
    renamed = tmp_path / "renamed_text"
    renamed.write_text((cards / "text").read_text().replace("003 ", "utt-a ").replace("004 ", "utt-b "))
    before = oracle_wer([LAT3, LAT4], str(cards / "text"), representation="sausage", n=2)
    after = oracle_wer([LAT3, LAT4], str(renamed), representation="sausage", n=2, keys=str(keys))
    assert _counts(after.counts) == _counts(before.counts) and before.counts.ref_words > 0


# ------------------------------------------------------------------------------------------------------------
# metrics read, filter and match transcripts through the same door as score


DEMO_REF, DEMO_HYP = SCLITE_DATA / "demo.ref.txt", SCLITE_DATA / "demo.hyp.txt"


@pytest.mark.parametrize("glm", [False, True])
def test_metrics_wer_equals_score_on_sclite_test_data(glm, tmp_path):
    """NIST's sclite demo transcripts (trn): the metrics' WER (lower-cased as sclite folds case) is score's
    errors / reference words, with and without the RT-03 GLM on both sides."""
    from _metrics_helpers import require_metrics_extras

    require_metrics_extras()
    from lattice_tools.metrics.commands import metrics

    glms = (RT03_GLM,) if glm else ()
    scored = score_files(str(DEMO_REF), str(DEMO_HYP), glms=glms)
    t = scored.total
    summary = metrics(str(DEMO_REF), str(DEMO_HYP), output=str(tmp_path / "m.json"), normalizer="plain",
                      orthography=False, resamples=0, glms=glms)
    assert t.ref_words == 46
    assert summary.all.metrics["wer"].value == pytest.approx(
        (t.substitutions + t.deletions + t.insertions) / t.ref_words, abs=1e-12)
    r = _cli("metrics", DEMO_REF, DEMO_HYP, "--normalizer", "plain", "--no-orthography", "--resamples", "0",
             *(("--glm", RT03_GLM) if glm else ()), "--json", tmp_path / "cli.json")
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "cli.json").read_text())["all"]["metrics"]["wer"] == summary.all.metrics["wer"].to_dict()


def _bad_pairs(d: Path) -> dict:
    ref = DEMO_REF.read_text()
    hyp = DEMO_HYP.read_text()
    first, second = hyp.splitlines()[:2]
    (d / "dup.trn").write_text(f"{first}\n{first}\n{second}\n")
    (d / "extra.trn").write_text(hyp + "A B (zz-1)\n")
    (d / "short.trn").write_text(f"{first}\n")
    (d / "empty.trn").write_text("")
    (d / "ref.trn").write_text(ref)
    return {"duplicate hypothesis id": (d / "ref.trn", d / "dup.trn"),
            "hypothesis without reference": (d / "ref.trn", d / "extra.trn"),
            "reference without hypothesis": (d / "ref.trn", d / "short.trn"),
            "empty reference": (d / "empty.trn", d / "short.trn")}


@pytest.mark.parametrize("case", ["duplicate hypothesis id", "hypothesis without reference",
                                  "reference without hypothesis", "empty reference"])
def test_metrics_refuse_what_score_refuses_with_the_same_words(case, tmp_path):
    """The same bad inputs, the same one-line error from score and metrics (the one door's wording), exit 2."""
    ref, hyp = _bad_pairs(tmp_path)[case]
    scored = _cli("score", "-r", ref, "-h", hyp)
    measured = _cli("metrics", ref, hyp, "--resamples", "0")
    assert scored.exit_code == measured.exit_code == 2, (scored.output, measured.output)
    line = [ln for ln in scored.output.splitlines() if ln.startswith("lattice-tools: error")]
    assert len(line) == 1 and line == [ln for ln in measured.output.splitlines() if ln.startswith("lattice-tools:")]


def test_metrics_allow_missing_means_what_it_means_for_score(tmp_path):
    """--allow-missing: a reference utterance without hypothesis is left out of the WER (trn) by both, with the
    same warning; the WERs agree."""
    from _metrics_helpers import require_metrics_extras

    require_metrics_extras()
    pairs = _bad_pairs(tmp_path)
    ref, hyp = pairs["reference without hypothesis"]
    scored = score_files(str(ref), str(hyp), allow_missing=True)
    summary = json.loads(_cli("metrics", ref, hyp, "--allow-missing", "--normalizer", "plain", "--no-orthography",
                              "--resamples", "0").output.split("\nlattice-tools: warning")[0])
    t = scored.total
    assert summary["all"]["metrics"]["wer"]["value"] == pytest.approx(
        (t.substitutions + t.deletions + t.insertions) / t.ref_words)
    assert summary["all"]["coverage"] == 0.5
    assert summary["warnings"] == list(scored.warnings)
