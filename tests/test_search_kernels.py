"""The compiled search kernels (lattice_tools/_ext/search/) against their plain-Python
transcription (tests/_reference/search_kernels.py): bit-identical expansions, successor subsets,
word-time paths and closed exits on random lattices (costs scaled past the double range too, so the
log-domain fallbacks run); clean errors on bad buffers; the memory budget and Ctrl-C in the Viterbi pass."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
from _alt_helpers import brute_force_sequences, lattice_search_problem, lattice_strategy, ps_lattice
from _reference import search_kernels as ref
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools._ext import native
from lattice_tools.algorithms.forward_backward import ForwardBackward
from lattice_tools.alternatives._best_paths import PrefixTrie, best_paths
from lattice_tools.alternatives._common import prepare
from lattice_tools.alternatives._determinizer import AutomataUnion, Determinizer, row_scaling
from lattice_tools.alternatives._fastsearch import _best_first
from lattice_tools.alternatives.phrase_alternatives import PhraseDecomposition
from lattice_tools.core._budget import memory_budget, resident_bytes
from lattice_tools.core.errors import BudgetExceededError

K = native("search")


def _problem(lat, scale=1.0):
    labels, cost, final = prepare(lat)
    cost, final = cost * scale, final * scale
    fb = ForwardBackward(lat.num_states, lat.src, lat.dst, cost, final, log=True)
    return lattice_search_problem(lat, labels, cost, final, fb.beta), (labels, cost, final)


def _same(a, b) -> bool:
    """Equal to the bit (NaN included)."""
    return np.asarray(a).tobytes() == np.asarray(b).tobytes()


def _reference_expand(det, states, resid, stamp):
    d = det
    g = max(d._num_groups, 1)
    cost_min, cost_scaled = row_scaling(d._a_off, d._a_cost)
    compl_min, compl_scaled = row_scaling(d._a_off, d._a_compl)
    return ref.expand_state(states, resid, d._a_off, d._a_group, d._a_cost, cost_min, cost_scaled, d._a_compl,
                            compl_min, compl_scaled, d._group_label, np.zeros(g, np.int64), np.zeros(g, np.int64),
                            np.zeros(g), np.zeros(g), stamp)


def _reference_successor(det, m_base, m_entry, ends, group, stamp):
    d, M, E = det, det.union.num_states, len(det._e_cost)
    return ref.successor_subset(m_base, m_entry, ends, group, d._part_off, d._part_base, d._part_entry, d._arc_off,
                                d._e_cost, d._arc_dst, d._arc_cost, d._arc_scaled, np.zeros(M, np.int64), np.zeros(M),
                                np.zeros(M), np.zeros(E, np.int64), np.zeros(E), np.zeros(E, np.int64), stamp,
                                det.resolution)


def _walk_and_compare(det, limit=60) -> int:
    """Expand the determinized states reachable from every root (breadth first, at most ``limit`` per
    automaton) with both kernels, and resolve every choice with both; returns how many choices."""
    checked = 0
    for i, (rs, rr, _) in enumerate(det.union.roots):
        if not len(rs):
            continue
        todo, seen = [det.intern(i, rs, rr)], set()
        while todo and len(seen) < limit:
            j = todo.pop(0)
            if j in seen:
                continue
            seen.add(j)
            key, resid_bytes = det.subsets[j]
            resid = np.frombuffer(resid_bytes, np.float64)
            states = np.frombuffer(key, np.int64)[:len(resid)]
            det.expand([j], [i])
            bounds, labels, costs, groups, _, succ, _ = det.records[j]
            order, r_bound, r_label, r_cost, ends, m_base, m_entry = _reference_expand(det, states, resid, 1)
            assert _same(np.array(bounds, np.float64), r_bound) and _same(np.array(costs, np.float64), r_cost)
            assert list(labels) == r_label.tolist() and list(groups) == order.tolist()
            for c in range(len(bounds)):
                if labels[c] < 0:
                    continue
                r_states, r_resid, r_rounded = _reference_successor(det, m_base, m_entry, ends, groups[c], 1)
                k, res = det._expander.successor(succ, groups[c])
                assert k == np.r_[r_states, r_rounded].astype(np.int64).tobytes()
                assert res == np.asarray(r_resid, np.float64).tobytes()
                todo.append(det.resolve(det.records[j], c))
                checked += 1
    return checked


@settings(max_examples=120, deadline=None)
@given(st.lists(lattice_strategy(), min_size=1, max_size=3), st.sampled_from([1.0, 0.1, 700.0]))
def test_expansions_and_successors_equal_the_reference(lats, scale):
    """Scale 700: probabilities within one expansion or successor differ by more than 1e-250 (the
    log-domain fallbacks run)."""
    det = Determinizer(AutomataUnion([_problem(lat, scale)[0] for lat in lats]))
    _walk_and_compare(det)


def test_expansions_and_successors_equal_the_reference_on_a_real_lattice():
    dec = PhraseDecomposition(ps_lattice(), 0.05, acoustic_scale=0.1)
    assert _walk_and_compare(Determinizer(AutomataUnion(dec.problems())), limit=25) > 300


def _python_lazy_search(det, i, j0, n, max_pops):
    """_fastsearch's best-first loop (the generator the exact-bound searches run) over the
    determinizer's Python records: (found, trie), or None when it runs out of pops."""
    trie = PrefixTrie()
    gen = _best_first(j0, det.resolve, det.records, trie, n, max_pops, None)
    value = None
    try:
        while True:
            j = gen.send(value) if value is not None else next(gen)
            det.expand([j], [i])
            value = True
    except StopIteration as stop:
        return stop.value, trie
    except BudgetExceededError:
        return None


