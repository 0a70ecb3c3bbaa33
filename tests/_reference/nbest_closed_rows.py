"""The closed rows, bounds and best paths of the exact N-best search as plain Python: the oracle of
tests/test_nbest_native.py for the compiled ``closed_rows``, ``best_word_bound``, ``suffix_list_bound``
and ``best_paths`` of lattice_tools/_ext/nbest/.  The same operations as the C code in plain
Python (slow: small inputs only).

* :func:`closed_rows` -- every state's word arcs reachable through epsilon paths (log sum and
  minimum of the path costs) and its closed exit weight;
* :func:`best_word_bound` -- the admissible, consistent best-completion bound per state;
* :func:`best_paths` -- the best single path reading each output sequence (for word times);

and the small array helpers the search kernels share.
"""
from __future__ import annotations

import math

import numpy as np

INF = math.inf


def _grow(a, need):
    """``a``, or a copy with room for ``need`` entries (at least doubled)."""
    if need <= len(a):
        return a
    b = np.empty(max(2 * len(a), need), a.dtype)
    b[:len(a)] = a
    return b


def _log_sum(x, lo, hi):
    """``-log(sum(exp(-x[lo:hi])))`` (INF for an empty or all-INF segment)."""
    m = INF
    for k in range(lo, hi):
        if x[k] < m:
            m = x[k]
    if m == INF:
        return INF
    s = 0.0
    for k in range(lo, hi):
        s += math.exp(m - x[k])
    return m - math.log(s)


def closed_rows(m, src, dst, lab, cost, final):
    """Per state ``s`` its *closed row*: the word arcs reachable from ``s`` through epsilon paths
    (epsilon arcs: ``lab == 0``), sorted by arc id, each with the log sum (``w_lc``) and the
    minimum (``w_bc``) of ``epsilon path + arc`` costs; and the closed exit costs ``x_lc``/``x_bc``
    (``final`` reached through epsilon paths).  States are topologically numbered (``src < dst``)
    and ``src`` is sorted.  Returns ``(w_off, w_arc, w_lc, w_bc, x_lc, x_bc)``."""
    n_arcs = len(src)
    off = np.searchsorted(src, np.arange(m + 1))
    row_lo = np.zeros(m, np.int64)
    row_len = np.zeros(m, np.int64)
    cap = max(2 * n_arcs, 16)
    r_arc = np.empty(cap, np.int64)
    r_lc = np.empty(cap, np.float64)
    r_bc = np.empty(cap, np.float64)
    used = 0
    x_lc = final.copy()
    x_bc = final.copy()
    slot = np.full(n_arcs, -1, np.int64)
    t_arc = np.empty(16, np.int64)
    t_lc = np.empty(16, np.float64)
    t_bc = np.empty(16, np.float64)
    for s in range(m - 1, -1, -1):
        nt = 0
        # the state's own word arcs, then each epsilon successor's row (its arc's cost added);
        # a word arc met again is reduced into its first entry
        for a in range(off[s], off[s + 1]):
            if lab[a] != 0:
                t_arc = _grow(t_arc, nt + 1)
                t_lc = _grow(t_lc, nt + 1)
                t_bc = _grow(t_bc, nt + 1)
                slot[a] = nt
                t_arc[nt] = a
                t_lc[nt] = cost[a]
                t_bc[nt] = cost[a]
                nt += 1
        for a in range(off[s], off[s + 1]):
            if lab[a] != 0:
                continue
            d = dst[a]
            c = cost[a]
            xl = c + x_lc[d]
            if xl < INF:
                x_lc[s] = _log_add(x_lc[s], xl)
            xb = c + x_bc[d]
            if xb < x_bc[s]:
                x_bc[s] = xb
            lo = row_lo[d]
            for k in range(lo, lo + row_len[d]):
                w = r_arc[k]
                vl = r_lc[k] + c
                vb = r_bc[k] + c
                j = slot[w]
                if j < 0:
                    t_arc = _grow(t_arc, nt + 1)
                    t_lc = _grow(t_lc, nt + 1)
                    t_bc = _grow(t_bc, nt + 1)
                    slot[w] = nt
                    t_arc[nt] = w
                    t_lc[nt] = vl
                    t_bc[nt] = vb
                    nt += 1
                else:
                    t_lc[j] = _log_add(t_lc[j], vl)
                    if vb < t_bc[j]:
                        t_bc[j] = vb
        order = np.argsort(t_arc[:nt])
        r_arc = _grow(r_arc, used + nt)
        r_lc = _grow(r_lc, used + nt)
        r_bc = _grow(r_bc, used + nt)
        for k in range(nt):
            j = order[k]
            r_arc[used + k] = t_arc[j]
            r_lc[used + k] = t_lc[j]
            r_bc[used + k] = t_bc[j]
            slot[t_arc[j]] = -1
        row_lo[s] = used
        row_len[s] = nt
        used += nt
    w_off = np.zeros(m + 1, np.int64)
    for s in range(m):
        w_off[s + 1] = w_off[s] + row_len[s]
    w_arc = np.empty(used, np.int64)
    w_lc = np.empty(used, np.float64)
    w_bc = np.empty(used, np.float64)
    for s in range(m):
        lo = row_lo[s]
        for k in range(row_len[s]):
            w_arc[w_off[s] + k] = r_arc[lo + k]
            w_lc[w_off[s] + k] = r_lc[lo + k]
            w_bc[w_off[s] + k] = r_bc[lo + k]
    return w_off, w_arc, w_lc, w_bc, x_lc, x_bc


