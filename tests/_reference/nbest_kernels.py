"""The region search of the exact N-best lists as plain Python: the oracle of tests/test_nbest_native.py
for the compiled ``bounded_search`` of lattice_tools/_ext/nbest/region_search.c.  Slow (small inputs
only); the C code does the same operations in the same order.

* :func:`bounded_search` -- A* over log-determinized states builds the region that can hold the
  ``n`` best sequences, the exact best completion is computed inside it, and a best-first search
  over word prefixes ranks the sequences (the region grows when that search leaves it).

Determinized states are interned by their states and their residual costs rounded to
``resolution``.  Every reduction is a log sum ``m - log(sum(exp(m - x)))`` around the segment's
minimum ``m``, summed in a fixed order, so results are deterministic.
"""
from __future__ import annotations

import math

import numpy as np

from .nbest_closed_rows import _grow, _grow_b, _log_add, _log_sum

INF = math.inf

#: status codes of :func:`bounded_search`
OK, TOO_MANY_POPS, TOO_MANY_STATES, TOO_MANY_MEMBERS = 0, 1, 2, 3


def _heap_push(heap, size, key, e):
    """Push entry ``e`` on a binary heap of entry ids ordered by ``(key[e], e)`` (an older entry
    goes first among equal keys)."""
    heap = _grow(heap, size + 1)
    i = size
    ke = key[e]
    while i > 0:
        p = (i - 1) >> 1
        q = heap[p]
        if key[q] < ke or (key[q] == ke and q < e):
            break
        heap[i] = q
        i = p
    heap[i] = e
    return heap, size + 1


def _heap_pop(heap, size, key):
    top = heap[0]
    size -= 1
    if size == 0:
        return top, size
    e = heap[size]
    ke = key[e]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        q = heap[c]
        if c + 1 < size:
            r = heap[c + 1]
            if key[r] < key[q] or (key[r] == key[q] and r < q):
                c, q = c + 1, r
        if ke < key[q] or (ke == key[q] and e < q):
            break
        heap[i] = q
        i = c
    heap[i] = e
    return top, size


_MASK = (1 << 61) - 1


def _subset_hash(states, rkeys, lo, hi):
    h = 1469598103934665603 & _MASK
    for k in range(lo, hi):
        h = (h * 1000003 + int(states[k])) & _MASK  # (Python ints: masked to 64 bits as C wraps)
        h = (h * 1000003 + int(rkeys[k])) & _MASK
    return h


def _rehash(table, ds_off, ds_state, ds_rkey, nds):
    """The table of ids twice as large."""
    size = 2 * len(table)
    new = np.full(size, -1, np.int64)
    for j in range(nds):
        i = _subset_hash(ds_state, ds_rkey, ds_off[j], ds_off[j + 1]) & (size - 1)
        while new[i] >= 0:
            i = (i + 1) & (size - 1)
        new[i] = j
    return new


