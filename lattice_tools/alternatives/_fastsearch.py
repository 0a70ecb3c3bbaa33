"""The exact best-first sequence search (internal engine; the algorithm is described in
:mod:`lattice_tools.alternatives._search`): a lazily explored log-semiring determinization,
searched best-first with the exact log-semiring backward bound, with the per-state work done by
numpy:

* epsilons are removed once up front: every state gets the list of *word arcs reachable through
  epsilon paths* with the log and tropical cost of those paths, and its closed exit weight
  (computed for all states of one epsilon-depth level at a time);
* a determinized state is a pair of arrays (states, residual costs); its expansion gathers the
  closed word arcs of all its states at once and reduces them by ``(word, destination)``, grouped
  with numpy's radix sort on keys made small by renumbering the automaton's words densely;
* the best single path of each output sequence (for word times) is a Viterbi pass over the trie
  of the outputs, whose per-step "cheapest candidate per (trie node, state)" is a dense
  scatter-minimum instead of a sort.

Every one of these keeps the arithmetic of the plain per-state formulation (segmented numpy
reductions do not depend on what else is in the array), so the results are bitwise those of
expanding one state at a time (tests/test_phrases_fast.py).
"""
from __future__ import annotations

import heapq
import math

import numpy as np

from ..errors import BudgetExceededError
from ._fb import _segment_reduce
from ._search import SequenceResult, log_add

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
    return first[first < n]


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


def _logsum(values: np.ndarray) -> float:
    if not len(values):
        return INF
    m = values.min()
    if m == INF:
        return INF
    return float(m - np.log(np.exp(-(values - m)).sum()))


class _Closed:
    """Epsilon-removed view of an acyclic automaton given by arc arrays (local state ids)."""

    def __init__(self, m, src, dst, lab, cost, arc_ids, exit_lc, exit_bc):
        self.m = m
        word = lab != 0
        eps = ~word
        # exits and word arcs closed under epsilon paths, in reverse topological order
        x_lc, x_bc = exit_lc.copy(), exit_bc.copy()
        ws, wa = src[word], np.flatnonzero(word)
        order = np.argsort(ws, kind="stable")
        ws, wa = ws[order], wa[order]
        w_off = np.searchsorted(ws, np.arange(m + 1))
        if eps.any():
            es, ed, ec = src[eps].tolist(), dst[eps].tolist(), cost[eps].tolist()
            eps_out: dict = {}
            for s, d, c in zip(es, ed, ec):
                eps_out.setdefault(s, []).append((d, c))
            x_lc_l, x_bc_l = x_lc.tolist(), x_bc.tolist()
            # exit weights: scalar updates in reverse topological order; and each epsilon
            # state's level (1 + the highest level among its epsilon successors)
            level: dict = {}
            for s in sorted(eps_out, reverse=True):
                xl, xb = x_lc_l[s], x_bc_l[s]
                lv = 0
                for d, c in eps_out[s]:
                    xl = log_add(xl, c + x_lc_l[d])
                    xb = min(xb, c + x_bc_l[d])
                    if d in level and level[d] >= lv:
                        lv = level[d] + 1
                x_lc_l[s], x_bc_l[s] = xl, xb
                level[s] = lv
            x_lc, x_bc = np.array(x_lc_l), np.array(x_bc_l)
            # closed rows, one level at a time (all states of a level in one batch of numpy
            # calls): a state's row is its own word arcs followed by the rows of its epsilon
            # successors (cost added), reduced per arc -- log sum, and minimum -- in that order.
            # Segments reduce independently, so the numbers are those of one state at a time.
            store_arc, store_lc, store_bc = [wa], [cost[wa]], [cost[wa]]
            row_lo = w_off[:-1].copy()
            row_len = np.diff(w_off)
            stored = len(wa)
            by_level: dict = {}
            for s_, lv in level.items():
                by_level.setdefault(lv, []).append(s_)
            for lv in sorted(by_level):
                level_states = sorted(by_level[lv])
                # the pieces of each state's row, in order: (owner, source state, added cost, own?)
                pieces = []
                for r, s_ in enumerate(level_states):
                    pieces.append((r, s_, 0.0, True))
                    pieces.extend((r, d, c, False) for d, c in eps_out[s_])
                owners, sources, adds, own = zip(*pieces)
                level_states = np.array(level_states, dtype=np.int64)
                sources = np.array(sources, dtype=np.int64)
                cnt = row_len[sources]
                total = int(cnt.sum())
                arc_all = np.concatenate(store_arc) if len(store_arc) > 1 else store_arc[0]
                lc_all = np.concatenate(store_lc) if len(store_lc) > 1 else store_lc[0]
                bc_all = np.concatenate(store_bc) if len(store_bc) > 1 else store_bc[0]
                store_arc, store_lc, store_bc = [arc_all], [lc_all], [bc_all]
                pos = np.repeat(row_lo[sources] - (np.cumsum(cnt) - cnt), cnt) + np.arange(total)
                add = np.repeat(np.array(adds), cnt)
                is_own = np.repeat(np.array(own), cnt)
                arcs_ = arc_all[pos]
                lcs = np.where(is_own, lc_all[pos], lc_all[pos] + add)
                bcs = np.where(is_own, bc_all[pos], bc_all[pos] + add)
                owner = np.repeat(np.array(owners, dtype=np.int64), cnt)
                n_out = np.zeros(len(level_states), dtype=np.int64)
                if total:
                    key = owner * (int(arcs_.max()) + 1) + arcs_
                    order = np.argsort(key, kind="stable")
                    ks = key[order]
                    seg = _starts(ks)
                    new_arc = arcs_[order][seg]
                    new_lc = _segment_reduce(lcs[order], seg, True)
                    new_bc = np.minimum.reduceat(bcs[order], seg)
                    new_owner = owner[order][seg]
                    n_out = np.bincount(new_owner, minlength=len(level_states))
                    store_arc.append(new_arc), store_lc.append(new_lc), store_bc.append(new_bc)
                row_lo[level_states] = stored + np.cumsum(n_out) - n_out
                row_len[level_states] = n_out
                stored += int(n_out.sum())
            arc_all = np.concatenate(store_arc)
            cnt = row_len
            idx = np.repeat(row_lo - (np.cumsum(cnt) - cnt), cnt) + np.arange(int(cnt.sum()))
            self.w_arc = arc_all[idx]
            self.w_lc = np.concatenate(store_lc)[idx]
            self.w_bc = np.concatenate(store_bc)[idx]
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


