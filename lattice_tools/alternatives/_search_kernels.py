"""Compiled loops of the sequence search (internal helper of :mod:`._determinizer`): the expansion
of one determinized state into its choices.

An expansion touches every word arc of every state of its epsilon-closed subset (thousands per
state on dense lattices, tens of millions per lattice at small phrase thresholds), so it is one
compiled pass instead of a dozen numpy passes.  Sums of probabilities are log-sums shifted by each
group's smallest cost (``m - log(sum(exp(m - c)))``, a singleton group gives its cost exactly);
groups are visited in increasing key order and their members in gathering order, so the results
do not depend on anything but the state itself.  Plain Python when numba is not importable
(correct, much slower).
"""
from __future__ import annotations

import math

import numpy as np

from ._numba import njit

INF = math.inf


@njit(cache=True)
def _exact_logsums(uniq, srcs, resid, off, row_key, row_cost, group_min, group_sum):
    """:func:`_rows_logsums`' result, each group shifted by its own smallest cost (two passes and
    one ``exp`` per entry: for the rare groups far below the shared shift)."""
    for u in range(len(uniq)):
        group_min[uniq[u]] = INF
        group_sum[uniq[u]] = 0.0
    for i in range(len(srcs)):
        r = resid[i]
        for k in range(off[srcs[i]], off[srcs[i] + 1]):
            v = r + row_cost[k]
            if v < group_min[row_key[k]]:
                group_min[row_key[k]] = v
    for i in range(len(srcs)):
        r = resid[i]
        for k in range(off[srcs[i]], off[srcs[i] + 1]):
            g = row_key[k]
            group_sum[g] += math.exp(group_min[g] - (r + row_cost[k]))
    out = np.empty(len(uniq), np.float64)
    for u in range(len(uniq)):
        m = group_min[uniq[u]]
        out[u] = m if m == INF else m - math.log(group_sum[uniq[u]])
    return out


@njit(cache=True)
def _rows_sums(srcs, resid, off, row_key, row_cost, row_min, row_scaled, mark, group_min, group_sum, stamp,
               sort_keys):
    """Per key, the semiring sum of ``resid[i] + row_cost[k]`` over the rows
    ``off[srcs[i]]:off[srcs[i] + 1]``: returns ``(keys, sums, shift)``, the distinct keys in
    increasing order (``sort_keys``; else in order of first appearance) and, when ``shift`` is finite, their probabilities relative to ``shift``
    (the log-sum is ``shift - log(sums)``), else (``shift`` = inf) their log-sums.

    One shift for all entries (the smallest cost), and ``exp`` once per row: ``row_scaled[k] =
    exp(row_min[s] - row_cost[k])`` is precomputed, so an entry costs a multiply-add.  If a sum
    falls below 1e-250 (a key far above the shift: digits would be lost), every key is recomputed
    with its own shift in the log domain (:func:`_exact_logsums`).  ``mark``/``group_*``: scratch
    tables indexed by key (``mark`` holds ``stamp`` for the keys seen in this call, so that the
    tables are never cleared)."""
    shift = INF
    n = 0
    for i in range(len(srcs)):
        s = srcs[i]
        n += off[s + 1] - off[s]
        if resid[i] + row_min[s] < shift:
            shift = resid[i] + row_min[s]
    uniq = np.empty(n, np.int64)
    nu = 0
    for i in range(len(srcs)):
        s = srcs[i]
        lo, hi = off[s], off[s + 1]
        if lo == hi:
            continue
        f = math.exp(shift - (resid[i] + row_min[s])) if shift < INF else 0.0
        for k in range(lo, hi):
            g = row_key[k]
            if mark[g] != stamp:
                mark[g] = stamp
                uniq[nu] = g
                nu += 1
                group_sum[g] = 0.0
            group_sum[g] += f * row_scaled[k]
    uniq = np.sort(uniq[:nu]) if sort_keys else uniq[:nu]
    out = np.empty(nu, np.float64)
    exact = shift == INF
    for u in range(nu):
        t = group_sum[uniq[u]]
        if not t >= 1e-250:
            exact = True
            break
        out[u] = t
    if exact:
        return uniq, _exact_logsums(uniq, srcs, resid, off, row_key, row_cost, group_min, group_sum), INF
    return uniq, out, shift