def _reduce_pairs(e_lab, e_dst, e_v, ne, lab_cnt, lab_fill, dslot, b_dst, b_v, p_val, p_dst, p_min, g_lab, g_lo,
                  g_hi):
    """Reduce the gathered entries ``(label, destination, cost)`` by log sum per pair, pairs grouped
    by label in increasing order and by destination inside a label (a counting sort by label, a
    slot table by destination: no comparison sort of the entries).  Each pair sums its entries in
    gather order.  Writes the pairs (``p_val``, ``p_dst``) and the label groups (``g_lab``, pair
    range ``g_lo:g_hi``); returns ``(number of pairs, number of groups)``.  ``lab_cnt``,
    ``lab_fill`` (zero) and ``dslot`` (-1) are scratch tables, left as found."""
    ng = 0
    for i in range(ne):
        w = e_lab[i]
        if lab_cnt[w] == 0:
            g_lab[ng] = w
            ng += 1
        lab_cnt[w] += 1
    g_lab[:ng].sort()
    pos = 0
    for gi in range(ng):
        w = g_lab[gi]
        lab_fill[w] = pos
        g_lo[gi] = pos  # entry range for now
        pos += lab_cnt[w]
        lab_cnt[w] = 0
    for i in range(ne):  # stable scatter: a label's entries in gather order
        w = e_lab[i]
        k = lab_fill[w]
        b_dst[k] = e_dst[i]
        b_v[k] = e_v[i]
        lab_fill[w] = k + 1
    np_ = 0
    for gi in range(ng):
        w = g_lab[gi]
        lo = g_lo[gi]
        hi = lab_fill[w]
        lab_fill[w] = 0
        first = np_
        for k in range(lo, hi):  # pairs in first-seen order, each with its minimum
            d = b_dst[k]
            q = dslot[d]
            if q < 0:
                dslot[d] = np_
                p_dst[np_] = d
                p_min[np_] = b_v[k]
                p_val[np_] = 0.0
                np_ += 1
            elif b_v[k] < p_min[q]:
                p_min[q] = b_v[k]
        for k in range(lo, hi):
            q = dslot[b_dst[k]]
            dv = p_min[q] - b_v[k]
            p_val[q] += 1.0 if dv == 0.0 else math.exp(dv)
        for q in range(first, np_):
            dslot[p_dst[q]] = -1
            p_val[q] = p_min[q] - math.log(p_val[q])
        # destinations in increasing order (the interned subset's order): an insertion sort, since
        # a label has few destinations and one argsort per label costs more in allocations
        for q in range(first + 1, np_):
            d = p_dst[q]
            v = p_val[q]
            r = q - 1
            while r >= first and p_dst[r] > d:
                p_dst[r + 1] = p_dst[r]
                p_val[r + 1] = p_val[r]
                r -= 1
            p_dst[r + 1] = d
            p_val[r + 1] = v
        g_lo[gi] = first
        g_hi[gi] = np_
    return np_, ng


def _new_store():
    """An empty determinized-state store holding the start state ``{0: 0}``.

    Members of state ``j``: ``state[off[j]:off[j + 1]]`` (ascending) with residual costs ``resid``
    and their rounded keys ``rkey``; ``table``: open-addressing table of ids (-1 = empty) on a hash
    of (states, rounded keys).  Choices of an expanded state ``j``: ``ch_lo[j] .. ch_lo[j] +
    ch_n[j]`` (``ch_n = -1``: not expanded), in label order, the end (label -1) first: the bound of
    all completions through it, dense label, cost of the transition (of ending, for the end) and
    successor id."""
    off = np.zeros(1024, np.int64)
    state = np.zeros(4096, np.int64)
    resid = np.zeros(4096, np.float64)
    rkey = np.zeros(4096, np.int64)
    table = np.full(1024, -1, np.int64)
    off[1] = 1
    table[_subset_hash(state, rkey, 0, 1) & (len(table) - 1)] = 0
    ch_lo = np.full(1024, -1, np.int64)
    ch_n = np.full(1024, -1, np.int64)
    return (off, state, resid, rkey, table, ch_lo, ch_n, np.empty(4096, np.float64), np.empty(4096, np.int64),
            np.empty(4096, np.float64), np.empty(4096, np.int64))


def _intern(off, state, resid, rkey, table, nds, p_dst, p_val, a, b, wsum, resolution):
    """Id of the determinized state ``{p_dst[q]: p_val[q] - wsum}`` for ``q`` in ``a:b``: an
    existing one, or ``nds`` after writing it as state ``nds`` (the caller counts it).  The
    arrays must have room for it (the table: at most half full after it)."""
    base = off[nds]
    need = base + b - a
    for q in range(a, b):
        rr = p_val[q] - wsum
        state[base + q - a] = p_dst[q]
        resid[base + q - a] = rr
        rkey[base + q - a] = np.int64(np.rint(rr / resolution))
    size = len(table)
    slot = _subset_hash(state, rkey, base, need) & (size - 1)
    while table[slot] >= 0:
        c = table[slot]
        c0 = off[c]
        if off[c + 1] - c0 == b - a:
            same = True
            for q in range(b - a):
                if state[c0 + q] != state[base + q] or rkey[c0 + q] != rkey[base + q]:
                    same = False
                    break
            if same:
                return c
        slot = (slot + 1) & (size - 1)
    table[slot] = nds
    off[nds + 1] = need
    return nds


