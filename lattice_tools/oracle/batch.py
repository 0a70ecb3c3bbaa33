"""Batched edit costs of many word sequences against linear references (the N-best fast path).

An N-best block is a set of *linear* hypotheses; against a linear reference (a trn/STM transcript
without alternations) its oracle is the cheapest of the per-alternative edit costs.  Computing
those costs for every (reference, alternative) pair at once is a textbook Levenshtein recursion
vectorized over pairs: one step per hypothesis position, each step O(pairs x reference length),
with the within-column deletion chain done as a cumulative minimum::

    E[j, r] = min( E[j-1, r] + ins(h_j),  E[j-1, r-1] + pair(h_j, ref_r),  E[j, r-1] + del(ref_r) )
    E[j, r] = C[r] + min_{r' <= r} (X[j, r'] - C[r'])   with C the cumulative deletion cost

Costs are the integer costs of :mod:`lattice_tools.oracle.costs` (sclite weights x1000,
or Levenshtein), so the minimum over a block's alternatives is exactly the network oracle's cost.
Which of several equal-cost alternatives sclite reports is *not* simply the first listed
(measured: its arc-pair DP breaks ties cell by cell); the caller
(:func:`lattice_tools.oracle.api.alternatives_oracle_many`) therefore cuts the block to its
minimum-cost alternatives and lets the scorer's sclite-exact DP choose -- dropping strictly worse
parallel branches cannot change that choice.  In Levenshtein mode the first listed minimum
(:func:`first_best`) is reported.

This module is the engine only (no result assembly): it imports nothing of the oracle but its
cost models and graph helpers, so that the API module can choose between it and the network DP.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from .costs import OracleCosts, oracle_costs
from .graphs import RefGraph, fold_word

# int32 halves the memory traffic of the batch; a sentinel of 2^30 is far above any real total
# (sclite costs are x1000: 4000 per word) and two of them still fit.
_SMALL_BIG = np.int32(1 << 29)


def linear_costs(refs: Sequence[Sequence], optional: Sequence[ArrayLike] | None,
                 hyps: Sequence[Sequence[str]], ref_of_hyp: Sequence[int], *, mode: str | OracleCosts = "sclite",
                 max_cells: int = 20_000_000) -> np.ndarray:
    """Edit cost of ``hyps[i]`` against ``refs[ref_of_hyp[i]]`` for every ``i`` (int64, mode units x scale).

    Args:
      refs: linear references (already case-folded words; ``None`` = the null word ``@``).
      optional: per reference word, whether it is optionally deletable (``-D``); None = none.
      hyps: hypothesis word sequences (already case-folded; ``@`` words are skipped as sclite does).
      ref_of_hyp: index into ``refs`` per hypothesis.
    """
    costs = oracle_costs(mode)
    n = len(hyps)
    out = np.empty(n, dtype=np.int64)
    if n == 0:
        return out
    vocab: dict = {}

    def wid(w):
        v = vocab.get(w)
        if v is None:
            v = vocab[w] = len(vocab) + 1
        return v

    ref_ids = [np.array([-1 if w is None else wid(w) for w in r], dtype=np.int64) for r in refs]
    ref_opt = [np.zeros(len(r), dtype=bool) if optional is None else np.asarray(optional[k], dtype=bool)
               for k, r in enumerate(refs)]
    hyp_ids = [[wid(w) for w in h if w != "@"] for h in hyps]
    # sclite skips a hypothesis '@' (an empty alternative) at its own small cost
    null_cost = np.array([costs.null_skip * sum(1 for w in h if w == "@") for h in hyps], dtype=np.int64)
    ref_index = np.asarray(ref_of_hyp, dtype=np.int64)
    order = np.argsort([len(h) for h in hyp_ids], kind="stable")  # similar lengths batch together
    start = 0
    while start < n:
        # grow the batch while it fits in max_cells
        stop = start
        rmax = lmax = 1
        while stop < n:
            i = order[stop]
            r2 = max(rmax, len(ref_ids[ref_index[i]]) + 1)
            l2 = max(lmax, len(hyp_ids[i]))
            if stop > start and (stop - start + 1) * r2 * 4 > max_cells:
                break
            rmax, lmax = r2, l2
            stop += 1
        idx = order[start:stop]
        out[idx] = _batch(ref_ids, ref_opt, hyp_ids, ref_index, idx, rmax, lmax, costs)
        start = stop
    return out + null_cost


def _batch(ref_ids, ref_opt, hyp_ids, ref_of_hyp, idx, rmax, lmax, costs: OracleCosts) -> np.ndarray:
    P = len(idx)
    R = rmax - 1
    dt = np.int32
    RW = np.full((P, R), -2, dtype=np.int64)          # -2 padding, -1 '@'
    DEL = np.zeros((P, R), dtype=dt)                   # padding deletes for free (never read)
    rlen = np.empty(P, dtype=np.int64)
    H = np.zeros((P, max(lmax, 1)), dtype=np.int64)
    hlen = np.empty(P, dtype=np.int64)
    for k, i in enumerate(idx.tolist()):
        r = ref_ids[ref_of_hyp[i]]
        o = ref_opt[ref_of_hyp[i]]
        RW[k, :len(r)] = r
        DEL[k, :len(r)] = np.where(r == -1, costs.null_skip, np.where(o, costs.opt_del, costs.dele))
        rlen[k] = len(r)
        h = hyp_ids[i]
        H[k, :len(h)] = h
        hlen[k] = len(h)
    C = np.zeros((P, R + 1), dtype=dt)
    np.cumsum(DEL, axis=1, out=C[:, 1:])
    E = C.copy()                                       # row 0: delete the reference prefix
    ref_is_word = RW >= 0
    sub = np.where(ref_is_word, dt(costs.sub), _SMALL_BIG).astype(dt)
    ins_cost = dt(costs.ins)
    for j in range(int(hlen.max(initial=0))):
        h = H[:, j][:, None]
        X = E + ins_cost
        diag = E[:, :-1] + np.where(RW == h, dt(0), sub)
        np.minimum(X[:, 1:], diag, out=X[:, 1:])
        X -= C
        np.minimum.accumulate(X, axis=1, out=X)
        X += C
        active = j < hlen
        E[active] = X[active]
    return E[np.arange(P), rlen].astype(np.int64)


def first_best(costs: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Index of the first minimum of ``costs`` within each run of equal ``groups`` (sorted)."""
    groups = np.asarray(groups)
    starts = np.flatnonzero(np.concatenate(([True], groups[1:] != groups[:-1])))
    mins = np.minimum.reduceat(costs, starts)
    seg = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(costs))))
    pos = np.where(costs == mins[seg], np.arange(len(costs)), len(costs))
    return np.minimum.reduceat(pos, starts)


