"""The compiled loops of the MBR / confusion-network recursion (internal helper of :mod:`.sausages`).

:func:`acc_stats` runs the loops of Kaldi's ``MinimumBayesRisk`` (``lat/sausages.cc``: Figures 4-6 of
Xu et al. 2011) in Kaldi's order of states, arcs and positions, with the same double-precision
operations, so that the sums come out as Kaldi's do (not merely close).  It runs as plain Python
when numba is not importable (correct, ~100x slower).
"""
from __future__ import annotations

import math
import sys

import numpy as np

from ._numba import njit

#: ``1.0 + delta()`` of Kaldi: ``delta()`` returns a float (1e-5f), added to a double 1.0.
PENALIZED_ONE = 1.0 + float(np.float32(1.0e-5))
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


def load_compiled(*, probe_blas: bool = True) -> None:
    """Load the compiled :func:`acc_stats` now (once per process; its first call otherwise pays it).

    Loading numba's cached machine code initialises numba's compiler (~0.15 s of CPU), and numba
    then probes for a BLAS by importing ``scipy.linalg`` (~0.2 s more).  The kernel uses no BLAS, so
    a process that owns its numba -- the ``lattice-tools`` command line -- passes
    ``probe_blas=False``: the probe fails at once and numba records "no BLAS", i.e. nopython code
    compiled later in the same process cannot use ``np.dot``/``np.linalg``.  Library callers keep
    the default."""
    blocked = not probe_blas and "scipy.linalg.cython_blas" not in sys.modules
    if blocked:
        sys.modules["scipy.linalg.cython_blas"] = None  # makes `import scipy.linalg.cython_blas` fail
    try:
        one = np.zeros(1, np.int64)
        acc_stats(2, np.array([0, 0, 1]), one, one, one, np.zeros(1), np.array([0, 1]), np.array([0, 1, 0]), 2)
    finally:
        if blocked and sys.modules.get("scipy.linalg.cython_blas", 0) is None:
            del sys.modules["scipy.linalg.cython_blas"]