def _new_scratch(m, num_labels):
    """Expansion buffers: gathered entries (label, destination, cost), their label buckets, pairs
    and label groups, and the label/destination tables of :func:`_reduce_pairs`."""
    e = np.empty(1024, np.int64)
    f = np.empty(1024, np.float64)
    return (e, e.copy(), f, e.copy(), f.copy(), f.copy(), e.copy(), f.copy(), e.copy(), e.copy(), e.copy(), f.copy(),
            f.copy(), np.zeros(num_labels + 1, np.int64), np.zeros(num_labels + 1, np.int64), np.full(m, -1, np.int64))


def _expand(j, st, nds, n_ch, scr, m, w_off, w_dlab, w_dst, w_lc, x_lc, hb, resolution):
    """Expand determinized state ``j``: gather the closed rows of its members, reduce them per
    (label, destination) and per label, and record its choices (successors interned).  Returns
    ``(nds, n_ch, store, scratch)``."""
    off, state, resid = st[0], st[1], st[2]
    e_lab, e_dst, e_v, b_dst, b_v, p_val, p_dst, p_tmp, g_lab, g_lo, g_hi, g_sum, g_bound, lab_cnt, lab_fill, \
        dslot = scr
    lo, hi = off[j], off[j + 1]
    total = 0
    for k in range(lo, hi):
        total += w_off[state[k] + 1] - w_off[state[k]]
    e_lab, e_dst, b_dst, p_dst, g_lab, g_lo, g_hi = (_grow(e_lab, total + 1), _grow(e_dst, total + 1),
                                                     _grow(b_dst, total + 1), _grow(p_dst, total + 1),
                                                     _grow(g_lab, total + 1), _grow(g_lo, total + 1),
                                                     _grow(g_hi, total + 1))
    e_v, b_v, p_val, p_tmp, g_sum, g_bound = (_grow(e_v, total + 1), _grow(b_v, total + 1),
                                              _grow(p_val, total + 1), _grow(p_tmp, total + 1),
                                              _grow(g_sum, total + 1), _grow(g_bound, total + 1))
    scr = (e_lab, e_dst, e_v, b_dst, b_v, p_val, p_dst, p_tmp, g_lab, g_lo, g_hi, g_sum, g_bound, lab_cnt, lab_fill,
           dslot)
    ne = 0
    end = INF
    for k in range(lo, hi):
        s = state[k]
        r = resid[k]
        xv = r + x_lc[s]
        if xv < INF:
            end = _log_add(end, xv)
        for q in range(w_off[s], w_off[s + 1]):
            v = r + w_lc[q]
            if v < INF:
                e_lab[ne] = w_dlab[q]
                e_dst[ne] = w_dst[q]
                e_v[ne] = v
                ne += 1
    _np, ng = _reduce_pairs(e_lab, e_dst, e_v, ne, lab_cnt, lab_fill, dslot, b_dst, b_v, p_val, p_dst, p_tmp, g_lab,
                            g_lo, g_hi)
    nc = 1 if end < INF else 0
    for gi in range(ng):
        a, b = g_lo[gi], g_hi[gi]
        g_sum[gi] = _log_sum(p_val, a, b)
        for q in range(a, b):
            p_tmp[q - a] = p_val[q] + hb[p_dst[q]]
        g_bound[gi] = _log_sum(p_tmp, 0, b - a)
        if g_bound[gi] < INF:
            nc += 1
    ch_lo, ch_n = st[5], st[6]
    ch_bound, ch_lab, ch_cost, ch_next = (_grow(st[7], n_ch + nc), _grow(st[8], n_ch + nc),
                                          _grow(st[9], n_ch + nc), _grow(st[10], n_ch + nc))
    st = (st[0], st[1], st[2], st[3], st[4], ch_lo, ch_n, ch_bound, ch_lab, ch_cost, ch_next)
    ch_lo[j] = n_ch
    ch_n[j] = nc
    if end < INF:
        ch_bound[n_ch] = end
        ch_lab[n_ch] = -1
        ch_cost[n_ch] = end
        ch_next[n_ch] = -1
        n_ch += 1
    # room for every successor, so that interning writes in place
    off, state, resid, rkey, table = st[0], st[1], st[2], st[3], st[4]
    k_new = nc + 1
    off, ch_lo, ch_n = _grow(off, nds + k_new + 1), _grow(ch_lo, nds + k_new), _grow(ch_n, nds + k_new)
    state, resid, rkey = (_grow(state, off[nds] + _np + 1), _grow(resid, off[nds] + _np + 1),
                          _grow(rkey, off[nds] + _np + 1))
    while 2 * (nds + k_new) > len(table):  # (sizes stay powers of 2)
        table = _rehash(table, off, state, rkey, nds)
    st = (off, state, resid, rkey, table, ch_lo, ch_n, ch_bound, ch_lab, ch_cost, ch_next)
    for gi in range(ng):
        if g_bound[gi] < INF:
            nj = _intern(off, state, resid, rkey, table, nds, p_dst, p_val, g_lo[gi], g_hi[gi], g_sum[gi], resolution)
            if nj == nds:
                ch_lo[nj] = -1
                ch_n[nj] = -1
                nds += 1
            ch_bound[n_ch] = g_bound[gi]
            ch_lab[n_ch] = g_lab[gi]
            ch_cost[n_ch] = g_sum[gi]
            ch_next[n_ch] = nj
            n_ch += 1
    return nds, n_ch, st, scr


