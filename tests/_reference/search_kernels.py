"""The kernels of the sequence search (lattice_tools/_ext/search/) as plain Python: the oracle of
tests/test_search_kernels.py, run on small inputs.  The expansion of one determinized state into its choices
(:func:`expand_state`), the subset reached by a choice (:func:`successor_subset`), the word-time
Viterbi over the prefix trie (:func:`trie_viterbi`) and :func:`closed_exits`.

An expansion sums the precomputed *closed entries* of its members (per state: the (word | end)
entries of the states of its epsilon closure, one per word), not their arcs; a choice's arcs are
read only when the search takes it.  Sums of probabilities are linear sums relative to one shift
(``m - log(sum(exp(m - c)))``), recomputed in the log domain with their own shift when they would
underflow; groups are visited in increasing key order and their members in gathering order, so the
results do not depend on anything but the state itself.
"""
from __future__ import annotations

import math

import numpy as np

INF = math.inf


def expand_state(states, resid, t_off, t_group, t_cost, cost_min, cost_scaled, t_compl, compl_min, compl_scaled,
                 group_label, group_mark, group_pos, group_cost, group_compl, stamp):
    """The choices of the determinized state (``states``, residual costs ``resid``).

    Each member state's row ``t_off`` holds its *closed entries*, one per group (``t_group``: an
    (automaton, word), numbered in word order with the end first) of the entries of the states of
    its epsilon closure; an entry is one next word of a state (its arcs with that word) or its end.
    ``t_cost`` is the log-sum over the closed entry's epsilon paths and arcs (or exit), ``t_compl``
    the same with each arc's completion (plus the bound of its destination).  Summing closed
    entries instead of arcs makes an expansion cost the size of the subset's closure, not the
    number of its arcs (on pocketsphinx lattices every arc out of a state carries the state's
    word: ~27 arcs per entry); :func:`successor_subset` reads the arcs of a group's closed entries
    when the search takes it.

    Per group: the transition's cost (log-sum of residual + ``t_cost``) and the log-sum of its
    completions ``bound``; both are linear sums relative to one shift per expansion
    (``cost_min``/``compl_min``: each row's smallest value, ``*_scaled = exp(row min - value)``),
    and a group whose sum would underflow is recomputed in the log domain.

    Returns ``(order, bound, label, cost, ends, m_base, m_entry)``: the groups with a finite bound
    sorted by bound (ties by group number: word order, the end first) with their bounds, labels
    (-1: the end) and transition costs; the member offsets of every group (in group-number order)
    and per member its state's residual and its closed entry."""
    n_members = 0
    shift_c = INF
    shift_b = INF
    for i in range(len(states)):
        s = states[i]
        n_members += t_off[s + 1] - t_off[s]
        if resid[i] + cost_min[s] < shift_c:
            shift_c = resid[i] + cost_min[s]
        if resid[i] + compl_min[s] < shift_b:
            shift_b = resid[i] + compl_min[s]
    # groups: count the members of each
    groups = np.empty(n_members, np.int64)
    ng = 0
    for i in range(len(states)):
        s = states[i]
        for k in range(t_off[s], t_off[s + 1]):
            g = t_group[k]
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
        group_cost[groups[u]] = 0.0
        group_compl[groups[u]] = 0.0
    ends[ng] = start
    # members grouped (in member order within a group), with the linear sums
    m_base = np.empty(n_members, np.float64)
    m_entry = np.empty(n_members, np.int64)
    for i in range(len(states)):
        s = states[i]
        r = resid[i]
        if t_off[s] == t_off[s + 1]:
            continue
        fc = math.exp(shift_c - (r + cost_min[s])) if r + cost_min[s] < INF else 0.0
        fb = math.exp(shift_b - (r + compl_min[s])) if r + compl_min[s] < INF else 0.0
        for k in range(t_off[s], t_off[s + 1]):
            g = t_group[k]
            p = group_pos[g]
            group_pos[g] = p + 1
            m_base[p] = r
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
        else:  # far below the shift (or unreachable): the group's own shift, in the log domain
            cost[u] = _members_logsum(m_base, m_entry, ends[u], ends[u + 1], t_cost)
            bound[u] = _members_logsum(m_base, m_entry, ends[u], ends[u + 1], t_compl)
    order = np.argsort(bound, kind="mergesort")  # stable: ties by group number
    finite = 0
    while finite < ng and bound[order[finite]] < INF:
        finite += 1
    order = order[:finite]
    labels = np.empty(finite, np.int64)
    for i in range(finite):
        labels[i] = group_label[groups[order[i]]]
    return order, bound[order], labels, cost[order], ends, m_base, m_entry


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


