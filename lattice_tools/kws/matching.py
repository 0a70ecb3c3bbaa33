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


__all__ = ["match"]