def _exact_completions(st, n_ch, nds, reg, round_no, stamp, best, ex_key, ex_perm):
    """Each region state's exact best completion ``best`` (depth-first post-order from the start;
    a successor outside the region counts with its bound) and its choices ranked by that exact
    key (``ex_key``; ``ex_perm``: the ranked choice indices, ties in label order, the end first).
    ``stamp`` marks the states visited in this ``round_no``."""
    ch_lo, ch_n, ch_bound, ch_cost, ch_next = st[5], st[6], st[7], st[9], st[10]
    st_j = np.zeros(1024, np.int64)
    st_r = np.zeros(1024, np.int64)
    sp = 0
    stamp[0] = round_no
    while sp >= 0:
        j = st_j[sp]
        r = st_r[sp]
        c0 = ch_lo[j]
        pushed = False
        while r < ch_n[j]:
            nj = ch_next[c0 + r]
            r += 1
            if nj >= 0 and reg[nj] and stamp[nj] != round_no:
                stamp[nj] = round_no
                st_r[sp] = r
                sp += 1
                st_j = _grow(st_j, sp + 1)
                st_r = _grow(st_r, sp + 1)
                st_j[sp] = nj
                st_r[sp] = 0
                pushed = True
                break
        if pushed:
            continue
        cn = ch_n[j]
        bj = INF
        for c in range(c0, c0 + cn):
            nj = ch_next[c]
            if nj < 0:
                ex_key[c] = ch_cost[c]
            elif reg[nj]:
                ex_key[c] = ch_cost[c] + best[nj]
            else:
                ex_key[c] = ch_bound[c]
            if ex_key[c] < bj:
                bj = ex_key[c]
        best[j] = bj
        perm = np.argsort(ex_key[c0:c0 + cn], kind="mergesort")
        for q in range(cn):
            ex_perm[c0 + q] = c0 + perm[q]
        sp -= 1


