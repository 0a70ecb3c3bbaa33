"""Segment-free oracle (lattice_tools.oracle.segment_free): the best path of a whole-side lattice against
all the STM segments of its side equals brute force over the lattice's paths (each path scored against the
side with the same alignment), equals the per-utterance lattice oracle against the side's segments merged
into one, and a collar only raises it."""
from __future__ import annotations

import random

import numpy as np
import pytest
from _oracle_helpers import VOCAB, enumerate_paths, random_lattice
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.core.errors import MismatchError
from lattice_tools.io.transcripts.stm import StmSegment
from lattice_tools.oracle import lattice_oracle
from lattice_tools.oracle.segment_free import segment_free_oracle, side_of_key
from lattice_tools.scoring.align import AlignOptions
from lattice_tools.scoring.network import linear_network
from lattice_tools.scoring.segment_free import align_side, side_reference


def _side(rng: random.Random, n_segs: int, file="f1", channel="A"):
    segs, t = [], 0.0
    for k in range(n_segs):
        words = " ".join(rng.choice(VOCAB) for _ in range(rng.randint(0, 3)))
        segs.append(StmSegment(file, channel, f"{file}_{channel}", t, t + 2.0, None, words, k + 1))
        t += 2.5
    return segs


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_states=st.integers(2, 7), extra=st.integers(0, 8),
       n_segs=st.integers(1, 3), mode=st.sampled_from(["sclite", "levenshtein"]))
def test_equals_brute_force_and_the_merged_reference(seed, n_states, extra, n_segs, mode):
    rng = np.random.default_rng(seed)
    lat = random_lattice(rng, n_states, extra)
    lat = type(lat).from_arcs(src=lat.src, dst=lat.dst, word=lat.word, symbols=lat.symbols,
                              final_graph_cost=lat.final_graph_cost, t0=lat.t0, t1=lat.t1, key="f1-A")
    segs = _side(random.Random(seed), n_segs)
    [res] = segment_free_oracle([lat], segs, mode=mode)
    ref, _, _ = side_reference(segs)
    opts = AlignOptions(mode=mode)
    costs = [align_side(ref, linear_network(list(p), case_sensitive=False), opts)[0].cost for p in enumerate_paths(lat)]
    assert res.cost == pytest.approx(min(costs), abs=1e-3)
    assert tuple(res.words) in {tuple(w.lower() for w in p) for p in enumerate_paths(lat)}
    merged = " ".join(s.text for s in segs if s.text)
    per_utt = lattice_oracle(lat, merged, mode=mode)
    if mode == "levenshtein":
        assert res.counts.errors == per_utt.counts.errors == round(min(costs))
    assert res.counts.ref_words == per_utt.counts.ref_words


@pytest.mark.parametrize("seed", range(20))
def test_a_collar_only_raises_the_oracle(seed):
    rng = np.random.default_rng(seed)
    lat = random_lattice(rng, 7, 8)
    lat = type(lat).from_arcs(src=lat.src, dst=lat.dst, word=lat.word, symbols=lat.symbols,
                              final_graph_cost=lat.final_graph_cost, t0=lat.t0 * 40, t1=lat.t1 * 40, key="f1")
    segs = _side(random.Random(seed), 3)
    free = segment_free_oracle([lat], segs, mode="levenshtein")[0]
    wide = segment_free_oracle([lat], segs, mode="levenshtein", collar=1000.0)[0]
    narrow = segment_free_oracle([lat], segs, mode="levenshtein", collar=0.0)[0]
    assert wide.cost == free.cost
    assert narrow.cost >= free.cost
    assert narrow.counts.ref_words == free.counts.ref_words


