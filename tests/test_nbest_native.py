"""The compiled N-best loops (lattice_tools/_ext/nbest/) against their plain-Python transcription
(tests/_reference/nbest_*.py) on random lattices -- the same bits, except
the region search's costs (same lists; see test_bounded_search_is_the_reference) --, their argument
checks, and Ctrl-C during a long search."""
from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from _alt_helpers import lattice_strategy
from _reference import nbest_closed_rows as R
from _reference import nbest_kernels as K
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools._ext import native
from lattice_tools.alternatives._common import prepare
from lattice_tools.alternatives.nbest_lists import _ClosedRows

C = native("nbest")
REPO = Path(__file__).resolve().parent.parent


def _i(b):
    return np.frombuffer(b, np.int64)


def _f(b):
    return np.frombuffer(b, np.float64)


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _problem(lat):
    labels, cost, final = prepare(lat)
    src, dst = lat.src.astype(np.int64), lat.dst.astype(np.int64)
    return lat.num_states, src, dst, labels.astype(np.int64), cost.astype(np.float64), final.astype(np.float64)


@settings(max_examples=150, deadline=None)
@given(lattice_strategy(max_states=9, max_arcs=24), st.sampled_from([0, 1, 3]))
def test_rows_bounds_and_best_paths_are_the_reference_bits(lat, k):
    m, src, dst, lab, cost, final = _problem(lat)
    with np.errstate(invalid="ignore", over="ignore"):
        want = R.closed_rows(m, src, dst, lab, cost, final)
    got = C.closed_rows(m, src, dst, lab, cost, final)
    for w, g, conv in zip(want, got, (_i, _i, _f, _f, _f, _f), strict=True):
        assert _same_bits(w, conv(g))
    rows = _ClosedRows.build(m, src, dst, lab, cost, final)
    nl = max(len(rows.lab_values), 1)
    args = (m, rows.w_off, rows.w_dlab, rows.w_dst, rows.w_lc, rows.x_lc, nl)
    with np.errstate(invalid="ignore", over="ignore"):
        assert _same_bits(R.best_word_bound(*args), _f(C.best_word_bound(*args)))
        assert _same_bits(R.suffix_list_bound(*args, k), _f(C.suffix_list_bound(*args, k)))
    # every sequence of up to 3 dense labels, also ones no path reads
    seqs = [[], *[[a] for a in range(nl)], *[[a, b] for a in range(nl) for b in range(nl)], [0, 0, 0]]
    seq_off = np.r_[0, np.cumsum([len(q) for q in seqs])].astype(np.int64)
    seq_lab = np.array([x for q in seqs for x in q], np.int64)
    bp = (rows.w_off, rows.w_dlab, rows.w_dst, rows.w_bc, rows.w_arc, rows.x_bc, seq_off, seq_lab, m)
    want_c, want_a = R.best_paths(*bp)
    got_c, got_a = C.best_paths(*bp)
    assert _same_bits(want_c, _f(got_c)) and _same_bits(want_a, _i(got_a))


def _sequences(found_link, parent, label):
    out = []
    for node in np.asarray(found_link).tolist():
        seq = []
        while node > 0:
            seq.append(int(label[node]))
            node = int(parent[node])
        out.append(tuple(reversed(seq)))
    return out


@settings(max_examples=150, deadline=None)
@given(lattice_strategy(max_states=9, max_arcs=24), st.sampled_from([1, 3, 20, -1]),
       st.sampled_from([1.0, 1e-3]), st.sampled_from([0, 8]))
