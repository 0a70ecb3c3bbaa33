"""Vectorized version of the exact best-first sequence search (internal engine).

Same algorithm and results as :func:`lattice_tools.alternatives._search.best_first_sequences`
(a lazily explored log-semiring determinization, searched best-first with the exact
log-semiring backward bound), with the per-state work done by numpy:

* epsilons are removed once up front: every state gets the list of *word arcs reachable through
  epsilon paths* with the log and tropical cost of those paths, and its closed exit weight;
* a determinized state is a pair of arrays (states, residual costs); its expansion gathers the
  closed word arcs of all its states at once and reduces them by ``(word, destination)``.
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
    return np.flatnonzero(flags)


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
            wlist = wa.tolist()
            closed: dict = {}  # state -> {arc: (lc, bc)} for states with epsilon arcs
            x_lc_l, x_bc_l = x_lc.tolist(), x_bc.tolist()
            cost_l = cost.tolist()
            for s in sorted(eps_out, reverse=True):
                acc = {a: (cost_l[a], cost_l[a]) for a in wlist[w_off[s]:w_off[s + 1]]}
                xl, xb = x_lc_l[s], x_bc_l[s]
                for d, c in eps_out[s]:
                    xl = log_add(xl, c + x_lc_l[d])
                    xb = min(xb, c + x_bc_l[d])
                    sub = closed.get(d)
                    items = sub.items() if sub is not None else ((a, (cost_l[a], cost_l[a]))
                                                                 for a in wlist[w_off[d]:w_off[d + 1]])
                    for a, (lc, bc) in items:
                        old = acc.get(a)
                        acc[a] = (c + lc, c + bc) if old is None else (log_add(old[0], c + lc), min(old[1], c + bc))
                closed[s] = acc
                x_lc_l[s], x_bc_l[s] = xl, xb
            x_lc, x_bc = np.array(x_lc_l), np.array(x_bc_l)
            rows_s, rows_a, rows_l, rows_b = [], [], [], []
            for s_, acc in closed.items():
                for a, (lc, bc) in acc.items():
                    rows_s.append(s_); rows_a.append(a); rows_l.append(lc); rows_b.append(bc)
            plain = np.ones(m, dtype=bool)
            plain[list(closed)] = False
            idx, rep = _gather(w_off, np.flatnonzero(plain))
            pa = wa[idx]
            rs = np.concatenate([np.asarray(rows_s, dtype=np.int64), ws[idx]])
            arcs_ = np.concatenate([np.asarray(rows_a, dtype=np.int64), pa])
            lcs = np.concatenate([np.asarray(rows_l, dtype=np.float64), cost[pa]])
            bcs = np.concatenate([np.asarray(rows_b, dtype=np.float64), cost[pa]])
            order = np.argsort(rs, kind="stable")
            rs = rs[order]
            self.w_arc, self.w_lc, self.w_bc = arcs_[order], lcs[order], bcs[order]
            self.w_off = np.searchsorted(rs, np.arange(m + 1))
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
                  resolution=1e-9):
    """Exact ``n`` best distinct label sequences (``None`` = all) of an acyclic automaton.

    Args:
      num_states: states are ``0..num_states-1``, topologically numbered (``src < dst``).
      src, dst, lab, cost, arc_ids: arc arrays (``lab`` 0 = epsilon; ``arc_ids`` are reported in
        ``best_arcs``).
      init_states, init_lc, init_bc: initial states with log and tropical initial costs.
      exit_states, exit_lc, exit_bc: final states with log and tropical final costs.
      beta: per-state log-semiring backward cost (exit included) of every state that a labelled
        arc enters -- the exact bound of the search.
      n, max_pops, key, track_best: as in :func:`~lattice_tools.alternatives._search.best_first_sequences`.

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

    w_off, w_lab, w_dst, w_lc = cl.w_off, cl.w_lab, cl.w_dst, cl.w_lc

    def expand(j):
        S, R = det_sets[j]
        fin = _logsum(R + cl.x_lc[S])
        idx, rep = _gather(w_off, S)
        out = []
        if len(idx):
            v = R[rep] + w_lc[idx]
            lab_ = w_lab[idx]
            d = w_dst[idx]
            k2 = lab_ * m + d
            order = np.argsort(k2, kind="stable")
            k2s = k2[order]
            seg = _starts(k2s)
            val = _segment_reduce(v[order], seg, True)
            uk = k2s[seg]
            ulab, ud = uk // m, uk % m
            lseg = _starts(ulab)
            wsum = _segment_reduce(val, lseg, True)
            ends = np.empty(len(lseg) + 1, dtype=np.int64)
            ends[:-1] = lseg
            ends[-1] = len(ulab)
            lens = np.diff(ends)
            resid = val - np.repeat(wsum, lens)
            hval = _segment_reduce(resid + beta[ud], lseg, True)
            bounds = ends.tolist()
            labs = ulab[lseg].tolist()
            ws = wsum.tolist()
            hs = hval.tolist()
            for i, w in enumerate(labs):
                if ws[i] == INF:
                    continue
                a, b = bounds[i], bounds[i + 1]
                out.append((w, intern(ud[a:b], resid[a:b], hs[i]), ws[i]))
        det_exp[j] = (fin, out)
        det_sets[j] = None
        return det_exp[j]

    j0 = intern(root_s, root_r, 0.0)
    heap = [(0.0, 0, j0, 0.0, None)]
    counter = 0
    pops = 0
    found: list = []
    while heap:
        prio, _, j, g, link = heapq.heappop(heap)
        pops += 1
        if pops > max_pops:
            raise BudgetExceededError(f"exact sequence search exceeded {max_pops} search nodes "
                                      f"after {len(found)} sequences; lower N or prune the lattice", key=key)
        if j < 0:
            found.append((link, prio))
            if n is not None and len(found) >= n:
                break
            continue
        exp = det_exp[j]
        if exp is None:
            exp = expand(j)
        fin, trans = exp
        if fin < INF:
            counter += 1
            heapq.heappush(heap, (g + fin, counter, -1, g + fin, link))
        for w, nj, c in trans:
            gc = g + c
            counter += 1
            heapq.heappush(heap, (gc + det_h[nj], counter, nj, gc, (w, link)))
    seqs = [(_labels(link), cost_) for link, cost_ in found]
    if not track_best:
        return [SequenceResult(lab_, c, math.nan, ()) for lab_, c in seqs]
    best = _best_paths(cl, root_s, np.asarray(init_bc, dtype=np.float64)[keep][o], [s for s, _ in seqs])
    return [SequenceResult(lab_, c, *best[lab_]) for lab_, c in seqs]


