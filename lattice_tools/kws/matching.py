"""Maximum-weight bipartite matching of system hits to reference occurrences, as F4DE pairs them.

F4DE (``common/lib/BipartiteMatch.pm``) turns each candidate pair's kernel value ``k`` (about 1; see
:func:`lattice_tools.kws.score`) into a cost ``md + fa - k = -2 - k``, leaves pairs without a kernel value
(a hit whose midpoint is too far from the occurrence) unmatchable, splits the graph into connected
"cohorts" and solves each with the Hungarian method, where leaving a row or column unmatched costs about
as much as 3 matches' worth.  The result is: the largest possible number of pairs, and among those the
largest sum of kernel values.  This module computes that optimum exactly (own Hungarian method on dense
cost matrices, one per connected component; no SciPy needed).  When several matchings reach the same
optimum (identical kernel values), any one may be returned -- F4DE itself picks by Perl hash order.
"""
from __future__ import annotations

import numpy as np


def _hungarian_min(cost: np.ndarray) -> np.ndarray:
    """Assignment of each row to a distinct column minimising total cost (rows <= columns).
    Returns ``col_of_row``.  O(n^2 m) shortest augmenting paths with potentials."""
    n, m = cost.shape
    INF = np.inf
    u = np.zeros(n + 1)
    v = np.zeros(m + 1)
    p = np.zeros(m + 1, dtype=np.int64)      # p[j] = row matched to column j (1-based), 0 = free
    way = np.zeros(m + 1, dtype=np.int64)
    c = np.zeros((n + 1, m + 1))
    c[1:, 1:] = cost
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = np.full(m + 1, INF)
        used = np.zeros(m + 1, dtype=bool)
        while True:
            used[j0] = True
            i0 = p[j0]
            cur = c[i0, 1:] - u[i0] - v[1:]
            free = ~used[1:]
            better = free & (cur < minv[1:])
            minv[1:][better] = cur[better]
            way[1:][better] = j0
            cand = np.where(free, minv[1:], INF)
            j1 = int(np.argmin(cand)) + 1
            delta = cand[j1 - 1]
            used_idx = np.nonzero(used)[0]
            u[p[used_idx]] += delta
            v[used_idx] -= delta
            minv[1:][free] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while True:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
            if j0 == 0:
                break
    col_of_row = np.full(n, -1, dtype=np.int64)
    for j in range(1, m + 1):
        if p[j]:
            col_of_row[p[j] - 1] = j - 1
    return col_of_row


# Value of one matched pair on top of its kernel value: large enough that one more pair always beats any
# difference of kernel sums (kernel values stay within 1 +- 1e-3 for real time spans; a small bonus keeps their differences
# resolvable in double precision).
_PAIR_BONUS = 10.0


def match(n_ref: int, n_sys: int, edges: dict[tuple[int, int], float]) -> list[tuple[int, int]]:
    """Pairs ``(ref, sys)`` of a maximum-cardinality, then maximum-weight matching.

    ``edges[(r, s)]`` is the kernel value of a pair that may be matched; absent pairs may not."""
    if not edges:
        return []
    # Connected components (F4DE's cohorts), so that each Hungarian problem stays small.
    parent = list(range(n_ref + n_sys))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for (r, s) in edges:
        a, b = find(r), find(n_ref + s)
        if a != b:
            parent[a] = b
    comps: dict[int, tuple[list[int], list[int]]] = {}
    for (r, s) in edges:
        root = find(r)
        rs, ss = comps.setdefault(root, ([], []))
        rs.append(r)
        ss.append(s)
    out: list[tuple[int, int]] = []
    for rs, ss in comps.values():
        refs = sorted(set(rs))
        syss = sorted(set(ss))
        if len(refs) == 1 or len(syss) == 1:
            # A star: the single best pair (first best on ties).
            best = max((edges[(r, s)], -r, -s) for r in refs for s in syss if (r, s) in edges)
            out.append((-best[1], -best[2]))
            continue
        transpose = len(refs) > len(syss)
        rows, cols = (syss, refs) if transpose else (refs, syss)
        w = np.zeros((len(rows), len(cols)))
        for a, row in enumerate(rows):
            for b, col in enumerate(cols):
                k = edges.get((col, row) if transpose else (row, col))
                if k is not None:
                    w[a, b] = _PAIR_BONUS + k
        assign = _hungarian_min(-w)
        for a, b in enumerate(assign):
            if b >= 0 and w[a, b] > 0:
                r, s = (cols[b], rows[a]) if transpose else (rows[a], cols[b])
                out.append((r, s))
    return out


