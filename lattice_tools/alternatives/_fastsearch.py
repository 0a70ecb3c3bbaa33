"""The exact best-first sequence search (internal engine; the algorithm is described in
:mod:`lattice_tools.alternatives._search`): a lazily explored log-semiring determinization,
searched best-first with the exact log-semiring backward bound, with the per-state work done by
numpy:

* several automata (the phrases of a lattice) are searched side by side
  (:func:`search_many`): each round expands one determinized state of every search that needs
  one, all in the same numpy calls, so that the per-call overhead is spread over many small
  expansions; every search is exactly the one it would be alone;
* a determinized state is a pair of arrays (states, residual costs); its expansion first closes it
  under epsilon paths (gathering precomputed epsilon-closure rows and reducing them per state),
  then gathers the word arcs (and exit weights) of the closed states and reduces them by
  ``(word, destination)`` pair, grouped with numpy's radix sort on dense pair numbers;
* an expansion's choices (its end and one transition per word) are sorted once by their bound;
  a successor is interned (looked up by its states and rounded residuals) only when the search
  takes that choice, which most choices never are;
* the best single path of each output sequence (for word times) is a Viterbi pass over the trie
  of the search's prefixes, over word arcs closed under epsilon paths (computed for all states
  of one epsilon level at a time), whose per-step "cheapest candidate per (trie node, state)" is
  a dense scatter-minimum instead of a sort.

Segmented numpy reductions do not depend on what else is in the array, and every reduction sums
in a fixed order, so results are deterministic; they equal the per-state formulation to rounding
(tests/test_phrases*.py check them against brute force and against kaldifst).
"""
from __future__ import annotations

import heapq
import math
from array import array
from typing import NamedTuple

import numpy as np

from .._budget import check_memory
from .._gc import gc_paused
from ..algorithms._batches import state_levels
from ..errors import BudgetExceededError
from ._common import dense_codes
from ._fb import _segment_reduce
from ._search import SequenceResult

INF = math.inf


def _gather(off: np.ndarray, states: np.ndarray):
    """Indices of the CSR rows ``states`` concatenated, and the row position of each."""
    lo = off[states]
    cnt = off[states + 1] - lo
    total = int(cnt.sum())
    rep = np.repeat(np.arange(len(states)), cnt)
    if not total:
        return np.zeros(0, dtype=np.int64), rep
    seg = np.cumsum(cnt) - cnt
    idx = np.arange(total) - np.repeat(seg - lo, cnt)
    return idx, rep


def _starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Start index of each run of equal values in a sorted array."""
    flags = np.empty(len(sorted_keys), dtype=bool)
    if len(flags):
        flags[0] = True
        np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=flags[1:])
    return flags.nonzero()[0]


def _argsort_stable_keys(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` for non-negative int64 keys, computed with the (much
    faster) unstable sort on the unique composite key ``keys * n + index`` when it fits in int64."""
    n = len(keys)
    if n and int(keys.max()) < (1 << 62) // max(n, 1):
        return np.argsort(keys * n + np.arange(n, dtype=np.int64))
    return np.argsort(keys, kind="stable")


#: Keys below this span are sorted with one 16-bit radix pass; below 2**32, with two passes once
#: an expansion gathers at least RADIX_MIN_TOTAL arcs (fewer: a composite-key quicksort is faster).
RADIX16_SPAN = 1 << 16
RADIX32_SPAN = 1 << 32
RADIX_MIN_TOTAL = 512

#: The word-time closure is computed for groups of automata of about this many arcs at a time.
CLOSED_CHUNK_ARCS = 200_000

#: At most this many searches run side by side, since their records are all alive at once: on
#: a 540k-link lattice 8 keep the peak memory near that of one search at a time (80: 2.5x
#: more), and on the 138k-link lattice 8 are as fast as 80.
SIDE_BY_SIDE = 8


def _radix_halves(keys: np.ndarray, span: int):
    """``(low, high)`` uint16 halves of non-negative ``keys < span`` for :func:`_stable_order`
    (``high`` is None when one half suffices; both None when the keys need more than 32 bits)."""
    if span <= RADIX16_SPAN:
        return keys.astype(np.uint16), None
    if span <= RADIX32_SPAN:
        return (keys & 0xFFFF).astype(np.uint16), (keys >> 16).astype(np.uint16)
    return None, None