def trie_viterbi(t_off, t_label, t_cost, t_entry, arc_off, arc_dst, arc_cost, arc_order, arc_id, exit_cost,
                 root_states, root_costs, label, parent, ch_off, children, end_of_node, num_seqs):
    """Best single path reading each sequence of a prefix trie (tropical): per trie node on the way
    to a sequence (in id order: a child is numbered after its parent), the cheapest way to reach
    each state after reading the node's prefix.  A child's states come from its parent's: each
    parent state's closed entries of the child's label (rows ``t_off``, sorted by ``t_label``: an
    entry of a state of its epsilon closure, with the cost ``t_cost`` of the best epsilon path
    there), each entry reached at its cheapest (the earliest parent state among equal costs), then
    its arcs (entry ``e``'s arcs are ``arc_off[e]:arc_off[e + 1]``), each read once.  Among equal
    costs a state keeps the candidate of the earliest parent state, then the earliest arc in
    ``arc_order`` (the automaton's arc order).

    ``end_of_node[v]``: the sequence ending at node ``v`` (-1: none); ``exit_cost``: each state's
    exit cost through its best epsilon path.  Returns ``(best_cost, best_link, link_arc,
    link_parent)``: per sequence its best cost and the last link of its path; per link the arc id
    (``arc_id``) and the previous link (-1 at the root)."""
    n_nodes = len(label)
    m = len(exit_cost)
    needed = end_of_node >= 0  # the nodes on the way to a sequence
    for v in range(n_nodes - 1, 0, -1):
        if needed[v]:
            needed[parent[v]] = True
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
    n_entries = len(arc_off) - 1
    entry_seen = np.full(n_entries, -1, np.int64)
    entry_cost = np.empty(n_entries, np.float64)
    entry_from = np.empty(n_entries, np.int64)
    entry_list = np.empty(n_entries, np.int64)
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
            if not needed[c]:
                continue
            ne = _entries_of_label(c, label[c], f_state, f_cost, lo, hi, t_off, t_label, t_cost, t_entry, entry_seen,
                                   entry_cost, entry_from, entry_list)
            nt = _relax_entries(c, ne, entry_list, entry_cost, entry_from, arc_off, arc_dst, arc_cost, arc_order, seen,
                                cell_cost, cell_arc, cell_from, touched)
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
                link_arc[n_links] = arc_id[cell_arc[d]]
                link_parent[n_links] = f_link[cell_from[d]]
                n_links += 1
                used += 1
            f_hi[c] = used
    return best_cost, best_link, link_arc[:n_links], link_parent[:n_links]


def _entries_of_label(c, lab, f_state, f_cost, lo, hi, t_off, t_label, t_cost, t_entry, entry_seen, entry_cost,
                      entry_from, entry_list):
    """:func:`trie_viterbi`'s closed entries of label ``lab`` from the parent's states ``lo:hi``, each
    with its cheapest way in (``entry_cost``; ``entry_from``: the parent state, the earliest among
    equal costs), listed in ``entry_list``; returns how many (``entry_seen`` marks them with the
    child ``c``)."""
    ne = 0
    for i in range(lo, hi):
        g = f_cost[i]
        a, b = t_off[f_state[i]], t_off[f_state[i] + 1]
        while a < b:  # the row's first closed entry with label >= lab
            mid = (a + b) >> 1
            if t_label[mid] < lab:
                a = mid + 1
            else:
                b = mid
        ct = a
        while ct < t_off[f_state[i] + 1] and t_label[ct] == lab:
            x = g + t_cost[ct]
            e = t_entry[ct]
            ct += 1
            if entry_seen[e] != c:
                entry_seen[e] = c
                entry_cost[e] = x
                entry_from[e] = i
                entry_list[ne] = e
                ne += 1
            elif x < entry_cost[e]:  # parent states come in increasing order: the earliest wins ties
                entry_cost[e] = x
                entry_from[e] = i
    return ne


