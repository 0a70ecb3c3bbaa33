"""Confusion networks (Xu et al. 2011 MBR recursion)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from _alt_helpers import SYMS, lattice_strategy, ps_lattice
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.alternatives.sausages import sausage
from lattice_tools.core.lattice import Lattice


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.floats(0.01, 1.0), min_size=1, max_size=3), min_size=1, max_size=5), st.integers(0, 2 ** 16))
def test_sausage_shaped_lattice_is_recovered_exactly(bins, seed):
    """A lattice that already is a confusion network: bins = positions, posteriors = arc posteriors."""
    rng = np.random.default_rng(seed)
    src, dst, word, cost, want = [], [], [], [], []
    for k, weights in enumerate(bins):
        p = np.asarray(weights) / sum(weights)
        words = rng.choice([1, 2, 3, 4], size=len(p), replace=False)
        for w, pw in zip(words, p, strict=False):
            src.append(k)
            dst.append(k + 1)
            word.append(int(w))
            cost.append(-math.log(pw))
        want.append({SYMS.word(int(w)): float(pw) for w, pw in zip(words, p, strict=False)})
    n = len(bins) + 1
    lat = Lattice.from_arcs(src=src, dst=dst, word=word, symbols=SYMS, final_graph_cost=[math.inf] * (n - 1) + [0.0],
                            graph_cost=cost, t0=[10 * s for s in src], t1=[10 * d for d in dst])
    sa = sausage(lat)
    assert len(sa.slots) == len(bins)
    for slot, w, k in zip(sa.slots, want, range(len(bins)), strict=False):
        got = {a.words[0]: a.posterior for a in slot.alternatives if a.words}
        assert got.keys() == w.keys()
        for word_, p in w.items():
            assert got[word_] == pytest.approx(p, abs=1e-4)  # Kaldi's tie-break delta is 1e-5 per arc
        assert slot.start == pytest.approx(k * 0.1) and slot.end == pytest.approx((k + 1) * 0.1)


@settings(max_examples=80, deadline=None)
@given(lattice_strategy(), st.integers(1, 3))
def test_bins_sum_to_one_and_depth_cut(lat, n):
    full = sausage(lat)
    for slot in full.slots:
        assert sum(a.posterior for a in slot.alternatives) == pytest.approx(1.0, abs=1e-6)
        post = [a.posterior for a in slot.alternatives]
        assert post == sorted(post, reverse=True)
    cut = sausage(lat, n)
    assert all(s.depth <= n for s in cut.slots)
    assert cut == full.truncated(n)  # (the cut builds only the alternatives it keeps)


def test_real_lattice():
    lat = ps_lattice()
    sa = sausage(lat, acoustic_scale=0.1)
    assert len(sa.slots) >= 5
    for slot in sa.slots:
        assert sum(a.posterior for a in slot.alternatives) == pytest.approx(1.0, abs=1e-6)
        assert slot.start <= slot.end
    starts = [s.start for s in sa.slots]
    assert starts == sorted(starts)
    one_best = sa.one_best()
    assert one_best and all(w for w in one_best)
    assert sa.meta["risk"] >= 0


@settings(max_examples=60, deadline=None)
@given(lattice_strategy(), st.sampled_from([1.0, 0.1, 3.0]))
def test_compiled_recursion_equals_literal_transcription_of_kaldi(lat, ac):
    """The C recursion does Kaldi's floating-point operations in Kaldi's order: the MBR words, risk,
    bins, bin times, one-best times and confidences equal a literal, dict-based transcription of
    lat/sausages.cc exactly (tests/_reference/mbr.py)."""
    from _reference.mbr import reference_mbr

    from lattice_tools.alternatives.sausages import kaldi_order, mbr_decode

    got = mbr_decode(lat, acoustic_scale=ac, strict_times=False)
    words, risk, bins, stimes, obt, conf = reference_mbr(kaldi_order(lat, acoustic_scale=ac))
    assert got.words == words and got.bayes_risk == risk
    assert [list(b) for b in got.bins] == bins
    assert list(got.bin_times) == stimes
    assert [tuple(t) for t in got.one_best_times] == obt and list(got.confidences) == conf


def test_real_lattice_equals_literal_transcription():
    from _reference.mbr import reference_mbr

    from lattice_tools.alternatives.sausages import kaldi_order, mbr_decode

    lat = ps_lattice()
    got = mbr_decode(lat, acoustic_scale=0.1)
    words, risk, bins, stimes, _, _ = reference_mbr(kaldi_order(lat, acoustic_scale=0.1))
    assert got.words == words and got.bayes_risk == risk and [list(b) for b in got.bins] == bins
    assert list(got.bin_times) == stimes


# ------------------------------------------------------------------------------------------------
# the compiled recursion (lattice_tools/_ext/mbr.c) against the literal transcription of Kaldi
# ------------------------------------------------------------------------------------------------
N_CODES = 5  # codes 0 (epsilon) .. 3 on arcs; 4 only in hypotheses (a starting word not in the lattice)


@st.composite
def small_recursions(draw):
    """A lattice in Kaldi's order (every state after the start entered by an arc from an earlier
    state; the last state the final one), arcs with epsilons and repeated words and weights (ties in
    the edit costs and the posteriors), non-decreasing state times, and a hypothesis with Kaldi's
    epsilons.  Includes the single-state lattice."""
    n = draw(st.integers(1, 7))
    weights = st.sampled_from([0.0, -0.5, -1.0, -2.302585092994046]) | st.floats(-8.0, 0.0)
    arcs = []  # (code, start, end, loglike), 0-based states
    for d in range(1, n):
        for _ in range(draw(st.integers(1, 3))):
            arcs.append((draw(st.integers(0, 3)), draw(st.integers(0, d - 1)), d, draw(weights)))
    arcs.sort(key=lambda a: a[1])  # arcs grouped by start state, as the view lists them
    steps = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    times = np.cumsum([0, *steps[1:]]).astype(np.int64)
    words = draw(st.lists(st.integers(1, N_CODES - 1), max_size=4))
    R = [0] + [x for w in words for x in (w, 0)]
    return n, arcs, times, R


def _kernel_args(n, arcs, times, R):
    code = np.array([a[0] for a in arcs], np.int64)
    start = np.array([a[1] for a in arcs], np.int64)
    end = np.array([a[2] for a in arcs], np.int64)
    loglike = np.array([a[3] for a in arcs], np.float64)
    pre_arcs = np.argsort(end, kind="stable")
    pre_offsets = np.searchsorted(end[pre_arcs], np.arange(n + 1))
    stats = np.full((len(R) + 1, N_CODES, 3), np.nan)  # the kernel clears it
    return [pre_offsets, pre_arcs, start, code, loglike, times, np.array(R, np.int64), stats, N_CODES]


@settings(max_examples=300, deadline=None)
@given(small_recursions())
def test_compiled_pass_equals_kaldi_transcription_bit_for_bit(case):
    """One pass of the C kernel gives the expected edit distance and every gamma, tau_b, tau_e sum
    of Kaldi's maps bit for bit (an entry of Kaldi's map exists iff the kernel's gamma is not 0)."""
    from _reference.mbr import acc_stats

    from lattice_tools._ext import native

    n, arcs, times, R = case
    args = _kernel_args(n, arcs, times, R)
    risk = native("mbr").acc_stats(*args)
    stats = args[7]
    ref_arcs = [(w, s + 1, d + 1, ll) for w, s, d, ll in arcs]
    pre = [[] for _ in range(n + 1)]
    for i, (_, _, d, _) in enumerate(arcs):
        pre[d + 1].append(i)
    L, gamma, tau_b, tau_e = acc_stats(n, ref_arcs, pre, [0, *times.tolist()], R)
    assert risk == L and np.float64(risk).tobytes() == np.float64(L).tobytes()
    assert not stats[0].any()
    for q in range(1, len(R) + 1):
        assert set(np.flatnonzero(stats[q, :, 0])) == set(gamma[q])
        for c in range(N_CODES):
            want = (gamma[q].get(c, 0.0), tau_b[q].get(c, 0.0), tau_e[q].get(c, 0.0))
            assert tuple(stats[q, c].tolist()) == want, (q, c)