def _rank_prefixes(st, reg, ex_key, ex_perm, n, max_pops):
    """Best-first search over word prefixes with the exact keys: a heap entry is "choice ``r`` of
    state ``j`` after prefix cost ``g``"; popping it pushes choice ``r + 1`` and the first choice
    of the successor.  Returns ``(status, outside, found links, found costs, trie parents, trie
    labels)``; ``outside >= 0``: the search needs that state, which is outside the region."""
    ch_lo, ch_n, ch_lab, ch_cost, ch_next = st[5], st[6], st[8], st[9], st[10]
    p_f, p_g = np.empty(1024, np.float64), np.empty(1024, np.float64)
    p_j, p_r, p_link, p_heap = (np.empty(1024, np.int64), np.empty(1024, np.int64), np.empty(1024, np.int64),
                                np.empty(1024, np.int64))
    t_parent, t_label = np.full(1024, -1, np.int64), np.full(1024, -1, np.int64)
    f_link, f_cost = np.empty(16, np.int64), np.empty(16, np.float64)
    n_p = p_size = n_found = pops = 0
    n_trie = 1
    if ch_n[0] > 0:
        p_f[0] = ex_key[ex_perm[ch_lo[0]]]
        p_j[0] = p_r[0] = p_link[0] = 0
        p_g[0] = 0.0
        n_p = 1
        p_heap, p_size = _heap_push(p_heap, p_size, p_f, 0)
    while p_size > 0:
        e, p_size = _heap_pop(p_heap, p_size, p_f)
        pops += 1
        if pops > max_pops:
            return TOO_MANY_POPS, -1, f_link[:n_found], f_cost[:n_found], t_parent[:n_trie], t_label[:n_trie]
        j, r, g, link = p_j[e], p_r[e], p_g[e], p_link[e]
        c0 = ch_lo[j]
        if r + 1 < ch_n[j]:
            p_f, p_j, p_r, p_g, p_link = _grow5(p_f, p_j, p_r, p_g, p_link, n_p + 1)
            p_f[n_p], p_j[n_p], p_r[n_p], p_g[n_p], p_link[n_p] = g + ex_key[ex_perm[c0 + r + 1]], j, r + 1, g, link
            p_heap, p_size = _heap_push(p_heap, p_size, p_f, n_p)
            n_p += 1
        c = ex_perm[c0 + r]
        nj = ch_next[c]
        if nj < 0:
            f_link, f_cost = _grow(f_link, n_found + 1), _grow(f_cost, n_found + 1)
            f_link[n_found] = link
            f_cost[n_found] = g + ch_cost[c]
            n_found += 1
            if 0 <= n <= n_found:
                break
            continue
        if not reg[nj]:
            return OK, nj, f_link[:0], f_cost[:0], t_parent[:0], t_label[:0]
        if ch_n[nj] > 0:
            gc = g + ch_cost[c]
            t_parent, t_label = _grow(t_parent, n_trie + 1), _grow(t_label, n_trie + 1)
            t_parent[n_trie] = link
            t_label[n_trie] = ch_lab[c]
            p_f, p_j, p_r, p_g, p_link = _grow5(p_f, p_j, p_r, p_g, p_link, n_p + 1)
            p_f[n_p], p_j[n_p], p_r[n_p], p_g[n_p], p_link[n_p] = gc + ex_key[ex_perm[ch_lo[nj]]], nj, 0, gc, n_trie
            p_heap, p_size = _heap_push(p_heap, p_size, p_f, n_p)
            n_p += 1
            n_trie += 1
    return OK, -1, f_link[:n_found], f_cost[:n_found], t_parent[:n_trie], t_label[:n_trie]