def _log_add(a, b):
    """``-log(exp(-a) + exp(-b))`` for costs."""
    if a > b:
        a, b = b, a
    if b == INF:
        return a
    return a - math.log1p(math.exp(a - b))


def best_word_bound(m, w_off, w_lab, w_dst, w_lc, x_lc, num_labels):
    """``h[s] = min(exit(s), min_w (+)_{closed arcs of s with label w} (cost + h[dst]))`` in reverse
    topological order (see :func:`.nbest_lists.best_word_bound`)."""
    h = x_lc.copy()
    acc = np.full(num_labels, INF)
    touched = np.empty(num_labels, np.int64)
    for s in range(m - 1, -1, -1):
        nt = 0
        for k in range(w_off[s], w_off[s + 1]):
            v = w_lc[k] + h[w_dst[k]]
            if not v < INF:
                continue
            w = w_lab[k]
            if acc[w] == INF:
                touched[nt] = w
                nt += 1
                acc[w] = v
            else:
                acc[w] = _log_add(acc[w], v)
        for i in range(nt):
            w = touched[i]
            if acc[w] < h[s]:
                h[s] = acc[w]
            acc[w] = INF
    return h


def _grow_b(a, need):
    if need <= len(a):
        return a
    b = np.zeros(max(2 * len(a), need), a.dtype)
    b[:len(a)] = a
    return b


