"""Exact N-best: brute force, kaldifst shortest_path on the log-determinized lattice, k2 values."""
from __future__ import annotations

import json
import math

import pytest
from _alt_helpers import (
    K2,
    brute_force_sequences,
    enumerate_paths,
    fst_nbest,
    k2_frame_lattices,
    kaldifst_log_determinize,
    lattice_strategy,
    ps_lattice,
    to_kaldifst,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.alternatives._common import prepare
from lattice_tools.alternatives.nbest_lists import nbest, nbest_sequences


@settings(max_examples=200, deadline=None)
@given(lattice_strategy(), st.integers(1, 6))
def test_equals_brute_force(lat, n):
    labels, cost, final = prepare(lat)
    bf = brute_force_sequences(lat, labels, cost, final)
    res, total, _ = nbest_sequences(lat, n)
    ranked = sorted(bf.values())
    assert len(res) == min(n, len(bf))
    for r, c in zip(res, ranked, strict=False):
        assert r.cost == pytest.approx(c, abs=1e-9)
        assert bf[r.labels] == pytest.approx(r.cost, abs=1e-9)
    # the best path realizing each sequence: it reads the sequence, and no path with it is better
    paths = enumerate_paths(lat, labels, cost, final)
    for r in res:
        assert tuple(int(labels[a]) for a in r.best_arcs if labels[a]) == r.labels
        best = min(c for arcs, c in paths if tuple(int(labels[a]) for a in arcs if labels[a]) == r.labels)
        assert r.best_cost == pytest.approx(best, abs=1e-9)
    # n=None runs the other strategy (whole log-determinization + exact best-completion bound)
    everything, _, _ = nbest_sequences(lat, None)
    assert [r.cost for r in everything] == pytest.approx(ranked, abs=1e-9)
    assert all(bf[r.labels] == pytest.approx(r.cost, abs=1e-9) for r in everything)
    alts = nbest(lat, None)
    assert sum(a.posterior for a in alts.slots[0].alternatives) == pytest.approx(1.0, abs=1e-9)


def test_equals_kaldifst_shortest_path_on_log_determinized_lattice():
    lat = ps_lattice()
    labels, cost, final = prepare(lat, acoustic_scale=0.1)
    fst = kaldifst_log_determinize(to_kaldifst(lat.num_states, lat.src, lat.dst, labels, cost, final))
    n = 100
    ref = fst_nbest(fst, n)
    res, total, _ = nbest_sequences(lat, n, acoustic_scale=0.1)
    mine = {r.labels: r.cost for r in res}
    cutoff = ref[-1][1]
    for seq, c in ref:
        if seq in mine:
            assert mine[seq] == pytest.approx(c, abs=1e-4)
        else:  # only exchanges among near-ties at the cut-off (kaldifst weights are float32)
            assert c >= cutoff - 1e-4
    for (_s1, c1), r in zip(ref, res, strict=False):
        assert r.cost == pytest.approx(c1, abs=1e-4)


def test_k2_fixture_top5_and_times():
    expected = json.load(open(K2 / "expected.json"))["files"]["hlg_lattice.pt"]["utterances"]
    for lat, exp in zip(k2_frame_lattices(), expected, strict=False):
        alts = nbest(lat, 5, silence_words=set())
        got = alts.slots[0].alternatives
        for a, e in zip(got, exp["nbest"]["entries"], strict=False):
            assert list(a.words) == e["symbols"]
            assert math.log(a.posterior) == pytest.approx(math.log(e["posterior"]), abs=1e-9)
        # k2's best path start frames (the word starts at the arc carrying its id)
        assert [round(s / lat.frame_shift) for s in got[0].starts] == exp["best_path"]["start_frames"]
        assert alts.meta["total_cost"] == pytest.approx(-exp["tot_score_log"], abs=1e-9)


def test_budget():
    from lattice_tools.core.errors import BudgetExceededError
    with pytest.raises(BudgetExceededError):
        nbest(ps_lattice(), 1000, acoustic_scale=0.1, max_pops=50)
