"""Keyword-search scoring: F4DE's golden tests reproduced, unit checks of the measures, and the real F4DE
(Perl, found through $LATTICE_TOOLS_F4DE) against ours on random cases."""
from __future__ import annotations

import os
import shlex
from collections import Counter

import pytest
from _kws_helpers import DATA, compare_reports, f4de_root, f4de_skip_reason, random_case, run_kwseval

from lattice_tools.core.errors import FormatError, MismatchError
from lattice_tools.io.keyword_search.ecf import Ecf, EcfExcerpt, read_ecf
from lattice_tools.io.keyword_search.kwlist import KeywordTerm, read_kwlist_file
from lattice_tools.io.keyword_search.kwslist import Detection, KwsList, read_kwslist
from lattice_tools.io.keyword_search.rttm import RttmRecord, read_rttm
from lattice_tools.kws.f4de_report import alignment_csv, f4de_stdout
from lattice_tools.kws.score import score_kws

EXPECTED = DATA / "expected"


def _parse_command(name: str):
    text = (EXPECTED / f"res_test{name}.txt").read_text(encoding="utf-8")
    cmd = text.split("\n", 1)[0].replace("[[COMMANDLINE]] ", "")
    stdout = text.split("[[STDOUT]]\n", 1)[1].split("[[STDERR]]")[0]
    args = shlex.split(cmd)[1:]
    o = {"Y": {}, "q": [], "x": []}
    flags = set()
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-e", "-r", "-s", "-t", "-f", "-y"):
            o[a[1]] = args[i + 1]
            i += 2
        elif a == "-Y":
            n, v = args[i + 1].split(":")
            o["Y"][n] = v.split(",")
            i += 2
        elif a in ("-q", "-x"):
            o[a[1]].append(args[i + 1])
            i += 2
        else:
            flags.add(a)
            i += 1
    return o, flags, stdout


def _run_golden(name: str):
    o, flags, expected = _parse_command(name)
    cwd = os.getcwd()
    os.chdir(DATA / "expected")      # the commands name their inputs as ../common/...
    try:
        x = [v.lower() for v in o["x"]]
        ev = score_kws(read_ecf(o["e"]), read_rttm(o["r"]), read_kwlist_file(o["t"]), read_kwslist(o["s"]),
                       include_no_targets="-inc" in flags, just_system_terms="-j" in flags,
                       char_split_text="charsplit" in x, not_ascii="notascii" in x, delete_hyphens="deletehyphens" in x,
                       source_type_groups=o["Y"] or None, attribute_queries=o["q"], outside_ecf="ignore",
                       segment_based="-g" in flags)
        got = f4de_stdout(ev, ecf=o["e"], rttm=o["r"], kwslist=o["s"], kwlist=o["t"], summary="-o" in flags,
                          block="-b" in flags, cond_summary="-O" in flags, cond_block="-B" in flags)
    finally:
        os.chdir(cwd)
    # The test harness adds one blank line after the tool's output.
    return ev, got + "\n", expected


@pytest.mark.parametrize("name", ["2a", "6a", "6b", "7a", "7b", "7c", "7d", "7e", "9"])
def test_f4de_golden_exact(name):
    _ev, got, expected = _run_golden(name)
    assert got == expected


@pytest.mark.parametrize("name", ["2b.518", "2c.518"])
def test_f4de_golden_numbers(name):
    # F4DE orders the columns of a condition without any scored keyword by Perl hash order; every line
    # holds the same cells.
    _ev, got, expected = _run_golden(name)
    problems, stats = compare_reports(expected, got)
    assert not problems
    assert stats["permuted"] == 1 and stats["rounding"] == 0


def test_f4de_golden_alignment_csv():
    ev, _got, _exp = _run_golden("7e")
    ours = alignment_csv(ev.alignment, ev.language).splitlines()
    theirs = (EXPECTED / "alignment.csv").read_text(encoding="utf-8").splitlines()
    assert ours[0] == theirs[0]
    assert Counter(ours[1:]) == Counter(theirs[1:])      # F4DE writes in Perl hash order


def test_golden_numbers_by_hand():
    """test6 (-Y BN+CTS) worked by hand from the trials: TERM-01 has 15 occurrences, 10 found, 2 FA..."""
    ev, _, _ = _run_golden("2a")
    s = ev.conditions["BN+CTS"]
    T, beta = 100, 0.1 * (1 / 0.0001 - 1)
    pm = (5 / 15 + 10 / 15 + 3 / 5) / 3
    pf = (2 / (T - 15) + 3 / (T - 15) + 5 / (T - 5)) / 3
    assert s.atwv.twv == pytest.approx(1 - pm - beta * pf, abs=1e-12)
    assert s.mtwv.twv == pytest.approx(0.2, abs=1e-12) and s.mtwv.threshold == 0.901
    counts = {t.kwid: (t.n_true, t.n_corr, t.n_fa) for t in s.terms if t.evaluated}
    assert counts == {"TERM-01": (15, 10, 2), "TERM-02": (15, 5, 3), "TERM-03": (5, 2, 5)}


