"""The C loops of lattice_tools.algorithms.kaldi_order (lattice_tools/_ext/kaldi_order.c) against their
plain-Python transcriptions (tests/_reference/kaldi_order.py): the same TopSort numbering (or the same
cycle), the same state times (or the same first conflicting state), the same float32 best path, on random
graphs with ties, cycles, unreachable states and states without arcs; bad buffers raise cleanly."""
from __future__ import annotations

import math

import numpy as np
import pytest
from _reference import kaldi_order as ref
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools._ext import native
from lattice_tools.algorithms import kaldi_order as K


@st.composite
def graphs(draw, acyclic: bool):
    """(num_states, start, src, dst) with arcs sorted by source (stored order within a state)."""
    n = draw(st.integers(1, 9))
    m = draw(st.integers(0, 20))
    arcs = []
    for _ in range(m):
        s = draw(st.integers(0, n - 1))
        if acyclic:
            if s == n - 1:
                continue
            d = draw(st.integers(s + 1, n - 1))
        else:
            d = draw(st.integers(0, n - 1))
        arcs.append((s, d))
    arcs.sort(key=lambda a: a[0])
    src = np.array([a[0] for a in arcs], np.int64)
    dst = np.array([a[1] for a in arcs], np.int64)
    start = draw(st.integers(0, n - 1)) if not acyclic else 0
    return n, start, src, dst


def _offsets(n, src):
    return np.searchsorted(src, np.arange(n + 1))


@settings(max_examples=300, deadline=None)
@given(graphs(acyclic=False))
def test_top_sort_equals_transcription(g):
    n, start, src, dst = g
    want = ref.top_sort_order(n, start, _offsets(n, src).tolist(), dst.tolist())
    got = K.top_sort_order(n, start, _offsets(n, src), dst)
    assert (got is None) == (want is None)
    if want is not None:
        assert got.tolist() == want


@settings(max_examples=300, deadline=None)
@given(graphs(acyclic=True), st.data(), st.booleans())
def test_state_times_equal_transcription(g, data, strict):
    n, _, src, dst = g
    dur = np.array(data.draw(st.lists(st.integers(0, 3), min_size=len(src), max_size=len(src))), np.int64)
    want_t, want_bad = ref.state_times(n, src.tolist(), dst.tolist(), dur.tolist(), strict)
    got_t, got_bad = K.state_times(n, src, dst, dur, strict)
    assert (got_t.tolist(), got_bad) == (want_t, want_bad)


@settings(max_examples=300, deadline=None)
@given(graphs(acyclic=True), st.data())
def test_tropical_best_path_equals_transcription(g, data):
    n, _, src, dst = g
    costs = st.sampled_from([0.0, 0.5, 1.0, 1e-8]) | st.floats(-3, 30, width=32)
    cost = np.array(data.draw(st.lists(costs, min_size=len(src), max_size=len(src))), np.float32)
    fin = np.array(data.draw(st.lists(costs | st.just(math.inf), min_size=n, max_size=n)), np.float32)
    want = ref.tropical_best_path(n, _offsets(n, src).tolist(), dst.tolist(), cost, fin)
    assert K.tropical_best_path(n, _offsets(n, src), dst, cost, fin) == want


@settings(max_examples=300, deadline=None)
@given(graphs(acyclic=True), st.data())
def test_compact_shortest_path_equals_transcription(g, data):
    """Ties (equal costs on parallel arcs and on paths through different predecessors), unreachable
    final states, states without arcs."""
    n, _, src, dst = g
    costs = st.sampled_from([0.0, 0.5, 1.0, 0.1 + 0.2, 0.3]) | st.floats(-3, 30)
    cost = np.array(data.draw(st.lists(costs, min_size=len(src), max_size=len(src))), np.float64)
    fin = np.array(data.draw(st.lists(costs | st.just(math.inf), min_size=n, max_size=n)), np.float64)
    offs = _offsets(n, src)
    want = ref.compact_shortest_path(n, offs.tolist(), dst.tolist(), cost.tolist(), fin.tolist())
    assert K.compact_shortest_path(n, offs, dst, cost, fin) == want


