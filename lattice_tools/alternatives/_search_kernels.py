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
def expand_state(states, resid, c_off, c_dst, c_lc, c_min, c_scaled, e_off, e_group, e_cost, cost_min, cost_scaled,
                 e_compl, compl_min, compl_scaled, group_label,
                 state_mark, state_min, state_sum, group_mark, group_pos, group_cost, group_compl, stamp):
    """The choices of the determinized state (``states``, residual costs ``resid``).

    1. Epsilon closure: every member's closure row (states reachable through epsilon paths, with
       their log-sum costs ``c_lc``) added to its residual, log-summed per reached state (``c_min``,
       ``c_scaled``: see :func:`_rows_sums`).
    2. The *entries* of the closed states (rows ``e_off``): one per (state, next word), holding the
       log-sum of that state's arcs with that word (``e_cost``) and of their completions, arc cost
       plus the bound of its destination (``e_compl``), and one end entry per final state (exit
       cost, twice).  An entry's group ``e_group`` is its (automaton, word), numbered in word
       order with the end first.  Summing entries instead of arcs makes an expansion cost the size
       of the closed subset, not the number of its arcs (on pocketsphinx lattices every arc out of
       a state carries the state's word: ~27 arcs per entry); the arcs of a group are only read
       when the search takes it (:func:`successor_subset`).
    3. Per group: the transition's cost (log-sum of its entries' ``e_cost`` plus residuals) and the
       log-sum of its completions ``bound``; both are linear sums relative to one shift per
       expansion (``cost_min``/``compl_min``: each row's smallest value, ``*_scaled = exp(row min
       - value)``), and a group whose sum would underflow is recomputed in the log domain.

    Returns ``(order, bound, label, cost, ends, m_state, m_resid, m_entry)``: the groups with a
    finite bound sorted by bound (ties by group number: word order, the end first) with their
    bounds, labels (-1: the end) and transition costs; the member offsets of every group (in
    group-number order) and per member its closed state, residual and entry."""
    closed, sums, shift = _rows_sums(states, resid, c_off, c_dst, c_lc, c_min, c_scaled, state_mark, state_min,
                                     state_sum, stamp, True)
    closed_r = sums if shift == INF else shift - np.log(sums)
    # groups: count the members of each, in order of first appearance
    n_members = 0
    shift_c = INF
    shift_b = INF
    for i in range(len(closed)):
        s = closed[i]
        n_members += e_off[s + 1] - e_off[s]
        if closed_r[i] + cost_min[s] < shift_c:
            shift_c = closed_r[i] + cost_min[s]
        if closed_r[i] + compl_min[s] < shift_b:
            shift_b = closed_r[i] + compl_min[s]
    groups = np.empty(n_members, np.int64)
    ng = 0
    for i in range(len(closed)):
        s = closed[i]
        for k in range(e_off[s], e_off[s + 1]):
            g = e_group[k]
            if group_mark[g] != stamp:
                group_mark[g] = stamp
                group_pos[g] = 0
                groups[ng] = g
                ng += 1
            group_pos[g] += 1
    groups = np.sort(groups[:ng])
    ends = np.empty(ng + 1, np.int64)
    start = 0
    for u in range(ng):
        ends[u] = start
        c = group_pos[groups[u]]
        group_pos[groups[u]] = start  # now the group's next member position
        start += c
    ends[ng] = start
    # members grouped (closed-state order within a group), with the linear sums
    m_state = np.empty(n_members, np.int64)
    m_resid = np.empty(n_members, np.float64)
    m_entry = np.empty(n_members, np.int64)
    for u in range(ng):
        group_cost[groups[u]] = 0.0
        group_compl[groups[u]] = 0.0
    for i in range(len(closed)):
        s = closed[i]
        r = closed_r[i]
        if e_off[s] == e_off[s + 1]:
            continue
        fc = math.exp(shift_c - (r + cost_min[s])) if r + cost_min[s] < INF else 0.0
        fb = math.exp(shift_b - (r + compl_min[s])) if r + compl_min[s] < INF else 0.0
        for k in range(e_off[s], e_off[s + 1]):
            g = e_group[k]
            p = group_pos[g]
            group_pos[g] = p + 1
            m_state[p] = s
            m_resid[p] = r
            m_entry[p] = k
            group_cost[g] += fc * cost_scaled[k]
            group_compl[g] += fb * compl_scaled[k]
    cost = np.empty(ng, np.float64)
    bound = np.empty(ng, np.float64)
    for u in range(ng):
        g = groups[u]
        tc, tb = group_cost[g], group_compl[g]
        if tc >= 1e-250 and tb >= 1e-250:
            cost[u] = shift_c - math.log(tc)
            bound[u] = shift_b - math.log(tb)
        else:  # far below the shift (or unreachable): the group's own shifts, in the log domain
            cost[u] = _members_logsum(m_resid, m_entry, ends[u], ends[u + 1], e_cost)
            bound[u] = _members_logsum(m_resid, m_entry, ends[u], ends[u + 1], e_compl)
    order = np.argsort(bound, kind="mergesort")  # stable: ties by group number
    finite = 0
    while finite < ng and bound[order[finite]] < INF:
        finite += 1
    order = order[:finite]
    labels = np.empty(finite, np.int64)
    for i in range(finite):
        labels[i] = group_label[groups[order[i]]]
    return order, bound[order], labels, cost[order], ends, m_state, m_resid, m_entry


