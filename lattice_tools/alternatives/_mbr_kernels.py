"""Compiled loops of the MBR / confusion-network recursion (internal helper of :mod:`.sausage`).

Each function runs the loops of Kaldi's ``MinimumBayesRisk`` (``lat/sausages.cc``: Figures 4-6 of
Xu et al. 2011) in Kaldi's order of states, arcs and positions, with the same double-precision
operations, so that the sums come out as Kaldi's do (not merely close).  They are plain Python
when numba is not importable (correct, ~100x slower).
"""
from __future__ import annotations

import math

import numpy as np

try:  # numba is a declared dependency; without it the same code runs as Python
    from numba import njit
except ImportError:  # pragma: no cover
    def njit(*args, **kwargs):
        if args and callable(args[0]):
            return args[0]
        return lambda f: f

#: ``1.0 + delta()`` of Kaldi: ``delta()`` returns a float (1e-5f), added to a double 1.0.
PENALIZED_ONE = 1.0 + float(np.float32(1.0e-5))
#: Below this many arcs the linear-time loops (``top_sort_order``, ``compact_shortest_path``,
#: ``state_times``) run as plain Python (their ``py_func``): loading numba's compiled code costs more.
SMALL_ARCS = 50_000


def fast(fn, n_arcs: int):
    """``fn`` compiled, or its plain-Python body for small inputs (same code, same results)."""
    return fn if n_arcs >= SMALL_ARCS or not hasattr(fn, "py_func") else fn.py_func


#: Kaldi's ``kMinLogDiffDouble`` = log(DBL_EPSILON): LogAdd ignores a term this much smaller.
MIN_LOG_DIFF = math.log(np.finfo(np.float64).eps)


@njit(cache=True)
def _log_add(x, y):
    if x < y:
        diff = x - y
        x = y
    else:
        diff = y - x
    if diff >= MIN_LOG_DIFF:
        return x + math.log1p(math.exp(diff))
    return x


@njit(cache=True)
def top_sort_order(num_states, start, arc_offsets, arc_dst):
    """OpenFst ``TopSort``: depth-first search from ``start`` (then from every still unvisited state
    in increasing order), arcs in stored order; the new number of a state is its position in the
    reverse finishing order.  Returns ``new_id`` per state, or an empty array if there is a cycle."""
    color = np.zeros(num_states, np.int8)  # 0 white, 1 grey, 2 black
    finish = np.empty(num_states, np.int64)
    n_fin = 0
    stack_s = np.empty(num_states, np.int64)
    stack_a = np.empty(num_states, np.int64)
    root = start
    while True:
        if color[root] == 0:
            sp = 0
            stack_s[0] = root
            stack_a[0] = arc_offsets[root]
            color[root] = 1
            while sp >= 0:
                s = stack_s[sp]
                a = stack_a[sp]
                if a >= arc_offsets[s + 1]:
                    color[s] = 2
                    finish[n_fin] = s
                    n_fin += 1
                    sp -= 1
                    if sp >= 0:
                        stack_a[sp] += 1
                    continue
                d = arc_dst[a]
                if color[d] == 0:
                    color[d] = 1
                    sp += 1
                    stack_s[sp] = d
                    stack_a[sp] = arc_offsets[d]
                else:
                    if color[d] == 1:
                        return np.empty(0, np.int64)
                    stack_a[sp] += 1
        # next root: 0 after the start's tree, then increasing
        nxt = 0 if root == start else root + 1
        while nxt < num_states and color[nxt] != 0:
            nxt += 1
        if nxt >= num_states:
            break
        root = nxt
    new_id = np.empty(num_states, np.int64)
    for i in range(n_fin):
        new_id[finish[n_fin - 1 - i]] = i
    return new_id


