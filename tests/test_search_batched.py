"""The batched search engine: several automata searched side by side give
what each gives alone and what brute force gives; its helpers against the numpy operations
they replace."""
from __future__ import annotations

import gc
import math

import numpy as np
import pytest
from _alt_helpers import brute_force_sequences, enumerate_paths, lattice_search_problem, lattice_strategy, ps_lattice
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.algorithms.forward_backward import ForwardBackward
from lattice_tools.alternatives._common import dense_codes, prepare
from lattice_tools.alternatives._epsilon_closure import EpsilonClosedRows
from lattice_tools.alternatives._fastsearch import search_many
from lattice_tools.alternatives._search_arrays import GrowableColumns
from lattice_tools.alternatives.nbest_lists import alternative_from_path
from lattice_tools.alternatives.phrase_alternatives import PhraseDecomposition, _AlternativeMaker
from lattice_tools.core._gc import gc_paused


def _problem(lat):
    labels, cost, final = prepare(lat)
    fb = ForwardBackward(lat.num_states, lat.src, lat.dst, cost, final, log=True)
    return lattice_search_problem(lat, labels, cost, final, fb.beta), (labels, cost, final)


@settings(max_examples=150, deadline=None)
@given(st.lists(lattice_strategy(), min_size=1, max_size=4), st.integers(1, 6), st.sampled_from([0, 50_000]))
def test_batched_searches_equal_brute_force(lats, n, lazy_pops):
    """Each automaton of a batch gets its exact n best sequences with exact costs and best paths.
    ``lazy_pops=0`` makes most lazy searches run out of pops and fall back to the exact-bound
    search."""
    problems, prepared = zip(*(_problem(lat) for lat in lats), strict=False)
    results = search_many(list(problems), n, lazy_pops=lazy_pops)
    assert len(results) == len(lats)
    for lat, (labels, cost, final), res in zip(lats, prepared, results, strict=False):
        bf = brute_force_sequences(lat, labels, cost, final)
        ranked = sorted(bf.values())
        assert len(res) == min(n, len(bf))
        assert [r.cost for r in res] == pytest.approx(ranked[:len(res)], abs=1e-9)
        assert all(bf[r.labels] == pytest.approx(r.cost, abs=1e-9) for r in res)
        paths = enumerate_paths(lat, labels, cost, final)
        for r in res:
            assert tuple(int(labels[a]) for a in r.best_arcs if labels[a]) == r.labels
            best = min(c for arcs, c in paths if tuple(int(labels[a]) for a in arcs if labels[a]) == r.labels)
            assert r.best_cost == pytest.approx(best, abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(lattice_strategy(), st.integers(1, 6), st.floats(200, 2000))
def test_costs_beyond_the_double_range_stay_exact(lat, n, scale):
    """Costs scaled so that probabilities within one transition or one successor subset differ by
    more than 1e-250 (the expansions' and successors' linear sums fall back to the log domain):
    the same sequences and costs as brute force."""
    labels, cost, final = prepare(lat)
    cost, final = cost * scale, final * scale
    fb = ForwardBackward(lat.num_states, lat.src, lat.dst, cost, final, log=True)
    (res,) = search_many([lattice_search_problem(lat, labels, cost, final, fb.beta)], n)
    bf = brute_force_sequences(lat, labels, cost, final)
    ranked = sorted(bf.values())
    assert len(res) == min(n, len(bf))
    assert [r.cost for r in res] == pytest.approx(ranked[:len(res)], rel=1e-12, abs=1e-9)
    assert all(bf[r.labels] == pytest.approx(r.cost, rel=1e-12, abs=1e-9) for r in res)
    for r in res:
        assert tuple(int(labels[a]) for a in r.best_arcs if labels[a]) == r.labels


def test_batched_phrases_equal_phrases_searched_one_at_a_time():
    """On a real lattice: phrases searched side by side (here the phrases of three
    decompositions in one batch) give the same sequences in the same order, the same best paths,
    and costs equal to rounding, as each phrase searched alone."""
    lat = ps_lattice()
    problems = [p for theta in (0.05, 0.1, 0.3) for p in PhraseDecomposition(lat, theta, acoustic_scale=0.1).problems()]
    assert len(problems) >= 12
    together = search_many(problems, 200)
    checked = 0
    for problem, batched in zip(problems, together, strict=False):
        (alone,) = search_many([problem], 200)
        assert [r.labels for r in batched] == [r.labels for r in alone]
        assert [r.best_arcs for r in batched] == [r.best_arcs for r in alone]
        assert [r.cost for r in batched] == pytest.approx([r.cost for r in alone], rel=1e-12, abs=1e-9)
        assert [r.best_cost for r in batched] == [r.best_cost for r in alone]
        checked += len(alone)
    assert checked > 1000


def test_budget_still_applies_per_automaton():
    lat = ps_lattice()
    problem, _ = _problem(lat)
    from lattice_tools.core.errors import BudgetExceededError
    with pytest.raises(BudgetExceededError):
        search_many([problem, problem], 1000, max_pops=50, determinize_first=True, max_states=20)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 300), max_size=60), st.booleans())
def test_dense_codes_equal_numpy_unique(values, huge):
    """Both paths (counting table for small ranges, sort otherwise) equal np.unique."""
    a = np.array(values, dtype=np.int64) + (10**12 if huge else 0)
    uniq, code = dense_codes(a)
    want_u, want_inv = np.unique(a, return_inverse=True)
    np.testing.assert_array_equal(uniq, want_u)
    np.testing.assert_array_equal(code, want_inv.reshape(-1))