@njit(cache=True)
def _members_logsum(m_resid, m_entry, a, b, value):
    """``-log(sum(exp(-(m_resid[p] + value[m_entry[p]]))))`` over members ``a:b`` (INF when empty)."""
    m = INF
    for p in range(a, b):
        v = m_resid[p] + value[m_entry[p]]
        if v < m:
            m = v
    if m == INF:
        return INF
    t = 0.0
    for p in range(a, b):
        t += math.exp(m - (m_resid[p] + value[m_entry[p]]))
    return m - math.log(t)


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
def successor_subset(m_state, m_resid, m_entry, a, b, arc_off, e_cost, arc_dst, arc_cost, arc_scaled, mark, acc,
                     acc_min, stamp, resolution):
    """The subset reached by one choice of an expansion: the destinations of the arcs of its
    members ``a:b`` (entry ``m_entry[p]``'s arcs are ``arc_off[k]:arc_off[k + 1]``, with
    ``arc_scaled = exp(e_cost[k] - arc_cost)``), each with its share of the choice's probability.
    Returns the states in increasing order, their residual costs ``-log(share)`` and those rounded
    to ``resolution`` (its interning key, as
    :meth:`~lattice_tools.alternatives._determinizer.Determinizer.intern` rounds).  ``mark``/``acc``/
    ``acc_min``: scratch per state (``mark`` holds ``stamp`` for the states seen in this call)."""
    shift = INF
    n = 0
    for p in range(a, b):
        k = m_entry[p]
        n += arc_off[k + 1] - arc_off[k]
        if m_resid[p] + e_cost[k] < shift:
            shift = m_resid[p] + e_cost[k]
    touched = np.empty(n, np.int64)
    nt = 0
    for p in range(a, b):
        k = m_entry[p]
        f = math.exp(shift - (m_resid[p] + e_cost[k])) if shift < INF else 0.0
        for q in range(arc_off[k], arc_off[k + 1]):
            v = arc_dst[q]
            if mark[v] != stamp:
                mark[v] = stamp
                acc[v] = 0.0
                touched[nt] = v
                nt += 1
            acc[v] += f * arc_scaled[q]
    states = np.sort(touched[:nt])
    total = 0.0
    exact = False
    for v in states:
        if not acc[v] >= 1e-250:
            exact = True
        total += acc[v]
    resid = np.empty(nt, np.float64)
    rounded = np.empty(nt, np.int64)
    if exact:  # shares far below the largest one: each state's own shift, in the log domain
        for v in states:
            acc_min[v] = INF
            acc[v] = 0.0
        for p in range(a, b):
            for q in range(arc_off[m_entry[p]], arc_off[m_entry[p] + 1]):
                x = m_resid[p] + arc_cost[q]
                if x < acc_min[arc_dst[q]]:
                    acc_min[arc_dst[q]] = x
        for p in range(a, b):
            for q in range(arc_off[m_entry[p]], arc_off[m_entry[p] + 1]):
                v = arc_dst[q]
                if acc_min[v] < INF:
                    acc[v] += math.exp(acc_min[v] - (m_resid[p] + arc_cost[q]))
        m = INF
        for v in states:
            acc_min[v] = acc_min[v] - math.log(acc[v]) if acc_min[v] < INF else INF
            m = min(m, acc_min[v])
        t = 0.0
        for v in states:
            if acc_min[v] < INF:
                t += math.exp(m - acc_min[v])
        total_cost = m - math.log(t)
        for i in range(nt):
            resid[i] = acc_min[states[i]] - total_cost
            rounded[i] = np.int64(np.rint(resid[i] / resolution))
        return states, resid, rounded
    for i in range(nt):
        r = -math.log(acc[states[i]] / total)
        resid[i] = r
        rounded[i] = np.int64(np.rint(r / resolution))
    return states, resid, rounded
