"""lattice-tools against Kaldi's own outputs on real lattices (tests/data/kaldi, see PROVENANCE.md):
MBR decoding and sausages (``lattice-mbr-decode``, ``lattice-to-ctm-conf``)."""
from __future__ import annotations

import pytest
from _kaldi_helpers import EXPECTED, INPUTS, SCALES
from click.testing import CliRunner

from lattice_tools.alternatives.sausages import mbr_decode, sausage
from lattice_tools.cli import main
from lattice_tools.io import read_lattices
from lattice_tools.pipelines import latbin

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
        for slot, b in zip(sa.slots, word_bins, strict=False):
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


# ------------------------------------------------------------------------------------------------
# best path, tropical N-best, oracle, scale / add-penalty / prune / depth
# ------------------------------------------------------------------------------------------------
import gzip  # noqa: E402
import re  # noqa: E402

import numpy as np  # noqa: E402
from _kaldi_helpers import DATA, LATS  # noqa: E402

from lattice_tools.algorithms import lattice_depth  # noqa: E402
from lattice_tools.algorithms.kaldi_ops import add_word_penalty, nbest_kaldi, prune_beam, scale  # noqa: E402


@pytest.mark.parametrize("name,scale_", CASES)
def test_best_path_tra_costs_and_ctm_equal_kaldi(tmp_path, name, scale_):
    """lattice-best-path's tra and logged costs (6 digits) and lattice-1best | nbest-to-ctm."""
    exp = EXPECTED / name / f"acwt{scale_}"
    tra, costs, ctm = tmp_path / "tra", tmp_path / "costs", tmp_path / "ctm"
    latbin.best_path(INPUTS[name], tra=str(tra), costs=str(costs), ctm=str(ctm), acoustic_scale=float(scale_))
    assert tra.read_text() == (exp / "best.tra").read_text()
    assert ctm.read_text() == (exp / "1best.ctm").read_text()
    want = re.findall(r"For utterance (\S+), best cost (\S+) \+ (\S+) = (\S+) over (\d+) frames",
                      (exp / "best.log").read_text())
    assert [tuple(line.split()) for line in costs.read_text().splitlines()] == want


def _nbest_archive(path):
    """Kaldi's N-best archive -> {key: (words, graph, acoustic)} summed over each linear lattice."""
    out, key = {}, None
    with gzip.open(path, "rt") as f:
        for line in f:
            t = line.split()
            if not t:
                key = None
                continue
            if key is None:
                key = t[0]
                out[key] = [[], 0.0, 0.0]
                continue
            w = t[3] if len(t) == 4 else (t[1] if len(t) == 2 else None)
            if len(t) >= 3 and t[2] != "0":
                out[key][0].append(int(t[2]))
            if w:
                g, a = w.split(",")[:2]
                out[key][1] += float(g)
                out[key][2] += float(a)
    return out


@pytest.mark.parametrize("name,scale_", CASES)
def test_tropical_nbest_equals_determinize_to_nbest(name, scale_):
    """lattice-determinize | lattice-to-nbest --n=10: the same sequences in the same order, the
    same (unscaled) graph and acoustic costs to Kaldi's printed precision."""
    want = _nbest_archive(EXPECTED / name / f"acwt{scale_}" / "nbest10.txt.gz")
    n_entries = 0
    for lat in read_lattices(INPUTS[name]):
        got = nbest_kaldi(lat, 10, acoustic_scale=float(scale_))
        keys = [k for k in want if k.rsplit("-", 1)[0] == lat.key]
        assert len(got) == len(keys)
        for i, e in enumerate(got, 1):
            words, g, a = want[f"{lat.key}-{i}"]
            assert list(e.words) == words
            assert e.graph_cost == pytest.approx(g, rel=1e-5, abs=1e-3)
            assert e.acoustic_cost == pytest.approx(a, rel=1e-5, abs=1e-3)
            n_entries += 1
    assert n_entries >= 10