def test_compiled_pass_on_the_single_state_lattice():
    """One final start state, no arcs: all the mass deletes down to position 0 (epsilon bins)."""
    from lattice_tools._ext import native

    args = _kernel_args(1, [], np.array([3], np.int64), [0, 2, 0])
    assert native("mbr").acc_stats(*args) == 1.0  # the word of R is deleted
    stats = args[7]
    assert stats[1:, 0].tolist() == [[1.0, 3.0, 3.0]] * 3 and not stats[1:, 1:].any()


def _good_args():
    return _kernel_args(3, [(1, 0, 1, -0.5), (0, 0, 1, -1.0), (2, 1, 2, 0.0)], np.array([0, 2, 5], np.int64),
                        [0, 1, 0])


@pytest.mark.parametrize("index,bad,error,match", [
    (0, lambda a: a.astype(np.int32), TypeError, "acc_stats: argument "
         "pre_offsets must be a C-contiguous array of int64 "
         r"\(got format 'i', itemsize 4, ndim 1\)"),
    (4, lambda a: a.astype(np.float32), TypeError, "acc_stats: argument "
         "arc_loglike must be a C-contiguous array of float64"),
    (2, lambda a: a.astype(np.float64), TypeError, "acc_stats: argument "
         "arc_start must be a C-contiguous array of int64"),
    (7, lambda a: a.astype(np.float32), TypeError, "acc_stats: argument "
         "stats must be a C-contiguous writable array of float64"),
    (3, lambda a: a.tolist(), TypeError, r"acc_stats: argument "
         r"arc_code must be a C-contiguous array of int64 \(list is not one\)"),
    (1, lambda a: np.repeat(a, 2)[::2], TypeError, "acc_stats: argument "
         "pre_arcs must be a C-contiguous array of int64"),
    (7, lambda a: np.lib.stride_tricks.as_strided(a, writeable=False), TypeError, "acc_stats: argument "
         "stats must be a C-contiguous writable array of float64"),
    (0, lambda a: a[:-1], ValueError, r"pre_offsets has 3 items, expected len.state_times. \+ 1 = 4"),
    (0, lambda a: np.array([0, 2, 1, 3]), ValueError, "pre_offsets decreases at state 1"),
    (0, lambda a: np.array([0, 1, 2, 2]), ValueError, "pre_offsets must run from 0 to len.pre_arcs. = 3"),
    (1, lambda a: np.array([0, 1, 3]), ValueError, r"pre_arcs\[2\] = 3 is not an arc"),
    (2, lambda a: np.array([0, -1, 1]), ValueError, r"arc_start\[1\] = -1 is not a state"),
    (2, lambda a: np.array([0, 0, 3]), ValueError, r"arc_start\[2\] = 3 is not a state"),
    (2, lambda a: np.array([0, 2, 1]), ValueError, "arc 1 enters state 1 from state 2: the states must be numbered "
     "topologically"),
    (3, lambda a: np.array([1, 5, 2]), ValueError, r"arc_code\[1\] = 5 is not a code \(0 .. 4\)"),
    (3, lambda a: a[:2], ValueError, "arc_start, arc_code and arc_loglike must have the same length"),
    (6, lambda a: np.array([0, 7, 0]), ValueError, r"R\[1\] = 7 is not a code"),
    (6, lambda a: a[:0], ValueError, "expected len.R. >= 1 and n_codes >= 1, got 0 and 5"),
    (8, lambda a: 0, ValueError, "expected len.R. >= 1 and n_codes >= 1, got 3 and 0"),
    (8, lambda a: "5", TypeError, "integer"),
    (7, lambda a: a[:, :-1].copy(), ValueError, r"stats has 48 items, expected \(len\(R\) \+ 1\) x n_codes x 3 = 4 x 5 x 3"),
    (5, lambda a: a[:0], ValueError, "state_times is empty"),
])
def test_compiled_pass_rejects_bad_buffers(index, bad, error, match):
    """Every argument's type, size and indices are checked before the loops: a wrong buffer raises
    TypeError/ValueError naming it, never reads or writes out of bounds."""
    from lattice_tools._ext import native

    args = _good_args()
    native("mbr").acc_stats(*args)  # the good arguments pass
    args[index] = bad(args[index])
    with pytest.raises(error, match=match):
        native("mbr").acc_stats(*args)
    with pytest.raises(TypeError):
        native("mbr").acc_stats(*_good_args()[:-1])