def test_keys_and_missing_sides():
    sides = {("f1", "a"): [], ("f2", "a"): [], ("f2", "b"): []}
    assert side_of_key("F1", sides) == ("f1", "a")
    assert side_of_key("f2-B", sides) == ("f2", "b")
    assert side_of_key("f2_a", sides) == ("f2", "a")
    assert side_of_key("f2", sides) is None        # two channels: the key must name one
    rng = np.random.default_rng(0)
    lat = random_lattice(rng, 4, 2)
    segs = _side(random.Random(0), 2) + _side(random.Random(1), 1, file="f9")
    keyed = type(lat).from_arcs(src=lat.src, dst=lat.dst, word=lat.word, symbols=lat.symbols,
                                final_graph_cost=lat.final_graph_cost, key="f1")
    with pytest.raises(MismatchError, match="without lattice, e.g. f9 a"):
        segment_free_oracle([keyed], segs)
    warnings: list = []
    assert len(segment_free_oracle([keyed], segs, allow_missing=True, warnings=warnings)) == 1
    assert warnings
    other = type(lat).from_arcs(src=lat.src, dst=lat.dst, word=lat.word, symbols=lat.symbols,
                                final_graph_cost=lat.final_graph_cost, key="g7")
    with pytest.raises(MismatchError, match="names no file/channel"):
        segment_free_oracle([other], segs)