def _compare_lazy_searches(problems, n, max_pops) -> int:
    compiled, python = Determinizer(AutomataUnion(problems)), Determinizer(AutomataUnion(problems))
    found = 0
    for i, (rs, rr, _) in enumerate(compiled.union.roots):
        if not len(rs):
            continue
        got = compiled.lazy_search(compiled.intern(i, rs, rr), n, max_pops, lambda: None)
        want = _python_lazy_search(python, i, python.intern(i, rs, rr), n, max_pops)
        assert (got is None) == (want is None)
        if got is not None:
            assert got[0] == want[0]  # the same ends, in the same order, with the same costs (bits)
            assert (got[1].parent, got[1].label, got[1].depth) == (want[1].parent, want[1].label, want[1].depth)
            found += len(got[0])
    return found


@settings(max_examples=150, deadline=None)
@given(st.lists(lattice_strategy(), min_size=1, max_size=3), st.integers(1, 8), st.sampled_from([1.0, 700.0]),
       st.sampled_from([3, 20, 10**6]))
def test_compiled_lazy_search_equals_the_python_loop(lats, n, scale, max_pops):
    """The compiled lazy search (Expander.lazy_search) pops what _fastsearch._best_first pops over
    the Python records: the same ends, costs and prefix trie, and runs out of pops alike."""
    _compare_lazy_searches([_problem(lat, scale)[0] for lat in lats], n, max_pops)


def test_compiled_lazy_search_equals_the_python_loop_on_a_real_lattice():
    problems = PhraseDecomposition(ps_lattice(), 0.05, acoustic_scale=0.1).problems()
    assert _compare_lazy_searches(problems, 300, 10**6) > 500


def test_lazy_search_runs_its_check_and_stops_on_its_error():
    """check() (the memory budget) runs every 4096 pops; what it raises ends the search."""
    problems = PhraseDecomposition(ps_lattice(), 0.05, acoustic_scale=0.1).problems()
    det = Determinizer(AutomataUnion(problems))
    calls = []

    def check():
        calls.append(1)
        if len(calls) > 1:
            raise BudgetExceededError("over budget")

    big = max(range(len(problems)), key=lambda i: len(problems[i].src))
    rs, rr, _ = det.union.roots[big]
    with pytest.raises(BudgetExceededError, match="over budget"):
        det.lazy_search(det.intern(big, rs, rr), 10**6, 10**7, check)
    assert len(calls) == 2


def _trie_of(sequences):
    """Prefix trie (children after parents) of ``sequences``: parent, label, depth, end nodes."""
    parent, label, depth, index, ends = [-1], [-1], [0], {(): 0}, []
    for seq in sequences:
        for k in range(1, len(seq) + 1):
            if seq[:k] not in index:
                index[seq[:k]] = len(parent)
                parent.append(index[seq[:k - 1]])
                label.append(seq[k - 1])
                depth.append(k)
        ends.append(index[tuple(seq)])
    return [np.array(x, dtype=np.int64) for x in (parent, label, depth, ends)]


