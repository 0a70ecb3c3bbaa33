"""F4DE's KWSEval options for subsets and pooling: term sets (-T), the file/channel filter (-N) and pooled
trials (-P), with the DET curve of the pooled trials.  Checked against F4DE's own output: numbers F4DE
printed for the vendored inputs (tests/data/f4de/options/, see its PROVENANCE.md) in the default suite, and
the real F4DE (Perl, through $LATTICE_TOOLS_F4DE) on random cases when it is there."""
from __future__ import annotations

import random
import shlex
from collections import Counter
from pathlib import Path

import pytest
from _kws_helpers import DATA, compare_reports, f4de_root, f4de_skip_reason, random_case, run_kwseval

from lattice_tools.core.errors import MismatchError
from lattice_tools.io.keyword_search.ecf import read_ecf
from lattice_tools.io.keyword_search.kwlist import read_kwlist_file
from lattice_tools.io.keyword_search.kwslist import read_kwslist
from lattice_tools.io.keyword_search.rttm import read_rttm
from lattice_tools.kws.f4de_report import f4de_stdout
from lattice_tools.kws.score import score_kws

OPTIONS = DATA / "options"
COMMON = DATA / "common"


def _options(args: list[str]) -> dict:
    """score_kws keywords of KWSEval's -T/-N/-P/-inc/-Y/-g/-j arguments."""
    out: dict = {"term_sets": {}, "file_channels": [], "pooled": False, "include_no_targets": False,
                 "source_type_groups": {}, "segment_based": False, "just_system_terms": False}
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-T", "-Y"):
            name, sep, ids = args[i + 1].partition(":")
            if not sep:
                name, ids = args[i + 1], args[i + 1]
            out["term_sets" if a == "-T" else "source_type_groups"][name] = ids.split(",")
            i += 2
        elif a == "-N":
            out["file_channels"].append(args[i + 1])
            i += 2
        elif a == "-P":
            out["pooled"] = True
            i += 1
        elif a == "-inc":
            out["include_no_targets"] = True
            i += 1
        elif a in ("-g", "-j"):
            out["segment_based" if a == "-g" else "just_system_terms"] = True
            i += 1
        else:
            i += 1
    out["term_sets"] = out["term_sets"] or None
    out["source_type_groups"] = out["source_type_groups"] or None
    return out


def _ours(ecf, rttm, kwslist, kwlist, args: list[str]):
    return score_kws(read_ecf(str(ecf)), read_rttm(str(rttm)), read_kwlist_file(str(kwlist)),
                     read_kwslist(str(kwslist)), outside_ecf="ignore", **_options(args))


def _stdout(ev, ecf, rttm, kwslist, kwlist, args: list[str]) -> str:
    """What KWSEval prints for the report flags in ``args`` (-o -b -O -B; -zG Supremum)."""
    return f4de_stdout(ev, ecf=str(ecf), rttm=str(rttm), kwslist=str(kwslist), kwlist=str(kwlist),
                       summary="-o" in args, block="-b" in args, cond_summary="-O" in args, cond_block="-B" in args,
                       supremum="Supremum" in args)


def _vendored_cases():
    return sorted(p.name[len("res_"):-len(".txt")] for p in OPTIONS.glob("res_*.txt"))


@pytest.mark.parametrize("name", _vendored_cases())
def test_vendored_f4de_outputs(name, monkeypatch):
    """Our reports equal F4DE's (run once with the command on each file's first line) for the vendored
    F4DE test inputs with -T, -N and -P."""
    text = (OPTIONS / f"res_{name}.txt").read_text(encoding="utf-8")
    command, expected = text.split("\n", 1)
    args = shlex.split(command.replace("[[COMMANDLINE]] ", ""))
    files = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i] in ("-e", "-r", "-s", "-t")}
    monkeypatch.chdir(OPTIONS)       # the commands name the inputs as ../common/...
    ev = _ours(files["-e"], files["-r"], files["-s"], files["-t"], args)
    got = _stdout(ev, files["-e"], files["-r"], files["-s"], files["-t"], args)
    problems, stats = compare_reports(expected, got)
    assert not problems, problems[:5]
    assert stats["exact"] > 20