# ----------------------------------------------------------------------------------------------
# Which utterances the batch can take
# ----------------------------------------------------------------------------------------------
def linear_reference(ref: RefGraph) -> tuple[list, np.ndarray] | None:
    """(words, optional) when the reference graph is a single chain without fragments, else None."""
    if not ref.is_chain or ref.fragment.any():
        return None
    return list(ref.words), ref.optional.copy()


def candidate_sequences(alts, nonword: Callable[[str], bool], case_sensitive: bool,
                        max_candidates: int) -> tuple[list[list[str]], int | None] | None:
    """The linear hypotheses of an Alternatives with at most one multi-alternative slot
    (prefix + alternative + suffix) and the index of that slot (None: no such slot); None when it
    has several such slots or more than ``max_candidates`` alternatives (use the network DP)."""
    multi = [i for i, s in enumerate(alts.slots) if s.depth > 1]
    if len(multi) > 1:
        return None

    def words(alt):
        ws = [fold_word(w, case_sensitive) for w in alt.words if not nonword(w)]
        return ws if ws or not alt.is_empty else ["@"]

    def plain(slot):  # a one-alternative slot is written as plain CTM words: no '@' for an empty one
        return [w for w in words(slot.best) if w != "@"]

    if not multi:
        return [[w for s in alts.slots for w in plain(s)]], None
    k = multi[0]
    if alts.slots[k].depth > max_candidates:
        return None
    pre = [w for s in alts.slots[:k] for w in plain(s)]
    post = [w for s in alts.slots[k + 1:] for w in plain(s)]
    return [pre + words(a) + post for a in alts.slots[k].alternatives], k