@njit(cache=True)
def expand_state(states, resid, c_off, c_dst, c_lc, c_min, c_scaled, w_off, w_key, w_lc, w_min, w_scaled,
                 pair_group, pair_dst, pair_label, beta_x, beta_scaled, beta_base,
                 state_mark, state_min, state_sum, pair_mark, pair_min, pair_sum, group_mark, group_count, stamp):
    """The choices of the determinized state (``states``, residual costs ``resid``).

    1. Epsilon closure: every member's closure row (states reachable through epsilon paths, with
       their log-sum costs ``c_lc``) added to its residual, log-summed per reached state (``c_min``,
       ``c_scaled``: see :func:`_rows_sums`).
    2. The word-arc and end entries of the closed states (``w_key``: their dense (automaton,
       label, destination) pair; ``w_lc``: their costs), log-summed per pair (``w_min``, ``w_scaled``).
    3. Per group (a run of pairs of one label, ``pair_group``): the transition's cost ``wsum``,
       the log-sum of its completions ``bound`` (with ``beta_x`` of each pair's destination;
       ``beta_scaled = exp(beta_base - beta_x)``, ``beta_base`` the smallest bound of the
       destination's automaton), and each pair's share of the group's probability (its
       residual is ``-log(share)``, computed only for the successors the search takes).

    Returns ``(order, bound, label, wsum, ends, dst, share)``: the groups with a finite bound sorted
    by bound (ties by label order, the end first) with their bounds, labels (``pair_label`` of
    their pairs; -1: the end) and transition costs; the pair offsets of every group, and per
    pair its destination and share (a group's pairs are in order of
    first appearance, not sorted: only the successors the search takes need their states sorted)."""
    # 1. epsilon closure
    closed, sums, shift = _rows_sums(states, resid, c_off, c_dst, c_lc, c_min, c_scaled, state_mark, state_min,
                                     state_sum, stamp, True)
    closed_r = sums if shift == INF else shift - np.log(sums)
    # 2. word-arc and end entries per pair
    pairs, sums, shift = _rows_sums(closed, closed_r, w_off, w_key, w_lc, w_min, w_scaled, pair_mark, pair_min,
                                    pair_sum, stamp, False)
    pairs, sums = _by_group(pairs, sums, pair_group, group_mark, group_count, stamp)
    # 3. groups
    num_pairs = len(pairs)
    ends = np.empty(num_pairs + 1, np.int64)
    ng = 0
    for p in range(num_pairs):
        if p == 0 or pair_group[pairs[p]] != pair_group[pairs[p - 1]]:
            ends[ng] = p
            ng += 1
    ends[ng] = num_pairs
    ends = ends[:ng + 1]
    wsum = np.empty(ng, np.float64)
    bound = np.empty(ng, np.float64)
    group_pair = np.empty(ng, np.int64)
    dst = np.empty(num_pairs, np.int64)
    share = np.empty(num_pairs, np.float64)
    for g in range(ng):
        a, b = ends[g], ends[g + 1]
        group_pair[g] = pairs[a]
        for p in range(a, b):
            dst[p] = pair_dst[pairs[p]]
        if shift < INF:
            wsum[g], bound[g] = _group_linear(sums, dst, a, b, shift, beta_x, beta_scaled, beta_base, share)
        else:
            wsum[g], bound[g] = _group_exact(sums, dst, a, b, beta_x, share)
    order = np.argsort(bound, kind="mergesort")  # stable: ties by label order, the end first
    finite = 0
    while finite < ng and bound[order[finite]] < INF:
        finite += 1
    order = order[:finite]
    labels = np.empty(finite, np.int64)
    for i in range(finite):
        labels[i] = pair_label[group_pair[order[i]]]
    return order, bound[order], labels, wsum[order], ends, dst, share


