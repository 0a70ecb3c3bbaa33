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
    """score_kws keywords of KWSEval's -T/-N/-P/-inc/-Y arguments."""
    out: dict = {"term_sets": {}, "file_channels": [], "pooled": False, "include_no_targets": False,
                 "source_type_groups": {}}
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


def _random_args(rng: random.Random, ecf: Path, kwlist: Path) -> list[str]:
    text = ecf.read_text()
    chans = sorted({(f.split("/")[-1].rsplit(".", 1)[0], c) for f, c in
                    __import__("re").findall(r'audio_filename="([^"]+)" channel="([^"]+)"', text)})
    kwids = __import__("re").findall(r'kwid="([^"]+)"', kwlist.read_text())
    args: list[str] = []
    kind = rng.choice(["T", "N", "P", "NT", "NP", "TP", "NYP", "YP"])
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
        if any(not s.evaluated_blocks for s in ev.conditions.values()):
            # F4DE's conditional block table (-B) orders the columns of a set without a scored keyword by Perl
            # hash order: the reports before it (with every condition's summary) are compared.
            expected = expected.split("Conditional Block Summary Report")[0]
            got = got.split("Conditional Block Summary Report")[0]
            totals["conditional"] += 1
        problems, stats = compare_reports(expected, got)
        assert not problems, (seed, args, problems[:5])
        totals.update(stats)
        totals["cases"] += 1
    return totals


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
    r = CliRunner().invoke(main, [*base, "--term-set", "A:TERM-01", "--source-type", "BN:bnews"])
    assert r.exit_code == 2 and "cannot be combined" in r.output
    r = CliRunner().invoke(main, [*base, "--file-channel", "FILE01/(1"])
    assert r.exit_code == 2 and "invalid regular expression" in r.output and "Traceback" not in r.output