def _stable_order(keys: np.ndarray, idx: np.ndarray, low: np.ndarray | None, high: np.ndarray | None,
                  ramp: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` for ``keys = table[idx]`` (non-negative int64), given
    the table's radix halves (:func:`_radix_halves`) and ``ramp = arange(len(keys))``.

    numpy's stable sort of 16-bit integers is a radix sort (linear time); two stable passes, low
    half then high half, sort 32-bit keys.  Otherwise the keys made unique with their index
    (``key * n + i``) are sorted with the faster unstable sort, which gives the same order."""
    total = len(keys)
    if low is not None and high is None:
        return np.argsort(low[idx], kind="stable")
    if low is not None and total >= RADIX_MIN_TOTAL:
        o1 = np.argsort(low[idx], kind="stable")
        return o1[np.argsort(high[idx[o1]], kind="stable")]
    if int(keys.max()) < (1 << 62) // total:
        return np.argsort(keys * total + ramp)
    return np.argsort(keys, kind="stable")


def _first_min_per_group(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Index of the smallest value of each group of equal ``keys`` (earliest index among ties),
    groups in increasing key order: the same as ``o = np.lexsort((values, keys));
    o[_starts(keys[o])]`` without the multi-key sort."""
    order = _argsort_stable_keys(keys)
    seg = _starts(keys[order])
    vs = values[order]
    mins = np.minimum.reduceat(vs, seg)
    lens = np.diff(np.append(seg, len(vs)))
    rep = np.repeat(mins, lens)
    hit = np.flatnonzero((vs == rep) | np.isnan(rep))  # lexsort sorts NaN last: a NaN-min group is all NaN
    return order[hit[_starts(np.searchsorted(seg, hit, side="right"))]]


def _first_min_per_cell(cells: np.ndarray, values: np.ndarray, num_cells: int) -> np.ndarray:
    """:func:`_first_min_per_group` for keys that are small integers (``0 <= cells < num_cells``):
    the same indices (groups in increasing key order, the earliest index among equal minima; a
    group whose minimum is NaN gives its earliest index), found with two scatter-minimum passes
    over a dense table instead of a sort (linear time; ~5x faster on millions of candidates)."""
    n = len(cells)
    # ufunc.at takes a ~25x slower generic path unless the dtypes are numpy's canonical instances
    # (arrays that went through pickle, for one, are not): views fix that for free
    cells, values = cells.view(np.int64), values.view(np.float64)
    table = np.full(num_cells, INF)
    with np.errstate(invalid="ignore"):
        np.minimum.at(table, cells, values)  # propagates NaN like np.minimum.reduceat
    best = table[cells]
    hit = np.flatnonzero((values == best) | np.isnan(best))
    first = np.full(num_cells, n, dtype=np.int64)
    np.minimum.at(first, cells[hit], hit)
    return np.compress(first < n, first)  # (much faster than boolean-mask indexing)


_NONE_YET = array("q", [-1])


def _typed(code: str, values: np.ndarray) -> array:
    """A typed ``array.array`` copy of a numpy array (``"d"``: float64, ``"q"``: int64)."""
    out = array(code)
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64 if code == "d" else np.int64).tobytes())
    return out


def _seg_logsum(values: np.ndarray, seg: np.ndarray, lens: np.ndarray | None = None) -> np.ndarray:
    """Log-semiring sum of cost segments starting at ``seg`` (``lens``: their lengths, if the
    caller has them; callers silence numpy warnings once around the whole search instead of per
    call)."""
    if len(seg) == len(values):
        # all segments are singletons: m - log(exp(m - m)) is exactly m (exp(0) = 1, log(1) = 0)
        return values.copy()
    m = np.minimum.reduceat(values, seg)
    if lens is None:
        lens = np.empty(len(seg), dtype=np.int64)
        lens[:-1] = seg[1:] - seg[:-1]
        lens[-1] = len(values) - seg[-1]
    ex = np.exp(m.repeat(lens) - values)
    out = m - np.log(np.add.reduceat(ex, seg))
    out[m == INF] = INF
    return out


def _seg_logsum_shifted(values: np.ndarray, seg: np.ndarray, lens: np.ndarray | None = None) -> np.ndarray:
    """:func:`_seg_logsum` with one shift for all segments (the smallest value) instead of one per
    segment: half the passes over ``values``.  Exact unless a segment lies more than ~575 nats
    above the smallest value (``exp`` would lose digits), or is all infinite: then it is
    :func:`_seg_logsum` (the two agree to a few ulps)."""
    if len(seg) == len(values):
        return values.copy()
    shift = values.min()
    sums = np.add.reduceat(np.exp(shift - values), seg)
    if not sums.min() >= 1e-250:
        return _seg_logsum(values, seg, lens)
    return shift - np.log(sums)


class _Growable:
    """Parallel arrays appended to in place (capacity doubled when full), so that earlier entries
    keep their positions and are never copied per append."""

    def __init__(self, capacity: int, dtypes):
        self.data = [np.empty(capacity, dtype=t) for t in dtypes]
        self.size = 0

    def append(self, *columns) -> None:
        n = len(columns[0])
        if self.size + n > len(self.data[0]):
            cap = max(2 * len(self.data[0]), self.size + n)
            self.data = [np.concatenate([d[:self.size], np.empty(cap - self.size, dtype=d.dtype)]) for d in self.data]
        for d, c in zip(self.data, columns, strict=False):
            d[self.size:self.size + n] = c
        self.size += n

    def arrays(self) -> list:
        return [d[:self.size] for d in self.data]


class _Closed:
    """Epsilon-removed view of an acyclic automaton given by arc arrays (local state ids): every
    state's *closed row* (the word arcs reachable through epsilon paths, in arc order, each with
    the log sum and the minimum of the epsilon-path-plus-arc costs) and its closed exit weights."""

    def __init__(self, m, src, dst, lab, cost, arc_ids, exit_lc, exit_bc, *, log=True, tropical=True):
        """``log``/``tropical``: which costs to compute (``w_lc``/``x_lc`` and ``w_bc``/``x_bc``;
        the other pair is None)."""
        self.m = m
        word = lab != 0
        x_lc, x_bc = exit_lc.copy(), exit_bc.copy()
        wa = np.flatnonzero(word)
        wa = wa[np.argsort(src[wa], kind="stable")]  # word arcs by source state, in arc order
        w_off = np.searchsorted(src[wa], np.arange(m + 1))
        ea = np.flatnonzero(~word)
        if len(ea):
            ea = ea[np.argsort(src[ea], kind="stable")]  # epsilon arcs by source state, in arc order
            es, ed, ec = src[ea], dst[ea], cost[ea]
            # each state's epsilon level: 0 if it has no epsilon arc, else 1 + the highest level
            # among its epsilon successors (longest-path levels of the reversed epsilon arcs)
            rev = np.argsort(ed, kind="stable")
            level = state_levels(m, ed[rev], es[rev])
            # closed exits and rows, one level at a time: all of a level's epsilon successors are
            # on lower levels, so their exits and rows are final.  A state's row is its own word
            # arcs followed by the rows of its epsilon successors (that arc's cost added), reduced
            # per arc (log sum, and minimum) in that order.  Segments reduce independently, so the
            # numbers are those of one state at a time.
            buf = _Growable(len(wa) * 2 + 1024, (np.int64, np.float64, np.float64))
            buf.append(wa, cost[wa], cost[wa])
            row_lo = w_off[:-1].copy()
            row_len = np.diff(w_off)
            stored = len(wa)
            arc_level = level[es]
            by_level = np.argsort(arc_level, kind="stable")  # epsilon arcs by level, then source
            lv_off = np.searchsorted(arc_level[by_level], np.arange(int(level.max()) + 2))
            for lv in range(1, int(level.max()) + 1):
                arcs_l = by_level[lv_off[lv]:lv_off[lv + 1]]
                e_src, e_dst, e_cost = es[arcs_l], ed[arcs_l], ec[arcs_l]
                states = np.unique(e_src)
                owner = np.searchsorted(states, e_src)
                # exits: the state's own exit, then (cost + exit) through each epsilon arc
                piece_owner = np.r_[np.arange(len(states)), owner]
                po = np.argsort(piece_owner, kind="stable")
                seg = np.searchsorted(piece_owner[po], np.arange(len(states)))
                if log:
                    x_lc[states] = _segment_reduce(np.r_[x_lc[states], e_cost + x_lc[e_dst]][po], seg, True)
                if tropical:
                    x_bc[states] = np.minimum.reduceat(np.r_[x_bc[states], e_cost + x_bc[e_dst]][po], seg)
                # rows: the pieces of each state's row, in order (owner, source state, added cost)
                sources = np.r_[states, e_dst][po]
                adds = np.r_[np.zeros(len(states)), e_cost][po]
                owners = piece_owner[po]
                cnt = row_len[sources]
                total = int(cnt.sum())
                n_out = np.zeros(len(states), dtype=np.int64)
                if total:
                    arc_all, lc_all, bc_all = buf.arrays()
                    pos = np.repeat(row_lo[sources] - (np.cumsum(cnt) - cnt), cnt) + np.arange(total)
                    add = np.repeat(adds, cnt)  # + 0.0 leaves a state's own arcs' costs unchanged
                    arcs_ = arc_all[pos]
                    owner_ = np.repeat(owners, cnt)
                    key = owner_ * (int(arcs_.max()) + 1) + arcs_
                    order = np.argsort(key, kind="stable")
                    seg = _starts(key[order])
                    new_arc = arcs_[order][seg]
                    unused = np.zeros(len(seg))  # the semiring not asked for
                    new_lc = _segment_reduce((lc_all[pos] + add)[order], seg, True) if log else unused
                    new_bc = np.minimum.reduceat((bc_all[pos] + add)[order], seg) if tropical else unused
                    n_out = np.bincount(owner_[order][seg], minlength=len(states))
                    buf.append(new_arc, new_lc, new_bc)
                row_lo[states] = stored + np.cumsum(n_out) - n_out
                row_len[states] = n_out
                stored += int(n_out.sum())
            arc_all, lc_all, bc_all = buf.arrays()
            cnt = row_len
            idx = np.repeat(row_lo - (np.cumsum(cnt) - cnt), cnt) + np.arange(int(cnt.sum()))
            self.w_arc = arc_all[idx]
            self.w_lc = lc_all[idx]
            self.w_bc = bc_all[idx]
            self.w_off = np.r_[0, np.cumsum(cnt)]
        else:
            self.w_arc = wa
            self.w_lc = cost[wa]
            self.w_bc = cost[wa]
            self.w_off = w_off
        self.w_lab = lab[self.w_arc]
        self.w_dst = dst[self.w_arc]
        self.w_id = arc_ids[self.w_arc]
        self.x_lc, self.x_bc = x_lc, x_bc
        if not log:
            self.w_lc = self.x_lc = None
        if not tropical:
            self.w_bc = self.x_bc = None


class SearchProblem(NamedTuple):
    """One acyclic automaton to search with :func:`search_many`.

    Fields:
      num_states: states are ``0..num_states-1``, topologically numbered (``src < dst``).
      src, dst, lab, cost, arc_ids: arc arrays (``lab`` 0 = epsilon; ``arc_ids`` are reported in
        ``best_arcs``).
      init_states, init_lc, init_bc: initial states with log and tropical initial costs.
      exit_states, exit_lc, exit_bc: final states with log and tropical final costs.
      beta: per-state log-semiring backward cost (exit included) of every state that a labelled
        arc enters -- the exact bound of the search.
    """

    num_states: int
    src: np.ndarray
    dst: np.ndarray
    lab: np.ndarray
    cost: np.ndarray
    arc_ids: np.ndarray
    init_states: np.ndarray
    init_lc: np.ndarray
    init_bc: np.ndarray
    exit_states: np.ndarray
    exit_lc: np.ndarray
    exit_bc: np.ndarray
    beta: np.ndarray


def search_many(problems: list, n, *, max_pops=2_000_000, key=None, track_best=True, resolution=1e-9,
                determinize_first=False, max_states=1_000_000, lazy_pops=50_000) -> list:
    """Exact ``n`` best distinct label sequences (``None`` = all) of each of several independent
    acyclic automata (:class:`SearchProblem`).  Their searches run side by side and every round
    expands one determinized state of each search that needs one *in the same numpy calls*, which
    spreads the per-call overhead (most expansions are small) over all of them.  Each search
    finds what it would find alone (the same sequences; costs equal to rounding).

    Options:
      max_pops: budget on popped search nodes per automaton (BudgetExceededError past it).
      track_best: also find each sequence's best single path (``best_cost``, ``best_arcs``).
      resolution: residual costs closer than this identify determinized states.
      determinize_first: skip the lazy search: build the whole log-determinized automaton (at
        most ``max_states`` states, else BudgetExceededError) and search it with the *exact*
        tropical bound (the best completion in the determinized automaton), so that every pop is
        on the way to an output.  Long utterances need this: there the log-sum bound of the lazy
        search is loose (probability spread over very many sequences).  Without it, the lazy
        search runs first with ``lazy_pops + 20 n`` pops; when they run out, a finite ``n``
        computes the exact bound only on the states that can lie on the ``n`` best
        (:func:`_bounded_exact_search`), ``n=None`` builds the whole automaton as above.

    Returns: per automaton, a list of :class:`SequenceResult`, most probable first.
    """
    with gc_paused():  # tens of thousands of search records, none cyclic
        return _search_many(problems, n, max_pops, key, track_best, resolution, determinize_first, max_states,
                            lazy_pops)


def _search_many(problems, n, max_pops, key, track_best, resolution, determinize_first, max_states, lazy_pops):
    check_memory("exact sequence search", key)
    P = len(problems)
    sizes = np.array([int(p.num_states) for p in problems], dtype=np.int64)
    offset = np.r_[0, np.cumsum(sizes)]
    M = int(offset[-1])
    if not M:
        return [[] for _ in problems]

    def joined(field, dtype, shift=False):
        parts = [np.asarray(getattr(p, field), dtype=dtype) for p in problems]
        if shift:
            parts = [a + offset[i] for i, a in enumerate(parts)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    # the disjoint union of the automata: problem i's state s is global state offset[i] + s
    x_lc = np.full(M, INF)
    x_bc = np.full(M, INF)
    x_lc[joined("exit_states", np.int64, True)] = joined("exit_lc", np.float64)
    x_bc[joined("exit_states", np.int64, True)] = joined("exit_bc", np.float64)
    g_src, g_dst = joined("src", np.int64, True), joined("dst", np.int64, True)
    g_lab, g_cost = joined("lab", np.int64), joined("cost", np.float64)
    beta = joined("beta", np.float64)
    roots = []
    for i, p in enumerate(problems):
        keep = np.asarray(p.init_lc) < INF
        rs = np.asarray(p.init_states, dtype=np.int64)[keep]
        o = np.argsort(rs)
        roots.append((rs[o] + offset[i], np.asarray(p.init_lc, dtype=np.float64)[keep][o],
                      np.asarray(p.init_bc, dtype=np.float64)[keep][o]))

    # determinized states, numbered across all automata; each automaton interns its own (its
    # states are unique to it) so that a finished search's records can be dropped at once
    det_keys: list = [{} for _ in problems]  # per automaton: state key -> id
    det_sets: list = []  # (states, residual costs) of each determinized state until it is expanded
    det_exp: list = []  # its choices once expanded (see expand_batch)

    def intern(i, states, resid) -> int:
        k = (states.tobytes(), np.rint(resid / resolution).astype(np.int64).tobytes())
        j = det_keys[i].get(k)
        if j is None:
            j = det_keys[i][k] = len(det_sets)
            det_sets.append((states, resid))
            det_exp.append(None)
        return j

    def release(i) -> None:
        """Drop the determinized states of automaton ``i`` (its search is over)."""
        for j in det_keys[i].values():
            det_sets[j] = det_exp[j] = None
        det_keys[i] = {}

    # Everything that depends only on the automata is computed once: per-expansion numpy call
    # overhead matters.  Closure rows: every state's epsilon closure -- the states reachable
    # through epsilon paths, itself included, in state order, each with the log-sum cost of those
    # paths (the closed rows of a "self" pseudo-arc per state).
    g_word = np.flatnonzero(g_lab != 0)
    lab_values, word_dlab = dense_codes(g_lab[g_word])  # word arcs' labels, renumbered densely
    lab_out = np.r_[-1, lab_values].astype(np.int64)  # dense label + 1 -> label (-1: the end)
    owner_of = np.repeat(np.arange(P, dtype=np.int64), sizes)
    g_eps = np.flatnonzero(g_lab == 0)
    selfs = np.arange(M, dtype=np.int64)
    cc = _Closed(M, np.r_[g_src[g_eps], selfs], np.r_[g_dst[g_eps], selfs],
                 np.r_[np.zeros(len(g_eps), dtype=np.int64), np.ones(M, dtype=np.int64)],
                 np.r_[g_cost[g_eps], np.zeros(M)], np.r_[np.zeros(len(g_eps), dtype=np.int64), selfs],
                 np.full(M, INF), np.full(M, INF), tropical=False)
    c_off, c_dst, c_lc = cc.w_off, cc.w_dst, cc.w_lc
    c_cnt = np.diff(c_off)
    c_key16, c_key_hi = _radix_halves(c_dst, M)
    # Word rows: every state's own word arcs, preceded by one *end entry* when the state is final,
    # so that one grouped reduction gives an expansion's end weight along with its transitions.
    # An entry's key is its *pair*: (automaton, label, destination), numbered densely in that
    # order, with the end label first and each automaton's end entries sharing a dummy
    # destination ``M + i`` (completion cost 0); a *group* is an (automaton, label).  So an
    # expansion batch's groups are runs of its sorted pairs, and each request's pairs and groups
    # are contiguous.  Dense keys often fit in 16 or 32 bits, so the stable grouping sort can be
    # numpy's radix sort.
    end_states = np.flatnonzero(x_lc < INF)
    L1 = len(lab_values) + 1
    entry_key = np.r_[owner_of[end_states] * L1 * (M + P) + M + owner_of[end_states],
                      (owner_of[g_src[g_word]] * L1 + word_dlab + 1) * (M + P) + g_dst[g_word]]
    pair_key, entry_pair = np.unique(entry_key, return_inverse=True)
    row_state = np.r_[end_states, g_src[g_word]]
    rows = np.argsort(row_state, kind="stable")
    w_key = entry_pair.reshape(-1)[rows]
    w_lc = np.r_[x_lc[end_states], g_cost[g_word]][rows]
    w_cnt = np.bincount(row_state, minlength=M)
    w_off = np.r_[0, np.cumsum(w_cnt)]
    w_key16, w_key_hi = _radix_halves(w_key, len(pair_key))
    pair_group = pair_key // (M + P)  # (automaton, label): nondecreasing in pair order
    pair_dst = pair_key % (M + P)
    pair_owner, pair_lab = pair_group // L1, pair_group % L1
    beta_x = np.r_[beta, np.zeros(P)]  # the end entries' dummy destinations complete with cost 0
    ramp = np.arange(max(len(w_lc), M, len(c_dst)) + 1, dtype=np.int64)

    num_pairs = len(pair_key)
    num_groups = int(pair_group.max()) + 1 if num_pairs else 1
    owner_rank = np.full(P, -1, dtype=np.int64)

    def expand_batch(js, owners, keyed=False):
        """Expand determinized states ``js`` into their *choices*, most promising first: for each
        a list ``[bounds, labels, costs, groups, nexts, successors, automaton]`` -- parallel lists
        of the bound of all completions through the choice (``cost + h(next)``), its label (-1
        for the end), the cost of that transition (for the end: the exact total cost of ending
        here), the index of its successor among the batch's groups, and the successor's interned
        id (-1 until :func:`resolve` looks it up: most successors are never visited, so they are
        only interned when the search reaches them); then the batch's shared successor data and
        the state's automaton.  ``owners``: the automaton of each state, in increasing order;
        ``keyed``: several states may belong to one automaton, so entries are keyed by request
        as well (else pairs alone keep the requests apart)."""
        B = len(js)
        keyed = keyed and B > 1  # requests may share states and pairs
        sizes_ = [len(det_sets[j][0]) for j in js] if keyed else None
        if B == 1:
            S, R = det_sets[js[0]]
        else:
            S = np.concatenate([det_sets[j][0] for j in js])
            R = np.concatenate([det_sets[j][1] for j in js])
        for j in js:
            det_sets[j] = None
        # epsilon closure: gather the closure rows of S, reduce per (request, state)
        cc_ = c_cnt[S]
        t1 = int(cc_.sum())
        ramp1 = ramp[:t1] if t1 < len(ramp) else np.arange(t1)
        idx1 = np.repeat(c_off[S] - (np.cumsum(cc_) - cc_), cc_) + ramp1
        e = c_dst[idx1]
        if keyed:
            e = np.repeat(np.repeat(np.arange(B, dtype=np.int64), sizes_), cc_) * M + e
            o1 = _stable_order(e, ramp1, *_radix_halves(e, B * M), ramp1)
        else:
            o1 = _stable_order(e, idx1, c_key16, c_key_hi, ramp1)
        es = e[o1]
        s1 = _starts(es)
        R = _seg_logsum_shifted((np.repeat(R, cc_) + c_lc[idx1])[o1], s1)
        S = es[s1]
        if keyed:
            req = S // M
            S = S - req * M
        cnt = w_cnt[S]
        total = int(cnt.sum())
        if not total:
            for j, o in zip(js, owners, strict=False):
                det_exp[j] = [[], [], [], [], [], None, o]
            return
        # the word-arc and end rows of the closed states, reduced per (request,) pair
        ramp_t = ramp[:total] if total < len(ramp) else np.arange(total)
        idx = np.repeat(w_off[S] - (np.cumsum(cnt) - cnt), cnt) + ramp_t
        v = np.repeat(R, cnt) + w_lc[idx]
        k2 = w_key[idx]
        if keyed:
            k2 = np.repeat(req, cnt) * num_pairs + k2
            order = _stable_order(k2, ramp_t, *_radix_halves(k2, B * num_pairs), ramp_t)
        else:
            order = _stable_order(k2, idx, w_key16, w_key_hi, ramp_t)
        k2s = k2[order]
        seg = _starts(k2s)
        val = _seg_logsum_shifted(v[order], seg)  # per pair
        up = k2s[seg]
        if keyed:
            req_u = up // num_pairs
            up = up - req_u * num_pairs
            lseg = _starts(req_u * num_groups + pair_group[up])
            rq_g = req_u[lseg]
        else:
            lseg = _starts(pair_group[up])
            if B > 1:
                owner_rank[owners] = np.arange(B)
                rq_g = owner_rank[pair_owner[up[lseg]]]
        ends = np.empty(len(lseg) + 1, dtype=np.int64)
        ends[:-1] = lseg
        ends[-1] = len(up)
        lens = ends[1:] - lseg
        ud = pair_dst[up]
        wsum = _seg_logsum_shifted(val, lseg, lens)  # per group: the transition's cost
        bound = _seg_logsum(val + beta_x[ud], lseg, lens)  # per group: the log-sum of its completions
        ch = np.argsort(bound, kind="stable")  # groups are in label order: ties go by label, end first
        ch = ch[:int(np.count_nonzero(bound < INF))]  # no finite completion: never an output
        gl = pair_lab[up[lseg]]
        resid = val - wsum.repeat(lens)
        # Successor data: the states and residuals of every group, the byte offsets of the groups
        # (``e8``) and the key bytes.  A request's groups and pairs are contiguous; requests of
        # different automata get copies of their own part (a search that ends releases its records,
        # which then must not keep the other searches' parts alive).  Records are typed arrays: 8
        # bytes per entry instead of a Python object.
        e8 = _typed("q", ends * 8)
        ud_bytes, rq_bytes = ud.tobytes(), np.rint(resid / resolution).astype(np.int64).tobytes()
        if B > 1:
            ch = ch[np.argsort(rq_g[ch], kind="stable")]  # by request, then bound, then label
            cuts = np.searchsorted(rq_g[ch], np.arange(B + 1)).tolist()
            pair_cut = ends[np.searchsorted(rq_g, np.arange(B + 1))].tolist()
        else:
            cuts, pair_cut = [0, len(ch)], [0, len(ud)]
        b_l, l_l, c_l, g_l = (_typed("d", bound[ch]), _typed("q", lab_out[gl[ch]]), _typed("d", wsum[ch]),
                              _typed("q", ch))
        # (keyed batches belong to the exact-bound search, which resolves every successor at once,
        # mostly to states it already has: a new state copies its part, not to pin the batch)
        shared = (ud, resid, e8, ud_bytes, rq_bytes, 0, keyed)
        for r, (j, o) in enumerate(zip(js, owners, strict=False)):
            a, b = cuts[r], cuts[r + 1]
            if keyed or B == 1:  # one automaton: its records are released together
                succ = shared
            else:
                p0, p1 = pair_cut[r], pair_cut[r + 1]
                succ = (ud[p0:p1].copy(), resid[p0:p1].copy(), e8, ud_bytes[8 * p0:8 * p1], rq_bytes[8 * p0:8 * p1],
                        8 * p0, False)
            det_exp[j] = [b_l[a:b], l_l[a:b], c_l[a:b], g_l[a:b], _NONE_YET * (b - a), succ, o]

    def resolve(rec, i) -> int:
        """Interned id of the successor of choice ``i`` of an expansion record (the same key as
        :func:`intern`: the int64 bytes of the states and of the rounded residuals)."""
        ud, resid, e8, ud_bytes, rq_bytes, base8, copy = rec[5]
        g = rec[3][i]
        a8, b8 = e8[g] - base8, e8[g + 1] - base8
        k = (ud_bytes[a8:b8], rq_bytes[a8:b8])
        keys = det_keys[rec[6]]
        nj = keys.get(k)
        if nj is None:
            nj = keys[k] = len(det_sets)
            a, b = a8 >> 3, b8 >> 3
            det_sets.append((ud[a:b].copy(), resid[a:b].copy()) if copy else (ud[a:b], resid[a:b]))
            det_exp.append(None)
        rec[4][i] = nj
        return nj

    found: list = [None] * P
    tries = [_PrefixTrie() for _ in range(P)]
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        starts = [intern(i, rs, rr) if len(rs) else -1 for i, (rs, rr, _) in enumerate(roots)]
        if not determinize_first and n is not None:
            # lazy searches with the log-sum bound, side by side; a search whose bound proves too
            # loose (probability spread over very many sequences) falls back to the exact bound
            # below, reusing every determinized state built so far
            budget = min(max_pops, lazy_pops + 20 * n)
            waiting = [i for i in range(P) if starts[i] >= 0][::-1]
            running: dict = {}
            wants: dict = {}
            while waiting or wants:
                while waiting and len(running) < SIDE_BY_SIDE:
                    i = waiting.pop()
                    running[i] = _best_first(starts[i], resolve, det_exp, tries[i], n, budget, key)
                    _advance(i, running[i], None, running, wants, found, release)
                if not wants:
                    continue
                owners = sorted(wants)
                expand_batch([wants[i] for i in owners], owners)
                ready, wants = wants, {}
                for i in ready:
                    _advance(i, running[i], True, running, wants, found, release)
        for i in range(P):
            if starts[i] >= 0 and found[i] is None and n is not None and not determinize_first:
                tries[i] = _PrefixTrie()
                found[i] = _bounded_exact_search(starts[i], lambda js: expand_batch(js, [i] * len(js), keyed=True), resolve,
                                                 det_exp, tries[i], n, max_pops, max_states, key)
                release(i)
        for i in range(P):
            if starts[i] >= 0 and found[i] is None:
                exact = _exact_choices(starts[i], lambda js: expand_batch(js, [i] * len(js), keyed=True), resolve,
                                       det_sets, det_exp, max_states, key)
                tries[i] = _PrefixTrie()
                gen = _best_first(starts[i], resolve, exact, tries[i], n, max_pops, key)
                try:
                    next(gen)
                    raise AssertionError("the exact search expands nothing")  # every state is expanded
                except StopIteration as stop:
                    found[i] = stop.value
                del exact, gen
                release(i)
    if track_best:
        arc_dlab = np.full(len(g_lab), -1, dtype=np.int64)
        arc_dlab[g_word] = word_dlab
        arc_off = np.r_[0, np.cumsum([len(p.src) for p in problems])]
        g_ids = joined("arc_ids", np.int64)
    results = []
    chunk_end = 0
    for i in range(P):
        check_memory("exact sequence search (best paths)", key)
        if track_best and i == chunk_end:
            # word arcs closed under epsilon paths, with their best (tropical) costs, for the
            # automata up to chunk_end (a chunk of at most CLOSED_CHUNK_ARCS arcs, to bound memory)
            chunk_end = int(np.searchsorted(arc_off, arc_off[i] + CLOSED_CHUNK_ARCS, side="right")) - 1
            chunk_end = min(max(chunk_end, i + 1), P)
            a0, a1, s0, s1 = int(arc_off[i]), int(arc_off[chunk_end]), int(offset[i]), int(offset[chunk_end])
            cl = _Closed(s1 - s0, g_src[a0:a1] - s0, g_dst[a0:a1] - s0, g_lab[a0:a1], g_cost[a0:a1], g_ids[a0:a1],
                         x_lc[s0:s1], x_bc[s0:s1], log=False)
            closed_dlab = arc_dlab[a0:a1][cl.w_arc]  # the closed rows' labels, renumbered densely
            chunk_start = s0
        if not found[i]:
            results.append([])
            continue
        trie = tries[i]
        ends_ = np.array([node for node, _ in found[i]], dtype=np.int64)
        costs = [c for _, c in found[i]]
        parent, label = np.array(trie.parent, dtype=np.int64), np.array(trie.label, dtype=np.int64)
        depth = np.array(trie.depth, dtype=np.int64)
        seqs = _trace(ends_, depth[ends_], parent, label)
        if not track_best:
            results.append([SequenceResult(lab_, c, math.nan, ()) for lab_, c in zip(seqs, costs, strict=False)])
            continue
        local = _local_rows(cl, closed_dlab, int(offset[i]) - chunk_start, int(sizes[i]))
        rs, _, rb = roots[i]
        with np.errstate(invalid="ignore", over="ignore"):
            best_costs, best_arcs = _best_paths(local, lab_values, rs - offset[i], rb, parent, label, depth, ends_)
        results.append(list(map(SequenceResult, seqs, costs, best_costs, best_arcs)))
    return results


def _advance(i, gen, value, running, wants, found, release) -> None:
    """Resume search ``i`` until it needs a state expanded (recorded in ``wants``) or ends: its
    sequences go to ``found`` and its states are released; if the lazy budget ran out, ``found``
    keeps ``None`` and the states stay for the exact-bound search."""
    try:
        wants[i] = gen.send(value) if value is not None else next(gen)
    except StopIteration as stop:
        found[i] = stop.value
        del running[i]
        release(i)
    except BudgetExceededError:
        del running[i]


class _LocalRows(NamedTuple):
    """The closed rows of one automaton of a union (its own state numbering; labels as dense
    codes of the union's labels)."""

    m: int
    w_off: np.ndarray
    w_dlab: np.ndarray
    w_dst: np.ndarray
    w_bc: np.ndarray
    w_id: np.ndarray
    x_bc: np.ndarray


def _local_rows(cl: _Closed, dlab: np.ndarray, start: int, m: int) -> _LocalRows:
    lo, hi = int(cl.w_off[start]), int(cl.w_off[start + m])
    return _LocalRows(m, cl.w_off[start:start + m + 1] - lo, dlab[lo:hi], cl.w_dst[lo:hi] - start,
                      cl.w_bc[lo:hi], cl.w_id[lo:hi], cl.x_bc[start:start + m])


class _PrefixTrie:
    """The search's word prefixes, numbered in creation order (node 0 is the empty prefix): each
    node's parent, last label and depth, appended by :func:`_best_first`.  Every prefix is created
    once (when the transition that extends its parent is popped), so these lists are the trie of
    everything the search reached."""

    def __init__(self):
        self.parent, self.label, self.depth = [-1], [-1], [0]


def _trace(starts: np.ndarray, lengths: np.ndarray, parent: np.ndarray, value: np.ndarray) -> list:
    """For each start node: the tuple of ``value`` along its chain of ``parent`` links, ``length``
    nodes long, the start node's value last (all chains followed at once, one numpy step per
    level; a chain of length 0 gives ``()``)."""
    width = int(lengths.max(initial=0))
    mat = np.zeros((len(starts), width), dtype=value.dtype)
    li = starts.copy()
    for col in range(width - 1, -1, -1):  # right-aligned: the chains still running at this level
        live = np.flatnonzero(lengths > width - 1 - col)
        at = li[live]
        mat[live, col] = value[at]
        li[live] = parent[at]
    rows = mat.tolist()
    return [tuple(r[width - k:]) for r, k in zip(rows, lengths.tolist(), strict=False)]


#: An exact-bound expansion batch holds at most this many determinized states, and stops growing
#: once their subsets hold this many lattice states (bounds the batch's temporary arrays).
EXACT_BATCH_STATES = 1024
EXACT_BATCH_MEMBERS = 20_000


def _post_order(j0, det_exp, within=None) -> list:
    """The determinized states reachable from ``j0`` (only through states in ``within`` when given), in
    depth-first post-order, i.e. reverse topological order; iterative, so deep automata do not overflow."""
    order: list = []
    done: set = set()
    stack = [(j0, False)]
    while stack:
        j, finished = stack.pop()
        if finished:
            order.append(j)
            continue
        if j in done:
            continue
        done.add(j)
        stack.append((j, True))
        rec = det_exp[j]
        stack.extend((nj, False) for w, nj in zip(rec[1], rec[4], strict=False)
                     if w >= 0 and nj not in done and (within is None or nj in within))
    return order


def _exact_choices(j0, expand_batch, resolve, det_sets, det_exp, max_states, key) -> dict:
    """Expand every determinized state reachable from ``j0`` and re-rank each one's choices by the
    *exact* bound ``cost + best(next)``, with ``best`` the cost of a state's best completion
    (tropical shortest distance to the end in the determinized automaton).  Returns the choice
    records (the shape ``expand_batch`` gives, every successor resolved) by state id.

    The states are expanded one breadth-first frontier at a time, in batches (all of them are
    needed, in any order), then ranked in reverse topological order."""
    visited = {j0}
    frontier = [j0]
    while frontier:
        new: list = []
        start = 0
        while start < len(frontier):
            stop, members = start, 0
            while stop < len(frontier) and stop - start < EXACT_BATCH_STATES and members < EXACT_BATCH_MEMBERS:
                sets = det_sets[frontier[stop]]
                members += len(sets[0]) if sets is not None else 0
                stop += 1
            batch = frontier[start:stop]
            check_memory("log-determinization for the exact-bound sequence search", key)
            todo = [j for j in batch if det_exp[j] is None]
            if todo:
                expand_batch(todo)
            for j in batch:  # resolve the batch at once, so that its successor data can go
                rec = det_exp[j]
                nexts = rec[4]
                for i, w in enumerate(rec[1]):
                    if w >= 0:
                        nj = nexts[i] if nexts[i] >= 0 else resolve(rec, i)
                        if nj not in visited:
                            visited.add(nj)
                            if len(visited) > max_states:
                                raise BudgetExceededError(f"log-determinization exceeded {max_states} states",
                                                          key=key)
                            new.append(nj)
                rec[5] = None  # every successor is resolved
            start = stop
        frontier = new
    order = _post_order(j0, det_exp)
    best: dict = {}
    exact: dict = {}
    for j in order:
        _, labels, costs, _, nexts, _, _ = det_exp[j]
        items = sorted((c if w < 0 else c + best[nj], w, nj, c) for w, c, nj in zip(labels, costs, nexts, strict=False))
        best[j] = items[0][0] if items else INF
        bounds, labels, nexts, costs = (list(col) for col in zip(*items, strict=False)) if items else ([], [], [], [])
        exact[j] = [bounds, labels, costs, None, nexts, None, None]
    return exact


class _Region(dict):
    """Choice records of the explored determinized states; a state outside is ``None`` (what
    :func:`_best_first` asks to be expanded)."""

    def __missing__(self, j):
        return None


def _bounded_exact_search(j0, expand_one, resolve, det_exp, trie, n, max_pops, max_states, key) -> list:
    """The ``n`` best sequences by the exact bound, computed only on the determinized states that can
    lie on them (instead of log-determinizing the whole automaton, which long utterances make
    astronomically large).

    1. A* over determinized *states* (prefixes reaching the same state are merged; each state is
       expanded once, at its cheapest prefix cost ``g``, since the bound is consistent) expands the
       states with ``g + h <= T``: the region ``E``.  The first end popped is the best sequence.
    2. In ``E``, each state's exact best completion, where a successor outside ``E`` counts with
       its admissible bound: still an admissible, consistent bound, exact inside ``E``.
    3. The best-first prefix search with that bound.  If it reaches a state outside ``E`` before
       its ``n``-th sequence, the region was too small: ``T`` grows past that priority, 1-3 again.
    Every state of an output sequence has ``g + h <= cost``, so the region needed is the states
    with ``g + h <= c_n``: small when ``h`` is tight (see ``nbest_lists.best_word_bound``)."""
    g_of: dict = {}
    heap: list = [(0.0, 0.0, 0, j0)]
    counter = 0
    best_end = INF
    threshold = None
    margin = 1.0
    while True:
        while heap and (threshold is None or heap[0][0] <= threshold):
            # pop a batch of states (expanded in one numpy pass); a state popped in a batch may
            # get its cheapest prefix only later, which can only make the region larger than
            # needed, never the result wrong (step 3 checks every state it uses)
            batch: list = []
            while heap and (threshold is None or heap[0][0] <= threshold) and len(batch) < EXACT_BATCH_STATES:
                f, g, _, j = heapq.heappop(heap)
                if j < 0:  # an end: the first one popped is the best sequence (consistent bound)
                    best_end = min(best_end, f)
                    if threshold is None:
                        threshold = f + margin
                        break
                    continue
                if j in g_of:
                    continue
                g_of[j] = g
                batch.append(j)
                if threshold is None and len(batch) >= 8:  # before the first end: stay close to A* order
                    break
            if not batch:
                continue
            check_memory("exact sequence search", key)
            if len(g_of) > max_states:
                raise BudgetExceededError(f"exact sequence search exceeded {max_states} determinized states", key=key)
            todo = [j for j in batch if det_exp[j] is None]
            if todo:
                expand_one(todo)
            for j in batch:
                rec = det_exp[j]
                g = g_of[j]
                bounds, labels, costs, nexts = rec[0], rec[1], rec[2], rec[4]
                for c in range(len(bounds)):
                    counter += 1
                    if labels[c] < 0:
                        heapq.heappush(heap, (g + costs[c], g + costs[c], counter, -1))
                        continue
                    nj = nexts[c] if nexts[c] >= 0 else resolve(rec, c)
                    if nj not in g_of:
                        heapq.heappush(heap, (g + bounds[c], g + costs[c], counter, nj))
                rec[5] = None  # every successor is resolved: the batch's successor data can go
        if threshold is None:
            return []  # no end reachable
        # exact completions in the region (reverse topological order), bounds outside it
        order = _post_order(j0, det_exp, g_of)
        best: dict = {}
        region = _Region()
        for j in order:
            bounds, labels, costs, _, nexts, _, _ = det_exp[j]
            items = sorted((c if w < 0 else (c + best[nj] if nj in best else b), w, nj, c)
                           for b, w, c, nj in zip(bounds, labels, costs, nexts, strict=False))
            best[j] = items[0][0] if items else INF
            b_, l_, n_, c_ = (list(col) for col in zip(*items, strict=False)) if items else ([], [], [], [])
            region[j] = [b_, l_, c_, None, n_, None, None]
        del trie.parent[1:], trie.label[1:], trie.depth[1:]
        gen = _best_first(j0, resolve, region, trie, n, max_pops, key)
        try:
            outside = next(gen)
        except StopIteration as stop:
            return stop.value
        # the prefix search needs a state outside the region: grow it past that state's bound
        del gen
        need = min(f for f, _, _, j in heap if j == outside) if any(j == outside for _, _, _, j in heap) else None
        margin *= 2
        threshold = max(threshold + margin, (need if need is not None else threshold) + margin)


def _best_first(j0, resolve, det_exp, trie, n, max_pops, key):
    """The best-first loop, as a generator: it yields a determinized state id whenever it needs
    that state's choice record in ``det_exp`` (the caller builds it, then resumes it) and returns
    ``[(prefix node, cost)]``, the first ``n`` end choices popped (prefix nodes are added to
    ``trie``, a :class:`_PrefixTrie`).

    A state's choice record holds its end and its transitions sorted by their bound ``cost +
    h(next)`` (see :func:`search_many`).  Lazy successor enumeration: a heap entry is "choice ``i``
    of state ``j`` after prefix cost ``g``", and popping it pushes only choice ``i + 1`` and the
    first choice of the next state.  Entries still leave the heap in nondecreasing bound order
    (choices are sorted and a state's first choice is no better than its bound), so the output
    is the same as pushing every child, with two pushes per pop.
    """
    heapq_push, heapq_pop = heapq.heappush, heapq.heappop
    t_parent, t_label, t_depth = trie.parent, trie.label, trie.depth
    if det_exp[j0] is None:
        yield j0
    rec = det_exp[j0]
    heap: list = []
    # the entry to handle next when it is known without the heap: a new prefix's first choice
    # that is strictly better than the heap's top (the heap would return it at once: on equal
    # priority the older entry goes first), which saves a push and a pop for ~40 % of the pops
    nxt_entry = (rec, 0, 0.0, 0) if rec[0] else None
    counter = 0
    pops = 0
    found: list = []
    while True:
        if nxt_entry is not None:
            rec, i, g, link = nxt_entry
            nxt_entry = None
        elif heap:
            _, _, rec, i, g, link = heapq_pop(heap)
        else:
            break
        pops += 1
        if not pops & 4095:
            check_memory("exact sequence search", key)
        if pops > max_pops:
            raise BudgetExceededError(f"exact sequence search exceeded {max_pops} search nodes "
                                      f"after {len(found)} sequences; lower N or prune the lattice", key=key)
        bounds, labels, costs, _, nexts, _, _ = rec
        if i + 1 < len(bounds):
            counter += 1
            heapq_push(heap, (g + bounds[i + 1], counter, rec, i + 1, g, link))
        w = labels[i]
        if w < 0:
            found.append((link, g + costs[i]))
            if n is not None and len(found) >= n:
                break
            continue
        nj = nexts[i]
        if nj < 0:
            nj = resolve(rec, i)
        nxt = det_exp[nj]
        if nxt is None:
            yield nj
            nxt = det_exp[nj]
        if nxt[0]:
            gc = g + costs[i]
            counter += 1
            t_parent.append(link)  # the new prefix: this one extended by w
            t_label.append(w)
            t_depth.append(t_depth[link] + 1)
            prio = gc + nxt[0][0]
            if not heap or prio < heap[0][0]:
                nxt_entry = (nxt, 0, gc, len(t_parent) - 1)
            else:
                heapq_push(heap, (prio, counter, nxt, 0, gc, len(t_parent) - 1))
    return found


def _best_paths(cl: _LocalRows, lab_values, root_s, root_b, parent, label, depth, ends) -> tuple[list, list]:
    """Best single path (cost, word-arc ids) reading each sequence: a tropical Viterbi pass over
    the search's prefix trie (``parent``, ``label``, ``depth`` per node, node 0 the root; ``ends``:
    each sequence's node), vectorized over all trie nodes of one depth at a time.  Closed word
    arcs are indexed by ``(state, label)`` (a dense table over the automaton's states and its
    labels) so that only arcs matching a trie child are touched; the best candidate of each
    ``(trie node, state)`` is the cheapest, the earliest one among equal costs.

    Returns ``(costs, arcs)``: per sequence, the best path's cost and its tuple of arc ids."""
    n_nodes = len(parent)
    end_arr = np.full(n_nodes, -1, dtype=np.int64)
    end_arr[ends] = np.arange(len(ends))
    # rank of every trie node among the nodes of its depth, in node-id order: the dense index
    # of a node within one depth step (monotone, so cell order is (node, state) order)
    by_depth = _argsort_stable_keys(depth)
    depth_start = np.searchsorted(depth[by_depth], np.arange(int(depth.max()) + 2))
    depth_rank = np.empty(n_nodes, dtype=np.int64)
    depth_rank[by_depth] = np.arange(n_nodes) - depth_start[depth[by_depth]]
    cid = _argsort_stable_keys(parent[1:]) + 1  # children grouped by parent
    ch_label = label[cid]
    ch_off = np.searchsorted(parent[cid], np.arange(n_nodes + 1))
    # closed word arcs sorted by (state, label); labels renumbered densely again within this
    # automaton (order-preserving) so that the arc range of any (state, label) is two table look-ups
    present = np.zeros(len(lab_values), dtype=bool)
    present[cl.w_dlab] = True
    code = np.cumsum(present) - 1
    L = int(code[-1]) + 1 if len(code) else 0
    row_state = np.repeat(np.arange(cl.m, dtype=np.int64), np.diff(cl.w_off))
    sl_key = row_state * L + code[cl.w_dlab]
    arange = np.arange(len(sl_key), dtype=np.int64)
    sl_order = _stable_order(sl_key, arange, *_radix_halves(sl_key, cl.m * L), arange)
    sl_dst, sl_bc, sl_id = cl.w_dst[sl_order], cl.w_bc[sl_order], cl.w_id[sl_order]
    sl_count = np.bincount(sl_key, minlength=cl.m * L)
    sl_start = np.cumsum(sl_count) - sl_count
    g = np.minimum(np.searchsorted(lab_values, ch_label), max(len(lab_values) - 1, 0))
    if len(lab_values):
        ch_label_c = np.where((lab_values[g] == ch_label) & present[g], code[g], -1)
    else:
        ch_label_c = np.full(len(ch_label), -1)
    link_arc: list = []
    link_parent: list = []
    n_links = 0
    node = np.zeros(len(root_s), dtype=np.int64)
    state, bc, link = root_s, root_b, np.full(len(root_s), -1, dtype=np.int64)
    best_cost = np.full(len(ends), INF)
    best_link = np.full(len(ends), -1, dtype=np.int64)
    while len(node):
        seq = end_arr[node]
        fin = np.flatnonzero(seq >= 0)
        if len(fin):
            tot = bc[fin] + cl.x_bc[state[fin]]
            first = _first_min_per_cell(seq[fin], tot, len(ends))
            q = seq[fin][first]
            best_cost[q] = tot[first]
            best_link[q] = link[fin][first]
        cidx, prow = _gather(ch_off, node)  # (row, child) pairs
        if not len(cidx):
            break
        lab_c = ch_label_c[cidx]
        key = state[prow] * L + lab_c
        cnt = np.where(lab_c >= 0, sl_count[np.maximum(key, 0)], 0)
        lo = sl_start[np.maximum(key, 0)]
        total = int(cnt.sum())
        if not total:
            break
        # per (row, child) query first, then per candidate arc (a query's arcs are contiguous
        # in the (state, label) order)
        q_child = cid[cidx]
        q_rank = depth_rank[q_child]
        pair = np.repeat(np.arange(len(key)), cnt)
        pos = np.arange(total) - np.repeat(np.cumsum(cnt) - cnt - lo, cnt)
        d = sl_dst[pos]
        v = bc[prow].repeat(cnt) + sl_bc[pos]
        first = _first_min_per_cell(q_rank.repeat(cnt) * cl.m + d, v, (int(q_rank.max()) + 1) * cl.m)
        pf = pair[first]
        link_arc.append(sl_id[pos[first]])
        link_parent.append(link[prow[pf]])
        node, state, bc = q_child[pf], d[first], v[first]
        link = np.arange(n_links, n_links + len(first), dtype=np.int64)
        n_links += len(first)
    # trace every sequence's best path back at once (one arc per word of the sequence)
    arcs_np = np.concatenate(link_arc) if link_arc else np.zeros(0, dtype=np.int64)
    parents_np = np.concatenate(link_parent) if link_parent else np.zeros(0, dtype=np.int64)
    found = best_link >= 0
    arcs = _trace(np.where(found, best_link, 0), np.where(found, depth[ends], 0), parents_np, arcs_np)
    return best_cost.tolist(), arcs