def test_bounded_search_is_the_reference(lat, n, margin, k):
    """The same sequences in the same order (up to exchanges among ties) and the same costs to 1e-12
    relative, or 1e-12 absolute near 0 (a log sum's rounding error scales with its terms, not with its
    result: 16 parallel paths of cost 0 and one of cost 6 sum to -1.67e-5 with an error of ~1e-17): the C
    search gathers a determinized state's word arcs by propagating its members through the epsilon arcs
    (each arc once) where the reference gathers the members' closed rows (an arc once per member that
    reaches it), so the log sums add the same terms in another order."""
    m, src, dst, lab, cost, final = _problem(lat)
    rows = _ClosedRows.build(m, src, dst, lab, cost, final)
    nl = max(len(rows.lab_values), 1)
    args = (m, rows.w_off, rows.w_dlab, rows.w_dst, rows.w_lc, rows.x_lc, nl)
    hb = _f(C.suffix_list_bound(*args, k)) if k else _f(C.best_word_bound(*args))
    finite = np.isfinite(hb)  # (only those: inf - inf would warn)
    hb[finite] -= 1e-6 * (1 + np.abs(hb[finite]))
    tail = (hb, nl, n, 10**6, 10**6, 10**12, margin, 1e-9)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        want = K.bounded_search(m, rows.w_off, rows.w_dlab, rows.w_dst, rows.w_lc, rows.x_lc, *tail)
    dlab = np.full(len(lab), -1, np.int64)
    dlab[lab != 0] = np.searchsorted(rows.lab_values, lab[lab != 0])
    got = C.bounded_search(m, src, dst, dlab, cost, final, *tail)
    assert got[0] == want[0]
    want_seqs, want_cost = _sequences(want[1], want[3], want[4]), want[2]
    got_seqs, got_cost = _sequences(_i(got[1]), _i(got[3]), _i(got[4])), _f(got[2])
    assert len(got_seqs) == len(want_seqs)
    assert np.allclose(got_cost, want_cost, rtol=1e-12, atol=1e-12)
    by_seq = dict(zip(want_seqs, want_cost, strict=True))
    for seq, c in zip(got_seqs, got_cost, strict=True):
        if seq not in by_seq:  # only at the cut-off, among ties
            assert abs(c - want_cost[-1]) <= 1e-12 * (1 + abs(c))
        else:
            assert by_seq[seq] == pytest.approx(c, rel=1e-12, abs=1e-12)
    ties = np.any(np.abs(np.diff(want_cost)) <= 1e-12 * np.abs(want_cost[1:])) if len(want_cost) > 1 else False
    if not ties:
        assert got_seqs == want_seqs


def test_arguments_are_checked():
    m, src, dst = 3, np.array([0, 1], np.int64), np.array([1, 2], np.int64)
    lab, cost, final = np.array([1, 0], np.int64), np.zeros(2), np.array([np.inf, np.inf, 0.0])
    with pytest.raises(TypeError, match="closed_rows: argument cost must be a C-contiguous array of float64"):
        C.closed_rows(m, src, dst, lab, cost.astype(np.float32), final)
    with pytest.raises(TypeError, match="closed_rows: argument src must be a C-contiguous array of int64"):
        C.closed_rows(m, src.astype(np.int32), dst, lab, cost, final)
    with pytest.raises(ValueError, match=r"closed_rows: argument final must have 3 items \(got 2\)"):
        C.closed_rows(m, src, dst, lab, cost, final[:2])
    with pytest.raises(ValueError, match="numbered topologically"):
        C.closed_rows(m, src, np.array([1, 1], np.int64), lab, cost, final)
    with pytest.raises(TypeError, match=r"closed_rows: argument "
         r"src must be a C-contiguous array of int64 \(list is not one\)"):
        C.closed_rows(m, [0, 1], dst, lab, cost, final)
    rows = _ClosedRows.build(m, src, dst, lab, cost, final)
    bad_dlab = np.full_like(rows.w_dlab, 5)
    with pytest.raises(ValueError, match="label 5 out of range"):
        C.best_word_bound(m, rows.w_off, bad_dlab, rows.w_dst, rows.w_lc, rows.x_lc, 1)
    with pytest.raises(ValueError, match="k must be >= 0"):
        C.suffix_list_bound(m, rows.w_off, rows.w_dlab, rows.w_dst, rows.w_lc, rows.x_lc, 1, -1)
    dlab = np.array([0, -1], np.int64)
    with pytest.raises(ValueError, match=r"bounded_search: argument hb must have 3 items \(got 2\)"):
        C.bounded_search(m, src, dst, dlab, cost, final, np.zeros(2), 1, 1, 10, 10, 10, 1.0, 1e-9)
    with pytest.raises(ValueError, match="dense label 1 out of range"):
        C.bounded_search(m, src, dst, np.array([1, -1], np.int64), cost, final, np.zeros(3), 1, 1, 10, 10, 10, 1.0,
                         1e-9)
    with pytest.raises(ValueError, match="seq_off must start at 0"):
        C.best_paths(rows.w_off, rows.w_dlab, rows.w_dst, rows.w_bc, rows.w_arc, rows.x_bc,
                     np.array([0, 2], np.int64), np.zeros(1, np.int64), m)