def _tiny(hits, refs, *, ecf_dur=100.0, inc=False, stype="bnews"):
    ecf = Ecf((EcfExcerpt("F.sph", "1", 0.0, ecf_dur, stype),))
    recs = [RttmRecord("LEXEME", "F", "1", tb, du, w, "lex", "s1") for tb, du, w in refs]
    terms = [KeywordTerm("K1", "yes"), KeywordTerm("K2", "no")]
    dets = tuple(Detection(k, "F", "1", tb, du, sc, sc >= 0.5) for k, tb, du, sc in hits)
    return score_kws(ecf, recs, terms, KwsList(dets, ()), include_no_targets=inc)


def test_measures_small_case():
    # K1: refs at 1 and 5; hits at 1.1 (0.9 YES) and 20 (0.6 YES, FA) and 5.2 (0.3 NO)
    ev = _tiny([("K1", 1.1, 0.3, 0.9), ("K1", 20.0, 0.3, 0.6), ("K1", 5.2, 0.3, 0.3)],
               [(1.0, 0.4, "yes"), (5.0, 0.4, "yes"), (9.0, 0.4, "no")])
    s = ev.overall
    beta = 999.9000000000001
    # ATWV over K1 (K2 has a target, no hit): K1 miss 1/2, FA 1/98; K2 miss 1.
    assert s.atwv.twv == pytest.approx(1 - (0.5 + 1) / 2 - beta * (1 / 98 + 0) / 2)
    # MTWV: best threshold 0.9 (only the correct YES): miss (1/2 + 1)/2.
    assert s.mtwv.threshold == 0.9 and s.mtwv.twv == pytest.approx(1 - 0.75)
    # STWV: every hit counts, no FA: K1 both found, K2 none.
    assert s.stwv.twv == pytest.approx(1 - (0 + 1) / 2)
    # OTWV: K1 best at 0.9 (miss 1/2), K2 nothing to gain (miss 1).
    assert s.otwv.twv == pytest.approx(1 - (0.5 + 1) / 2)


def test_total_duration_splitcts_and_overlaps():
    e = Ecf((EcfExcerpt("a/F.sph", "1", 0.0, 10.0, "splitcts"), EcfExcerpt("a/F.sph", "2", 0.0, 10.0, "splitcts"),
             EcfExcerpt("G.sph", "1", 0.0, 10.0, "cts"), EcfExcerpt("G.sph", "1", 5.0, 10.0, "cts")))
    # F: the first excerpt is cut at the second's start (same recording): 0 + 10 * 0.5; G: 5 + 10.
    assert e.total_duration() == 20.0
    assert e.total_duration(["CTS"]) == 15.0


def test_outside_ecf_is_an_error_unless_ignored():
    ecf = Ecf((EcfExcerpt("F.sph", "1", 0.0, 10.0, "bnews"),))
    kws = KwsList((Detection("K1", "G", "1", 1.0, 0.5, 0.9, True),), ())
    with pytest.raises(MismatchError, match="does not name"):
        score_kws(ecf, [], [KeywordTerm("K1", "yes")], kws)
    ev = score_kws(ecf, [], [KeywordTerm("K1", "yes")], kws, outside_ecf="ignore")
    assert ev.overall.blocks["K1"].n_sys == 0


def test_inconsistent_decisions_refused():
    ecf = Ecf((EcfExcerpt("F.sph", "1", 0.0, 10.0, "bnews"),))
    kws = KwsList((Detection("K1", "F", "1", 1.0, 0.5, 0.9, False), Detection("K1", "F", "1", 3.0, 0.5, 0.2, True)), ())
    with pytest.raises(FormatError, match="inconsistent decisions"):
        score_kws(ecf, [], [KeywordTerm("K1", "yes")], kws)


def test_unknown_keyword_in_kwslist():
    ecf = Ecf((EcfExcerpt("F.sph", "1", 0.0, 10.0, "bnews"),))
    kws = KwsList((Detection("K9", "F", "1", 1.0, 0.5, 0.9, True),), ())
    with pytest.raises(MismatchError, match="not in the KWlist"):
        score_kws(ecf, [], [KeywordTerm("K1", "yes")], kws)