@njit(cache=True)
def tropical_best_path(num_states, arc_offsets, arc_dst, arc_cost32, final_cost32):
    """OpenFst ``ShortestPath`` (n = 1) on a topologically numbered FST with float32 weights: states
    relaxed in numeric order, an arc replaces a distance only if strictly better, the first best
    final state wins.  Returns the arcs of the path (empty if no final state is reachable)."""
    inf = np.float32(np.inf)
    dist = np.full(num_states, inf, np.float32)
    parent = np.full(num_states, -1, np.int64)
    dist[0] = np.float32(0.0)
    f_dist = inf
    f_state = -1
    for s in range(num_states):
        sd = dist[s]
        if sd == inf:
            continue
        fc = final_cost32[s]
        if fc != inf:
            t = np.float32(sd + fc)
            if t < f_dist:
                f_dist = t
                f_state = s
        for a in range(arc_offsets[s], arc_offsets[s + 1]):
            d = arc_dst[a]
            w = np.float32(sd + arc_cost32[a])
            if w < dist[d]:
                dist[d] = w
                parent[d] = a
    if f_state < 0:
        return np.empty(0, np.int64)
    n = 0
    s = f_state
    while s != 0:
        n += 1
        s = arc_start_of(parent[s], arc_offsets)
    path = np.empty(n, np.int64)
    s = f_state
    i = n - 1
    while s != 0:
        a = parent[s]
        path[i] = a
        i -= 1
        s = arc_start_of(a, arc_offsets)
    return path


@njit(cache=True)
def arc_start_of(a, arc_offsets):
    lo, hi = 0, len(arc_offsets) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if arc_offsets[mid] <= a:
            lo = mid
        else:
            hi = mid
    return lo


@njit(cache=True)
def acc_stats(num_states, pre_offsets, pre_arcs, arc_start, arc_code, arc_loglike, state_times, R, n_codes):
    """Kaldi's ``EditDistance`` + ``AccStats`` for hypothesis ``R`` (word codes with their epsilons;
    states 0-based, the last one the single final state; ``arc_code``: the arc's word as a code in
    ``0 .. n_codes-1``, 0 = epsilon).  Returns the expected edit distance and Kaldi's statistics per
    (position q = 1..Q, word code): ``gamma``, ``tau_b``, ``tau_e`` (sums in Kaldi's order of
    additions) and ``present`` (an entry exists: some non-zero value was added, as Kaldi's
    ``AddToMap`` skips zeros), as ``(Q + 1) x n_codes`` arrays."""
    N = num_states
    Q = len(R)
    alpha = np.empty(N)
    alpha_dash = np.zeros((N, Q + 1))
    ada = np.empty(Q + 1)
    alpha[0] = 0.0
    for q in range(1, Q + 1):
        alpha_dash[0, q] = alpha_dash[0, q - 1] + (0.0 if R[q - 1] == 0 else 1.0)
    for n in range(1, N):
        alpha_n = -np.inf
        for k in range(pre_offsets[n], pre_offsets[n + 1]):
            i = pre_arcs[k]
            alpha_n = _log_add(alpha_n, alpha[arc_start[i]] + arc_loglike[i])
        alpha[n] = alpha_n
        for k in range(pre_offsets[n], pre_offsets[n + 1]):
            i = pre_arcs[k]
            s = arc_start[i]
            w = arc_code[i]
            pen = 0.0 if w == 0 else PENALIZED_ONE
            post = math.exp(alpha[s] + arc_loglike[i] - alpha[n])
            ada[0] = alpha_dash[s, 0] + pen
            alpha_dash[n, 0] += post * ada[0]
            for q in range(1, Q + 1):
                rq = R[q - 1]
                a1 = alpha_dash[s, q - 1] + (0.0 if w == rq else 1.0)
                a2 = alpha_dash[s, q] + pen
                a3 = ada[q - 1] + (0.0 if rq == 0 else 1.0)
                m = a2 if a2 < a3 else a3
                ada[q] = a1 if a1 < m else m
                alpha_dash[n, q] += post * ada[q]
    risk = alpha_dash[N - 1, Q]

    gamma = np.zeros((Q + 1, n_codes))
    tau_b = np.zeros((Q + 1, n_codes))
    tau_e = np.zeros((Q + 1, n_codes))
    present = np.zeros((Q + 1, n_codes), np.bool_)
    beta_dash = np.zeros((N, Q + 1))
    bda = np.zeros(Q + 1)
    b_arc = np.zeros(Q + 1, np.int8)
    beta_dash[N - 1, Q] = 1.0
    for n in range(N - 1, 0, -1):
        for k in range(pre_offsets[n], pre_offsets[n + 1]):
            i = pre_arcs[k]
            s = arc_start[i]
            w = arc_code[i]
            pen = 0.0 if w == 0 else PENALIZED_ONE
            ada[0] = alpha_dash[s, 0] + pen
            for q in range(1, Q + 1):
                rq = R[q - 1]
                a1 = alpha_dash[s, q - 1] + (0.0 if w == rq else 1.0)
                a2 = alpha_dash[s, q] + pen
                a3 = ada[q - 1] + (0.0 if rq == 0 else 1.0)
                if a1 <= a2:
                    if a1 <= a3:
                        b_arc[q] = 1
                        ada[q] = a1
                    else:
                        b_arc[q] = 3
                        ada[q] = a3
                else:
                    if a2 <= a3:
                        b_arc[q] = 2
                        ada[q] = a2
                    else:
                        b_arc[q] = 3
                        ada[q] = a3
            bda[:] = 0.0
            post = math.exp(alpha[s] + arc_loglike[i] - alpha[n])
            ts = float(state_times[s])
            tn = float(state_times[n])
            for q in range(Q, 0, -1):
                bda[q] += post * beta_dash[n, q]
                v = bda[q]
                c = b_arc[q]
                if c == 2:
                    beta_dash[s, q] += v
                    continue
                if c == 1:
                    beta_dash[s, q - 1] += v
                else:
                    bda[q - 1] += v
                if v != 0.0:
                    if c == 1:
                        gamma[q, w] += v
                        tau_b[q, w] += ts * v
                        tau_e[q, w] += tn * v
                        present[q, w] = True
                    else:
                        gamma[q, 0] += v
                        tau_b[q, 0] += tn * v
                        tau_e[q, 0] += tn * v
                        present[q, 0] = True
            bda[0] += post * beta_dash[n, 0]
            beta_dash[s, 0] += bda[0]
    bda[:] = 0.0
    t0 = float(state_times[0])
    for q in range(Q, 0, -1):
        bda[q] += beta_dash[0, q]
        bda[q - 1] += bda[q]
        v = bda[q]
        if v != 0.0:
            gamma[q, 0] += v
            tau_b[q, 0] += t0 * v
            tau_e[q, 0] += t0 * v
            present[q, 0] = True
    return risk, gamma, tau_b, tau_e, present