def bounded_search(m, w_off, w_dlab, w_dst, w_lc, x_lc, hb, num_labels, n, max_pops, max_states, max_members, margin,
                   resolution):
    """The ``n`` best sequences (``n < 0``: all) by exact total cost; see the module docstring.

    ``hb``: per state an admissible consistent bound on the best completion (``max(h, beta)``).
    Returns ``(status, found_link, found_cost, t_parent, t_label)``: the trie of word prefixes
    (node 0 the empty prefix; labels dense) and, per output sequence in order, its trie node and
    cost."""
    st = _new_store()
    scr = _new_scratch(m, num_labels)
    nds, n_ch = 1, 0
    # A* over determinized states: entries (f, g, state; -1 = an end), heap ordered by (f, entry)
    a_f, a_g, a_j, a_heap = np.zeros(1024), np.zeros(1024), np.zeros(1024, np.int64), np.empty(1024, np.int64)
    n_a, a_size = 1, 0
    a_heap, a_size = _heap_push(a_heap, a_size, a_f, 0)
    reg = np.zeros(1024, np.bool_)
    n_reg = 0
    has_thr = n < 0
    thr = INF
    stamp = np.zeros(1024, np.int64)
    best, ex_key, ex_perm = np.empty(1024), np.empty(4096), np.empty(4096, np.int64)
    empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0)
    round_no = 0
    while True:
        # 1. grow the region: every state with g + bound <= thr, each at its cheapest prefix cost
        while a_size > 0 and not (has_thr and a_f[a_heap[0]] > thr):
            e, a_size = _heap_pop(a_heap, a_size, a_f)
            j = a_j[e]
            if j < 0:
                if not has_thr:  # the first end popped is the best sequence (consistent bound)
                    has_thr = True
                    thr = a_f[e] + margin
                continue
            if reg[j]:
                continue
            reg[j] = True
            g = a_g[e]
            n_reg += 1
            if n_reg > max_states:
                return TOO_MANY_STATES, empty_i, empty_f, empty_i, empty_i
            if st[6][j] < 0:
                nds, n_ch, st, scr = _expand(j, st, nds, n_ch, scr, m, w_off, w_dlab, w_dst, w_lc, x_lc, hb,
                                             resolution)
                if st[0][nds] > max_members:
                    return TOO_MANY_MEMBERS, empty_i, empty_f, empty_i, empty_i
                reg = _grow_b(reg, nds)
            ch_lo, ch_n, ch_bound, ch_cost, ch_next = st[5], st[6], st[7], st[9], st[10]
            for c in range(ch_lo[j], ch_lo[j] + ch_n[j]):
                nj = ch_next[c]
                if nj >= 0 and reg[nj]:
                    continue
                a_f, a_g, a_j = _grow(a_f, n_a + 1), _grow(a_g, n_a + 1), _grow(a_j, n_a + 1)
                a_f[n_a] = g + (ch_cost[c] if nj < 0 else ch_bound[c])
                a_g[n_a] = g + ch_cost[c]
                a_j[n_a] = nj
                a_heap, a_size = _heap_push(a_heap, a_size, a_f, n_a)
                n_a += 1
        if not has_thr:
            return OK, empty_i, empty_f, empty_i, empty_i  # no end reachable
        # 2. exact best completions inside the region
        round_no += 1
        stamp, best = _grow_b(stamp, nds), _grow(best, nds)
        ex_key, ex_perm = _grow(ex_key, n_ch), _grow(ex_perm, n_ch)
        _exact_completions(st, n_ch, nds, reg, round_no, stamp, best, ex_key, ex_perm)
        # 3. best-first over word prefixes with the exact bound
        status, outside, f_link, f_cost, t_parent, t_label = _rank_prefixes(st, reg, ex_key, ex_perm, n, max_pops)
        if outside < 0:
            return status, f_link, f_cost, t_parent, t_label
        # the prefix search needs a state outside the region: grow it past that state's bound
        need_f = INF
        for q in range(a_size):
            e = a_heap[q]
            if a_j[e] == outside and a_f[e] < need_f:
                need_f = a_f[e]
        margin *= 2.0
        thr = max(thr + margin, (need_f if need_f < INF else thr) + margin)


def _grow5(f, j, r, g, link, need):
    return _grow(f, need), _grow(j, need), _grow(r, need), _grow(g, need), _grow(link, need)