def _det_rows(path: Path) -> list[tuple[float, float, float, float]]:
    rows = []
    for line in path.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        c = line.split()
        rows.append((float(c[0]), float(c[3]), float(c[4]), float(c[5])))   # score, PMiss, PFA, TWV
    return rows


@pytest.mark.parametrize("pooled", [True, False])
def test_det_points_equal_f4de_det_data(pooled, monkeypatch):
    """The DET curve's points (threshold, P_miss, P_FA, TWV) equal F4DE's DET data file (-d, its .dat.1)."""
    monkeypatch.chdir(OPTIONS)
    args = ["-P"] if pooled else []
    ev = _ours(COMMON / "test6.ecf.xml", COMMON / "test6.rttm", COMMON / "test6.kwslist.xml",
               COMMON / "test6.kwlist.xml", args)
    theirs = _det_rows(OPTIONS / ("test6.pooled.det.dat" if pooled else "test6.det.dat"))
    ours = ev.overall.det_points
    assert len(ours) == len(theirs) > 10
    for (t, pm, pf, twv), (t2, pm2, pf2, twv2) in zip(ours, theirs, strict=True):
        assert t == pytest.approx(t2, abs=1e-12)
        assert (pm, pf, twv) == pytest.approx((pm2, pf2, twv2), rel=1e-12, abs=1e-12)


def test_pooled_rates_by_hand():
    """test6 pooled: 35 occurrences of which 17 found, 10 false alarms, T = 100."""
    ev = _ours(COMMON / "test6.ecf.xml", COMMON / "test6.rttm", COMMON / "test6.kwslist.xml",
               COMMON / "test6.kwlist.xml", ["-P"])
    assert list(ev.overall.blocks) == ["Pooled"]
    assert ev.overall.atwv.p_miss == pytest.approx(18 / 35, abs=1e-15)
    assert ev.overall.atwv.p_fa == pytest.approx(10 / (100 - 35), abs=1e-15)
    assert ev.overall.atwv.twv == pytest.approx(1 - 18 / 35 - 999.9 * 10 / 65, abs=1e-12)


def test_file_channel_filter_restricts_t_and_trials():
    ecf, rttm = COMMON / "test6.ecf.xml", COMMON / "test6.rttm"
    kws, kwl = COMMON / "test6.kwslist.xml", COMMON / "test6.kwlist.xml"
    full = _ours(ecf, rttm, kws, kwl, [])
    one = _ours(ecf, rttm, kws, kwl, ["-N", "file01/1"])          # any case, as F4DE's /^...$/i
    other = _ours(ecf, rttm, kws, kwl, ["-N", "FILE02/.*"])
    assert full.overall.tot_trials == 100 and one.overall.tot_trials == 50 == other.overall.tot_trials
    n_true = {s: sum(b.n_true for b in ev.overall.blocks.values()) for s, ev in
              (("full", full), ("one", one), ("other", other))}
    assert n_true["one"] + n_true["other"] == n_true["full"] and 0 < n_true["one"] < n_true["full"]
    with pytest.raises(MismatchError, match="matches none of the ECF's recordings.*'FILE01/1'"):
        _ours(ecf, rttm, kws, kwl, ["-N", "FILE01"])             # whole string: the channel is needed


def test_term_sets_and_their_errors():
    ecf, rttm = COMMON / "test6.ecf.xml", COMMON / "test6.rttm"
    kws, kwl = COMMON / "test6.kwslist.xml", COMMON / "test6.kwlist.xml"
    ev = _ours(ecf, rttm, kws, kwl, ["-T", "odd:TERM-0[13]", "-T", "TERM-02"])
    assert sorted(ev.conditions) == ["TERM-02", "odd"]
    odd = {b.kwid for b in ev.conditions["odd"].evaluated_blocks}
    assert odd == {"TERM-01", "TERM-03"}
    with pytest.raises(MismatchError, match="invalid regular expression"):
        _ours(ecf, rttm, kws, kwl, ["-T", "bad:TERM-(["])
    with pytest.raises(MismatchError, match="at most one"):
        _ours(ecf, rttm, kws, kwl, ["-T", "a:TERM-01", "-Y", "BN:BNEWS"])


