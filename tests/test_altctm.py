"""alt-CTM writing/reading, statistics, sclite acceptance, and the nbest/sausage/phrases CLI."""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess

import _alt_helpers
import pytest
from _alt_helpers import DATA, ps_lattice
from click.testing import CliRunner

from lattice_tools.alternatives.nbest_lists import nbest
from lattice_tools.alternatives.phrase_alternatives import phrases
from lattice_tools.alternatives.sausages import sausage
from lattice_tools.core.alternatives_network import Alternative, Alternatives, Slot
from lattice_tools.core.errors import FormatError
from lattice_tools.io.transcripts.altctm import read_alternatives_ctm, write_alternatives_ctm

SCLITE = shutil.which("sclite") or ("/usr/lib/sctk/bin/sclite" if os.path.exists("/usr/lib/sctk/bin/sclite") else None)
CLIP = "sense_and_sensibility_01_austen_64kb-0880"


def _toy():
    return Alternatives("utt", (
        Slot(0.0, 0.5, (Alternative(("a", "b"), (0.0, 0.2), (0.2, 0.3), 0.7, (0.7, 0.7)),
                        Alternative((), posterior=0.2), Alternative(("c",), (0.1,), (0.3,), 0.1, (0.1,)))),
        Slot(0.5, 0.9, (Alternative(("d",), (0.5,), (0.4,), 1.0, (1.0,)),)),
    ), kind="phrase")


def test_flat_blocks_and_round_trip(tmp_path):
    path = tmp_path / "x.ctm"
    stats = write_alternatives_ctm(str(path), [_toy()])
    lines = path.read_text().splitlines()
    assert lines[0] == "utt 1 * * <ALT_BEGIN>"
    assert "utt 1 * * @" in lines and lines.count("utt 1 * * <ALT_BEGIN>") == 1
    assert lines[-1] == "utt 1 0.50 0.40 d 1.0000"  # single-alternative slot: plain line
    assert stats.n_max == 3 and stats.blocks == 2 and stats.alt_blocks == 1 and stats.depths == (3, 1)
    back = read_alternatives_ctm(str(path))
    assert len(back) == 1
    for s1, s2 in zip(back[0].slots, _toy().slots, strict=False):
        assert [a.words for a in s1.alternatives] == [a.words for a in s2.alternatives]
        for a1, a2 in zip(s1.alternatives, s2.alternatives, strict=False):
            assert a1.posterior == pytest.approx(a2.posterior, abs=1e-4)
            assert a1.starts == pytest.approx(a2.starts, abs=0.005)
    # depth 1 = plain 1-best CTM
    one = tmp_path / "one.ctm"
    write_alternatives_ctm(str(one), [_toy()], n=1)
    assert [ln.split()[4] for ln in one.read_text().splitlines()] == ["a", "b", "d"]


def test_no_times_spread_over_slot_or_error(tmp_path):
    alts = Alternatives("u", (Slot(1.0, 2.0, (Alternative(("x", "y")),)),))
    write_alternatives_ctm(str(tmp_path / "a.ctm"), [alts])
    assert (tmp_path / "a.ctm").read_text().split("\n")[1].split()[2:4] == ["1.50", "0.50"]
    bad = Alternatives("u", (Slot(math.nan, math.nan, (Alternative(("x",)),)),))
    with pytest.raises(FormatError):
        write_alternatives_ctm(str(tmp_path / "b.ctm"), [bad])
    assert not (tmp_path / "b.ctm").exists()


def test_gzip_and_stats(tmp_path):
    lat = ps_lattice()
    a = phrases(lat, 10, 0.1, acoustic_scale=0.1)
    st = write_alternatives_ctm(str(tmp_path / "p.ctm.gz"), [a], n=10)
    import gzip
    text = gzip.open(tmp_path / "p.ctm.gz", "rt").read()
    assert text.count("<ALT_BEGIN>") == st.alt_blocks
    assert st.n_max == max(a.depths) and st.blocks == len(a.slots)
    assert 0 < st.gzip_bytes < st.bytes