def test_growable_keeps_positions_when_it_grows():
    buf = GrowableColumns(2, (np.int64, np.float64))
    rng = np.random.default_rng(0)
    want_i, want_f = [], []
    for k in range(20):
        i = rng.integers(0, 100, k)
        f = rng.random(k)
        buf.append(i, f)
        want_i.extend(i.tolist()), want_f.extend(f.tolist())
        got_i, got_f = buf.arrays()
        assert got_i.tolist() == want_i and got_f.tolist() == want_f


def test_gc_paused_restores_the_collector_state():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block leaves the outer pause alone
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with gc_paused():
            raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # a caller's own pause is kept
    finally:
        gc.enable()


def test_alternative_maker_many_skips_silence_like_alternative_from_path():
    """Paths given with silence arcs (the search never returns any, other callers may) lose them,
    as in alternative_from_path; all other fields equal."""
    lat = ps_lattice()
    dec = PhraseDecomposition(lat, 0.1, acoustic_scale=0.1)
    make = _AlternativeMaker(lat, dec.labels)
    silence = np.flatnonzero(dec.labels == 0)[:50].tolist()
    words = np.flatnonzero(dec.labels != 0)[:50].tolist()
    assert silence and words
    paths = [tuple(words[k:k + 3]) + (silence[k],) for k in range(40)] + [(), tuple(silence[:3])]
    posts = [math.exp(-k / 7) for k in range(len(paths))]
    cache: dict = {}
    for fast, arcs, p in zip(make.many(paths, posts), paths, posts, strict=False):
        slow = alternative_from_path(lat, dec.labels, arcs, p, cache)
        assert fast == slow and repr(fast) == repr(slow)


def test_exact_bound_search_equals_lazy_search_on_real_phrases():
    """The exact-bound strategy expands whole determinized automata in batches that hold many
    states of one automaton (entries keyed by request); on a real lattice it finds the lazy
    search's sequences with the same costs."""
    dec = PhraseDecomposition(ps_lattice(), 0.1, acoustic_scale=0.1)
    problems = dec.problems()
    lazy = search_many(problems, 40)
    exact = search_many(problems, 40, determinize_first=True)
    for a, b in zip(lazy, exact, strict=False):
        assert [r.labels for r in a] == [r.labels for r in b]
        assert [r.cost for r in a] == pytest.approx([r.cost for r in b], rel=1e-12, abs=1e-9)
        assert [r.best_arcs for r in a] == [r.best_arcs for r in b]


def test_closure_of_one_semiring_equals_that_half_of_both():
    """The search asks the epsilon closure for log costs only and the word times for tropical
    costs only; each equals that half of the closure computed with both."""
    lat = ps_lattice()
    labels, cost, final = prepare(lat, acoustic_scale=0.1)
    args = (lat.num_states, lat.src.astype(np.int64), lat.dst.astype(np.int64), labels, cost,
            np.arange(lat.num_arcs, dtype=np.int64), final.copy(), final.copy())
    both = EpsilonClosedRows(*args)
    log_only = EpsilonClosedRows(*args, tropical=False)
    trop_only = EpsilonClosedRows(*args, log=False)
    assert (labels == 0).sum() > 100  # the closure has work to do
    for one in (log_only, trop_only):
        np.testing.assert_array_equal(one.w_off, both.w_off)
        np.testing.assert_array_equal(one.w_arc, both.w_arc)
    np.testing.assert_array_equal(log_only.w_lc, both.w_lc)
    np.testing.assert_array_equal(log_only.x_lc, both.x_lc)
    np.testing.assert_array_equal(trop_only.w_bc, both.w_bc)
    np.testing.assert_array_equal(trop_only.x_bc, both.x_bc)
    assert log_only.w_bc is None and trop_only.w_lc is None


def test_word_bound_retry_finds_the_same_sequences(monkeypatch):
    """A lazy search that runs out of pops with the log-sum bound is searched again with the
    best-next-word bound before any exact-bound fallback; on a real lattice, with every first search
    made to fail, the retries alone find the same sequences, costs and best paths, and the
    tighter bound is at least the log-sum one everywhere (and tighter somewhere)."""
    import lattice_tools.alternatives._fastsearch as F
    from lattice_tools.alternatives._determinizer import AutomataUnion

    dec = PhraseDecomposition(ps_lattice(), 0.1, acoustic_scale=0.1)
    problems = dec.problems()
    plain = search_many(problems, 40)
    loose, tight = AutomataUnion(problems), AutomataUnion(problems, word_bound=True)
    assert np.all(tight.beta >= loose.beta) and np.any(tight.beta > loose.beta + 1e-6)

    real_lazy = F.Determinizer.lazy_search
    retried = []

    def first_fails(det, j0, n, max_pops, check):
        if not np.any(det.union.beta != AutomataUnion(problems).beta):
            return None  # the log-sum bound: pretend its budget ran out
        retried.append(j0)
        return real_lazy(det, j0, n, max_pops, check)

    def no_fallback(*args, **kwargs):
        raise AssertionError("the exact-bound fallback ran")

    monkeypatch.setattr(F.Determinizer, "lazy_search", first_fails)
    monkeypatch.setattr(F, "_bounded_exact_search", no_fallback)
    retry = search_many(problems, 40)
    assert len(retried) == sum(1 for r in plain if r)
    for a, b in zip(plain, retry, strict=True):
        assert [r.labels for r in a] == [r.labels for r in b]
        assert [r.cost for r in a] == [r.cost for r in b]
        assert [r.best_arcs for r in a] == [r.best_arcs for r in b]