def search_arrays(num_states, src, dst, lab, cost, arc_ids, init_states, init_lc, init_bc, exit_states,
                  exit_lc, exit_bc, beta, n, *, max_pops=2_000_000, key=None, track_best=True,
                  resolution=1e-9, determinize_first=False, max_states=1_000_000, lazy_pops=50_000):
    """Exact ``n`` best distinct label sequences (``None`` = all) of an acyclic automaton.

    Args:
      num_states: states are ``0..num_states-1``, topologically numbered (``src < dst``).
      src, dst, lab, cost, arc_ids: arc arrays (``lab`` 0 = epsilon; ``arc_ids`` are reported in
        ``best_arcs``).
      init_states, init_lc, init_bc: initial states with log and tropical initial costs.
      exit_states, exit_lc, exit_bc: final states with log and tropical final costs.
      beta: per-state log-semiring backward cost (exit included) of every state that a labelled
        arc enters -- the exact bound of the search.
      n: number of sequences wanted (None = all).
      max_pops: budget on popped search nodes (BudgetExceededError past it).
      track_best: also find each sequence's best single path (``best_cost``, ``best_arcs``).
      determinize_first: skip the lazy search: build the whole log-determinized automaton (at
        most ``max_states`` states, else BudgetExceededError) and search it with the *exact*
        tropical bound (the best completion in the determinized automaton), so that every pop is
        on the way to an output.  Long utterances need this: there the log-sum bound of the lazy
        search is loose (probability spread over very many sequences).  Without it, the lazy
        search runs first with ``lazy_pops + 20 n`` pops and falls back to this when they run
        out (and always for ``n=None``).

    Returns: list of :class:`SequenceResult`, most probable first.
    """
    m = num_states
    x_lc = np.full(m, INF)
    x_bc = np.full(m, INF)
    x_lc[exit_states] = exit_lc
    x_bc[exit_states] = exit_bc
    cl = _Closed(m, np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64), np.asarray(lab, dtype=np.int64),
                 np.asarray(cost, dtype=np.float64), np.asarray(arc_ids, dtype=np.int64), x_lc, x_bc)
    beta = np.asarray(beta, dtype=np.float64)
    keep = np.asarray(init_lc) < INF
    root_s = np.asarray(init_states, dtype=np.int64)[keep]
    root_r = np.asarray(init_lc, dtype=np.float64)[keep]
    if not len(root_s):
        return []
    o = np.argsort(root_s)
    root_s, root_r = root_s[o], root_r[o]

    det_keys: dict = {}
    det_sets: list = []
    det_h: list = []
    det_exp: list = []

    def intern(states, resid, h) -> int:
        k = (states.tobytes(), np.rint(resid / resolution).astype(np.int64).tobytes())
        j = det_keys.get(k)
        if j is None:
            j = det_keys[k] = len(det_sets)
            det_sets.append((states, resid))
            det_h.append(h)
            det_exp.append(None)
        return j

    w_off, w_lc, x_lc = cl.w_off, cl.w_lc, cl.x_lc
    # per-expansion numpy call overhead matters (median 32 gathered arcs), so everything that
    # depends only on the closed arcs is computed once: row lengths, (label, dst) keys, aranges.
    # Keys use the automaton's labels renumbered densely (order-preserving), so that they often
    # fit in 16 or 32 bits and the stable grouping sort can be numpy's radix sort (O(n); the
    # big expansions, up to ~10^5 gathered arcs, dominate the run time).
    w_cnt = np.diff(w_off)
    lab_values = np.unique(cl.w_lab)
    w_key = np.searchsorted(lab_values, cl.w_lab).astype(np.int64) * m + cl.w_dst
    w_key16, w_key_hi = _radix_halves(w_key, len(lab_values) * m)
    ramp = np.arange(max(len(w_lc), m) + 1, dtype=np.int64)

    def expand(j):
        S, R = det_sets[j]
        fin = _logsum(R + x_lc[S])
        cnt = w_cnt[S]
        total = int(cnt.sum())
        out = []
        if total:
            # the rows of S concatenated (what _gather(w_off, S) returns)
            ramp_t = ramp[:total] if total < len(ramp) else np.arange(total)
            idx = np.repeat(w_off[S] - (np.cumsum(cnt) - cnt), cnt) + ramp_t
            v = np.repeat(R, cnt) + w_lc[idx]
            k2 = w_key[idx]
            order = _stable_order(k2, idx, w_key16, w_key_hi, ramp_t)
            k2s = k2[order]
            seg = _starts(k2s)
            val = _seg_logsum(v[order], seg)
            uk = k2s[seg]
            ulab, ud = uk // m, uk % m
            lseg = _starts(ulab)
            ends = np.empty(len(lseg) + 1, dtype=np.int64)
            ends[:-1] = lseg
            ends[-1] = len(ulab)
            lens = ends[1:] - lseg
            wsum = _seg_logsum(val, lseg, lens)
            resid = val - wsum.repeat(lens)
            hval = _seg_logsum(resid + beta[ud], lseg, lens)
            ends8 = (ends * 8).tolist()  # byte offsets of each successor's slice
            # intern every successor with one rounding pass and byte slices (the same keys as
            # intern(): the int64 bytes of the states and of the rounded residuals)
            ud_bytes = ud.tobytes()
            rq_bytes = np.rint(resid / resolution).astype(np.int64).tobytes()
            for w, wsi, hsi, a8, b8 in zip(lab_values[ulab[lseg]].tolist(), wsum.tolist(), hval.tolist(),
                                           ends8, ends8[1:]):
                if wsi == INF:
                    continue
                k = (ud_bytes[a8:b8], rq_bytes[a8:b8])
                nj = det_keys.get(k)
                if nj is None:
                    nj = det_keys[k] = len(det_sets)
                    det_sets.append((ud[a8 >> 3:b8 >> 3], resid[a8 >> 3:b8 >> 3]))
                    det_h.append(hsi)
                    det_exp.append(None)
                    out.append((wsi + hsi, w, nj, wsi))
                else:
                    out.append((wsi + det_h[nj], w, nj, wsi))
        det_exp[j] = (fin, out)
        det_sets[j] = None
        return det_exp[j]

    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        found = None
        if not determinize_first and n is not None:
            # lazy search with the log-sum bound; if that bound proves too loose (probability
            # spread over very many sequences), fall back to the exact bound below, reusing
            # every determinized state built so far
            try:
                found = _best_first(intern, expand, None, det_exp, root_s, root_r, n,
                                    min(max_pops, lazy_pops + 20 * n), key)
            except BudgetExceededError:
                found = None
        if found is None:
            bound = _exact_bounds(intern(root_s, root_r, 0.0), expand, det_exp, max_states, key)
            found = _best_first(intern, expand, bound, det_exp, root_s, root_r, n, max_pops, key)
    seqs = [(_labels(link), cost_) for link, cost_ in found]
    if not track_best:
        return [SequenceResult(lab_, c, math.nan, ()) for lab_, c in seqs]
    with np.errstate(invalid="ignore", over="ignore"):
        best = _best_paths(cl, root_s, np.asarray(init_bc, dtype=np.float64)[keep][o], [s for s, _ in seqs])
    return [SequenceResult(lab_, c, *best[lab_]) for lab_, c in seqs]


