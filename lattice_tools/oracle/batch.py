"""Batched edit costs of many word sequences against linear references (the N-best fast path).

An N-best block is a set of *linear* hypotheses; against a linear reference (a trn/STM transcript
without alternations) its oracle is the cheapest of the per-alternative edit costs.  Computing
those costs for every (reference, alternative) pair at once is a textbook Levenshtein recursion
vectorized over pairs: one step per hypothesis position, each step O(pairs x reference length),
with the within-column deletion chain done as a cumulative minimum::

    E[j, r] = min( E[j-1, r] + ins(h_j),  E[j-1, r-1] + pair(h_j, ref_r),  E[j, r-1] + del(ref_r) )
    E[j, r] = C[r] + min_{r' <= r} (X[j, r'] - C[r'])   with C the cumulative deletion cost

Costs are the integer costs of :mod:`lattice_tools.oracle.lattice_oracle` (sclite weights x1000,
or Levenshtein), so the minimum over a block's alternatives is exactly the network oracle's cost.
Which of several equal-cost alternatives sclite reports is *not* simply the first listed
(measured: its arc-pair DP breaks ties cell by cell); :func:`alternatives_oracle_many` therefore
cuts the block to its minimum-cost alternatives and lets the scorer's sclite-exact DP choose --
dropping strictly worse parallel branches cannot change that choice.  In Levenshtein mode the
first listed minimum (:func:`first_best`) is reported.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .lattice_oracle import CostModel, cost_model

# int32 halves the memory traffic of the batch; a sentinel of 2^30 is far above any real total
# (sclite costs are x1000: 4000 per word) and two of them still fit.
_SMALL_BIG = np.int32(1 << 29)


def linear_costs(refs: Sequence[Sequence], optional: Sequence[Sequence[bool]] | None,
                 hyps: Sequence[Sequence[str]], ref_of_hyp: Sequence[int], *, mode: str | CostModel = "sclite",
                 max_cells: int = 20_000_000) -> np.ndarray:
    """Edit cost of ``hyps[i]`` against ``refs[ref_of_hyp[i]]`` for every ``i`` (int64, mode units x scale).

    Args:
      refs: linear references (already case-folded words; ``None`` = the null word ``@``).
      optional: per reference word, whether it is optionally deletable (``-D``); None = none.
      hyps: hypothesis word sequences (already case-folded; ``@`` words are skipped as sclite does).
      ref_of_hyp: index into ``refs`` per hypothesis.
    """
    costs = cost_model(mode)
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
    ref_of_hyp = np.asarray(ref_of_hyp, dtype=np.int64)
    order = np.argsort([len(h) for h in hyp_ids], kind="stable")  # similar lengths batch together
    start = 0
    while start < n:
        # grow the batch while it fits in max_cells
        stop = start
        rmax = lmax = 1
        while stop < n:
            i = order[stop]
            r2 = max(rmax, len(ref_ids[ref_of_hyp[i]]) + 1)
            l2 = max(lmax, len(hyp_ids[i]))
            if stop > start and (stop - start + 1) * r2 * 4 > max_cells:
                break
            rmax, lmax = r2, l2
            stop += 1
        idx = order[start:stop]
        out[idx] = _batch(ref_ids, ref_opt, hyp_ids, ref_of_hyp, idx, rmax, lmax, costs)
        start = stop
    return out + null_cost


def _batch(ref_ids, ref_opt, hyp_ids, ref_of_hyp, idx, rmax, lmax, costs: CostModel) -> np.ndarray:
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
# Many utterances at once
# ----------------------------------------------------------------------------------------------
def _linear_reference(ref):
    """(words, optional) when the reference graph is a single chain, else None."""
    if ref.num_arcs != ref.num_states - 1:
        return None
    if not (np.array_equal(ref.src, np.arange(ref.num_arcs)) and np.array_equal(ref.dst, ref.src + 1)):
        return None
    if ref.fragment.any():
        return None
    return list(ref.words), ref.optional.copy()


def _candidates(alts, nonword, case_sensitive: bool, max_candidates: int):
    """The linear hypotheses of an Alternatives with at most one multi-alternative slot
    (prefix + alternative + suffix), or None when it has several (use the network DP)."""
    from .lattice_oracle import _fold

    multi = [i for i, s in enumerate(alts.slots) if s.depth > 1]
    if len(multi) > 1:
        return None

    def words(alt):
        ws = [_fold(w, case_sensitive) for w in alt.words if not nonword(w)]
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


def alternatives_oracle_many(alts_list, references, *, mode: str = "sclite", optional_deletable: bool = False,
                             case_sensitive: bool = False, nonword=None, max_candidates: int = 100000):
    """:func:`~lattice_tools.oracle.lattice_oracle.alternatives_oracle` for many utterances at once.

    Utterances whose alternatives have at most one multi-alternative slot (N-best lists, 1-best,
    one ALT block per segment) and whose reference is linear go through the batched Levenshtein
    of :func:`linear_costs` (one vectorized pass for all their candidate sequences); sclite's
    choice among tied alternatives is the first listed, and the counts are the scorer's alignment
    of the chosen sequence.  The others use the network DP.  Results are in input order and equal
    the per-utterance function's.
    """
    from .lattice_oracle import (
        OracleResult,
        _scorer_network,
        is_nonword,
        network_alternatives_oracle,
        ref_graph,
        sequence_oracle,
    )

    nonword = nonword or is_nonword
    costs = cost_model(mode)
    refs = list(references)
    out: list = [None] * len(alts_list)
    lin_refs, lin_opt, hyps, owner, which = [], [], [], [], []
    fast = []
    for u, (alts, reference) in enumerate(zip(alts_list, refs, strict=False)):
        rg = ref_graph(reference, case_sensitive=case_sensitive, optional_deletable=optional_deletable)
        lin = _linear_reference(rg)
        eligible = lin is not None and (costs.name != "sclite" or _scorer_network(reference, case_sensitive) is not None)
        cand = _candidates(alts, nonword, case_sensitive, max_candidates) if eligible else None
        if cand is None:
            out[u] = network_alternatives_oracle(alts, reference, mode=mode, optional_deletable=optional_deletable,
                                                 case_sensitive=case_sensitive, nonword=nonword)
            continue
        seqs, _ = cand
        lin_refs.append(lin[0])
        lin_opt.append(lin[1])
        ridx = len(lin_refs) - 1
        for j, seq in enumerate(seqs):
            hyps.append(seq)
            owner.append(ridx)
            which.append(j)
        fast.append((u, ridx, seqs))
    if fast:
        c = linear_costs(lin_refs, lin_opt, hyps, owner, mode=costs)
        owner_arr = np.asarray(owner)
        best = first_best(c, owner_arr)
        chosen = {}
        for (u, ridx, seqs), b in zip(fast, best.tolist(), strict=False):
            chosen[u] = (hyps[b], int(c[b]))
        if costs.name == "sclite":
            # sclite's choice among equal-cost alternatives is not simply the first listed: run the
            # scorer's sclite-exact network DP on the block cut to its minimum-cost alternatives
            # (removing strictly worse parallel branches cannot change its choice among the rest).
            from dataclasses import replace as dc_replace

            from ..scoring.align import AlignOptions, align_batch
            from ..scoring.counts import ErrorCounts
            from .lattice_oracle import _alternatives_network

            mins = np.minimum.reduceat(c, np.flatnonzero(np.concatenate(([True], owner_arr[1:] != owner_arr[:-1]))))
            us, ref_nets, hyp_nets = [], [], []
            pos = 0
            for (u, ridx, seqs), m in zip(fast, mins.tolist(), strict=False):
                alts = alts_list[u]
                k = next((i for i, sl in enumerate(alts.slots) if sl.depth > 1), None)
                if k is not None:
                    keep = tuple(a for a, cc in zip(alts.slots[k].alternatives, c[pos:pos + len(seqs)].tolist(), strict=False)
                                 if cc == m)
                    slots = list(alts.slots)
                    slots[k] = dc_replace(slots[k], alternatives=keep)
                    alts = dc_replace(alts, slots=tuple(slots))
                pos += len(seqs)
                us.append(u)
                ref_nets.append(_scorer_network(refs[u], case_sensitive))
                # a block cut to its empty branch stays a block: sclite's '@' costs 0.001
                hyp_nets.append(_alternatives_network(alts, None, case_sensitive, blocks={k} if k is not None else None))
            aligned = align_batch(ref_nets, hyp_nets, AlignOptions("sclite", optional_deletable=optional_deletable))
            for u, a in zip(us, aligned, strict=False):
                counts = a.counts if a.counts.segments else a.counts + ErrorCounts(segments=1,
                                                                                     segment_errors=int(a.counts.errors > 0))
                words = tuple(p.hyp for p in a.pairs if p.hyp is not None and p.hyp != "@")
                out[u] = OracleResult(key=alts_list[u].key, mode=costs.name, counts=counts,
                                      cost=chosen[u][1] / costs.scale, words=words, starts=(), durations=(),
                                      alignment=())
        else:
            for u, _, _ in fast:
                r = sequence_oracle([w for w in chosen[u][0] if w != "@"], refs[u], mode=costs,
                                    case_sensitive=True, optional_deletable=optional_deletable)
                out[u] = OracleResult(key=alts_list[u].key, mode=costs.name, counts=r.counts, cost=chosen[u][1],
                                      words=r.words, starts=(), durations=(), alignment=r.alignment)
    return out