def best_paths(w_off, w_dlab, w_dst, w_bc, w_arc, x_bc, seq_off, seq_lab, m):
    """Best single path reading each sequence ``seq_lab[seq_off[i]:seq_off[i + 1]]`` (dense labels)
    from state 0: a tropical Viterbi pass over the closed rows, states in increasing order and each
    row in arc order, the first candidate kept among equal costs.  Returns ``(cost, arcs)``: per
    sequence its best cost (INF: none) and its word arcs (``len`` per sequence; -1 when none)."""
    n_seq = len(seq_off) - 1
    cost = np.full(n_seq, INF)
    arcs = np.full(seq_off[n_seq], -1, np.int64)
    best_v = np.full(m, INF)
    best_from = np.full(m, -1, np.int64)
    best_k = np.full(m, -1, np.int64)
    cur = np.empty(16, np.int64)
    cur_v = np.empty(16, np.float64)
    cur_link = np.empty(16, np.int64)
    nxt = np.empty(16, np.int64)
    l_arc = np.empty(1024, np.int64)
    l_parent = np.empty(1024, np.int64)
    for i in range(n_seq):
        cur[0] = 0
        cur_v[0] = 0.0
        cur_link[0] = -1
        n_cur = 1
        n_links = 0
        for p in range(seq_off[i], seq_off[i + 1]):
            lab_ = seq_lab[p]
            n_nxt = 0
            for ci in range(n_cur):
                s = cur[ci]
                for k in range(w_off[s], w_off[s + 1]):
                    if w_dlab[k] != lab_:
                        continue
                    d = w_dst[k]
                    v = cur_v[ci] + w_bc[k]
                    if best_from[d] < 0:
                        nxt = _grow(nxt, n_nxt + 1)
                        nxt[n_nxt] = d
                        n_nxt += 1
                        best_v[d] = v
                        best_from[d] = ci
                        best_k[d] = k
                    elif v < best_v[d]:
                        best_v[d] = v
                        best_from[d] = ci
                        best_k[d] = k
            nxt[:n_nxt].sort()
            l_arc = _grow(l_arc, n_links + n_nxt)
            l_parent = _grow(l_parent, n_links + n_nxt)
            new_v = np.empty(n_nxt, np.float64)
            new_link = np.empty(n_nxt, np.int64)
            for q in range(n_nxt):
                d = nxt[q]
                l_arc[n_links + q] = w_arc[best_k[d]]
                l_parent[n_links + q] = cur_link[best_from[d]]
                new_v[q] = best_v[d]
                new_link[q] = n_links + q
                best_v[d] = INF
                best_from[d] = -1
                best_k[d] = -1
            n_links += n_nxt
            cur = _grow(cur, n_nxt)
            cur_v = _grow(cur_v, n_nxt)
            cur_link = _grow(cur_link, n_nxt)
            cur[:n_nxt] = nxt[:n_nxt]
            cur_v[:n_nxt] = new_v
            cur_link[:n_nxt] = new_link
            n_cur = n_nxt
            if n_cur == 0:
                break
        bv = INF
        bl = -2
        for ci in range(n_cur):
            tot = cur_v[ci] + x_bc[cur[ci]]
            if tot < bv:
                bv = tot
                bl = cur_link[ci]
        if bl == -2:
            continue
        cost[i] = bv
        q = seq_off[i + 1] - 1
        while bl >= 0:
            arcs[q] = l_arc[bl]
            bl = l_parent[bl]
            q -= 1
    return cost, arcs


def _pair_slot(table, c_w, c_s, w, sfx, stride):
    """Slot of the candidate ``(w, sfx)`` in the open-addressing ``table`` (-1 there: not present)."""
    mask = len(table) - 1
    i = ((int(w) * int(stride) + int(sfx)) * 2654435761 >> 7) & mask
    while table[i] >= 0 and (c_w[table[i]] != w or c_s[table[i]] != sfx):
        i = (i + 1) & mask
    return i


def _suffix_id(table, s_lab, s_next, n_suf, w, nxt, stride):
    """Id of the suffix ``w`` followed by suffix ``nxt`` (interned in ``table``); returns ``(id, n_suf)``."""
    i = _pair_slot(table, s_lab, s_next, w, nxt, stride)
    if table[i] >= 0:
        return table[i], n_suf
    table[i] = n_suf
    s_lab[n_suf] = w
    s_next[n_suf] = nxt
    return n_suf, n_suf + 1


def _keep_best(top_c, top_q, nk, cost, q):
    """Insert ``(cost, q)`` into the ascending list ``top_c/top_q`` of at most ``len(top_c)`` entries
    (a later entry goes after an equal one); returns the new length."""
    k = len(top_c)
    if nk == k and not cost < top_c[k - 1]:
        return nk
    i = nk if nk < k else k - 1
    while i > 0 and cost < top_c[i - 1]:
        top_c[i] = top_c[i - 1]
        top_q[i] = top_q[i - 1]
        i -= 1
    top_c[i] = cost
    top_q[i] = q
    return nk + 1 if nk < k else nk