def _reference_word_times(det):
    """The word-time tables as numpy arrays (what Determinizer.word_time_tables hands to WordTimes)."""
    u, d = det.union, det
    per_closure = np.diff(d._e_off)[d._c_dst]
    label = d._e_label[d._t_entry]
    by_label = np.lexsort((label, np.repeat(np.arange(u.num_states), np.diff(d._t_off))))
    eps = np.flatnonzero(u.lab == 0)
    eps = eps[np.argsort(u.src[eps], kind="stable")]
    eps_off = np.searchsorted(u.src[eps], np.arange(u.num_states + 1))
    exits = ref.closed_exits(u.exit_bc, eps_off, u.dst[eps], u.cost[eps])
    assert _same(np.frombuffer(K.closed_exits(u.exit_bc, eps_off, u.dst[eps], u.cost[eps]), np.float64), exits)
    return (d._t_off, label[by_label], np.repeat(d._c_bc, per_closure)[by_label], d._t_entry[by_label], d._arc_off,
            d._arc_dst, d._arc_cost, d._arc_order, u.arc_ids[d._arc_order], exits)


@settings(max_examples=150, deadline=None)
@given(lattice_strategy(), st.sampled_from([1.0, 700.0]), st.randoms(use_true_random=False))
def test_word_times_equal_the_reference(lat, scale, rnd):
    """Every sequence of the lattice (and some that it does not read) through the Viterbi pass of both."""
    problem, (labels, cost, final) = _problem(lat, scale)
    sequences = list(brute_force_sequences(lat, labels, cost, final))
    sequences += [tuple(rnd.choice([1, 2, 3]) for _ in range(rnd.randint(0, 3))) for _ in range(3)]
    sequences = list(dict.fromkeys(sequences))
    det = Determinizer(AutomataUnion([problem]))
    rs, _, rb = det.union.roots[0]
    parent, label, depth, ends = _trie_of(sequences)
    want_cost, want_link, want_arc, want_parent = _reference_viterbi(det, rs, rb, parent, label, ends)
    status, got_cost, got_link, got_arc, got_parent = det.word_time_tables().best_paths(
        rs, rb, label, parent, *_children(parent), _end_of_node(len(parent), ends), len(ends), -1)
    assert status == 0
    assert _same(np.frombuffer(got_cost, np.float64), want_cost)
    for got, want in ((got_link, want_link), (got_arc, want_arc), (got_parent, want_parent)):
        assert np.frombuffer(got, np.int64).tolist() == np.asarray(want).tolist()


def _children(parent):
    children = np.argsort(parent[1:], kind="stable").astype(np.int64) + 1
    return np.searchsorted(parent[children], np.arange(len(parent) + 1)).astype(np.int64), children


def _end_of_node(n_nodes, ends):
    out = np.full(n_nodes, -1, dtype=np.int64)
    out[ends] = np.arange(len(ends))
    return out


def _reference_viterbi(det, rs, rb, parent, label, ends):
    ch_off, children = _children(parent)
    return ref.trie_viterbi(*_reference_word_times(det), rs, rb, label, parent, ch_off, children,
                            _end_of_node(len(parent), ends), len(ends))


# ---- bad input, budgets, Ctrl-C -------------------------------------------------------------------

def _expander_args(det):
    d = det
    cost_min, cost_scaled = row_scaling(d._a_off, d._a_cost)
    compl_min, compl_scaled = row_scaling(d._a_off, d._a_compl)
    return [d._a_off, d._a_group, d._group_label, d._a_cost, cost_min, cost_scaled, d._a_compl, compl_min,
            compl_scaled, d._part_off, d._part_base, d._part_entry, d._arc_off, d._e_cost, d._arc_dst, d._arc_cost,
            d._arc_scaled, 1e-9]


@pytest.fixture(scope="module")
def small_det():
    return Determinizer(AutomataUnion(PhraseDecomposition(ps_lattice(), 0.1, acoustic_scale=0.1).problems()[:3]))