def _sclite_err(ref, hyp, tmp_path):
    out = subprocess.run([SCLITE, "-r", str(ref), "stm", "-h", str(hyp), "ctm", "-o", "sum", "stdout"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    m = re.search(r"Sum/Avg\s*\|\s*(\d+)\s+(\d+)\s*\|\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", out.stdout)
    assert m, out.stdout
    return float(m.group(7))


@pytest.mark.skipif(SCLITE is None, reason="Debian sctk (sclite) is not installed")
def test_sclite_accepts_and_scores(tmp_path):
    lat = ps_lattice()
    words = {}
    for line in open(DATA / "librivox" / "transcription.trn"):
        text, utt = line.rsplit("(", 1)
        words[utt.strip().rstrip(")")] = text.strip()
    ref = tmp_path / "ref.stm"
    ref.write_text(f"{CLIP} 1 spk 0.00 {lat.duration + 1:.2f} {words[CLIP]}\n")
    errs = {}
    for name, alts, n in [("one", phrases(lat, 1, 0.1, acoustic_scale=0.1), 1),
                          ("phr", phrases(lat, 10, 0.1, acoustic_scale=0.1), None),
                          ("nb", nbest(lat, 10, acoustic_scale=0.1), None),
                          ("saus", sausage(lat, None, acoustic_scale=0.1), None)]:
        hyp = tmp_path / f"{name}.ctm"
        write_alternatives_ctm(str(hyp), [alts], n=n)
        errs[name] = _sclite_err(ref, hyp, tmp_path)
    # sclite picks the best path through the alternatives: never worse than the 1-best
    assert errs["phr"] <= errs["one"] and errs["saus"] <= errs["one"] + 1e-9
    assert errs["phr"] < errs["one"]


def test_cli_commands(tmp_path):
    from lattice_tools.cli import main

    lat = ps_lattice()
    slf = os.path.join(_alt_helpers._PS_DIR, CLIP + ".lat")
    seg = tmp_path / "segments"
    seg.write_text(f"{CLIP} rec1 10.0 {10 + lat.duration:.2f}\n")
    runner = CliRunner()
    for cmd, extra in [("phrases", ["--posterior-threshold", "0.1"]), ("nbest", []), ("sausage", [])]:
        out_ctm, out_json = tmp_path / f"{cmd}.ctm", tmp_path / f"{cmd}.json"
        res = runner.invoke(main, [cmd, str(slf), "-n", "3", "--acoustic-scale", "0.1", "-o", str(out_ctm),
                                   "--json", str(out_json), "--segments", str(seg), *extra])
        assert res.exit_code == 0, res.output
        st = json.loads(out_json.read_text())
        assert st["N"] == 3 and st["N_max"] <= 3 and st["utterances"] == 1 and st["kind"] == cmd
        lines = out_ctm.read_text().splitlines()
        assert all(ln.split()[:2] == ["rec1", "1"] for ln in lines)
        times = [float(ln.split()[2]) for ln in lines if ln.split()[2] != "*"]
        assert min(times) >= 10.0
    bad = tmp_path / "badseg"
    bad.write_text("x y z\n")
    res = runner.invoke(main, ["nbest", str(slf), "-o", str(tmp_path / "z.ctm"), "--segments", str(bad)])
    assert res.exit_code == 2 and "badseg:1" in res.output


def test_cli_k2_lattices_through_shared_reader(tmp_path, test_data_dir):
    """Frame-level k2 lattices are word-aligned on the way (icefall times: SEE starts at frame 4)."""
    from lattice_tools.cli import main

    k2 = test_data_dir / "k2-fixtures"
    out = tmp_path / "k2.ctm"
    res = CliRunner().invoke(main, ["nbest", str(k2 / "hlg_lattice.pt"), "-n", "1", "--words", str(k2 / "words.txt"),
                                    "-o", str(out)])
    assert res.exit_code == 0, res.output
    lines = [ln.split() for ln in out.read_text().splitlines()]
    assert [ln[4] for ln in lines if ln[0] == "0"] == ["SEE", "THE", "RED", "SAND"]
    assert float(lines[0][2]) == pytest.approx(4 * 0.04)
