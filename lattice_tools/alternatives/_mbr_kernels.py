"""The compiled loops of the MBR / confusion-network recursion (internal helper of :mod:`.sausages`).

:func:`acc_stats` runs the loops of Kaldi's ``MinimumBayesRisk`` (``lat/sausages.cc``: Figures 4-6 of
Xu et al. 2011) in Kaldi's order of states, arcs and positions, with the same double-precision
operations, so that the sums come out as Kaldi's do (not merely close; no fastmath: a fused or
reordered addition would change them).  What differs from Kaldi is only what is kept in memory:
the forward pass stores the move it chooses at every (arc, position) in a byte, so the backward
pass reads it instead of recomputing the three edit costs and their minimum (Kaldi computes them
twice); the statistics of a (position, word) -- gamma, tau_b, tau_e -- are stored side by side;
Kaldi's per-arc ``beta_dash_arc`` vector is a scalar carry.  Measured on a 138k-arc lattice with
185 positions: 0.066 s per pass, 0.2 s before (Kaldi's whole computation: ~0.9 s for two passes).
It runs as plain Python when numba is not importable (correct, ~100x slower).
"""
from __future__ import annotations

import math

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
def _forward(N, pre_offsets, pre_arcs, arc_start, arc_code, arc_loglike, R, alpha, post, choice):
    """Kaldi's ``EditDistance``: fills ``alpha`` (log forward), ``post`` (arc posterior given its end
    state, per position k of ``pre_arcs``) and ``choice[k, q]`` (which of Kaldi's three moves the
    backward pass takes at (arc, q): 1 substitution/match, 2 insertion, 3 deletion, with Kaldi's
    tie order); returns ``alpha_dash``.  Sums and minima are Kaldi's, in Kaldi's order."""
    Q = len(R)
    alpha_dash = np.zeros((N, Q + 1))
    ref_cost = np.empty(Q + 1)  # l(epsilon, R[q-1]): 0 or 1
    best12 = np.empty(Q + 1)
    move12 = np.empty(Q + 1, np.int8)
    alpha[0] = 0.0
    for q in range(1, Q + 1):
        ref_cost[q] = 0.0 if R[q - 1] == 0 else 1.0
        alpha_dash[0, q] = alpha_dash[0, q - 1] + ref_cost[q]
    for n in range(1, N):
        alpha_n = -np.inf
        for k in range(pre_offsets[n], pre_offsets[n + 1]):
            i = pre_arcs[k]
            alpha_n = _log_add(alpha_n, alpha[arc_start[i]] + arc_loglike[i])
        alpha[n] = alpha_n
        out = alpha_dash[n]
        for k in range(pre_offsets[n], pre_offsets[n + 1]):
            i = pre_arcs[k]
            s = arc_start[i]
            w = arc_code[i]
            pen = 0.0 if w == 0 else PENALIZED_ONE
            p = math.exp(alpha[s] + arc_loglike[i] - alpha_n)
            post[k] = p
            prev = alpha_dash[s]
            # substitution vs insertion need no previous column: computed first, off the serial
            # chain of the deletion move (ada[q] depends on ada[q-1])
            for q in range(1, Q + 1):
                a1 = prev[q - 1] + (0.0 if w == R[q - 1] else 1.0)
                a2 = prev[q] + pen
                if a1 <= a2:
                    best12[q] = a1
                    move12[q] = 1
                else:
                    best12[q] = a2
                    move12[q] = 2
            moves = choice[k]
            ada = prev[0] + pen
            out[0] += p * ada
            for q in range(1, Q + 1):
                a3 = ada + ref_cost[q]
                b = best12[q]
                if b <= a3:
                    ada = b
                    moves[q] = move12[q]
                else:
                    ada = a3
                    moves[q] = 3
                out[q] += p * ada
    return alpha_dash


