"""Determinization on word sequences, log and tropical semirings."""
from __future__ import annotations

import math

import numpy as np
import pytest
from _alt_helpers import (
    brute_force_sequences,
    enumerate_paths,
    fst_nbest,
    fst_paths,
    kaldifst_log_determinize,
    lattice_strategy,
    ps_lattice,
    to_kaldifst,
)
from hypothesis import given, settings

from lattice_tools.algorithms.forward_backward import ForwardBackward
from lattice_tools.alternatives._common import prepare
from lattice_tools.alternatives.determinization import determinize
from lattice_tools.core.errors import BudgetExceededError


def _sequences(det):
    labels, cost, final = prepare(det, silence_words=set())
    out = {}
    for arcs, c in enumerate_paths(det, labels, cost, final):
        seq = tuple(int(labels[a]) for a in arcs)
        assert seq not in out, "output is not deterministic"
        out[seq] = c
    return out


@settings(max_examples=150, deadline=None)
@given(lattice_strategy())
def test_log_and_tropical_equal_brute_force_and_kaldifst(lat):
    labels, cost, final = prepare(lat)
    bf = brute_force_sequences(lat, labels, cost, final)
    det = determinize(lat, "log")
    assert not np.any(det.word == 0)
    got = _sequences(det)
    assert set(got) == set(bf)
    for s in bf:
        assert got[s] == pytest.approx(bf[s], abs=1e-6)
    best = {}
    for arcs, c in enumerate_paths(lat, labels, cost, final):
        s = tuple(int(labels[a]) for a in arcs if labels[a])
        best[s] = min(best.get(s, math.inf), c)
    trop = _sequences(determinize(lat, "tropical"))
    assert set(trop) == set(best) and all(trop[s] == pytest.approx(best[s], abs=1e-6) for s in best)
    ref = dict(fst_paths(kaldifst_log_determinize(to_kaldifst(lat.num_states, lat.src, lat.dst, labels, cost, final))))
    assert set(ref) == set(bf) and all(ref[s] == pytest.approx(bf[s], abs=1e-4) for s in bf)


def test_real_lattice_against_kaldifst():
    lat = ps_lattice()
    labels, cost, final = prepare(lat, acoustic_scale=0.1)
    det = determinize(lat, "log", acoustic_scale=0.1)
    dl, dc, df = prepare(det)
    # same total probability
    tot = ForwardBackward(lat.num_states, lat.src, lat.dst, cost, final).total
    assert ForwardBackward(det.num_states, det.src, det.dst, dc, df).total == pytest.approx(tot, abs=1e-6)
    ref = fst_nbest(kaldifst_log_determinize(to_kaldifst(lat.num_states, lat.src, lat.dst, labels, cost, final)), 200)
    mine = fst_nbest(to_kaldifst(det.num_states, det.src, det.dst, dl, dc, df, fresh_states=False), 200)
    mine_d = dict(mine)
    cutoff = ref[-1][1]
    for seq, c in ref:
        if seq in mine_d:
            assert mine_d[seq] == pytest.approx(c, abs=1e-4)
        else:
            assert c >= cutoff - 1e-4


def test_budget_and_bad_semiring():
    lat = ps_lattice()
    with pytest.raises(BudgetExceededError):
        determinize(lat, max_states=10)
    from lattice_tools.core.errors import LatticeError
    with pytest.raises(LatticeError):
        determinize(lat, "max")


def test_tropical_against_openfst_determinize():
    """OpenFst (via kaldifst) rmepsilon + determinize in the tropical semiring: same best cost for
    each of the 200 best sequences."""
    import kaldifst

    lat = ps_lattice()
    labels, cost, final = prepare(lat, acoustic_scale=0.1)
    fst = to_kaldifst(lat.num_states, lat.src, lat.dst, labels, cost, final, fresh_states=False)
    kaldifst.rmepsilon(fst)
    ref = fst_nbest(kaldifst.determinize(fst, delta=1e-6), 200)
    det = determinize(lat, "tropical", acoustic_scale=0.1)
    dl, dc, df = prepare(det)
    mine = dict(fst_nbest(to_kaldifst(det.num_states, det.src, det.dst, dl, dc, df, fresh_states=False), 200))
    cutoff = ref[-1][1]
    for seq, c in ref:
        if seq in mine:
            assert mine[seq] == pytest.approx(c, abs=1e-4)
        else:
            assert c >= cutoff - 1e-4