@pytest.mark.parametrize("position,bad,error,match", [
    (0, lambda a: a.astype(np.float64), TypeError, "Expander: argument t_off must be a C-contiguous array of int64"),
    (3, lambda a: a.astype(np.int64), TypeError, "Expander: argument t_cost must be a C-contiguous array of float64"),
    (1, lambda a: a.astype(np.int32), TypeError, "t_group"),
    (5, lambda a: a[:-1], ValueError, r"Expander: argument cost_scaled must have \d+ items \(got \d+\)"),
    (1, lambda a: a + 10**6, ValueError, r"t_group\[0\]"),
    (14, lambda a: -a - 1, ValueError, r"arc_dst\[0\]"),
    (0, lambda a: a[::-1].copy(), ValueError, "t_off: offsets must be nondecreasing"),
    (9, lambda a: a[::2], TypeError, r"Expander: argument "
         r"c_off must be a C-contiguous array of int64 \(numpy.ndarray is not one\)"),
    (17, lambda a: -1.0, ValueError, "resolution"),
    (2, lambda a: "text", TypeError, "group_label"),
])
def test_expander_rejects_bad_tables(small_det, position, bad, error, match):
    args = _expander_args(small_det)
    args[position] = bad(args[position])
    with pytest.raises(error, match=match):
        K.Expander(*args)


def test_expand_and_successor_reject_bad_subsets_and_data(small_det):
    ex = K.Expander(*_expander_args(small_det))
    key, resid = small_det.subsets[small_det.intern(0, *small_det.union.roots[0][:2])]
    with pytest.raises(ValueError, match="key: state"):
        ex.expand(np.array([10**9, 0], np.int64).tobytes(), np.zeros(1).tobytes())
    with pytest.raises(ValueError, match="2 n int64 and n float64"):
        ex.expand(key, resid + b"x")
    with pytest.raises(TypeError, match="bytes"):
        ex.expand(np.frombuffer(key, np.int64), resid)
    *_, succ = ex.expand(key, resid)
    assert ex.successor(succ, 0)
    for group, data, match in [(10**6, succ, "group"), (-1, succ, "group"), (0, succ[:-8], "inconsistent"),
                               (0, succ[:8] + np.int64(10**9).tobytes() + succ[16:], "inconsistent"),
                               (0, succ[:16] + np.int64(-5).tobytes() + succ[24:], "member offsets")]:
        with pytest.raises(ValueError, match=match):
            ex.successor(data, group)
    bad_entry = bytearray(succ)
    ng, nm = np.frombuffer(succ[:16], np.int64)
    if nm:
        bad_entry[8 * (3 + ng):8 * (4 + ng)] = np.int64(-1).tobytes()
        with pytest.raises(ValueError, match="closed entry"):
            ex.successor(bytes(bad_entry), 0)


def test_word_times_reject_bad_tries(small_det):
    tables = small_det.word_time_tables()
    rs, _, rb = small_det.union.roots[0]
    parent, label = np.array([-1, 0, 1], np.int64), np.array([-1, 5, 6], np.int64)
    ch_off, children = _children(parent)
    end = np.array([-1, -1, 0], np.int64)
    assert tables.best_paths(rs, rb, label, parent, ch_off, children, end, 1, -1)[0] == 0
    for args, match in [((rs + 10**9, rb, label, parent, ch_off, children, end, 1), "root_states"),
                        ((rs, rb[:-1], label, parent, ch_off, children, end, 1), "root_costs"),
                        ((rs, rb, label, np.array([-1, 2, 1], np.int64), ch_off, children, end, 1), "parent"),
                        ((rs, rb, label, parent, ch_off, children + 5, end, 1), "children"),
                        ((rs, rb, label, parent, ch_off, children, end + 1, 1), "end_of_node"),
                        ((rs, rb, label, parent, ch_off, children, end, -1), "num_seqs")]:
        with pytest.raises(ValueError, match=match):
            tables.best_paths(*args, -1)
    with pytest.raises(TypeError, match="label"):
        tables.best_paths(rs, rb, label.astype(float), parent, ch_off, children, end, 1, -1)
    with pytest.raises(ValueError, match="topologically"):
        K.closed_exits(np.zeros(2), np.array([0, 1, 1], np.int64), np.array([0], np.int64), np.zeros(1))