@njit(cache=True)
def acc_stats(num_states, pre_offsets, pre_arcs, arc_start, arc_code, arc_loglike, state_times, R, n_codes):
    """Kaldi's ``EditDistance`` + ``AccStats`` for hypothesis ``R`` (word codes with their epsilons;
    states 0-based, the last one the single final state; ``arc_code``: the arc's word as a code in
    ``0 .. n_codes-1``, 0 = epsilon).  Returns the expected edit distance and Kaldi's statistics per
    (position q = 1..Q, word code): ``gamma``, ``tau_b``, ``tau_e`` (sums in Kaldi's order of
    additions), as ``(Q + 1) x n_codes`` arrays; an entry exists in Kaldi's map iff its ``gamma`` is
    not 0 (Kaldi's ``AddToMap`` skips zeros and every added value is positive).

    The forward pass records the move chosen at every (arc, position), so the backward pass does
    not recompute the edit-distance minima (Kaldi does: the same values, twice)."""
    N = num_states
    Q = len(R)
    n_pre = len(pre_arcs)
    alpha = np.empty(N)
    post = np.empty(n_pre)
    choice = np.empty((n_pre, Q + 1), np.int8)
    alpha_dash = _forward(N, pre_offsets, pre_arcs, arc_start, arc_code, arc_loglike, R, alpha, post, choice)
    risk = alpha_dash[N - 1, Q]
    # gamma, tau_b, tau_e of one (q, word) side by side: one cache line per update
    stats = np.zeros((Q + 1, n_codes, 3))
    beta_dash = np.zeros((N, Q + 1))
    beta_dash[N - 1, Q] = 1.0
    for n in range(N - 1, 0, -1):
        beta_n = beta_dash[n]
        tn = float(state_times[n])
        for k in range(pre_offsets[n], pre_offsets[n + 1]):
            i = pre_arcs[k]
            s = arc_start[i]
            w = arc_code[i]
            moves = choice[k]
            beta_s = beta_dash[s]
            p = post[k]
            ts = float(state_times[s])
            # Kaldi's beta_dash_arc[q] is the value carried down by a deletion at q + 1 (or 0) plus
            # this arc's share of beta_dash[n][q]: one addition, whose order does not matter
            carry = 0.0
            for q in range(Q, 0, -1):
                v = carry + p * beta_n[q]
                carry = 0.0
                c = moves[q]
                if c == 2:
                    beta_s[q] += v
                    continue
                if c == 1:
                    beta_s[q - 1] += v
                else:
                    carry = v
                if v != 0.0:
                    if c == 1:
                        cell = stats[q, w]
                        cell[0] += v
                        cell[1] += ts * v
                        cell[2] += tn * v
                    else:
                        cell = stats[q, 0]
                        cell[0] += v
                        cell[1] += tn * v
                        cell[2] += tn * v
            beta_s[0] += carry + p * beta_n[0]
    t0 = float(state_times[0])
    carry = 0.0
    for q in range(Q, 0, -1):  # the start state: deletions down to position 0
        v = carry + beta_dash[0, q]
        carry = v
        if v != 0.0:
            cell = stats[q, 0]
            cell[0] += v
            cell[1] += t0 * v
            cell[2] += t0 * v
    return risk, stats[:, :, 0], stats[:, :, 1], stats[:, :, 2]


def load_compiled() -> None:
    """Load the compiled :func:`acc_stats` now (once per process; its first call otherwise pays it).

    Loading numba's cached machine code initialises numba's compiler (~0.15 s of CPU).  A process
    that owns its numba -- the ``lattice-tools`` command line -- also calls
    :func:`lattice_tools.alternatives._numba.skip_numba_probes` before the first kernel module is
    imported, so that numba does not import ``scipy.linalg`` to look for a BLAS the kernel never uses."""
    one = np.zeros(1, np.int64)
    acc_stats(2, np.array([0, 0, 1]), one, one, one, np.zeros(1), np.array([0, 1]), np.array([0, 1, 0]), 2)