def test_cli_oracle_segment_free(tmp_path):
    """lattice-tools oracle --segment-free on SLF lattices (one per side) against a multi-segment STM: the
    same numbers as the Python API; a collar without --segment-free is refused."""
    import json
    import subprocess
    import sys

    from lattice_tools.io import write_lattices
    from lattice_tools.io.transcripts.stm import read_stm

    rng = np.random.default_rng(3)
    lats, stm = [], []
    for f in ("f1", "f2"):
        lat = random_lattice(rng, 7, 6)
        lats.append(type(lat).from_arcs(src=lat.src, dst=lat.dst, word=lat.word, symbols=lat.symbols,
                                        final_graph_cost=lat.final_graph_cost, t0=np.asarray(lat.src) * 30,
                                        t1=np.asarray(lat.dst) * 30, key=f"{f}-A"))   # SLF: a time per node
        stm += [f"{f} A {f}_A {s.start:.2f} {s.end:.2f} <o,f0,male> {s.text}".rstrip()
                for s in _side(random.Random(f == "f2"), 3, file=f)]
    write_lattices(lats, str(tmp_path / "lats"), format="slf")
    (tmp_path / "r.stm").write_text("\n".join(stm) + "\n")
    run = [sys.executable, "-m", "lattice_tools", "oracle", str(tmp_path / "lats"), "-r", str(tmp_path / "r.stm"),
           "--mode", "levenshtein"]
    for extra in ([], ["--collar", "0.5"]):
        out = subprocess.run(run + ["--segment-free", "--json", "-", *extra], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        collar = float(extra[1]) if extra else None
        from lattice_tools.io import read_lattices
        expected = segment_free_oracle(read_lattices(str(tmp_path / "lats")), read_stm(str(tmp_path / "r.stm")),
                                       mode="levenshtein", collar=collar)
        assert report["counts"]["errors"] == sum(r.counts.errors for r in expected)
        assert [u["key"] for u in report["utterances"]] == ["f1-A", "f2-A"]
    bad = subprocess.run(run + ["--collar", "1"], capture_output=True, text=True)
    assert bad.returncode == 2 and "segment-free" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("seed", range(30))
def test_collar_on_lattices_with_final_states_inside(seed):
    """A final state with arcs after it (its null arc to the new final state comes out of order) and a
    collar: the oracle still equals brute force under the same time constraint."""
    rng = np.random.default_rng(seed)
    lat = random_lattice(rng, 7, 8)
    fin = np.asarray(lat.final_graph_cost).copy()
    fin[3] = 0.0
    lat = type(lat).from_arcs(src=lat.src, dst=lat.dst, word=lat.word, symbols=lat.symbols, final_graph_cost=fin,
                              t0=np.asarray(lat.src) * 50, t1=np.asarray(lat.dst) * 50, key="f1")
    segs = _side(random.Random(seed), 3)
    [res] = segment_free_oracle([lat], segs, mode="levenshtein", collar=0.3)
    ref, _, rt = side_reference(segs)
    from lattice_tools.oracle.segment_free import lattice_network
    net = lattice_network(lat)
    best = np.inf
    # brute force: every path of the network (word arcs with their times), aligned under the collar
    out: dict = {}
    for a in range(net.num_arcs):
        out.setdefault(int(net.src[a]), []).append(a)
    stack = [(0, ())]
    while stack:
        s, arcs = stack.pop()
        if s == net.final:
            words = [a for a in arcs if net.words[a] is not None]
            line = linear_network([net.words[a] for a in words], starts=[net.start[a] for a in words],
                                  durations=[net.duration[a] for a in words])
            mid = (line.start + (line.start + line.duration)) / 2
            cost = align_side(ref, line, AlignOptions(mode="levenshtein"), ref_times=rt, hyp_times=(mid, mid),
                              collar=0.3, banded=False)[0].cost
            best = min(best, cost)
        for a in out.get(s, []):
            stack.append((int(net.dst[a]), arcs + (a,)))
    assert res.cost == pytest.approx(best, abs=1e-4)
    assert res.counts.errors == round(best)


def test_collar_needs_lattice_times():
    from lattice_tools.core.errors import LatticeError

    rng = np.random.default_rng(1)
    lat = random_lattice(rng, 4, 2, eps_prob=0.0)
    untimed = type(lat).from_arcs(src=lat.src, dst=lat.dst, word=lat.word, symbols=lat.symbols,
                                  final_graph_cost=lat.final_graph_cost, key="f1")
    segs = _side(random.Random(0), 2)
    with pytest.raises(LatticeError, match="collar needs the times"):
        segment_free_oracle([untimed], segs, collar=1.0)
    assert segment_free_oracle([untimed], segs)[0].counts.ref_words == side_reference(segs)[0].num_arcs


@pytest.mark.parametrize("representation", ["1best", "nbest", "sausage", "phrase"])
@pytest.mark.parametrize("collar", [None, 0.5])
def test_oracle_of_alternatives_equals_scoring_their_alt_ctm(tmp_path, representation, collar):
    """oracle --segment-free --representation X of whole-side lattices = score --segment-free of the alt-CTM
    of the same alternatives placed on their sides (two entry points, one alignment), and the whole-lattice
    oracle is at most the 1-best's and the N-best's (their entries are lattice paths; sausage bins and phrase
    combinations can make sequences the lattice does not have)."""
    from lattice_tools.io import read_lattices, write_lattices
    from lattice_tools.io.transcripts.altctm import write_alternatives_ctm
    from lattice_tools.oracle.report import oracle_wer
    from lattice_tools.oracle.representations import make_alternatives
    from lattice_tools.scoring import score_files

    rng = np.random.default_rng(11)
    lats, stm = [], []
    for f in ("f1", "f2", "f3"):
        lat = random_lattice(rng, 8, 8)
        lats.append(type(lat).from_arcs(src=lat.src, dst=lat.dst, word=lat.word, symbols=lat.symbols,
                                        final_graph_cost=lat.final_graph_cost, t0=np.asarray(lat.src) * 30,
                                        t1=np.asarray(lat.dst) * 30, key=f"{f}-A"))
        stm += [f"{f} A {f}_A {s.start:.2f} {s.end:.2f} <o,f0,male> {s.text}".rstrip()
                for s in _side(random.Random(f), 3, file=f)]
    write_lattices(lats, str(tmp_path / "lats"), format="slf")
    (tmp_path / "r.stm").write_text("\n".join(stm) + "\n")
    n = None if representation == "1best" else 3
    report = oracle_wer(str(tmp_path / "lats"), str(tmp_path / "r.stm"), representation=representation, n=n,
                        segment_free=True, collar=collar, mode="levenshtein")
    alts = [make_alternatives(lat, representation, n).with_location(lat.key.split("-")[0], "A", 0.0)
            for lat in read_lattices(str(tmp_path / "lats"))]
    write_alternatives_ctm(str(tmp_path / "alt.ctm"), alts, n=n)
    scored = score_files(str(tmp_path / "r.stm"), str(tmp_path / "alt.ctm"), segment_free=True, collar=collar,
                         mode="levenshtein")
    assert report.counts.errors == scored.total.errors
    assert report.counts.ref_words == scored.total.ref_words
    assert [u.key for u in report.utterances] == ["f1-A", "f2-A", "f3-A"]
    whole = oracle_wer(str(tmp_path / "lats"), str(tmp_path / "r.stm"), representation="lattice",
                       segment_free=True, collar=collar, mode="levenshtein")
    if representation in ("1best", "nbest"):
        assert whole.counts.errors <= report.counts.errors