@njit(cache=True)
def _by_group(pairs, sums, pair_group, mark, count, stamp):
    """``pairs`` (and their ``sums``) grouped by ``pair_group``, groups in increasing order, pairs in
    their order within each group (a counting sort: the groups are few)."""
    groups = np.empty(len(pairs), np.int64)
    ng = 0
    for p in range(len(pairs)):
        g = pair_group[pairs[p]]
        if mark[g] != stamp:
            mark[g] = stamp
            count[g] = 0
            groups[ng] = g
            ng += 1
        count[g] += 1
    groups = np.sort(groups[:ng])
    start = 0
    for i in range(ng):
        c = count[groups[i]]
        count[groups[i]] = start  # now the group's next position
        start += c
    out_pairs = np.empty(len(pairs), np.int64)
    out_sums = np.empty(len(pairs), np.float64)
    for p in range(len(pairs)):
        g = pair_group[pairs[p]]
        out_pairs[count[g]] = pairs[p]
        out_sums[count[g]] = sums[p]
        count[g] += 1
    return out_pairs, out_sums


@njit(cache=True)
def _group_linear(t, dst, a, b, shift, beta_x, beta_scaled, beta_base, share):
    """One group's transition cost and bound from its pairs' probabilities ``t[a:b]`` relative to
    ``shift``; ``share[p]``: each pair's part of the group's probability."""
    total = 0.0
    for p in range(a, b):
        total += t[p]
    wsum = shift - math.log(total)
    for p in range(a, b):
        share[p] = t[p] / total
    if b - a == 1:
        return wsum, wsum + beta_x[dst[a]]
    completions = 0.0
    for p in range(a, b):
        completions += t[p] * beta_scaled[dst[p]]
    if completions >= 1e-250:
        return wsum, shift - math.log(completions) + beta_base[dst[a]]
    m = INF
    for p in range(a, b):
        m = min(m, shift - math.log(t[p]) + beta_x[dst[p]])
    completions = 0.0
    for p in range(a, b):
        completions += math.exp(m - (shift - math.log(t[p]) + beta_x[dst[p]]))
    return wsum, m - math.log(completions)


@njit(cache=True)
def _group_exact(val, dst, a, b, beta_x, share):
    """:func:`_group_linear` from the pairs' log-sums ``val[a:b]``, each sum shifted by its own
    smallest term."""
    m_w = INF
    m_b = INF
    for p in range(a, b):
        m_w = min(m_w, val[p])
        m_b = min(m_b, val[p] + beta_x[dst[p]])
    s_w = 0.0
    s_b = 0.0
    for p in range(a, b):
        s_w += math.exp(m_w - val[p])
        s_b += math.exp(m_b - (val[p] + beta_x[dst[p]]))
    wsum = m_w if m_w == INF else m_w - math.log(s_w)
    bound = m_b if m_b == INF else m_b - math.log(s_b)
    for p in range(a, b):
        share[p] = math.exp(wsum - val[p])
    return wsum, bound


def row_scaling(off: np.ndarray, cost: np.ndarray):
    """``(row_min, row_scaled)`` of CSR rows for :func:`_rows_sums`: each row's smallest cost
    (inf when empty) and ``exp(row_min - cost)`` per entry."""
    lengths = np.diff(off)
    row_min = np.full(len(lengths), INF)
    nonempty = lengths > 0
    if len(cost):
        row_min[nonempty] = np.minimum.reduceat(cost, off[:-1][nonempty])
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.exp(np.repeat(row_min, lengths) - cost)
    return row_min, np.nan_to_num(scaled, nan=0.0)