def test_compact_shortest_path_keeps_the_first_of_equal_arcs_and_predecessors():
    # 0 -> 1 (1.0), 0 -> 2 (1.0) -> 3 from both with equal totals: 3 keeps predecessor 1 (relaxed first);
    # 1 -> 3 twice at the same cost: the first arc; finals 3 and 4 at equal totals: the first, 3
    src, dst = np.array([0, 0, 1, 1, 2, 3]), np.array([1, 2, 3, 3, 3, 4])
    cost = np.array([1.0, 1.0, 2.0, 2.0, 2.0, 0.0])
    fin = np.array([math.inf, math.inf, math.inf, 0.0, 0.0])
    assert K.compact_shortest_path(5, _offsets(5, src), dst, cost, fin) == ([0, 2], 3)
    assert ref.compact_shortest_path(5, _offsets(5, src).tolist(), dst.tolist(), cost.tolist(), fin.tolist()) \
        == ([0, 2], 3)
    no_final = np.full(5, math.inf)
    assert K.compact_shortest_path(5, _offsets(5, src), dst, cost, no_final) == ([], -1)


def test_compact_shortest_path_on_a_non_topological_numbering_is_an_error_not_a_hang():
    C = native("kaldi_order")
    off, dst = np.array([0, 1, 2, 3]), np.array([1, 2, 1])  # 2 -> 1 (-10): 1 and 2 each other's predecessor
    cost, fin = np.array([0.0, 0.0, -10.0]), np.array([math.inf, math.inf, 0.0])
    with pytest.raises(ValueError, match="not numbered topologically"):
        C.compact_shortest_path(off, dst, cost, fin)


def test_float32_rounding_makes_a_tie_and_the_first_arc_stays():
    """1 -> 2 twice: 1.0 + 1e-8 and 1.0 + 0 differ in double but are the same float32, so the second
    arc is not strictly better and the first one stays on the path (as OpenFst keeps it)."""
    src, dst = np.array([0, 1, 1]), np.array([1, 2, 2])
    cost = np.array([1.0, 1e-8, 0.0], np.float32)
    fin = np.array([math.inf, math.inf, 0.0], np.float32)
    path = K.tropical_best_path(3, _offsets(3, src), dst, cost, fin)
    assert path == ref.tropical_best_path(3, _offsets(3, src).tolist(), dst.tolist(), cost, fin) == [0, 1]


def test_no_reachable_final_state_gives_the_empty_path():
    fin = np.array([math.inf, math.inf], np.float32)
    assert K.tropical_best_path(2, np.array([0, 1, 1]), np.array([1]), np.array([0.5], np.float32), fin) == []


def test_non_topological_parent_chain_is_an_error_not_a_hang():
    """A parent chain longer than the number of states (numbering not topological) raises."""
    C = native("kaldi_order")
    # 0 -> 1 (0), 1 -> 2 (0), 2 -> 1 (-10): relaxing in numeric order makes 1 and 2 each other's parent
    off, dst = np.array([0, 1, 2, 3]), np.array([1, 2, 1])
    cost = np.array([0.0, 0.0, -10.0], np.float32)
    fin = np.array([math.inf, math.inf, 0.0], np.float32)
    with pytest.raises(ValueError, match="not numbered topologically"):
        C.tropical_best_path(off, dst, cost, fin)


