"""Phrase alternatives (Faria et al., section 3.4): brute force, eq. 6, and the naive kaldifst masked method."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from _alt_helpers import (
    chained_lattice_strategy,
    enumerate_paths,
    k2_frame_lattices,
    log_add,
    naive_masked_phrase_nbest,
    ps_lattice,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.alternatives.phrase_alternatives import PhraseDecomposition, phrases
from lattice_tools.alternatives.word_alignment import word_align


def _brute_force_phrases(dec):
    K = dec.num_phrases
    bf = [dict() for _ in range(K)]
    paths = enumerate_paths(dec.lat, dec.labels, dec.cost, dec.final)
    for arcs, c in paths:
        for k in range(K):
            key = tuple(int(dec.labels[a]) for a in arcs if dec.labels[a] and dec.phrase[a] == k)
            bf[k][key] = log_add(bf[k].get(key, math.inf), c)
    return bf, paths


@settings(max_examples=150, deadline=None)
@given(chained_lattice_strategy(), st.sampled_from([0.0, 0.1, 0.3, 0.6, 0.95]))
def test_exact_phrase_distribution_and_eq6(lat, theta):
    dec = PhraseDecomposition(lat, theta)
    bf, paths = _brute_force_phrases(dec)
    alts = []
    for k, res in dec.search(None):
        got = {r.labels: r.cost for r in res}
        assert set(got) == set(bf[k])
        for seq, c in got.items():
            assert c == pytest.approx(bf[k][seq], abs=1e-9)
        assert sum(math.exp(dec.total - r.cost) for r in res) == pytest.approx(1.0, abs=1e-9)
        costs = [r.cost for r in res]
        # most probable first (equal up to float rounding: costs are sums in different orders)
        assert all(a <= b + 1e-9 for a, b in zip(costs, costs[1:], strict=False))
        alts.append(set(got))
    # eq. 6: every lattice path is a concatenation of one alternative per phrase
    products = {tuple(itertools.chain(*combo)) for combo in itertools.product(*alts)}
    for arcs, _ in paths:
        assert tuple(int(dec.labels[a]) for a in arcs if dec.labels[a]) in products


@settings(max_examples=60, deadline=None)
@given(chained_lattice_strategy(), st.sampled_from([0.1, 0.5]))
def test_phrase_cuts_respect_threshold(lat, theta):
    dec = PhraseDecomposition(lat, theta)
    strong = (dec.labels > 0) & (dec.posteriors >= theta)
    for c in dec.cuts:
        assert not np.any(strong & (lat.t0 < c) & (lat.t1 > c))
    # phrase indices never decrease along arcs
    max_in = np.full(lat.num_states, -1)
    np.maximum.at(max_in, lat.dst, dec.phrase)
    assert np.all(dec.phrase >= max_in[lat.src])


def _compare_with_naive(lat, theta, n, acoustic_scale=1.0):
    dec = PhraseDecomposition(lat, theta, acoustic_scale=acoustic_scale)
    checked = 0
    for k, res in dec.search(n):
        ref = naive_masked_phrase_nbest(lat.num_states, lat.src, lat.dst, dec.labels, dec.cost, dec.final,
                                        dec.phrase, k, n)
        assert len(ref) == len(res)
        mine = {r.labels: r.cost for r in res}
        refd = dict(ref)
        cutoff = max(c for _, c in ref)
        for seq, c in refd.items():  # same sequences except exchanges among near-ties at the cut-off
            if seq in mine:
                assert mine[seq] == pytest.approx(c, abs=1e-4)
            else:
                assert c >= cutoff - 1e-4
        checked += 1
    return dec, checked


def test_equals_naive_masked_kaldifst_on_pocketsphinx_lattice():
    lat = ps_lattice()
    dec, checked = _compare_with_naive(lat, 0.1, 20, acoustic_scale=0.1)
    assert checked == dec.num_phrases >= 3


def test_equals_naive_masked_kaldifst_on_k2_lattices():
    for frame_lat in k2_frame_lattices():
        lat = word_align(frame_lat)
        dec, checked = _compare_with_naive(lat, 0.2, 50)
        assert checked == dec.num_phrases


def test_phrases_alternatives_object():
    lat = ps_lattice()
    alts = phrases(lat, 5, 0.1, acoustic_scale=0.1)
    assert alts.kind == "phrase" and len(alts) >= 3
    assert max(alts.depths) <= 5
    full = phrases(lat, None, 0.1, acoustic_scale=0.1)
    for slot in full.slots:
        assert sum(a.posterior for a in slot.alternatives) == pytest.approx(1.0, abs=1e-6)
        for a in slot.alternatives:  # best-path times lie inside the utterance, in order
            assert all(0 <= s <= lat.duration for s in a.starts)
            assert list(a.starts) == sorted(a.starts)
    starts = [s.start for s in full.slots]
    assert starts == sorted(starts)


def test_bad_threshold():
    from lattice_tools.core.errors import LatticeError
    with pytest.raises(LatticeError):
        phrases(ps_lattice(), 5, 1.5)


@settings(max_examples=80, deadline=None)
@given(chained_lattice_strategy(), st.integers(0, 2 ** 16))
def test_inconsistent_times_still_exact(lat, seed):
    """Arc times that are not monotone along paths: the raised phrase indices keep everything exact."""
    rng = np.random.default_rng(seed)
    t0 = rng.integers(0, 20, lat.num_arcs)
    t1 = t0 + rng.integers(0, 6, lat.num_arcs)
    lat = lat.replace(t0=t0, t1=t1)
    dec = PhraseDecomposition(lat, 0.2)
    bf, paths = _brute_force_phrases(dec)
    for k, res in dec.search(None):
        got = {r.labels: r.cost for r in res}
        assert set(got) == set(bf[k])
        assert sum(math.exp(dec.total - r.cost) for r in res) == pytest.approx(1.0, abs=1e-9)
