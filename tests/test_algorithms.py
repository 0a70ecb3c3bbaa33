"""Lattice algorithms against brute-force path enumeration (hypothesis) and edge cases.

The k2-computed references (total scores, arc posteriors, best paths of real k2 lattices) are
checked in tests/test_k2file.py.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from _algo_helpers import SYMBOLS, enumerate_paths, lattices, random_lattice, reference_forward_backward
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lattice_tools.algorithms import (
    arc_posteriors,
    backward_scores,
    best_path,
    forward_scores,
    lattice_depth,
    prune,
    total_log_prob,
)
from lattice_tools.algorithms._batches import state_levels
from lattice_tools.core.errors import LatticeError
from lattice_tools.core.lattice import Lattice, connect
from lattice_tools.core.symbols import SymbolTable

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SCALES = st.tuples(st.sampled_from([1.0, 0.1, 0.5, 2.0]), st.sampled_from([1.0, 0.0, 0.7, 1.5]),
                   st.sampled_from([0.0, 1.0, -0.5]))


def _kwargs(scales):
    return dict(acoustic_scale=scales[0], lm_scale=scales[1], word_penalty=scales[2])


def _brute(lat, kw):
    costs = lat.arc_costs(**kw)
    finals = lat.final_costs(acoustic_scale=kw["acoustic_scale"], lm_scale=kw["lm_scale"])
    return enumerate_paths(lat, costs, finals), costs, finals


@SETTINGS
@given(lattices(), SCALES)
def test_totals_and_posteriors_match_brute_force(lat, scales):
    kw = _kwargs(scales)
    paths, costs, finals = _brute(lat, kw)
    assert paths, "random_lattice guarantees a reachable final state"
    ref_log = float(np.logaddexp.reduce([-c for _, c in paths]))
    ref_trop = max(-c for _, c in paths)
    assert total_log_prob(lat, **kw) == pytest.approx(ref_log, abs=1e-9)
    assert total_log_prob(lat, **kw, log_semiring=False) == pytest.approx(ref_trop, abs=1e-9)
    ref_post = np.zeros(lat.num_arcs)
    ref_maxmarg = np.zeros(lat.num_arcs)
    for arcs, c in paths:
        for a in set(arcs):
            ref_post[a] += math.exp(-c - ref_log)
            ref_maxmarg[a] = max(ref_maxmarg[a], math.exp(-c - ref_trop))
    np.testing.assert_allclose(arc_posteriors(lat, **kw), ref_post, atol=1e-10, rtol=1e-9)
    np.testing.assert_allclose(arc_posteriors(lat, **kw, log_semiring=False), ref_maxmarg, atol=1e-10, rtol=1e-9)


@SETTINGS
@given(lattices(), SCALES, st.booleans())
def test_forward_total_equals_backward_total(lat, scales, log_semiring):
    kw = dict(_kwargs(scales), log_semiring=log_semiring)
    alpha = forward_scores(lat, **kw)
    beta = backward_scores(lat, **kw)
    finals = -lat.final_costs(acoustic_scale=kw["acoustic_scale"], lm_scale=kw["lm_scale"])
    ends = alpha + finals
    fwd_total = float(np.logaddexp.reduce(ends)) if log_semiring else float(ends.max())
    assert beta[0] == pytest.approx(fwd_total, abs=1e-9)
    assert total_log_prob(lat, **kw) == pytest.approx(fwd_total, abs=1e-12)
    assert alpha[0] == 0.0
    # alpha + beta of any state is at most the total (it is the mass of paths through the state)
    through = alpha + beta
    assert np.all(through[np.isfinite(through)] <= fwd_total + 1e-9)


@SETTINGS
@given(lattices())
def test_posteriors_across_any_cut_sum_to_one(lat):
    """Every complete path either crosses the cut between states < k and >= k exactly once or
    ends in a final state < k; so those posteriors sum to 1 for every k."""
    post = arc_posteriors(lat)
    alpha = forward_scores(lat)
    total = total_log_prob(lat)
    final_post = np.exp(alpha - lat.final_costs() - total)
    for k in range(1, lat.num_states):
        crossing = (lat.src < k) & (lat.dst >= k)
        mass = post[crossing].sum() + final_post[:k].sum()
        assert mass == pytest.approx(1.0, abs=1e-9)


@SETTINGS
@given(lattices(tie_costs=True), st.sampled_from([0.0, 1.0]))
def test_best_path_is_brute_force_optimum_with_documented_tie_rule(lat, penalty):
    kw = dict(acoustic_scale=1.0, lm_scale=1.0, word_penalty=penalty)
    paths, costs, finals = _brute(lat, kw)
    best_cost = min(c for _, c in paths)
    # Integer costs: sums are exact, so ties are real ties.  Documented rule: lowest final state,
    # then lowest last arc, recursively (= smallest reversed arc sequence).
    optimal = [(int(lat.dst[a[-1]]) if a else 0, tuple(reversed(a))) for a, c in paths if c == best_cost]
    final_state, rev = min(optimal)
    expected = list(reversed(rev))
    got = best_path(lat, **kw)
    assert got.tolist() == expected
    assert float(costs[got].sum() + finals[final_state]) == best_cost


@SETTINGS
@given(lattices(tie_costs=False))
def test_best_path_continuous_costs(lat):
    paths, costs, finals = _brute(lat, dict(acoustic_scale=1.0, lm_scale=1.0, word_penalty=0.0))
    best_arcs, best_cost = min(paths, key=lambda p: p[1])
    got = best_path(lat)
    end = int(lat.dst[got[-1]]) if len(got) else 0
    assert float(costs[got].sum() + finals[end]) == pytest.approx(best_cost, abs=1e-9)
    assert got.tolist() == list(best_arcs)  # continuous random costs: no ties
    # The best path's arcs all have tropical max-marginal 1.
    np.testing.assert_allclose(arc_posteriors(lat, log_semiring=False)[got], 1.0, rtol=1e-12)


@SETTINGS
@given(lattices(), st.floats(0.0, 1.0))
def test_prune(lat, threshold):
    post = arc_posteriors(lat)
    live = lat.subset_arcs(post > 0)
    pruned0 = prune(lat, 0.0)
    assert pruned0.equals(live)
    assert pruned0.equals(connect(lat))
    assert total_log_prob(pruned0) == pytest.approx(total_log_prob(lat), abs=1e-9)
    keep = (post >= threshold) & (post > 0)
    try:
        expected = lat.subset_arcs(keep)
    except LatticeError:
        with pytest.raises(LatticeError, match="pruning at posterior"):
            prune(lat, threshold)
        return
    pruned = prune(lat, threshold)
    assert pruned.equals(expected)
    assert pruned.num_arcs <= int(keep.sum())
    assert total_log_prob(pruned) <= total_log_prob(lat) + 1e-12
    # tropical pruning at any threshold <= 1 keeps the best path
    trop = prune(lat, threshold, log_semiring=False)
    assert total_log_prob(trop, log_semiring=False) == pytest.approx(total_log_prob(lat, log_semiring=False))


def test_prune_rejects_bad_threshold():
    lat = random_lattice(np.random.default_rng(1), 6, 10)
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(LatticeError, match="threshold"):
            prune(lat, bad)


@SETTINGS
@given(lattices(), st.sampled_from([0.5, 2.0, 0.083]))
def test_scales_behave_as_documented(lat, factor):
    # Multiplying every cost by `factor` scales the tropical total and keeps the best path.
    assert total_log_prob(lat, acoustic_scale=factor, lm_scale=factor, log_semiring=False) == pytest.approx(
        factor * total_log_prob(lat, log_semiring=False), abs=1e-9)
    # lm_scale=0 and acoustic_scale=0: all paths cost 0 -> log total = log(number of paths)
    paths, _, _ = _brute(lat, dict(acoustic_scale=0.0, lm_scale=0.0, word_penalty=0.0))
    assert total_log_prob(lat, acoustic_scale=0.0, lm_scale=0.0) == pytest.approx(math.log(len(paths)), abs=1e-9)
    # the word penalty adds penalty * (number of words) to each path
    pen_paths, _, _ = _brute(lat, dict(acoustic_scale=1.0, lm_scale=1.0, word_penalty=factor))
    plain = dict(_brute(lat, dict(acoustic_scale=1.0, lm_scale=1.0, word_penalty=0.0))[0])
    for arcs, c in pen_paths:
        assert c == pytest.approx(plain[arcs] + factor * int(np.count_nonzero(lat.word[list(arcs)])), abs=1e-9)


def test_state_levels_are_longest_path_depths():
    rng = np.random.default_rng(5)
    for _ in range(30):
        lat = random_lattice(rng, int(rng.integers(2, 40)), int(rng.integers(1, 120)))
        level = state_levels(lat.num_states, lat.src, lat.dst)
        ref = np.zeros(lat.num_states, dtype=np.int64)
        for a in range(lat.num_arcs):  # arcs sorted by src, states topological: one sweep
            ref[lat.dst[a]] = max(ref[lat.dst[a]], ref[lat.src[a]] + 1)
        assert np.array_equal(level, ref)
        assert np.all(level[lat.src] < level[lat.dst])


def test_no_complete_path_and_unreachable_states():
    # Built directly (like a k2 lattice): state 1 is unreachable, state 3 is a dead end.
    lat = Lattice(num_states=5, src=[0, 0, 1, 1], dst=[2, 3, 2, 4], word=[1, 2, 1, 1], ilabel=[1, 2, 1, 1],
                  t0=[0, 0, 1, 1], t1=[1, 1, 2, 2], graph_cost=[1.0, 0.5, 0.0, 0.0],
                  acoustic_cost=[0.0, 0.0, 0.0, 0.0], final_graph_cost=[np.inf, np.inf, np.inf, np.inf, 0.0],
                  final_acoustic_cost=[np.inf] * 4 + [0.0], symbols=SYMBOLS, key="dead")
    assert total_log_prob(lat) == -np.inf
    assert total_log_prob(lat, log_semiring=False) == -np.inf
    assert np.array_equal(arc_posteriors(lat), np.zeros(4))
    alpha = forward_scores(lat)
    assert alpha[1] == -np.inf and alpha[2] == -1.0
    with pytest.raises(LatticeError, match=r"\[dead\].*no complete path"):
        best_path(lat)
    # the empty path: the start state is final
    single = Lattice(num_states=1, src=[], dst=[], word=[], ilabel=[], t0=[], t1=[], graph_cost=[],
                     acoustic_cost=[], final_graph_cost=[0.5], final_acoustic_cost=[0.25], symbols=SYMBOLS)
    assert best_path(single).tolist() == []
    assert total_log_prob(single) == -0.75


def test_lattice_depth():
    sym = SymbolTable.from_words(["a", "b"])
    lat = Lattice.from_arcs(src=[0, 0, 1, 2], dst=[1, 2, 3, 3], word=[1, 2, 1, 0], symbols=sym,
                            final_graph_cost=[np.inf, np.inf, np.inf, 0.0], t0=[0, 0, 3, 5], t1=[3, 5, 10, 10])
    # frames covered: 3 + 5 + 7 + 5 = 20 over 10 frames
    assert lattice_depth(lat) == 2.0
    no_times = Lattice.from_arcs(src=[0], dst=[1], word=[1], symbols=sym, final_graph_cost=[np.inf, 0.0])
    with pytest.raises(LatticeError, match="needs arc times"):
        lattice_depth(no_times)


def test_malformed_lattices_are_rejected():
    sym = SymbolTable.from_words(["a"])
    with pytest.raises(LatticeError, match="non-finite graph_cost"):
        Lattice.from_arcs(src=[0], dst=[1], word=[1], symbols=sym, final_graph_cost=[np.inf, 0.0],
                          graph_cost=[np.nan])
    with pytest.raises(LatticeError, match="no states"):
        Lattice.from_arcs(src=[], dst=[], word=[], symbols=sym, final_graph_cost=[])
    with pytest.raises(LatticeError, match="cycle"):
        Lattice.from_arcs(src=[0, 1, 2], dst=[1, 2, 1], word=[1, 1, 1], symbols=sym,
                          final_graph_cost=[np.inf, np.inf, 0.0])
    lat = random_lattice(np.random.default_rng(2), 5, 8)
    with pytest.raises(LatticeError, match="acoustic_scale must be finite"):
        total_log_prob(lat, acoustic_scale=np.inf)


def test_inputs_are_not_mutated_and_results_are_cached_per_object():
    lat = random_lattice(np.random.default_rng(3), 12, 30)
    before = {k: getattr(lat, k).copy() for k in ("src", "dst", "graph_cost", "acoustic_cost")}
    p1 = arc_posteriors(lat)
    arc_posteriors(lat, acoustic_scale=0.5)  # same cached schedule, other scores
    assert np.array_equal(arc_posteriors(lat), p1)
    for k, v in before.items():
        assert np.array_equal(getattr(lat, k), v)


@SETTINGS
@given(lattices(max_states=30, max_arcs=80), st.booleans())
def test_forward_backward_match_per_arc_reference(lat, log_semiring):
    alpha, beta = reference_forward_backward(lat, log_semiring)
    np.testing.assert_allclose(forward_scores(lat, log_semiring=log_semiring), alpha, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(backward_scores(lat, log_semiring=log_semiring), beta, rtol=1e-12, atol=1e-12)


def test_wide_levels_use_the_max_shifted_sum_correctly():
    """Levels with thousands of arcs take the max-shifted log-sum-exp path; include segments whose
    inputs are all -inf (states reached only from unreachable states) and huge score ranges."""
    rng = np.random.default_rng(11)
    mid = 3000
    # state 0 = start, 1..mid = middle, mid+1 = final, mid+2.. = unreachable sources (kept: built directly)
    unreachable = 5
    n = mid + 2 + unreachable
    src, dst = [], []
    for s in range(1, mid + 1):
        if s % 7:  # middle states s % 7 == 0 are fed only by unreachable states
            src += [0, 0]
            dst += [s, s]
        src.append(mid + 2 + s % unreachable)
        dst.append(s)
        src.append(s)
        dst.append(mid + 1)
    # keep topological numbering (src < dst): renumber unreachable sources before the middle
    order = {mid + 2 + u: 1 + u for u in range(unreachable)}
    remap = lambda x: order.get(x, x + unreachable if 1 <= x <= mid + 1 else x)  # noqa: E731
    src = np.array([remap(x) for x in src])
    dst = np.array([remap(x) for x in dst])
    perm = np.argsort(src, kind="stable")
    src, dst = src[perm], dst[perm]
    m = len(src)
    graph = rng.uniform(0, 300, m)  # wide score range: exp underflows without the shift
    final = np.full(n, np.inf)
    final[mid + 1 + unreachable] = 0.0
    lat = Lattice(num_states=n, src=src, dst=dst, word=np.ones(m), ilabel=np.ones(m), t0=np.zeros(m), t1=np.ones(m),
                  graph_cost=graph, acoustic_cost=np.zeros(m), final_graph_cost=final, final_acoustic_cost=final,
                  symbols=SYMBOLS)
    for log_semiring in (True, False):
        alpha, beta = reference_forward_backward(lat, log_semiring)
        got_a = forward_scores(lat, log_semiring=log_semiring)
        got_b = backward_scores(lat, log_semiring=log_semiring)
        assert np.array_equal(np.isinf(got_a), np.isinf(alpha)) and np.array_equal(np.isinf(got_b), np.isinf(beta))
        fin = np.isfinite(alpha)
        np.testing.assert_allclose(got_a[fin], alpha[fin], rtol=1e-12)
        fin = np.isfinite(beta)
        np.testing.assert_allclose(got_b[fin], beta[fin], rtol=1e-12)
    assert np.isinf(forward_scores(lat)[1 + unreachable + 6])  # middle state 7: only unreachable inputs