@pytest.mark.parametrize("call,error,match", [
    (lambda C: C.top_sort(0, np.array([0, 1], np.int32), np.array([0]), np.empty(1, np.int64)), TypeError,
     "top_sort: argument arc_offsets must be a C-contiguous array of int64"),
    (lambda C: C.top_sort(0, np.array([0, 1]), np.array([0]), np.empty(2, np.int64)), ValueError,
     r"top_sort: argument arc_offsets must have 3 items \(got 2\)"),
    (lambda C: C.top_sort(0, np.array([0, 1]), np.array([5]), np.empty(1, np.int64)), ValueError,
     r"arc_dst\[0\] = 5 is not a state"),
    (lambda C: C.top_sort(3, np.array([0, 0]), np.array([], np.int64), np.empty(1, np.int64)), ValueError,
     "start 3 is not a state"),
    (lambda C: C.top_sort(0, np.array([0, 0]), np.array([], np.int64), np.empty(1, np.int32)), TypeError,
     "top_sort: argument new_id must be a C-contiguous writable array of int64"),
    (lambda C: C.top_sort(0, np.array([0, 2, 1]), np.array([1, 0]), np.empty(2, np.int64)), ValueError,
     "arc_offsets must run from 0 to len.arc_dst. = 2"),
    (lambda C: C.state_times(np.array([0]), np.array([1]), np.array([1, 2]), np.empty(2, np.int64), True),
     ValueError, "src, dst and dur must have the same length"),
    (lambda C: C.state_times(np.array([0]), np.array([2]), np.array([1]), np.empty(2, np.int64), True),
     ValueError, r"arc 0 \(0 -> 2\) has a state outside 0 .. 1"),
    (lambda C: C.state_times(np.array([0]), np.array([1]), np.array([1]), b"0123456789abcdef", True),
     TypeError,
     r"state_times: argument times must be a C-contiguous writable array of int64 \(bytes is not one\)"),
    (lambda C: C.tropical_best_path(np.array([0, 1, 1]), np.array([1]), np.array([1.0]),
                                    np.zeros(2, np.float32)), TypeError,
     "tropical_best_path: argument arc_cost must be a C-contiguous array of float32"),
    (lambda C: C.tropical_best_path(np.array([0, 1, 1]), np.array([1]), np.zeros(2, np.float32),
                                    np.zeros(2, np.float32)), ValueError, "arc_cost has 2 items, arc_dst 1"),
    (lambda C: C.compact_shortest_path(np.array([0, 1, 1]), np.array([1]), np.zeros(1, np.float32),
                                       np.zeros(2)), TypeError,
     "compact_shortest_path: argument arc_cost must be a C-contiguous array of float64"),
    (lambda C: C.compact_shortest_path(np.array([0, 1, 1]), np.array([1]), np.zeros(2), np.zeros(2)), ValueError,
     "arc_cost has 2 items, arc_dst 1"),
    (lambda C: C.compact_shortest_path(np.array([0, 1]), np.array([1]), np.zeros(1), np.zeros(2)), ValueError,
     r"compact_shortest_path: argument arc_offsets must have 3 items \(got 2\)"),
    (lambda C: C.compact_shortest_path(np.array([0, 1, 1]), np.array([2]), np.zeros(1), np.zeros(2)), ValueError,
     r"arc_dst\[0\] = 2 is not a state"),
    (lambda C: C.compact_shortest_path(np.array([0, 1, 1]), np.array([1]), np.zeros(1), bytes(16)), TypeError,
     r"compact_shortest_path: argument final_cost must be a C-contiguous array of float64 "
     r"\(got format 'B', itemsize 1, ndim 1\)"),
])
def test_bad_buffers_raise(call, error, match):
    with pytest.raises(error, match=match):
        call(native("kaldi_order"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), unique=True, max_size=30) | st.lists(st.integers(0, 10**9), unique=True,
                                                                         max_size=30))
def test_arcs_placed_by_stored_index_equal_the_stable_argsort(indices):
    """stored_order_view's O(arcs) placement (and its argsort branch for sparse indices)."""
    file_idx = np.array(indices + [-1, -1], np.int64)  # two final-string arcs (-1) are not among the arcs
    arcs = np.arange(len(indices), dtype=np.int64)
    want = arcs[np.argsort(file_idx[arcs], kind="stable")]
    assert K._in_stored_order(arcs, file_idx).tolist() == want.tolist()
