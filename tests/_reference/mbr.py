"""A slow, literal transcription of Kaldi's MinimumBayesRisk (lat/sausages.cc: EditDistance,
AccStats, MbrDecode) in plain Python with dicts for Kaldi's std::map statistics: the test oracle of
the compiled recursion (lattice_tools/_ext/mbr.c, behind lattice_tools.alternatives.sausages).

:func:`acc_stats` is one pass (Kaldi's EditDistance + AccStats) on 1-based arc lists, the kernel's
oracle (tests/test_sausage.py compares the two bit for bit); :func:`reference_mbr` is the whole
MbrDecode on a lattice already in Kaldi's order (lattice_tools.alternatives.sausages.kaldi_order).
It recomputes the three edit costs in the backward pass as Kaldi does, where the kernel reads the
move it recorded in the forward pass.  (It follows Kaldi's structure, not the
kernel's, so the two are independent transcriptions.)"""
from __future__ import annotations

import math

import numpy as np

DELTA = float(np.float32(1e-5))
MIN_LOG_DIFF = math.log(np.finfo(np.float64).eps)


def _float(x) -> float:
    """x rounded to Kaldi's BaseFloat (float32), as a Python float."""
    return float(np.float32(x))


def _share_overlap(t: list[list[float]], i: int) -> None:
    """Kaldi's fix-up of two overlapping one-best words (MbrDecode, after the word i - 1 is appended): the
    span from the end of the word before them (0 for the first word), or their earlier start if later, to
    their later end is split between them in proportion to their durations (the first word gets the whole
    span start when it has no duration).  Kaldi's times are BaseFloat: every operation rounds to float32.
    (Written from Kaldi's description, not from the package's code; the package's own fix-up is held to
    Kaldi's output by tests/test_kaldi_parity.py.)"""
    b0, e0 = _float(t[i - 2][0]), _float(t[i - 2][1])
    b1, e1 = _float(t[i - 1][0]), _float(t[i - 1][1])
    before = _float(t[i - 3][1]) if i >= 3 else 0.0
    start = max(before, min(b0, b1))
    end = max(e0, e1)
    d0, d1 = _float(e0 - b0), _float(e1 - b1)
    split = start if not d0 > 0 else _float(start + _float(_float(_float(end - start) * d0) / _float(d0 + d1)))
    t[i - 2][0], t[i - 2][1] = start, split
    t[i - 1][0], t[i - 1][1] = split, end


def log_add(x, y):
    if x < y:
        diff, x = x - y, y
    else:
        diff = y - x
    return x + math.log1p(math.exp(diff)) if diff >= MIN_LOG_DIFF else x


def edit_cost(a, b, penalize=False):
    """Kaldi's l(a, b): 0 for a match, else 1 (+ delta when penalized, an edit against epsilon)."""
    return 0.0 if a == b else (1.0 + DELTA if penalize else 1.0)


def f32(x):
    return float(np.float32(x))


def acc_stats(N, arcs, pre, times, R):
    """One pass of Kaldi's MinimumBayesRisk for hypothesis ``R`` (a list with Kaldi's epsilons): states
    1..N (1 the start, N the final), ``arcs[i] = (word, start, end, loglike)``, ``pre[n]``: the arcs
    entering state n in Kaldi's order, ``times[n]``: the frame of state n.  Returns ``(L, gamma,
    tau_b, tau_e)``: the expected edit distance and Kaldi's maps per position q (dicts word -> sum)."""
    Q = len(R)
    r = lambda q: R[q - 1]  # noqa: E731
    alpha = [0.0] * (N + 1)
    ad = [[0.0] * (Q + 1) for _ in range(N + 1)]
    ada = [0.0] * (Q + 1)
    for q in range(1, Q + 1):
        ad[1][q] = ad[1][q - 1] + edit_cost(0, r(q))
    for n in range(2, N + 1):
        a_n = -math.inf
        for i in pre[n]:
            a_n = log_add(a_n, alpha[arcs[i][1]] + arcs[i][3])
        alpha[n] = a_n
        for i in pre[n]:
            w, s_a, _, p_a = arcs[i]
            for q in range(Q + 1):
                if q == 0:
                    ada[q] = ad[s_a][q] + edit_cost(w, 0, True)
                else:
                    ada[q] = min(ad[s_a][q - 1] + edit_cost(w, r(q)), ad[s_a][q] + edit_cost(w, 0, True), ada[q - 1] + edit_cost(0, r(q)))
                ad[n][q] += math.exp(alpha[s_a] + p_a - alpha[n]) * ada[q]
    L = ad[N][Q]
    bd = [[0.0] * (Q + 1) for _ in range(N + 1)]
    bda = [0.0] * (Q + 1)
    b_arc = [0] * (Q + 1)
    gamma = [dict() for _ in range(Q + 1)]
    tau_b = [dict() for _ in range(Q + 1)]
    tau_e = [dict() for _ in range(Q + 1)]

    def add(m, k, v):
        if v != 0:
            m[k] = m.get(k, 0.0) + v

    bd[N][Q] = 1.0
    for n in range(N, 1, -1):
        for i in pre[n]:
            w, s_a, _, p_a = arcs[i]
            ada[0] = ad[s_a][0] + edit_cost(w, 0, True)
            for q in range(1, Q + 1):
                a1, a2, a3 = ad[s_a][q - 1] + edit_cost(w, r(q)), ad[s_a][q] + edit_cost(w, 0, True), ada[q - 1] + edit_cost(0, r(q))
                if a1 <= a2:
                    b_arc[q], ada[q] = (1, a1) if a1 <= a3 else (3, a3)
                else:
                    b_arc[q], ada[q] = (2, a2) if a2 <= a3 else (3, a3)
            bda = [0.0] * (Q + 1)
            for q in range(Q, 0, -1):
                bda[q] += math.exp(alpha[s_a] + p_a - alpha[n]) * bd[n][q]
                if b_arc[q] == 1:
                    bd[s_a][q - 1] += bda[q]
                    add(gamma[q], w, bda[q])
                    add(tau_b[q], w, times[s_a] * bda[q])
                    add(tau_e[q], w, times[n] * bda[q])
                elif b_arc[q] == 2:
                    bd[s_a][q] += bda[q]
                else:
                    bda[q - 1] += bda[q]
                    add(gamma[q], 0, bda[q])
                    add(tau_b[q], 0, times[n] * bda[q])
                    add(tau_e[q], 0, times[n] * bda[q])
            bda[0] += math.exp(alpha[s_a] + p_a - alpha[n]) * bd[n][0]
            bd[s_a][0] += bda[0]
    bda = [0.0] * (Q + 1)
    for q in range(Q, 0, -1):
        bda[q] += bd[1][q]
        bda[q - 1] += bda[q]
        add(gamma[q], 0, bda[q])
    return L, gamma, tau_b, tau_e