def _exact_bounds(j0, expand, det_exp, max_states, key) -> list:
    """Expand every determinized state reachable from ``j0``; return for each the cost of its best
    completion (tropical shortest distance to the end in the determinized automaton)."""
    order: list = []
    visited: set = set()
    stack = [(j0, False)]
    while stack:  # iterative DFS (a state is visited when popped); post-order = reverse topological
        j, done = stack.pop()
        if done:
            order.append(j)
            continue
        if j in visited:
            continue
        visited.add(j)
        if len(visited) > max_states:
            raise BudgetExceededError(f"log-determinization exceeded {max_states} states", key=key)
        stack.append((j, True))
        exp = det_exp[j] if det_exp[j] is not None else expand(j)
        for _, _, nj, _ in exp[1]:
            if nj not in visited:
                stack.append((nj, False))
    best = [INF] * len(det_exp)
    for j in order:
        fin, trans = det_exp[j]
        b = fin
        for _, _, nj, c in trans:
            if c + best[nj] < b:
                b = c + best[nj]
        best[j] = b
    return best


def _best_first(intern, expand, h, det_exp, root_s, root_r, n, max_pops, key) -> list:
    """The best-first loop: ``[(labels link, cost)]`` of the first ``n`` end nodes popped.

    ``h``: per determinized state, the bound of its completions; ``None`` for the log-sum bound
    that each expansion already added to its transitions ``(c + h(next), label, next, c)``.

    Lazy successor enumeration: each determinized state's outgoing choices (its end weight and its
    transitions) are sorted once by their bound ``c + h(next)``; a heap entry is "choice ``i`` of
    state ``j`` after prefix cost ``g``", and popping it pushes only choice ``i + 1`` and the first
    choice of the next state.  Entries still leave the heap in nondecreasing bound order (choices
    are sorted and a state's first choice is no better than its log-sum bound), so the output is
    the same as pushing every child, with two pushes per pop.
    """
    sorted_choices: dict = {}

    def choices(j):
        items = sorted_choices.get(j)
        if items is None:  # sort once: (bound, label or -1 for the end, next state, arc cost)
            exp = det_exp[j]
            if exp is None:
                exp = expand(j)
            fin, trans = exp
            items = list(trans) if h is None else [(c + h[nj], w, nj, c) for _, w, nj, c in trans]
            if fin < INF:
                items.append((fin, -1, -1, fin))
            items.sort()
            sorted_choices[j] = items
        return items

    j0 = intern(root_s, root_r, 0.0)
    heap: list = []
    counter = 0
    first = choices(j0)
    if first:
        heap.append((first[0][0], 0, j0, 0, 0.0, None))
    pops = 0
    found: list = []
    while heap:
        prio, _, j, i, g, link = heapq.heappop(heap)
        pops += 1
        if pops > max_pops:
            raise BudgetExceededError(f"exact sequence search exceeded {max_pops} search nodes "
                                      f"after {len(found)} sequences; lower N or prune the lattice", key=key)
        items = choices(j)
        if i + 1 < len(items):
            counter += 1
            heapq.heappush(heap, (g + items[i + 1][0], counter, j, i + 1, g, link))
        bound, w, nj, c = items[i]
        if w < 0:
            found.append((link, g + c))
            if n is not None and len(found) >= n:
                break
            continue
        nxt = choices(nj)
        if nxt:
            gc = g + c
            counter += 1
            heapq.heappush(heap, (gc + nxt[0][0], counter, nj, 0, gc, (w, link)))
    return found


