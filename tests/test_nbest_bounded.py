"""Exact N-best of long lattices: the n best sequences come from the
exact bound computed on the determinized states that can lie on them (A* over determinized states with the
best-next-word and suffix-list bounds), not from log-determinizing the whole lattice.  The engine's loops are compiled
C (lattice_tools/_ext/nbest/; tests/test_nbest_native.py checks them against their plain-Python transcription), and
the phrase search engine (``_fastsearch.search_many``) run on a whole lattice is the differential oracle.  Speed:
bench/bench_nbest_long.py."""
from __future__ import annotations

import numpy as np
import pytest
from _alt_helpers import brute_force_sequences, lattice_search_problem, lattice_strategy
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.algorithms.forward_backward import ForwardBackward
from lattice_tools.alternatives._common import prepare
from lattice_tools.alternatives._fastsearch import search_many
from lattice_tools.alternatives.nbest_lists import best_word_bound, nbest_sequences, suffix_bound
from lattice_tools.core.errors import BudgetExceededError


@settings(max_examples=150, deadline=None)
@given(lattice_strategy(), st.integers(1, 6), st.sampled_from([1.0, 1e-3]), st.sampled_from([0, 1, 8]))
def test_region_search_equals_brute_force(lat, n, margin, suffix_lists):
    """With a first region just past the best sequence or 1 nat wider, with the best-next-word bound
    alone or with the suffix-list bound."""
    labels, cost, final = prepare(lat)
    bf = brute_force_sequences(lat, labels, cost, final)
    res = nbest_sequences(lat, n, margin=margin, suffix_lists=suffix_lists)[0]
    ranked = sorted(bf.values())
    assert len(res) == min(n, len(bf))
    for r, c in zip(res, ranked, strict=False):
        assert r.cost == pytest.approx(c, abs=1e-9)
        assert bf[r.labels] == pytest.approx(r.cost, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(lattice_strategy(), st.sampled_from([3, None]))
def test_same_lists_as_the_phrase_search_engine(lat, n):
    """The same sequences, costs and best paths as ``search_many`` on the whole lattice."""
    labels, cost, final = prepare(lat)
    fb = ForwardBackward(lat.num_states, lat.src, lat.dst, cost, final, log=True)
    ref = search_many([lattice_search_problem(lat, labels, cost, final, fb.beta)], n)[0]
    res = nbest_sequences(lat, n)[0]
    assert [r.cost for r in res] == pytest.approx([r.cost for r in ref], abs=1e-9)
    if res:  # the same sequences, except for exchanges among ties at the cut-off
        cut = res[-1].cost - 1e-9
        assert {r.labels for r in res if r.cost < cut} == {r.labels for r in ref if r.cost < cut}
    by_labels = {r.labels: r for r in ref}
    for r in res:
        if r.labels in by_labels:
            assert r.best_cost == pytest.approx(by_labels[r.labels].best_cost, abs=1e-9)


def test_budgets_raise():
    from _io_helpers import small_word_lattice

    lat = small_word_lattice()
    with pytest.raises(BudgetExceededError, match="search nodes"):
        nbest_sequences(lat, 5, max_pops=1)
    with pytest.raises(BudgetExceededError, match="determinized states"):
        nbest_sequences(lat, 5, max_states=1)


@settings(max_examples=150, deadline=None)
@given(lattice_strategy())
def test_best_word_bound_is_admissible(lat):
    """exp(-h[0]) bounds the probability of the best sequence from below-cost side, and is no looser
    than the log-sum bound."""
    labels, cost, final = prepare(lat)
    bf = brute_force_sequences(lat, labels, cost, final)
    h = best_word_bound(lat.num_states, lat.src, lat.dst, labels, cost, final)
    fb = ForwardBackward(lat.num_states, lat.src, lat.dst, cost, final, log=True)
    if bf:
        assert h[0] <= min(bf.values()) + 1e-9
    assert np.all(h >= fb.beta - 1e-9)


@settings(max_examples=150, deadline=None)
@given(lattice_strategy(), st.sampled_from([1, 2, 5]))
def test_suffix_bound_is_admissible_and_tighter(lat, k):
    """exp(-h[0]) bounds the probability of the most probable sequence, and h is no looser than
    the best-next-word bound."""
    labels, cost, final = prepare(lat)
    bf = brute_force_sequences(lat, labels, cost, final)
    hs = suffix_bound(lat.num_states, lat.src, lat.dst, labels, cost, final, k)
    h = best_word_bound(lat.num_states, lat.src, lat.dst, labels, cost, final)
    if bf:
        assert hs[0] <= min(bf.values()) + 1e-9
    finite = np.isfinite(h)
    assert np.array_equal(finite, np.isfinite(hs))
    assert np.all(hs[finite] >= h[finite] - 1e-5 * (1 + np.abs(h[finite])))


def test_suffix_lists_do_not_change_the_lists():
    """Bundled real lattices: the same sequences, costs and word arcs with and without the lists."""
    from pathlib import Path

    from lattice_tools.io import read_lattices

    for name in ("003.lat", "004.lat"):
        lat = next(iter(read_lattices(str(Path(__file__).parent / "data" / "inputs" / name))))
        for scale in (1.0, 0.1):
            ref = nbest_sequences(lat, 50, acoustic_scale=scale, suffix_lists=0)[0]
            assert len(ref) == 50
            for k in (1, 3, 8):
                assert nbest_sequences(lat, 50, acoustic_scale=scale, suffix_lists=k)[0] == ref