def _kaldi_oracle_log(path):
    text = path.read_text()
    per = re.findall(r"%WER \S+ \[ (\d+) / (\d+),", text)
    overall = re.search(r"Overall %WER \S+ \[ (\d+) / (\d+),", text).groups()
    return [tuple(map(int, p)) for p in per[:-1] if True], tuple(map(int, overall))


@pytest.mark.parametrize("wildcards,log,err", [((), "oracle.log", "oracle.err"),
                                               ((999999, 40), "wildcard-999999-40.log", "wildcard-999999-40.err")])
def test_oracle_error_counts_equal_lattice_oracle(tmp_path, wildcards, log, err):
    """lattice-oracle (and --wildcard-symbols=999999:40): the same errors per utterance and in total
    (the oracle path itself may differ where several paths have as few errors)."""
    exp = EXPECTED / "bundled" / "oracle"
    errors = tmp_path / "err"
    res = latbin.oracle(INPUTS["bundled"], str(LATS / "bundled.ref.txt"), errors=str(errors),
                        wildcard_symbols=wildcards, words=str(LATS / "bundled.words.txt"))
    assert errors.read_text() == (exp / err).read_text()
    _, (errs, nref) = _kaldi_oracle_log(exp / log)
    assert (res.errors, res.words) == (errs, nref)


def _close(a, b):
    """Kaldi's text archives print weights with 6 significant digits."""
    return (np.array_equal(a.src, b.src) and np.array_equal(a.dst, b.dst) and np.array_equal(a.word, b.word)
            and np.allclose(a.graph_cost, b.graph_cost, rtol=6e-6, atol=1e-6)
            and np.allclose(a.acoustic_cost, b.acoustic_cost, rtol=6e-6, atol=1e-6))


@pytest.mark.parametrize("op,fname", [(lambda lat: scale(lat, acoustic_scale=0.1, lm_scale=2), "scale-ac0.1-lm2"),
                                      (lambda lat: add_word_penalty(lat, 0.5), "add-penalty-0.5")])
def test_scale_and_add_penalty_equal_kaldi(op, fname):
    want = list(read_lattices(f"ark:{EXPECTED / 'kgraph' / 'ops' / (fname + '.ark.gz')}"))
    got = [op(lat) for lat in read_lattices(INPUTS["kgraph"])]
    assert len(got) == len(want) == 10
    assert all(_close(a, b) for a, b in zip(got, want, strict=False))


def _canon(lat):
    o = np.lexsort((lat.graph_cost, lat.word, lat.t1, lat.t0))
    return np.stack([lat.t0[o], lat.t1[o], lat.word[o]]), np.stack([lat.graph_cost[o], lat.acoustic_cost[o]])


@pytest.mark.parametrize("name", ["kgraph", "bundled"])
@pytest.mark.parametrize("beam,ac,fname", [(5.0, 0.1, "prune-beam5-ac0.1"), (2.0, 1.0, "prune-beam2")])
def test_prune_equals_lattice_prune(name, beam, ac, fname):
    """lattice-prune: the same states, the same arcs (word, frames, weights to 6 digits)."""
    want = list(read_lattices(f"ark:{EXPECTED / name / 'ops' / (fname + '.ark.gz')}"))
    got = [prune_beam(lat, beam, acoustic_scale=ac) for lat in read_lattices(INPUTS[name])]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=False):
        assert (g.num_states, g.num_arcs) == (w.num_states, w.num_arcs)
        (sg, wg), (sw, ww) = _canon(g), _canon(w)
        assert np.array_equal(sg, sw)
        assert np.allclose(wg, ww, rtol=6e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["kgraph", "bundled"])
def test_depth_equals_lattice_depth(tmp_path, name):
    want = {line.split()[0]: float(line.split()[1]) for line in (EXPECTED / name / "ops" / "depth.txt").open()}
    for lat in read_lattices(INPUTS[name]):
        assert lattice_depth(lat) == pytest.approx(want[lat.key], rel=1e-6)
    overall = float(re.search(r"Overall density is (\S+)", (EXPECTED / name / "ops" / "depth.log").read_text())[1])
    assert latbin.depth(INPUTS[name], out=str(tmp_path / "d")).density == pytest.approx(overall, rel=1e-5)