def _bins(Q, gamma, tau_b, tau_e):
    """Kaldi's sausage of one pass: bins sorted by posterior (float), word times, bin times."""
    gam, wtimes, stimes = [], [], []
    for q in range(1, Q + 1):
        g = sorted(((w, f32(v)) for w, v in sorted(gamma[q].items())), key=lambda x: (-x[1], -x[0]))
        gam.append(g)
        tb = te = 0.0
        wt = []
        for w, v in g:
            b, e = tau_b[q].get(w, 0.0), tau_e[q].get(w, 0.0)
            wt.append((f32(b / v), f32(e / v)))
            tb += b
            te += e
        wtimes.append(wt)
        stimes.append([f32(tb), f32(te)])
        if q > 1 and stimes[q - 2][1] > stimes[q - 1][0]:
            stimes[q - 2][1] = stimes[q - 1][0] = f32(0.5 * f32(np.float32(stimes[q - 2][1]) + np.float32(stimes[q - 1][0])))
    return gam, wtimes, stimes


def reference_mbr(view):
    """(words, risk, gamma_, sausage_times_, one_best_times_, confidences) as Kaldi computes them."""
    N = view.num_states
    arcs = []  # (word, start 1-based, end 1-based, loglike)
    pre = [[] for _ in range(N + 1)]
    for i in range(len(view.src)):
        loglike = -float(np.float32(view.graph[i] + view.acoustic[i]))
        arcs.append((int(view.word[i]), int(view.src[i]) + 1, int(view.dst[i]) + 1, loglike))
        pre[int(view.dst[i]) + 1].append(i)
    times = [0] + [-1] * N
    times[1] = 0
    for i in range(len(view.src)):  # state times, 1-based; the first arc in Kaldi's order sets a state's
        if times[int(view.dst[i]) + 1] < 0:
            times[int(view.dst[i]) + 1] = times[int(view.src[i]) + 1] + int(view.dur[i])
    # initial R: float32 shortest path, numeric state order, strict improvement
    dist = [math.inf] * N
    parent = [-1] * N
    dist[0] = 0.0
    for i in sorted(range(len(view.src)), key=lambda k: (int(view.src[k]), k)):
        s, d = int(view.src[i]), int(view.dst[i])
        if dist[s] == math.inf:
            continue
        w = f32(np.float32(dist[s]) + np.float32(view.graph[i] + view.acoustic[i]))
        if w < dist[d]:
            dist[d], parent[d] = w, i
    R, s = [], N - 1
    while s != 0:
        i = parent[s]
        if view.word[i]:
            R.append(int(view.word[i]))
        s = int(view.src[i])
    R.reverse()

    counter = 0
    while True:
        R = [0] + [x for w in R if w != 0 for x in (w, 0)]
        L, gamma, tau_b, tau_e = acc_stats(N, arcs, pre, times, R)
        gam, wtimes, stimes = _bins(len(R), gamma, tau_b, tau_e)
        delta_q = 0.0
        obt, conf = [], []
        for q in range(len(R)):
            g = gam[q]
            old = next((v for w, v in g if w == R[q]), 0.0)
            delta_q += old - g[0][1]
            R[q] = g[0][0]
            if R[q] != 0:
                obt.append(list(wtimes[q][0]))
                conf.append(g[0][1])
                i = len(obt)
                if i > 1 and obt[i - 2][1] > obt[i - 1][0]:
                    _share_overlap(obt, i)
        if delta_q == 0 or counter > 100:
            break
        counter += 1
    words = tuple(w for w in R if w != 0)
    return words, f32(L), gam, [tuple(x) for x in stimes], [tuple(x) for x in obt], conf
