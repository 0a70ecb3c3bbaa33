"""lattice-tools against Kaldi's own outputs on real lattices (tests/data/kaldi, see PROVENANCE.md):
MBR decoding and sausages (``lattice-mbr-decode``, ``lattice-to-ctm-conf``)."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from _kaldi_helpers import EXPECTED, INPUTS, SCALES
from lattice_tools import latbin
from lattice_tools.alternatives.sausage import mbr_decode, sausage
from lattice_tools.cli import main
from lattice_tools.io import read_lattices

CASES = [(name, s) for name in INPUTS for s in SCALES]


@pytest.mark.parametrize("name,scale", CASES)
def test_mbr_decode_tables_are_byte_identical_to_kaldi(tmp_path, name, scale):
    """tra, Bayes risk, sausage stats (every bin, pure-epsilon ones included), bin times, one-best
    times and the lattice-to-ctm-conf CTM: the same bytes as Kaldi's files."""
    exp = EXPECTED / name / f"acwt{scale}"
    out = {k: tmp_path / k for k in ("tra", "risk", "saus", "times", "obt", "ctm")}
    latbin.mbr_decode(INPUTS[name], tra=str(out["tra"]), bayes_risk=str(out["risk"]), sausage_stats=str(out["saus"]),
                      times=str(out["times"]), ctm=str(out["ctm"]), acoustic_scale=float(scale))
    latbin.mbr_decode(INPUTS[name], times=str(out["obt"]), one_best_times=True, acoustic_scale=float(scale))
    pairs = {"tra": "mbr.tra", "risk": "mbr.risk", "saus": "mbr.saus", "times": "mbr.times",
             "obt": "mbr.one-best-times", "ctm": "ctm-conf.ctm"}
    for k, fname in pairs.items():
        assert out[k].read_text() == (exp / fname).read_text(), f"{name} acwt {scale}: {fname} differs"


def test_bundled_scale_changes_only_the_order():
    """The bundled lattices have no acoustic costs: scale 0.1 changes no weight, yet Kaldi's bins
    move because Kaldi re-sorts the states; ours follow (and say so)."""
    lat = next(iter(read_lattices(INPUTS["bundled"])))
    a, b = mbr_decode(lat), mbr_decode(lat, acoustic_scale=0.1)
    assert not a.meta["resorted"] and b.meta["resorted"]
    assert a.words == b.words


def test_insertion_case_keeps_the_epsilon_aligned_word():
    """lats/insertion.ark: Kaldi's last bin is [ <eps> 0.731, f 0.269 ]; the sausage keeps it (the
    pure-epsilon bins 0 and 2 are the only ones dropped) and the word f is an alternative."""
    lat = next(iter(read_lattices(INPUTS["insertion"])))
    r = mbr_decode(lat)
    assert [[w for w, _ in b] for b in r.bins] == [[0], [2, 1, 0], [0], [3, 4, 0], [0, 6]]
    assert r.bayes_risk == pytest.approx(1.323832, abs=1e-6)
    sa = sausage(lat)
    assert sa.meta["kaldi_bins"] == (1, 3, 4)
    last = sa.slots[-1]
    assert [a.words for a in last.alternatives] == [(), ("6",)]
    assert last.alternatives[1].posterior == pytest.approx(0.2689414, abs=1e-6)
    assert sa.one_best() == ["2", "3"]


@pytest.mark.parametrize("name", list(INPUTS))
def test_sausage_slots_are_kaldis_word_bins(name):
    """sausage() = Kaldi's bins that hold a word, same entries and posteriors (to 1e-7)."""
    for lat in read_lattices(INPUTS[name]):
        r = mbr_decode(lat, acoustic_scale=0.1)
        sa = sausage(lat, acoustic_scale=0.1, silence_words=())
        word_bins = [b for b in r.bins if any(w for w, _ in b)]
        assert len(sa.slots) == len(word_bins)
        for slot, b in zip(sa.slots, word_bins):
            got = [(a.words[0] if a.words else "0", a.posterior) for a in slot.alternatives]
            want = [(lat.symbols.word(w) if w else "0", p) for w, p in b if p > 0]
            assert [g[0] for g in got] == [w[0] for w in want]
            assert [g[1] for g in got] == pytest.approx([w[1] for w in want], abs=1e-7)


def test_mbr_decode_cli(tmp_path):
    exp = EXPECTED / "insertion" / "acwt1.0"
    res = CliRunner().invoke(main, ["mbr-decode", INPUTS["insertion"], "--sausage-stats", str(tmp_path / "s"),
                                    "--ctm", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "s").read_text() == (exp / "mbr.saus").read_text()
    assert (tmp_path / "c").read_text() == (exp / "ctm-conf.ctm").read_text()
    bad = tmp_path / "bad.ark"
    bad.write_text("u1\n0 1 5 1.0,0,1\n1 2 6 1.0,0,1_1\n0 2 7 1.0,0,1\n2\n\n")  # inconsistent state times
    res = CliRunner().invoke(main, ["mbr-decode", f"ark:{bad}", "--tra", str(tmp_path / "t")])
    assert res.exit_code == 2 and "frames" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "t").exists()