def test_segment_file_channel_filter_equals_f4de_on_the_restricted_ecf(monkeypatch):
    """-g -N FILE01/1 on test5's two-recording ECF: F4DE's own expected output of -g on test5.short.ecf.xml,
    the same ECF with only FILE01/1 (F4DE's golden test 6b).  F4DE itself dies on -g -N whenever a keyword
    has a reference occurrence (its filter reads a file name from an occurrence's list of words)."""
    text = (DATA / "expected" / "res_test6b.txt").read_text(encoding="utf-8")
    expected = text.split("[[STDOUT]]\n", 1)[1].split("[[STDERR]]")[0]
    monkeypatch.chdir(DATA / "expected")
    args = ["-g", "-N", "FILE01/1"]
    ev = _ours("../common/test5.ecf.xml", "../common/test5.rttm", "../common/test5.kwslist.xml",
               "../common/test5.kwlist.xml", args)
    got = f4de_stdout(ev, ecf="../common/test5.short.ecf.xml", rttm="../common/test5.rttm",
                      kwslist="../common/test5.kwslist.xml", kwlist="../common/test5.kwlist.xml", summary=True,
                      block=True)
    assert got + "\n" == expected     # (F4DE's test harness adds a blank line)
    whole = _ours("../common/test5.ecf.xml", "../common/test5.rttm", "../common/test5.kwslist.xml",
                  "../common/test5.kwlist.xml", ["-g"])
    assert (ev.overall.tot_trials, whole.overall.tot_trials) == (10, 20)
    with pytest.raises(MismatchError, match="matches none of the ECF's recordings"):
        _ours("../common/test5.ecf.xml", "../common/test5.rttm", "../common/test5.kwslist.xml",
              "../common/test5.kwlist.xml", ["-g", "-N", "FILE01/2"])


def test_segment_pooled_with_more_targets_than_segments_is_refused():
    """test5 -g -P: 35 target segments over all keywords against T = 20 segments: F4DE prints P_FA -0.667
    and TWV 667.09; ours refuses.  The same trials per keyword (no pooling) are scored."""
    files = (COMMON / "test5.ecf.xml", COMMON / "test5.rttm", COMMON / "test5.kwslist.xml", COMMON / "test5.kwlist.xml")
    with pytest.raises(MismatchError, match="pooled trials have 35 target segments.*T = 20"):
        _ours(*files, ["-g", "-P"])
    ev = _ours(*files, ["-g"])
    assert sum(b.n_true for b in ev.overall.blocks.values()) == 35 and ev.overall.tot_trials == 20


def test_segment_pooled_and_term_sets_by_hand():
    """test9 -g -P -T: the pooled block sums the keywords' segment trials; every keyword is also an empty
    overall block (F4DE's segment alignment), so with -inc the keyword averages count them."""
    files = (COMMON / "test9.ecf.xml", COMMON / "test9.rttm", COMMON / "test9.kwslist.xml", COMMON / "test9.kwlist.xml")
    per_kw = _ours(*files, ["-g"])
    pooled = _ours(*files, ["-g", "-P"])
    blocks = pooled.overall.blocks
    assert sorted(blocks) == ["Pooled", "TERM-01", "TERM-02", "TERM-03"]
    assert all(b.n_true == b.n_sys == 0 for k, b in blocks.items() if k != "Pooled")
    for attr in ("n_true", "n_corr", "n_fa", "n_miss", "n_sys"):
        assert getattr(blocks["Pooled"], attr) == sum(getattr(b, attr) for b in per_kw.overall.blocks.values())
    T, beta = 8, 999.9
    b = blocks["Pooled"]
    assert pooled.overall.atwv.twv == pytest.approx(1 - b.n_miss / b.n_true - beta * b.n_fa / (T - b.n_true))
    inc = _ours(*files, ["-g", "-P", "-inc"])
    assert inc.overall.atwv.p_fa == pytest.approx(b.n_fa / (T - b.n_true) / 4)   # averaged with 3 empty blocks
    sets = _ours(*files, ["-g", "-T", "A:TERM-0[12]"])
    assert sorted(sets.conditions["A"].blocks) == ["TERM-01", "TERM-02"]
    assert sets.conditions["A"].blocks["TERM-01"] == per_kw.overall.blocks["TERM-01"]
    # pooled, no keyword has an overall block of its own: each is added (empty) to every set, as F4DE does
    pooled_sets = _ours(*files, ["-g", "-P", "-T", "A:TERM-0[12]"])
    a = pooled_sets.conditions["A"].blocks
    assert sorted(a) == ["TERM-01", "TERM-02", "TERM-03"] and a["TERM-03"].n_true == a["TERM-03"].n_sys == 0
    assert (a["TERM-01"].n_true, a["TERM-01"].n_corr) == (per_kw.overall.blocks["TERM-01"].n_true,
                                                         per_kw.overall.blocks["TERM-01"].n_corr)