def test_word_times_stay_within_the_memory_budget(small_det):
    """The Viterbi pass's columns count against the budget: nothing left -> status 1, and
    best_paths raises BudgetExceededError naming the lattice."""
    tables = small_det.word_time_tables()
    rs, _, rb = small_det.union.roots[0]
    parent, label = np.array([-1, 0], np.int64), np.array([-1, 5], np.int64)
    ch_off, children = _children(parent)
    end = np.array([0, 1], np.int64)
    assert tables.best_paths(rs, rb, label, parent, ch_off, children, end, 2, 0)[0] == 1
    with memory_budget(resident_bytes() + 4096), pytest.raises(BudgetExceededError, match=r"\[utt\].*memory budget"):
        best_paths(tables, rs, rb, parent, label, np.array([0, 1]), np.array([0, 1]), key="utt")


def test_long_viterbi_pass_stops_on_ctrl_c():
    """A pass of 2e9 arc relaxations (10 states, each with one closed entry of 10,000 arcs, read at
    each of 20,000 trie levels: 2-3 s) stops when SIGINT arrives."""
    m, width, depth = 10, 10_000, 20_000
    ids = np.arange(m * width, dtype=np.int64)
    tables = K.WordTimes(np.arange(m + 1, dtype=np.int64), np.ones(m, np.int64), np.zeros(m),
                         np.arange(m, dtype=np.int64), np.arange(0, m * width + 1, width, dtype=np.int64),
                         np.tile(np.arange(m, dtype=np.int64), width), np.ones(m * width), ids, ids, np.zeros(m))
    parent = np.arange(-1, depth, dtype=np.int64)
    label = np.r_[-1, np.ones(depth, np.int64)].astype(np.int64)
    end = np.full(depth + 1, -1, np.int64)
    end[-1] = 0
    # Ctrl-C from another process (a thread of this one would wait for the GIL the pass holds)
    killer = subprocess.Popen(["sh", "-c", f"sleep 0.2; kill -INT {os.getpid()}"])
    try:
        with pytest.raises(KeyboardInterrupt):
            tables.best_paths(np.arange(m, dtype=np.int64), np.zeros(m), label, parent, *_children(parent), end, 1,
                              -1)
    finally:
        killer.wait()


def test_uninitialised_tables_raise():
    with pytest.raises(RuntimeError, match="not initialised"):
        K.Expander.__new__(K.Expander).expand(b"", b"")
    with pytest.raises(RuntimeError, match="not initialised"):
        K.Expander.__new__(K.Expander).successor(b"", 0)
    with pytest.raises(RuntimeError, match="not initialised"):
        K.Expander.__new__(K.Expander).lazy_search(b"", b"", 1, 1, lambda: None)
    empty = np.zeros(0, np.int64)
    with pytest.raises(RuntimeError, match="not initialised"):
        K.WordTimes.__new__(K.WordTimes).best_paths(empty, np.zeros(0), empty, empty, empty, empty, empty, 0, -1)


@pytest.mark.parametrize("position,bad,error,match", [
    (0, lambda a: a.astype(np.float64), TypeError, "WordTimes: argument t_off must be a C-contiguous array of int64"),
    (2, lambda a: a.astype(np.int64), TypeError, "WordTimes: argument t_cost must be a C-contiguous array of float64"),
    (3, lambda a: a + 10**9, ValueError, r"t_entry\[0\]"),
    (5, lambda a: a - 10**9, ValueError, r"arc_dst\[0\]"),
    (4, lambda a: a[::-1].copy(), ValueError, "arc_off: offsets must be nondecreasing"),
    (8, lambda a: a[:-1], ValueError, r"WordTimes: argument arc_id must have \d+ items \(got \d+\)"),
])
def test_word_times_reject_bad_tables(small_det, position, bad, error, match):
    d, u = small_det, small_det.union
    per_closure = np.diff(d._e_off)[d._c_dst]
    args = [d._t_off, d._e_label[d._t_entry], np.repeat(d._c_bc, per_closure), d._t_entry, d._arc_off, d._arc_dst,
            d._arc_cost, d._arc_order, u.arc_ids[d._arc_order], u.exit_bc]
    assert K.WordTimes(*args)
    args[position] = bad(args[position])
    with pytest.raises(error, match=match):
        K.WordTimes(*args)
