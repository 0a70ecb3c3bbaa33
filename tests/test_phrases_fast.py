"""The speed-ups of the phrase search change no output: each fast path is checked against
the plain numpy operation it replaces, and the whole search is run with every sort path forced."""
from __future__ import annotations

import math

import numpy as np
import pytest
from _alt_helpers import chained_lattice_strategy, lattice_strategy, log_add, ps_lattice
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.algorithms.forward_backward import BlockPlan, ForwardBackward
from lattice_tools.alternatives._epsilon_closure import EpsilonClosedRows
from lattice_tools.alternatives._search import SearchTuning
from lattice_tools.alternatives._search_arrays import argsort_stable_keys
from lattice_tools.alternatives.nbest_lists import alternative_from_path
from lattice_tools.alternatives.phrase_alternatives import PhraseDecomposition, _AlternativeMaker, phrases


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 3000), st.sampled_from([7, 1 << 16, 1 << 40, 1 << 62]), st.integers(0, 2 ** 32))
def test_argsort_stable_keys_is_stable_argsort(n, span, seed):
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, span, size=n, dtype=np.int64)
    if seed % 2:
        keys[: n // 2] = keys[0]  # many ties
    np.testing.assert_array_equal(argsort_stable_keys(keys), np.argsort(keys, kind="stable"))


@settings(max_examples=60, deadline=None)
@given(chained_lattice_strategy())
def test_shared_block_plan_is_bitwise_identical(lat):
    cost = lat.arc_costs(1.0, 1.0, 0.0)
    final = lat.final_costs(1.0, 1.0)
    plan = BlockPlan(lat.num_states, lat.src, lat.dst)
    for log in (True, False):
        alone = ForwardBackward(lat.num_states, lat.src, lat.dst, cost, final, log=log)
        shared = ForwardBackward(lat.num_states, lat.src, lat.dst, cost, final, log=log, plan=plan)
        np.testing.assert_array_equal(alone.alpha, shared.alpha)
        np.testing.assert_array_equal(alone.beta, shared.beta)
        assert alone.total == shared.total
        # independent reference: scalar passes in topological order (forward) and reverse (backward)
        def plus(a, b, log=log):  # the semiring's sum of two costs
            lo, hi = min(a, b), max(a, b)
            return lo if not log or hi == math.inf else lo - math.log1p(math.exp(lo - hi))

        arcs = sorted(zip(lat.src.tolist(), lat.dst.tolist(), cost.tolist(), strict=False))
        alpha = [math.inf] * lat.num_states
        alpha[0] = 0.0
        for s, d, c in arcs:
            alpha[d] = plus(alpha[d], alpha[s] + c)
        np.testing.assert_allclose(shared.alpha, alpha, rtol=1e-12, atol=1e-9)
        beta = final.tolist()
        for s, d, c in reversed(arcs):
            beta[s] = plus(beta[s], beta[d] + c)
        np.testing.assert_allclose(shared.beta, beta, rtol=1e-12, atol=1e-9)


@settings(max_examples=150, deadline=None)
@given(lattice_strategy(max_states=9, max_arcs=22))
def test_closed_rows_equal_epsilon_path_enumeration(lat):
    """The level-batched epsilon closure: every state's closed word arcs (log sum and best cost
    over the epsilon paths leading to them) and closed exit weights, against enumerating the
    epsilon paths one by one."""
    labels = lat.word.astype(np.int64) % 3  # ~1/3 of the arcs become epsilons
    cost = lat.arc_costs(1.0, 1.0, 0.0)
    final = lat.final_costs(1.0, 1.0)
    m = lat.num_states
    cl = EpsilonClosedRows(m, lat.src.astype(np.int64), lat.dst.astype(np.int64), labels, cost,
                 np.arange(lat.num_arcs, dtype=np.int64) + 1000, final.copy(), final.copy())
    out = {s: [] for s in range(m)}
    for a, (s, d) in enumerate(zip(lat.src.tolist(), lat.dst.tolist(), strict=False)):
        out[s].append((a, d))

    def eps_paths(s, acc=0.0):  # (end state, cost) of every epsilon path from s, the empty one first
        yield s, acc
        for a, d in out[s]:
            if labels[a] == 0:
                yield from eps_paths(d, acc + cost[a])

    for s in range(m):
        want: dict = {}
        x_log, x_best = math.inf, math.inf
        for t, c in eps_paths(s):
            x_log, x_best = log_add(x_log, c + final[t]), min(x_best, c + final[t])
            for a, _ in out[t]:
                if labels[a]:
                    lc, bc = want.get(a, (math.inf, math.inf))
                    want[a] = (log_add(lc, c + cost[a]), min(bc, c + cost[a]))
        row = slice(cl.w_off[s], cl.w_off[s + 1])
        got = {int(a): (lc, bc) for a, lc, bc in zip(cl.w_arc[row], cl.w_lc[row], cl.w_bc[row], strict=False)}
        assert list(cl.w_arc[row]) == sorted(got)  # one entry per arc, in arc order
        assert set(got) == set(want)
        for a, (lc, bc) in want.items():
            # (sums associate differently: equal to rounding)
            assert got[a] == pytest.approx((lc, bc), rel=1e-12, abs=1e-12)
            assert cl.w_id[row][list(got).index(a)] == a + 1000 and cl.w_dst[row][list(got).index(a)] == lat.dst[a]
        assert (cl.x_lc[s], cl.x_bc[s]) == pytest.approx((x_log, x_best), rel=1e-12, abs=1e-12)


@pytest.fixture(scope="module")
def real_lattice():
    return ps_lattice()


def _signature(alts):
    return [(s.start, s.end, [(a.words, a.starts, a.durations, a.posterior, a.confidences) for a in s.alternatives])
            for s in alts.slots]


def test_alternative_maker_equals_alternative_from_path(real_lattice):
    dec = PhraseDecomposition(real_lattice, 0.1, acoustic_scale=0.1)
    make = _AlternativeMaker(real_lattice, dec.labels)
    assert make.fast
    cache: dict = {}
    checked = 0
    for _, results in dec.search(50):
        for r in results:
            post = math.exp(-(r.cost - dec.total))
            fast = make(r.best_arcs, post)
            slow = alternative_from_path(real_lattice, dec.labels, r.best_arcs, post, cache)
            assert fast == slow and repr(fast) == repr(slow) and hash(fast.words) == hash(slow.words)
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("tuning", [SearchTuning(), SearchTuning(exact_batch_states=1, exact_batch_members=1)])
def test_tuning_gives_identical_phrases(real_lattice, tuning):
    """The search's time/memory trade-offs (how large an exact-bound batch is) must give bitwise the
    same alternatives on a real lattice."""
    dec = PhraseDecomposition(real_lattice, 0.1, acoustic_scale=0.1)
    reference = _signature(phrases(real_lattice, 200, 0.1, acoustic_scale=0.1))
    assert _signature(dec.alternatives(200)) == reference
    assert _signature(dec.alternatives(200, tuning=tuning)) == reference