def _restricted_ecf(ecf: Path, patterns: list[str], out: Path) -> Path:
    """``ecf`` with only the excerpts of the recordings whose FILE/CHANNEL one of ``patterns`` matches."""
    import re

    lines = ecf.read_text().splitlines(keepends=True)
    kept = []
    for line in lines:
        m = re.search(r'audio_filename="([^"]+)" channel="([^"]+)"', line)
        if m:
            name = f'{m.group(1).split("/")[-1].rsplit(".", 1)[0]}/{m.group(2)}'
            if not any(re.fullmatch(p, name, re.IGNORECASE) for p in patterns):
                continue
        kept.append(line)
    out.write_text("".join(kept))
    return out


def _random_args(rng: random.Random, ecf: Path, kwlist: Path, segment: bool = False) -> list[str]:
    text = ecf.read_text()
    chans = sorted({(f.split("/")[-1].rsplit(".", 1)[0], c) for f, c in
                    __import__("re").findall(r'audio_filename="([^"]+)" channel="([^"]+)"', text)})
    kwids = __import__("re").findall(r'kwid="([^"]+)"', kwlist.read_text())
    args: list[str] = []
    kinds = ["T", "N", "P", "NT", "NP", "TP", "NTP"] if segment else ["T", "N", "P", "NT", "NP", "TP", "NYP", "YP"]
    kind = rng.choice(kinds)
    if "N" in kind:
        picked = rng.sample(chans, rng.randint(1, len(chans)))
        for f, c in picked:
            args += ["-N", rng.choice([f"{f}/{c}", f"{f.lower()}/{c}", f"{f}/.*"])]
    if "T" in kind:
        for s in range(rng.randint(1, 3)):
            ids = rng.sample(kwids, rng.randint(1, max(1, len(kwids) // 2)))
            args += ["-T", f"set{s}:" + ",".join(ids) if rng.random() < 0.8 else f"set{s}:KW-000[0-4]"]
    if "Y" in kind:
        args += ["-Y", "BN+CTS:bnews,CTS", "-Y", "split:splitcts", "-Y", "confmtg"]
    if "P" in kind:
        args += ["-P"]
    return args


def _crosscheck(seeds, tmp_path):
    root = f4de_root()
    totals: Counter = Counter()
    for seed in seeds:
        d = tmp_path / f"case{seed}"
        c = random_case(seed, d)
        if c["segment"]:
            continue
        rng = random.Random(seed)
        args = _random_args(rng, c["ecf"], c["kwlist"]) + (["-inc"] if c["inc"] else [])
        try:
            ev = _ours(c["ecf"], c["rttm"], c["kwslist"], c["kwlist"], args)
        except MismatchError as exc:
            assert "not fewer than the number of trials" in str(exc)
            totals["degenerate"] += 1
            continue
        if any(s.tot_trials == 0 for s in [ev.overall, *ev.conditions.values()]):
            totals["degenerate"] += 1      # F4DE divides by zero
            continue
        f4 = ["-e", str(c["ecf"]), "-r", str(c["rttm"]), "-s", str(c["kwslist"]), "-t", str(c["kwlist"]),
              "-o", "-b", "-f", "-", "-zG", "Supremum"] + args
        if "-T" in args or "-Y" in args:
            f4 += ["-O", "-B"]
        p = run_kwseval(root, f4, d)
        assert p.returncode == 0, (seed, args, p.stdout[-2000:], p.stderr[-2000:])
        got = _stdout(ev, c["ecf"], c["rttm"], c["kwslist"], c["kwlist"], f4)
        # F4DE's warnings (e.g. "No ECF segments available for group") are printed among the reports
        expected = "".join(line for line in p.stdout.splitlines(keepends=True) if not line.startswith("[Warning]"))
        _compare_with_f4de(ev, expected, got, totals, (seed, args))
    return totals


def _compare_with_f4de(ev, expected: str, got: str, totals: Counter, case) -> None:
    """Our report ``got`` equals F4DE's ``expected`` line by line; counted in ``totals``."""
    if any(not s.evaluated_blocks for s in ev.conditions.values()):
        # F4DE's conditional block table (-B) orders the columns of a set without a scored keyword by Perl
        # hash order: the reports before it (with every condition's summary) are compared.
        expected = expected.split("Conditional Block Summary Report")[0]
        got = got.split("Conditional Block Summary Report")[0]
        totals["conditional"] += 1
    problems, stats = compare_reports(expected, got)
    assert not problems, (*case, problems[:5])
    totals.update(stats)
    totals["cases"] += 1


def _crosscheck_segments(seeds, tmp_path):
    """Segment scoring (-g) with -T/-N/-P against F4DE.  F4DE dies on -g -N when a keyword has a reference
    occurrence, so -N is checked against F4DE's -g on the ECF restricted to the matching recordings."""
    root = f4de_root()
    totals: Counter = Counter()
    for seed in seeds:
        d = tmp_path / f"seg{seed}"
        c = random_case(seed, d, segment=True)
        rng = random.Random(seed)
        args = ["-g", *_random_args(rng, c["ecf"], c["kwlist"], segment=True)] + (["-inc"] if c["inc"] else []) \
            + (["-j"] if rng.random() < 0.3 else [])
        try:
            ev = _ours(c["ecf"], c["rttm"], c["kwslist"], c["kwlist"], args)
        except MismatchError as exc:
            # pooled trials with at least T target segments: F4DE prints a negative or undefined P_FA
            assert "pooled trials have" in str(exc) and "-P" in args, (seed, args, exc)
            totals["refused"] += 1
            continue
        patterns = [args[i + 1] for i, a in enumerate(args) if a == "-N"]
        f4_args = [a for i, a in enumerate(args) if a != "-N" and (i == 0 or args[i - 1] != "-N")]
        ecf = _restricted_ecf(c["ecf"], patterns, d / "restricted.ecf.xml") if patterns else c["ecf"]
        f4 = ["-e", str(ecf), "-r", str(c["rttm"]), "-s", str(c["kwslist"]), "-t", str(c["kwlist"]),
              "-o", "-b", "-f", "-", "-zG", "Supremum"] + f4_args
        if "-T" in args:
            f4 += ["-O", "-B"]
        p = run_kwseval(root, f4, d)
        assert p.returncode == 0, (seed, args, p.stdout[-2000:], p.stderr[-2000:])
        got = _stdout(ev, ecf, c["rttm"], c["kwslist"], c["kwlist"], f4)
        _compare_with_f4de(ev, p.stdout, got, totals, (seed, args))
        totals.update(k for k in ("-N", "-T", "-P", "-j") if k in args)
    return totals


@pytest.mark.skipif(f4de_root() is None, reason=f4de_skip_reason())
def test_random_segment_cases_against_f4de(tmp_path):
    totals = _crosscheck_segments(range(7000, 7030), tmp_path)
    assert totals["cases"] >= 20 and min(totals["-N"], totals["-T"], totals["-P"]) >= 5, dict(totals)


@pytest.mark.slow
@pytest.mark.skipif(f4de_root() is None, reason=f4de_skip_reason())
def test_random_segment_cases_against_f4de_300(tmp_path):
    totals = _crosscheck_segments(range(7100, 7400), tmp_path)
    assert totals["cases"] >= 200, dict(totals)
    print(dict(totals))


@pytest.mark.skipif(f4de_root() is None, reason=f4de_skip_reason())
def test_f4de_dies_on_segment_file_channel_filter(tmp_path):
    """Why -g -N is checked against F4DE on a restricted ECF: F4DE 3.5.0 itself stops with a Perl error."""
    p = run_kwseval(f4de_root(), ["-e", str(COMMON / "test5.ecf.xml"), "-r", str(COMMON / "test5.rttm"),
                                  "-s", str(COMMON / "test5.kwslist.xml"), "-t", str(COMMON / "test5.kwlist.xml"),
                                  "-g", "-N", "FILE01/1", "-o", "-f", "-"], tmp_path)
    assert p.returncode != 0 and "Not a HASH reference" in p.stderr


@pytest.mark.slow
@pytest.mark.skipif(f4de_root() is None, reason=f4de_skip_reason())
def test_random_cases_against_f4de_200(tmp_path):
    totals = _crosscheck(range(6000, 6200), tmp_path)
    assert totals["cases"] >= 140, dict(totals)
    print(dict(totals))


@pytest.mark.skipif(f4de_root() is None, reason=f4de_skip_reason())
def test_random_cases_against_f4de(tmp_path):
    totals = _crosscheck(range(3000, 3030), tmp_path)
    assert totals["cases"] >= 15, dict(totals)


def test_cli_options(tmp_path):
    """--term-set, --file-channel, --pooled on the command line; the pooled DET curve drawn as a PNG."""
    pytest.importorskip("matplotlib")
    from click.testing import CliRunner

    from lattice_tools.cli import main

    base = ["kws", "score", "-e", str(COMMON / "test6.ecf.xml"), "-r", str(COMMON / "test6.rttm"),
            "-s", str(COMMON / "test6.kwslist.xml"), "-t", str(COMMON / "test6.kwlist.xml")]
    png = tmp_path / "det.png"
    r = CliRunner().invoke(main, [*base, "--pooled", "--det", str(png), "--json", "-"])
    assert r.exit_code == 0, r.output
    import json

    got = json.loads(r.output)["overall"]
    assert got["counts"] == {"keywords": 1, "n_true": 35, "n_nontarg": 10, "n_sys": 27, "n_corr": 17,
                             "n_corr_nondet": 0, "n_fa": 10, "n_miss": 18}
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = CliRunner().invoke(main, [*base, "--file-channel", "FILE01/1", "--term-set", "A:TERM-0[12]", "--json", "-"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert got["overall"]["T"] == 50 and list(got["conditions"]) == ["A"]
    seg = ["kws", "score", "-e", str(COMMON / "test5.ecf.xml"), "-r", str(COMMON / "test5.rttm"),
           "-s", str(COMMON / "test5.kwslist.xml"), "-t", str(COMMON / "test5.kwlist.xml"), "--segment-based"]
    r = CliRunner().invoke(main, [*seg, "--file-channel", "FILE01/1", "--term-set", "A:TERM-0[12]", "--json", "-"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert got["overall"]["T"] == 10 and got["conditions"]["A"]["counts"]["n_true"] == 20
    r = CliRunner().invoke(main, [*seg, "--alignment", str(tmp_path / "a.csv")])
    assert r.exit_code == 2 and "not available with --segment-based" in r.output and not (tmp_path / "a.csv").exists()
    r = CliRunner().invoke(main, [*seg, "--pooled"])
    assert r.exit_code == 2 and "pooled trials have 35 target segments" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, [*base, "--term-set", "A:TERM-01", "--source-type", "BN:bnews"])
    assert r.exit_code == 2 and "cannot be combined" in r.output
    r = CliRunner().invoke(main, [*base, "--file-channel", "FILE01/(1"])
    assert r.exit_code == 2 and "invalid regular expression" in r.output and "Traceback" not in r.output