def test_mbr_memory_budget_is_checked_before_a_pass(monkeypatch):
    """A pass that would need more memory than MAX_STATS_BYTES raises BudgetExceededError naming
    the sizes, instead of allocating."""
    from lattice_tools.alternatives import sausages
    from lattice_tools.core.errors import BudgetExceededError

    lat = ps_lattice()
    assert sausages.mbr_decode(lat, acoustic_scale=0.1).words
    monkeypatch.setattr(sausages, "MAX_STATS_BYTES", 10_000)
    with pytest.raises(BudgetExceededError, match=r"MBR statistics for \d+ bins x \d+ distinct words on \d+ states"):
        sausages.mbr_decode(lat, acoustic_scale=0.1)


def test_compiled_pass_can_be_interrupted():
    """A long pass checks for signals as it goes (Ctrl-C works): a handler that raises stops it
    within milliseconds of CPU, not after the pass."""
    import signal
    import time

    from lattice_tools._ext import native

    n, fan, q = 1500, 8, 3001
    src = np.repeat(np.arange(n - 1), fan)
    dst = src + 1
    R = np.zeros(q, np.int64)
    R[1::2] = 1 + np.arange(q // 2) % 3
    pre_arcs = np.argsort(dst, kind="stable")
    args = [np.searchsorted(dst[pre_arcs], np.arange(n + 1)), pre_arcs, src, np.arange(len(src)) % 4,
            np.full(len(src), -1.0), np.arange(n), R, np.empty((q + 1, 4, 3)), 4]

    def cpu():
        return time.process_time()

    t = cpu()
    native("mbr").acc_stats(*args)
    full = cpu() - t

    class Interrupted(Exception):
        pass

    def handler(signum, frame):
        raise Interrupted

    previous = signal.signal(signal.SIGVTALRM, handler)
    try:
        t = cpu()
        signal.setitimer(signal.ITIMER_VIRTUAL, full / 10)
        with pytest.raises(Interrupted):
            native("mbr").acc_stats(*args)
        stopped = cpu() - t
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)
    assert stopped < 0.6 * full, (stopped, full)