def _labels(link) -> tuple:
    out = []
    while link is not None:
        out.append(link[0])
        link = link[1]
    return tuple(reversed(out))


def _best_paths(cl: _Closed, root_s, root_b, sequences) -> dict:
    """Best single path (cost, word-arc ids) reading each sequence: a tropical Viterbi pass over
    the trie of the sequences, vectorized over all trie nodes of one depth at a time.  Closed word
    arcs are indexed by ``(state, label)`` (a dense table over the automaton's states and its
    labels) so that only arcs matching a trie child are touched; the best candidate of each
    ``(trie node, state)`` is the cheapest, the earliest one among equal costs."""
    result: dict = {}
    if not sequences:
        return result
    V = int(cl.w_lab.max(initial=0)) + 1
    child_of: dict = {}
    end_seq = [-1]
    node_depth = [0]
    for q, seq in enumerate(sequences):
        node = 0
        for w in seq:
            k = node * V + w
            nxt = child_of.get(k)
            if nxt is None:
                nxt = child_of[k] = len(end_seq)
                end_seq.append(-1)
                node_depth.append(node_depth[node] + 1)
            node = nxt
        end_seq[node] = q
    end_arr = np.array(end_seq, dtype=np.int64)
    n_nodes = len(end_seq)
    # rank of every trie node among the nodes of its depth, in node-id order: the dense index
    # of a node within one depth step (monotone, so cell order is (node, state) order)
    depth = np.array(node_depth, dtype=np.int64)
    by_depth = _argsort_stable_keys(depth)
    depth_start = np.searchsorted(depth[by_depth], np.arange(int(depth.max()) + 2))
    depth_rank = np.empty(n_nodes, dtype=np.int64)
    depth_rank[by_depth] = np.arange(n_nodes) - depth_start[depth[by_depth]]
    ck = np.fromiter(child_of.keys(), dtype=np.int64, count=len(child_of))
    cid = np.fromiter(child_of.values(), dtype=np.int64, count=len(child_of))
    o = np.argsort(ck, kind="stable")
    ck, cid = ck[o], cid[o]
    ch_parent, ch_label = ck // V, ck % V
    ch_off = np.searchsorted(ch_parent, np.arange(n_nodes + 1))
    # closed word arcs sorted by (state, label); labels renumbered densely (order-preserving)
    # so that arc range of any (state, label) is two table look-ups
    labels = np.unique(cl.w_lab)
    L = len(labels)
    row_state = np.repeat(np.arange(cl.m, dtype=np.int64), np.diff(cl.w_off))
    sl_key = row_state * L + np.searchsorted(labels, cl.w_lab)
    arange = np.arange(len(sl_key), dtype=np.int64)
    sl_order = _stable_order(sl_key, arange, *_radix_halves(sl_key, cl.m * L), arange)
    sl_dst, sl_bc, sl_id = cl.w_dst[sl_order], cl.w_bc[sl_order], cl.w_id[sl_order]
    sl_count = np.bincount(sl_key, minlength=cl.m * L)
    sl_start = np.cumsum(sl_count) - sl_count
    pos_l = np.minimum(np.searchsorted(labels, ch_label), max(L - 1, 0))
    ch_label_c = np.where(labels[pos_l] == ch_label, pos_l, -1) if L else np.full(len(ch_label), -1)
    link_arc: list = []
    link_parent: list = []
    n_links = 0
    node = np.zeros(len(root_s), dtype=np.int64)
    state, bc, link = root_s, root_b, np.full(len(root_s), -1, dtype=np.int64)
    best_cost = np.full(len(sequences), INF)
    best_link = np.full(len(sequences), -1, dtype=np.int64)
    while len(node):
        seq = end_arr[node]
        fin = np.flatnonzero(seq >= 0)
        if len(fin):
            tot = bc[fin] + cl.x_bc[state[fin]]
            first = _first_min_per_cell(seq[fin], tot, len(sequences))
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
    # trace every sequence's best path back at once: one numpy step per trie depth; column c of
    # ``steps`` holds the arc taken c steps before the end (-1 once the root is reached)
    if link_arc:
        arcs_np, parents_np = np.concatenate(link_arc), np.concatenate(link_parent)
        li = best_link.copy()
        steps = []
        while True:
            live = li >= 0
            if not live.any():
                break
            steps.append(np.where(live, arcs_np[np.maximum(li, 0)], -1))
            li = np.where(live, parents_np[np.maximum(li, 0)], -1)
    else:
        steps = []
    if steps:
        mat = np.stack(steps[::-1], axis=1)  # paths right-aligned, -1 padding on the left
        lengths = (mat >= 0).sum(axis=1).tolist()
        rows = mat.tolist()
        width = mat.shape[1]
    else:
        lengths, rows, width = [0] * len(sequences), [[]] * len(sequences), 0
    costs = best_cost.tolist()
    for q, seq in enumerate(sequences):
        result[seq] = (costs[q], tuple(rows[q][width - lengths[q]:]))
    return result