def _labels(link) -> tuple:
    out = []
    while link is not None:
        out.append(link[0])
        link = link[1]
    return tuple(reversed(out))


def _best_paths(cl: _Closed, root_s, root_b, sequences) -> dict:
    """Best single path (cost, word-arc ids) reading each sequence: tropical pass over their trie."""
    trie: dict = {}
    for seq in sequences:
        node = trie
        for w in seq:
            node = node.setdefault(w, {})
        node[None] = seq
    links: list = []  # (arc id, parent link index)
    result: dict = {}
    stack = [(trie, root_s, root_b, np.full(len(root_s), -1, dtype=np.int64))]
    m = cl.m
    while stack:
        node, S, B, L = stack.pop()
        if None in node:
            tot = B + cl.x_bc[S]
            i = int(np.argmin(tot))
            path = []
            li = int(L[i])
            while li >= 0:
                path.append(links[li][0])
                li = links[li][1]
            result[node[None]] = (float(tot[i]), tuple(reversed(path)))
        words = [w for w in node if w is not None]
        if not words:
            continue
        idx, rep = _gather(cl.w_off, S)
        if not len(idx):
            continue
        lab = cl.w_lab[idx]
        for w in words:
            sel = np.flatnonzero(lab == w)
            ii = idx[sel]
            v = B[rep[sel]] + cl.w_bc[ii]
            d = cl.w_dst[ii]
            order = np.lexsort((v, d))
            d_sorted = d[order]
            first = order[_starts(d_sorted)]
            base = len(links)
            parents = L[rep[sel][first]].tolist()
            links.extend(zip(cl.w_id[ii[first]].tolist(), parents))
            stack.append((node[w], d[first], v[first], np.arange(base, base + len(first), dtype=np.int64)))
    return result