def _relax_entries(c, ne, entry_list, entry_cost, entry_from, arc_off, arc_dst, arc_cost, arc_order, seen, cell_cost,
                   cell_arc, cell_from, touched):
    """:func:`trie_viterbi`'s arcs of the ``ne`` entries, each read once: per destination the cheapest
    candidate (ties: the earliest parent state, then the earliest arc in ``arc_order``); returns how
    many destinations, listed in ``touched`` (``seen`` marks them with the child ``c``)."""
    nt = 0
    for j in range(ne):
        e = entry_list[j]
        x = entry_cost[e]
        i = entry_from[e]
        for k in range(arc_off[e], arc_off[e + 1]):
            d = arc_dst[k]
            v = x + arc_cost[k]
            if seen[d] != c:
                seen[d] = c
                cell_cost[d] = v
                cell_arc[d] = k
                cell_from[d] = i
                touched[nt] = d
                nt += 1
            elif v < cell_cost[d] or (v == cell_cost[d] and (i < cell_from[d] or (
                    i == cell_from[d] and arc_order[k] < arc_order[cell_arc[d]]))):
                cell_cost[d] = v
                cell_arc[d] = k
                cell_from[d] = i
    return nt


def closed_exits(exit_cost, eps_off, eps_dst, eps_cost):
    """Each state's exit cost through its best epsilon path (``min(exit, eps cost + closed exit of
    the destination)``, states topologically numbered, epsilon arcs ``eps_off`` by source)."""
    out = exit_cost.copy()
    for s in range(len(out) - 1, -1, -1):
        for k in range(eps_off[s], eps_off[s + 1]):
            v = eps_cost[k] + out[eps_dst[k]]
            if v < out[s]:
                out[s] = v
    return out


def _grown_int(a, used, cap):
    out = np.empty(cap, np.int64)
    out[:used] = a[:used]
    return out


def successor_subset(m_resid, m_closed, ends, group, c_off, c_base, c_entry, arc_off, e_cost, arc_dst, arc_cost,
                     arc_scaled, mark, acc, acc_min, entry_mark, entry_weight, entries, stamp, resolution):
    """The subset reached by one choice of an expansion, its ``group``: the destinations of the arcs
    of the group's members ``ends[group]:ends[group + 1]`` (residual ``m_resid[p]``; closed entry ``m_closed[p]``, whose parts
    ``c_off[k]:c_off[k + 1]`` are an entry ``c_entry`` reached through epsilon paths of log-sum cost
    ``c_base``; entry ``e``'s arcs are ``arc_off[e]:arc_off[e + 1]``, with ``arc_scaled =
    exp(e_cost[e] - arc_cost)``), each with its share of the choice's probability.  The parts
    reaching the same entry (its state is in the epsilon closure of several states of the subset)
    are summed first, so each entry's arcs are read once.  Returns the states in increasing order,
    their residual costs ``-log(share)`` and those rounded to ``resolution`` (its interning key, as
    :meth:`~lattice_tools.alternatives._determinizer.Determinizer.intern` rounds).
    ``mark``/``acc``/``acc_min``: scratch per state, ``entry_mark``/``entry_weight``/``entries`` per
    entry (the marks hold ``stamp`` for what was seen in this call)."""
    a, b = ends[group], ends[group + 1]
    shift = INF
    for p in range(a, b):
        for j in range(c_off[m_closed[p]], c_off[m_closed[p] + 1]):
            x = m_resid[p] + c_base[j] + e_cost[c_entry[j]]
            if x < shift:
                shift = x
    ne = 0
    n = 0
    for p in range(a, b):
        for j in range(c_off[m_closed[p]], c_off[m_closed[p] + 1]):
            k = c_entry[j]
            if entry_mark[k] != stamp:
                entry_mark[k] = stamp
                entry_weight[k] = 0.0
                entries[ne] = k
                ne += 1
                n += arc_off[k + 1] - arc_off[k]
            if shift < INF:
                entry_weight[k] += math.exp(shift - (m_resid[p] + c_base[j] + e_cost[k]))
    touched = np.empty(n, np.int64)
    nt = 0
    for i in range(ne):
        k = entries[i]
        f = entry_weight[k]
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
    if not exact:
        for i in range(nt):
            r = -math.log(acc[states[i]] / total)
            resid[i] = r
            rounded[i] = np.int64(np.rint(r / resolution))
        return states, resid, rounded
    # shares far below the largest one: each state's own shift, in the log domain
    for v in states:
        acc_min[v] = INF
        acc[v] = 0.0
    for rep in range(2):  # the smallest cost reaching each state, then the sum relative to it
        for p in range(a, b):
            for j in range(c_off[m_closed[p]], c_off[m_closed[p] + 1]):
                k = c_entry[j]
                for q in range(arc_off[k], arc_off[k + 1]):
                    v = arc_dst[q]
                    x = m_resid[p] + c_base[j] + arc_cost[q]
                    if rep == 0:
                        if x < acc_min[v]:
                            acc_min[v] = x
                    elif acc_min[v] < INF:
                        acc[v] += math.exp(acc_min[v] - x)
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