def _complex_keys(group: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Keys that numpy orders by group, then value (complex numbers sort lexicographically)."""
    keys = np.empty(len(group), dtype=np.complex128)
    keys.real = group
    keys.imag = value
    return keys


def match_windows(h_group: np.ndarray, h_mid: np.ndarray, h_rank: np.ndarray, o_group: np.ndarray,
                  o_from: np.ndarray, o_to: np.ndarray, o_rank: np.ndarray, kernel) -> tuple[np.ndarray, np.ndarray]:
    """:func:`match` for many independent problems at once: hit ``s`` may pair with occurrence ``r`` when
    they belong to the same group and ``o_from[r] <= h_mid[s] <= o_to[r]``; ``kernel(r, s)`` (arrays of
    candidate pairs) gives their kernel values.  Returns the matched ``(r, s)`` index arrays.

    Each connected component is solved on its own, exactly as :func:`match` solves it on the pairs of its
    group: a star (one occurrence or one hit) keeps its best pair (ties: lowest ``o_rank``, then lowest
    ``h_rank``, the order :func:`match` sees them in); a larger component goes to :func:`match`."""
    order = np.lexsort((h_mid, h_group))
    keys = _complex_keys(h_group[order].astype(np.float64), h_mid[order])
    lo = np.searchsorted(keys, _complex_keys(o_group.astype(np.float64), o_from), side="left")
    hi = np.searchsorted(keys, _complex_keys(o_group.astype(np.float64), o_to), side="right")
    count = np.maximum(hi - lo, 0)
    n_edges = int(count.sum())
    if n_edges == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    e_occ = np.repeat(np.arange(len(o_group)), count)
    starts = np.cumsum(count) - count
    e_hit = order[lo[e_occ] + (np.arange(n_edges) - starts[e_occ])]
    e_k = kernel(e_occ, e_hit)
    # Components: the hits an occurrence may pair with are one run of ``order``; occurrences whose runs
    # share a hit are connected, so merging overlapping runs (sorted by start) gives the components.
    live = np.nonzero(count > 0)[0]
    live = live[np.argsort(lo[live], kind="stable")]
    reach = np.maximum.accumulate(hi[live])
    new = np.ones(len(live), dtype=bool)
    new[1:] = lo[live[1:]] >= reach[:-1]
    comp_of_live = np.cumsum(new) - 1
    comp_of_occ = np.full(len(o_group), -1, np.int64)
    comp_of_occ[live] = comp_of_live
    n_comp = int(comp_of_live[-1]) + 1
    occs_in = np.bincount(comp_of_live, minlength=n_comp)
    first_hit = np.full(n_comp, np.iinfo(np.int64).max)
    np.minimum.at(first_hit, comp_of_live, lo[live])
    last_hit = np.zeros(n_comp, np.int64)
    np.maximum.at(last_hit, comp_of_live, hi[live])
    star = (occs_in == 1) | (last_hit - first_hit == 1)
    e_comp = comp_of_occ[e_occ]
    best = np.lexsort((h_rank[e_hit], o_rank[e_occ], -e_k, e_comp))
    first = np.ones(len(best), dtype=bool)
    first[1:] = e_comp[best[1:]] != e_comp[best[:-1]]
    chosen = best[first & star[e_comp[best]]]
    out_r, out_s = [e_occ[chosen]], [e_hit[chosen]]
    general = np.nonzero(~star)[0]
    if len(general):
        sel = np.nonzero(~star[e_comp])[0]
        sel = sel[np.argsort(e_comp[sel], kind="stable")]
        bounds = np.searchsorted(e_comp[sel], general, side="left").tolist() + [len(sel)]
        for j in range(len(general)):
            r, s = _match_component(e_occ[sel[bounds[j]:bounds[j + 1]]], e_hit[sel[bounds[j]:bounds[j + 1]]],
                                    e_k[sel[bounds[j]:bounds[j + 1]]], o_rank, h_rank)
            out_r.append(r)
            out_s.append(s)
    return np.concatenate(out_r), np.concatenate(out_s)


def _match_component(e_occ, e_hit, e_k, o_rank, h_rank) -> tuple[np.ndarray, np.ndarray]:
    """One component of :func:`match_windows` given to :func:`match`, its rows and columns numbered in
    rank order (the order the per-group call would give them)."""
    occs = sorted(set(e_occ.tolist()), key=lambda r: o_rank[r])
    hits = sorted(set(e_hit.tolist()), key=lambda s: h_rank[s])
    r_pos = {r: i for i, r in enumerate(occs)}
    s_pos = {s: i for i, s in enumerate(hits)}
    edges = {(r_pos[r], s_pos[s]): k for r, s, k in zip(e_occ.tolist(), e_hit.tolist(), e_k.tolist(), strict=True)}
    pairs = match(len(occs), len(hits), edges)
    return (np.asarray([occs[r] for r, _ in pairs], np.int64), np.asarray([hits[s] for _, s in pairs], np.int64))


__all__ = ["match", "match_windows"]