def test_cli_commands_write_kaldi_tables(tmp_path):
    exp = EXPECTED / "kgraph" / "acwt0.1"
    runner = CliRunner()
    res = runner.invoke(main, ["best-path", INPUTS["kgraph"], "--acoustic-scale", "0.1", "--tra", str(tmp_path / "t")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "t").read_text() == (exp / "best.tra").read_text()
    res = runner.invoke(main, ["nbest-paths", INPUTS["insertion"], "-n", "2", "--tra", str(tmp_path / "n")])
    assert res.exit_code == 0 and (tmp_path / "n").read_text() == "u2-1 2 3 \nu2-2 \n"
    res = runner.invoke(main, ["oracle-path", INPUTS["bundled"], "-r", str(LATS / "bundled.ref.txt"),
                               "--wildcard-symbols", "999999:40", "--errors", str(tmp_path / "e")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "e").read_text() == (EXPECTED / "bundled" / "oracle" / "wildcard-999999-40.err").read_text()
    res = runner.invoke(main, ["prune", INPUTS["kgraph"], "-o", f"ark,t:{tmp_path / 'p.ark'}", "--beam", "2"])
    assert res.exit_code == 0, res.output
    assert len(list(read_lattices(f"ark,t:{tmp_path / 'p.ark'}"))) == 10
    bad_ref = tmp_path / "ref.txt"
    bad_ref.write_text("001 48 40 13\n002 ten of clubs\n")
    res = runner.invoke(main, ["oracle-path", INPUTS["bundled"], "-r", str(bad_ref)])
    assert res.exit_code == 2 and "word ids" in res.output and "ref.txt:2" in res.output
    assert DATA.is_dir()


# ------------------------------------------------------------------------------------------------
# the vectorized text reader reads what the line parser reads
# ------------------------------------------------------------------------------------------------
EDGE_ARCHIVE = """a1
0\t1\t3\t0.5,1.25,1_2_3
0 2 0
1 3 4 2,0,
2 3 5 1e-3,-2.5,7_7_7
3 0.1,0.2,1_1
2

a2
0 1 1 0.1,0.2,4
1
"""


def _blocks(spec):
    """(key, text block) of every lattice of a text archive."""
    from lattice_tools.io.lattices import kaldi as K

    path = K.parse_specifier(spec).path
    with K.open_binary_input(path) as f:
        r = K._Reader(f, path)
        while True:
            r.skip_whitespace()
            if not r.peek(1):
                return
            key = r.read_token().decode()
            r.readline()
            yield key, bytes(r.read_text_block()[0])


def _same_raw(a, b):
    for f in ("src", "dst", "ilabel", "olabel", "w1", "w2", "final_w1", "final_w2"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype and np.array_equal(x, y), f
    assert (a.kind, a.start, a.num_states) == (b.kind, b.start, b.num_states)
    assert len(a.strings) == len(b.strings)
    assert all(x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip(a.strings, b.strings, strict=True))
    assert sorted(a.final_strings) == sorted(b.final_strings)
    assert all(np.array_equal(a.final_strings[s], b.final_strings[s]) for s in a.final_strings)


@pytest.mark.parametrize("name", ["bundled", "insertion", "edge"])
def test_text_reader_equals_the_line_parser_it_replaced(tmp_path, name):
    """The C text reader gives the RawFst the Python line parser (tests/_reference) gave."""
    from _reference.kaldi_text import parse_text_fst

    from lattice_tools.io.lattices._kaldi_text import parse_text_block

    if name == "edge":
        (tmp_path / "e.ark").write_text(EDGE_ARCHIVE)
        spec = f"ark:{tmp_path / 'e.ark'}"
    else:
        spec = INPUTS[name]
    blocks = list(_blocks(spec))
    assert blocks
    for key, block in blocks:
        lines = list(enumerate(block.decode().split("\n"), 1))
        _same_raw(parse_text_block(block, 1, "x", key), parse_text_fst(lines, "x", key))


@pytest.mark.parametrize("bad,msg", [("u\n0 1 2 x,0,1\n1\n\n", "bad Kaldi"), ("u\n0 1 2 3 4 5\n\n", "at most 5"),
                                     ("u\n0 1 -2 1,0,1\n1\n\n", "-2"),
                                     ("u\n0 1 2.0 1,0,1\n1\n\n", "2.0"), ("u\n0 1 3000000000 1,0,1\n1\n\n", "int32"),
                                     ("u\n0 1 1_0 0,0,1\n1\n\n", "1_0"), ("u\n0 1 2 1,0,1__2\n1\n\n", "1__2"),
                                     ("u\n0 1 2 1,0,_2\n1\n\n", "_2"), ("u\n0 1 2 1,0,2_\n1\n\n", "2_"),
                                     ("u\n0 1 2 1,0,9999999999\n1\n\n", "9999999999"),
                                     ("u\n0 1 2 1.5.1,0,1\n1\n\n", "1.5.1"), ("u\n0 1 2 nan,0,1\n1\n\n", "NaN"),
                                     ("u\n0 1 2 1,0,1\n1\n1\n\n", "two final")])
def test_text_reader_names_the_problem(tmp_path, bad, msg):
    """Malformed text is refused with an error that says what is wrong."""
    from lattice_tools.core.errors import LatticeToolsError

    (tmp_path / "b.ark").write_text(bad)
    with pytest.raises(LatticeToolsError, match=msg):
        list(read_lattices(f"ark:{tmp_path / 'b.ark'}"))


def test_latbin_jobs_read_inputs_like_every_command(tmp_path):
    """The Kaldi-equivalent jobs read through the one multi-input reader: an utterance given twice is
    refused (naming it), and a non-positive --frame-shift is an input error, not a silent scaling."""
    from lattice_tools.core.errors import FormatError, MismatchError

    with pytest.raises(MismatchError, match="given twice"):
        latbin.depth([INPUTS["insertion"], INPUTS["insertion"]])
    with pytest.raises(FormatError, match="--frame-shift"):
        latbin.depth(INPUTS["insertion"], frame_shift=-0.01)


def test_latbin_commands_take_the_shared_input_options(tmp_path):
    """The Kaldi-equivalent commands spell their input options as every other command does
    (cli/_inputs.py), including --frame-subsampling-factor (chain models: 3 input frames per
    lattice frame), which scales every CTM time."""
    runner = CliRunner()
    out = {}
    for factor in ("1", "3"):
        ctm = tmp_path / f"best{factor}.ctm"
        r = runner.invoke(main, ["best-path", INPUTS["insertion"], "--ctm", str(ctm), "--frame-shift", "0.01",
                                 "--frame-subsampling-factor", factor])
        assert r.exit_code == 0, r.output
        out[factor] = [line.split() for line in ctm.read_text().splitlines()]
    assert out["1"] and len(out["1"]) == len(out["3"])
    for a, b in zip(out["1"], out["3"], strict=True):
        assert float(b[2]) == pytest.approx(3 * float(a[2])) and float(b[3]) == pytest.approx(3 * float(a[3]))
    for name in ("mbr-decode", "best-path", "nbest-paths", "oracle-path", "scale", "add-penalty", "prune", "depth"):
        opts = {o for p in main.get_command(None, name).params for o in p.opts}
        assert {"--words", "--frame-shift", "--frame-subsampling-factor", "--format"} <= opts, name


def test_the_parity_cases_overlap_one_best_words(monkeypatch):
    """Kaldi's fix-up of overlapping one-best word times (lattice_tools.alternatives.sausages._fix_overlap)
    runs on these lattices, so the byte-identical one-best times above check it against Kaldi itself (the
    transcription in tests/_reference/mbr.py has its own copy, written from Kaldi's description)."""
    import lattice_tools.alternatives.sausages as sausages_module

    calls = []
    real = sausages_module._fix_overlap
    monkeypatch.setattr(sausages_module, "_fix_overlap", lambda t, i: (calls.append(i), real(t, i)))
    for name in ("kgraph", "bundled"):
        before = len(calls)
        for lat in read_lattices(INPUTS[name]):
            mbr_decode(lat, acoustic_scale=1.0)
        assert len(calls) > before, name