@njit(cache=True)
def trie_viterbi(row_off, row_lab, row_dst, row_cost, row_id, exit_cost, root_states, root_costs, label, ch_off,
                 children, end_of_node, num_seqs):
    """Best single path reading each sequence of a prefix trie (tropical): per trie node (in id
    order: a child is numbered after its parent), the cheapest way to reach each state after
    reading the node's prefix; a child's states come from its parent's over the closed word arcs
    (rows ``row_off``, sorted by label within a row) of the child's label.  Among equal costs the
    earliest candidate wins (parent states in increasing order, then arcs in row order).

    ``end_of_node[v]``: the sequence ending at node ``v`` (-1: none).  Returns ``(best_cost,
    best_link, link_arc, link_parent)``: per sequence its best cost and the last link of its path;
    per link the arc id and the previous link (-1 at the root)."""
    n_nodes = len(label)
    m = len(exit_cost)
    cap = max(1024, 4 * len(root_states))
    f_state = np.empty(cap, np.int64)
    f_cost = np.empty(cap, np.float64)
    f_link = np.empty(cap, np.int64)
    f_lo = np.full(n_nodes, -1, np.int64)
    f_hi = np.full(n_nodes, -1, np.int64)
    used = len(root_states)
    for i in range(used):
        f_state[i] = root_states[i]
        f_cost[i] = root_costs[i]
        f_link[i] = -1
    f_lo[0] = 0
    f_hi[0] = used
    link_cap = 1024
    link_arc = np.empty(link_cap, np.int64)
    link_parent = np.empty(link_cap, np.int64)
    n_links = 0
    best_cost = np.full(num_seqs, INF)
    best_link = np.full(num_seqs, -1, np.int64)
    seen = np.full(m, -1, np.int64)
    cell_cost = np.empty(m, np.float64)
    cell_arc = np.empty(m, np.int64)
    cell_from = np.empty(m, np.int64)
    touched = np.empty(m, np.int64)
    for node in range(n_nodes):
        lo, hi = f_lo[node], f_hi[node]
        if lo < 0:
            continue
        q = end_of_node[node]
        if q >= 0:
            arg = -1
            best = INF
            for i in range(lo, hi):
                t = f_cost[i] + exit_cost[f_state[i]]
                if arg < 0 or t < best:
                    best = t
                    arg = i
            best_cost[q] = best
            best_link[q] = f_link[arg]
        for ci in range(ch_off[node], ch_off[node + 1]):
            c = children[ci]
            lab = label[c]
            nt = 0
            for i in range(lo, hi):
                s = f_state[i]
                g = f_cost[i]
                a, b = row_off[s], row_off[s + 1]
                while a < b:  # first arc of the row with label >= lab
                    mid = (a + b) >> 1
                    if row_lab[mid] < lab:
                        a = mid + 1
                    else:
                        b = mid
                k = a
                while k < row_off[s + 1] and row_lab[k] == lab:
                    d = row_dst[k]
                    v = g + row_cost[k]
                    if seen[d] != c:
                        seen[d] = c
                        cell_cost[d] = v
                        cell_arc[d] = k
                        cell_from[d] = i
                        touched[nt] = d
                        nt += 1
                    elif v < cell_cost[d]:
                        cell_cost[d] = v
                        cell_arc[d] = k
                        cell_from[d] = i
                    k += 1
            if nt == 0:
                continue
            states = np.sort(touched[:nt])
            if used + nt > len(f_state):
                new_cap = max(2 * len(f_state), used + nt)
                f_state = _grown_int(f_state, used, new_cap)
                f_link = _grown_int(f_link, used, new_cap)
                grown = np.empty(new_cap, np.float64)
                grown[:used] = f_cost[:used]
                f_cost = grown
            if n_links + nt > link_cap:
                link_cap = max(2 * link_cap, n_links + nt)
                link_arc = _grown_int(link_arc, n_links, link_cap)
                link_parent = _grown_int(link_parent, n_links, link_cap)
            f_lo[c] = used
            for d in states:
                f_state[used] = d
                f_cost[used] = cell_cost[d]
                f_link[used] = n_links
                link_arc[n_links] = row_id[cell_arc[d]]
                link_parent[n_links] = f_link[cell_from[d]]
                n_links += 1
                used += 1
            f_hi[c] = used
    return best_cost, best_link, link_arc[:n_links], link_parent[:n_links]


@njit(cache=True)
def _grown_int(a, used, cap):
    out = np.empty(cap, np.int64)
    out[:used] = a[:used]
    return out


@njit(cache=True)
def successor_subset(dst, share, a, b, resolution):
    """The subset of one choice of an expansion (its group's pairs ``a:b``): the states in increasing
    order, their residual costs ``-log(share)`` and those rounded to ``resolution`` (its interning
    key, as :meth:`~lattice_tools.alternatives._determinizer.Determinizer.intern` rounds)."""
    order = np.argsort(dst[a:b])
    n = b - a
    states = np.empty(n, np.int64)
    resid = np.empty(n, np.float64)
    rounded = np.empty(n, np.int64)
    for i in range(n):
        p = a + order[i]
        states[i] = dst[p]
        r = -math.log(share[p])
        resid[i] = r
        rounded[i] = np.int64(np.rint(r / resolution))
    return states, resid, rounded