def suffix_list_bound(m, w_off, w_dlab, w_dst, w_lc, x_lc, num_labels, k):
    """A tighter admissible bound than :func:`best_word_bound`: per state ``s`` a list of ``k``
    completions (word sequences, interned as suffixes: a word and the id of the suffix after it,
    0 = the empty one) with an upper bound ``e^-L`` on the probability of each, and an upper bound
    ``e^-U[s]`` on the probability of every completion *not* listed.  A completion ``w W'`` of
    ``s`` is bounded by summing, over the closed ``w`` arcs ``a`` of ``s``, ``e^-cost(a)`` times
    the bound of ``W'`` at ``dst(a)`` (its listed value there, else ``U[dst(a)]``): the
    alignments of one continuation are summed *for that continuation*, where the best-next-word
    bound lets every destination pick its own best one.  ``s`` lists its ``k`` best candidates;
    ``U[s]`` is the larger of the next candidate and, per word, the sum over its arcs of
    ``U[dst]``.  Returns ``h`` with ``h[s] = -ln max(listed, e^-U[s])`` (by induction in reverse
    topological order an upper bound on every completion of ``s``; ``k = 0`` gives
    :func:`best_word_bound`).  Not consistent (only admissible): the search does not need it."""
    stride = m * k + 2
    l_id = np.zeros(m * k + 1, np.int64)
    l_c = np.full(m * k + 1, INF)
    l_n = np.zeros(m, np.int64)
    u = np.full(m, INF)
    h = np.full(m, INF)
    size = 1024
    while size < 4 * (m * k + 2):
        size *= 2
    s_table = np.full(size, -1, np.int64)
    s_lab = np.full(m * k + 2, -1, np.int64)
    s_next = np.full(m * k + 2, -1, np.int64)
    n_suf = 1
    unl = np.zeros(num_labels)
    seen = np.zeros(num_labels, np.bool_)
    touched = np.empty(num_labels, np.int64)
    c_table = np.full(1024, -1, np.int64)
    c_w, c_s, c_v, c_slot = (np.empty(512, np.int64), np.empty(512, np.int64), np.empty(512), np.empty(512, np.int64))
    top_c, top_q = np.empty(k + 1), np.empty(k + 1, np.int64)
    for s in range(m - 1, -1, -1):
        lo, hi = w_off[s], w_off[s + 1]
        ref = x_lc[s]  # the largest single term: sums are taken relative to it
        for q in range(lo, hi):
            if w_lc[q] + h[w_dst[q]] < ref:
                ref = w_lc[q] + h[w_dst[q]]
        if ref == INF:
            continue
        need = 0
        for q in range(lo, hi):
            need += l_n[w_dst[q]]
        if 2 * need > len(c_table):  # at most half full
            size = len(c_table)
            while size < 2 * need:
                size *= 2
            c_table = np.full(size, -1, np.int64)
        c_w, c_s, c_v, c_slot = _grow(c_w, need), _grow(c_s, need), _grow(c_v, need), _grow(c_slot, need)
        nt = nc = 0
        for q in range(lo, hi):
            d, w, c = w_dst[q], w_dlab[q], w_lc[q]
            if not seen[w]:
                seen[w] = True
                touched[nt] = w
                nt += 1
                unl[w] = 0.0
            eu = math.exp(ref - c - u[d]) if u[d] < INF else 0.0
            unl[w] += eu
            for i in range(d * k, d * k + l_n[d]):  # a listed suffix: its bound replaces U[d]
                sl = _pair_slot(c_table, c_w, c_s, w, l_id[i], stride)
                if c_table[sl] < 0:
                    c_table[sl] = nc
                    c_w[nc], c_s[nc], c_v[nc], c_slot[nc] = w, l_id[i], 0.0, sl
                    nc += 1
                c_v[c_table[sl]] += math.exp(ref - c - l_c[i]) - eu
        u_cost = INF
        for i in range(nt):
            w = touched[i]
            seen[w] = False
            if unl[w] > 0.0 and ref - math.log(unl[w]) < u_cost:
                u_cost = ref - math.log(unl[w])
        nk = _keep_best(top_c, top_q, 0, x_lc[s], -1) if x_lc[s] < INF else 0
        for q in range(nc):
            c_table[c_slot[q]] = -1
            tot = unl[c_w[q]] + c_v[q]
            if tot > 0.0:
                nk = _keep_best(top_c, top_q, nk, ref - math.log(tot), q)
        kept = min(nk, k)
        for i in range(kept):
            q = top_q[i]
            sid = 0
            if q >= 0:
                sid, n_suf = _suffix_id(s_table, s_lab, s_next, n_suf, c_w[q], c_s[q], stride)
            l_id[s * k + i] = sid
            l_c[s * k + i] = top_c[i]
        l_n[s] = kept
        u[s] = min(u_cost, top_c[k] if nk > k else INF)
        h[s] = min(u[s], top_c[0] if nk else INF)
    return h