_ENDLESS = """
import numpy as np
from lattice_tools.alternatives.nbest_lists import nbest_sequences
from lattice_tools.core.lattice import Lattice
from lattice_tools.core.symbols import SymbolTable
slots, width = 40, 5  # a sausage with 5**40 word sequences, all wanted
src = np.repeat(np.arange(slots), width)
syms = SymbolTable.from_words([f"w{i}" for i in range(width)])
word = np.tile(np.arange(1, width + 1), slots)
lat = Lattice.from_arcs(src=src, dst=src + 1, word=word, symbols=syms, graph_cost=np.tile(np.arange(width) * 0.1, slots),
                        final_graph_cost=np.r_[np.full(slots, np.inf), 0.0], num_states=slots + 1)
print("started", flush=True)
try:
    nbest_sequences(lat, None, max_pops=10**12)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_ctrl_c_interrupts_a_long_search():
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", _ENDLESS], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "started"
        time.sleep(0.3)  # (the search is in its C loop by then: the lattice has 41 states; its arrays grow ~0.3 GB/s)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert out.strip() == "interrupted"



def test_byte_budget_stops_the_kernels_and_holds_their_allocations():
    """Every kernel counts what it allocates against its optional last argument max_bytes: the region search
    returns TOO_MANY_BYTES, the others raise MemoryError with the module's BUDGET_EXCEEDED message; a budget
    that holds changes nothing, and the next call without one is not limited by it."""
    rng = np.random.default_rng(7)
    slots, width = 12, 4  # a sausage: 4**12 sequences
    m = slots + 1
    src = np.repeat(np.arange(slots, dtype=np.int64), width)
    dst = src + 1
    lab = np.arange(1, slots * width + 1, dtype=np.int64)
    cost = rng.uniform(0.1, 2.0, len(src))
    final = np.full(m, np.inf)
    final[-1] = 0.0
    rows = _ClosedRows.build(m, src, dst, lab, cost, final)
    nl = max(len(rows.lab_values), 1)
    hb = _f(C.best_word_bound(m, rows.w_off, rows.w_dlab, rows.w_dst, rows.w_lc, rows.x_lc, nl))
    dlab = np.searchsorted(rows.lab_values, lab).astype(np.int64)
    tail = (hb, nl, -1, 10**7, 10**6, 10**12, 1.0, 1e-9)
    exact = (False, math.inf, None, -1)   # anytime, time_limit, guide, max_rss: an exact search, no other limit
    for anytime in (False, True):   # an allocation refused mid-step leaves no list, anytime or not
        small = C.bounded_search(m, src, dst, dlab, cost, final, *tail, anytime, *exact[1:], 1 << 20)
        assert small[0] == C.TOO_MANY_BYTES and all(len(a) == 0 for a in small[1:5])
    free = C.bounded_search(m, src, dst, dlab, cost, final, *tail[:2], 1000, *tail[3:])
    held = C.bounded_search(m, src, dst, dlab, cost, final, *tail[:2], 1000, *tail[3:], *exact, 1 << 30)
    assert free[0] == held[0] == C.OK and [bytes(a) for a in free[1:5]] == [bytes(a) for a in held[1:5]]
    for call in (lambda b: C.closed_rows(m, src, dst, lab, cost, final, b),
                 lambda b: C.best_word_bound(m, rows.w_off, rows.w_dlab, rows.w_dst, rows.w_lc, rows.x_lc, nl, b),
                 lambda b: C.suffix_list_bound(m, rows.w_off, rows.w_dlab, rows.w_dst, rows.w_lc, rows.x_lc, nl, 4, b)):
        with pytest.raises(MemoryError, match=C.BUDGET_EXCEEDED):
            call(64)
        def as_bytes(out):
            return [bytes(a) for a in out] if isinstance(out, tuple) else [bytes(out)]

        assert as_bytes(call(-1)) == as_bytes(call(1 << 30))
    assert len(C.closed_rows(m, src, dst, lab, cost, final)) == 6  # no budget left over from the refused call