def _crosscheck(seeds, tmp_path):
    root = f4de_root()
    totals = Counter()
    for seed in seeds:
        d = tmp_path / f"case{seed}"
        c = random_case(seed, d)
        try:
            ev = score_kws(read_ecf(c["ecf"]), read_rttm(c["rttm"]), read_kwlist_file(c["kwlist"]),
                           read_kwslist(c["kwslist"]), include_no_targets=c["inc"], outside_ecf="ignore",
                           segment_based=c["segment"])
        except MismatchError as exc:
            # A keyword with at least T occurrences: F4DE divides by zero (or reports a negative P_FA).
            assert "not fewer than the number of trials" in str(exc)
            totals["degenerate"] += 1
            continue
        # F4DE's per-keyword optima (OTWV) depend on Perl's hash order when a scored keyword has an
        # undefined rate (with -inc, a keyword without targets; with -g, a keyword in every segment):
        # DETCurve.pm stops updating optima after the first such keyword its hash order meets.  OTWV is
        # compared only otherwise.
        T = ev.overall.tot_trials
        optimum = not any(b.n_true == 0 or b.n_true == T for b in ev.overall.evaluated_blocks)
        args = ["-e", str(c["ecf"]), "-r", str(c["rttm"]), "-s", str(c["kwslist"]), "-t", str(c["kwlist"]),
                "-o", "-b", "-f", "-", "-zG", "Supremum"] + (["-zG", "Optimum"] if optimum else []) \
            + (["-inc"] if c["inc"] else []) + (["-g"] if c["segment"] else [])
        p = run_kwseval(root, args, d)
        assert p.returncode == 0, (seed, p.stdout[-2000:], p.stderr[-2000:])
        got = f4de_stdout(ev, ecf=str(c["ecf"]), rttm=str(c["rttm"]), kwslist=str(c["kwslist"]),
                          kwlist=str(c["kwlist"]), summary=True, block=True, optimum=optimum, supremum=True)
        problems, stats = compare_reports(p.stdout, got)
        assert not problems, (seed, problems[:5])
        totals.update(stats)
        totals["cases"] += 1
    return totals


@pytest.mark.skipif(f4de_root() is None, reason=f4de_skip_reason())
def test_random_cases_against_f4de(tmp_path):
    totals = _crosscheck(range(24), tmp_path)
    assert totals["cases"] + totals["degenerate"] == 24 and totals["cases"] >= 20


@pytest.mark.slow
@pytest.mark.skipif(f4de_root() is None, reason=f4de_skip_reason())
def test_random_cases_against_f4de_1000(tmp_path):
    totals = _crosscheck(range(1000, 2100), tmp_path)
    # F4DE itself cannot score the rare case with a keyword occurring >= T times; at least 1,000 are compared.
    assert totals["cases"] + totals["degenerate"] == 1100 and totals["cases"] >= 1000
    print(dict(totals))


def test_matching_is_max_cardinality_then_max_weight():
    """Against brute force on small random graphs (F4DE's BipartiteMatch optimum)."""
    import itertools
    import random

    from lattice_tools.kws.matching import match

    rng = random.Random(7)
    for _ in range(300):
        nr, ns = rng.randint(1, 5), rng.randint(1, 5)
        edges = {(r, s): 1 + rng.uniform(-1e-6, 1e-6) for r in range(nr) for s in range(ns) if rng.random() < 0.5}
        got = match(nr, ns, edges)
        assert len({r for r, _ in got}) == len(got) == len({s for _, s in got})
        best = (0, 0.0)
        pairs = list(edges)
        for k in range(1, min(nr, ns) + 1):
            for comb in itertools.combinations(pairs, k):
                if len({r for r, _ in comb}) == k and len({s for _, s in comb}) == k:
                    v = (k, sum(edges[p] for p in comb))
                    if v[0] > best[0] or (v[0] == best[0] and v[1] > best[1]):
                        best = v
        assert len(got) == best[0]
        assert sum(edges[p] for p in got) == pytest.approx(best[1], abs=1e-12)


def test_more_occurrences_than_trials_is_refused():
    ecf = Ecf((EcfExcerpt("F.sph", "1", 0.0, 2.0, "bnews"),))
    recs = [RttmRecord("LEXEME", "F", "1", 0.1 * i, 0.05, "yes", "lex", "s") for i in range(5)]
    with pytest.raises(MismatchError, match="not fewer than the number of trials T = 2"):
        score_kws(ecf, recs, [KeywordTerm("K1", "yes")], KwsList((), ()))


def test_duplicate_keyword_ids_refused():
    ecf = Ecf((EcfExcerpt("F.sph", "1", 0.0, 20.0, "bnews"),))
    with pytest.raises(MismatchError, match="duplicate keyword id 'K1'"):
        score_kws(ecf, [], [KeywordTerm("K1", "yes"), KeywordTerm("K1", "no")], KwsList((), ()))