@njit(cache=True)
def state_times(num_states, src, dst, dur, strict):
    """Kaldi's ``CompactLatticeStateTimes`` over arcs sorted by source (topological order): the frame
    of every state, the first arc reaching a state setting it.  Returns ``(times, bad_state)``; with
    ``strict``, ``bad_state`` >= 0 names a state reached at two different frames."""
    t = np.full(num_states, -1, np.int64)
    t[0] = 0
    for a in range(len(src)):
        want = t[src[a]] + dur[a]
        d = dst[a]
        if t[d] < 0:
            t[d] = want
        elif t[d] != want and strict:
            return t, d
    for s in range(num_states):
        if t[s] < 0:
            t[s] = 0
    return t, -1


@njit(cache=True)
def compact_shortest_path(num_states, arc_offsets, arc_dst, arc_cost, final_cost):
    """Kaldi's ``CompactLatticeShortestPath`` on a topologically numbered lattice (double costs):
    a state keeps the first predecessor state that strictly improves it, the super-final the first
    best final state; between two consecutive states of the path, the cheapest arc (the first on a
    tie).  Returns the arcs of the path and its last state (-1: no complete path)."""
    inf = np.inf
    best = np.full(num_states, inf)
    pred = np.full(num_states, -1, np.int64)
    best[0] = 0.0
    sf_best = inf
    sf_pred = -1
    for s in range(num_states):
        my = best[s]
        for a in range(arc_offsets[s], arc_offsets[s + 1]):
            nxt = my + arc_cost[a]
            if nxt < best[arc_dst[a]]:
                best[arc_dst[a]] = nxt
                pred[arc_dst[a]] = s
        tot = my + final_cost[s]
        if tot < sf_best:
            sf_best = tot
            sf_pred = s
    if sf_pred < 0:
        return np.empty(0, np.int64), -1
    n = 0
    s = sf_pred
    while s != 0:
        n += 1
        s = pred[s]
    states = np.empty(n + 1, np.int64)
    s = sf_pred
    for i in range(n, -1, -1):
        states[i] = s
        if i > 0:
            s = pred[s]
    arcs = np.empty(n, np.int64)
    for i in range(n):
        s, d = states[i], states[i + 1]
        chosen = -1
        for a in range(arc_offsets[s], arc_offsets[s + 1]):
            if arc_dst[a] == d and (chosen < 0 or arc_cost[a] < arc_cost[chosen]):
                chosen = a
        arcs[i] = chosen
    return arcs, sf_pred
