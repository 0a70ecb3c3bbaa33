"""Vectorized forward/backward passes over an acyclic lattice (used by the N-best, phrase and Kaldi algorithms).

Weights are **costs** (``-ln p``).  In the log semiring ``a (+) b = -ln(e^-a + e^-b)``; in the
tropical semiring ``a (+) b = min(a, b)``.  States are processed in *levels* (longest-path depth
from the states without incoming arcs): no arc joins two states of one level, every arc goes to a
higher level, so each level is one numpy reduction over its states' incoming (forward) or
outgoing (backward) arcs.  The number of numpy calls grows with the lattice's depth, not its size.
Each state's value is the reduction of its own arcs in arc order, so the grouping into levels
does not change any number.
"""
from __future__ import annotations

import numpy as np

from ._batches import state_levels

INF = float("inf")


def _segment_reduce(values: np.ndarray, seg_starts: np.ndarray, log: bool, seg_len: np.ndarray | None = None
                    ) -> np.ndarray:
    """Semiring sum of ``values`` over segments starting at ``seg_starts`` (sorted, non-empty);
    ``seg_len`` (their lengths) may be given when already known."""
    m = np.minimum.reduceat(values, seg_starts)
    if not log:
        return m
    if seg_len is None:
        seg_len = np.empty(len(seg_starts), dtype=np.int64)
        seg_len[:-1] = np.diff(seg_starts)
        seg_len[-1] = len(values) - seg_starts[-1]
    rep = np.repeat(m, seg_len)
    with np.errstate(invalid="ignore", over="ignore"):
        ex = np.exp(-(values - rep))
    ex[~np.isfinite(rep)] = 0.0
    s = np.add.reduceat(ex, seg_starts)
    with np.errstate(divide="ignore"):
        out = m - np.log(s)
    out[~np.isfinite(m)] = INF
    return out


def _run_starts(keys: np.ndarray) -> np.ndarray:
    """Start index of each run of equal values (``keys`` non-empty)."""
    flags = np.empty(len(keys), dtype=bool)
    flags[0] = True
    np.not_equal(keys[1:], keys[:-1], out=flags[1:])
    return np.flatnonzero(flags)


class BlockPlan:
    """The per-level index work of the forward and backward passes over one graph, done once so
    that several passes (e.g. log and tropical) share it.  For each level: the slice of in-arcs
    (forward: arcs ordered by destination level, destination, arc) or out-arcs (backward: by
    source level, source, arc), the segment starts and lengths of the reduction, and the states
    it writes."""

    def __init__(self, num_states, src, dst):
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        by_src = np.argsort(src, kind="stable")
        level = state_levels(num_states, src[by_src], dst[by_src])
        bounds = np.arange(int(level.max(initial=0)) + 2)
        order = np.argsort(level[dst] * num_states + dst, kind="stable")
        dst_sorted = dst[order]
        self.fwd_arcs = order
        self.fwd_src = src[order]
        self.fwd = self._segments(dst_sorted, np.searchsorted(level[dst_sorted], bounds))
        order = np.argsort(level[src] * num_states + src, kind="stable")
        src_sorted = src[order]
        self.bwd_arcs = order
        self.bwd_dst = dst[order]
        self.bwd = self._segments(src_sorted, np.searchsorted(level[src_sorted], bounds))

    @staticmethod
    def _segments(keys, offs):
        out = []
        for i in range(len(offs) - 1):
            lo, hi = int(offs[i]), int(offs[i + 1])
            if lo == hi:
                continue
            seg = _run_starts(keys[lo:hi])
            seg_len = np.diff(np.append(seg, hi - lo))
            out.append((lo, hi, seg, seg_len, keys[lo:hi][seg]))
        return out


def log_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise log-semiring sum of two cost arrays."""
    m = np.minimum(a, b)
    with np.errstate(invalid="ignore", over="ignore"):
        r = m - np.log1p(np.exp(-np.abs(a - b)))
    return np.where(np.isfinite(m), r, INF)


class ForwardBackward:
    """Forward and backward costs of every state, arc posteriors and the total cost.

    Args:
      num_states, src, dst: the topologically numbered graph (arcs sorted by ``src``).
      cost: per-arc cost (already scaled).
      final_cost: per-state final cost (``inf`` = not final).
      log: log semiring (total probability) if true, else tropical (Viterbi).
      start_cost: optional per-state initial costs (default: 0 at state 0, inf elsewhere).

    Attributes: ``alpha`` (forward cost: start to state), ``beta`` (backward cost: state to a final
    state, final cost included), ``total`` (``beta[0]`` or the (+) over starts).
    """

    def __init__(self, num_states, src, dst, cost, final_cost, *, log=True, start_cost=None,
                 plan: BlockPlan | None = None):
        self.num_states = num_states
        self.src, self.dst, self.cost = src, dst, np.asarray(cost, dtype=np.float64)
        self.final_cost = np.asarray(final_cost, dtype=np.float64)
        self.log = log
        self.plan = plan if plan is not None else BlockPlan(num_states, src, dst)
        if start_cost is None:
            start_cost = np.full(num_states, INF)
            start_cost[0] = 0.0
        self.alpha = self._forward(np.asarray(start_cost, dtype=np.float64))
        self.beta = self._backward()
        tot = self.alpha + self.final_cost
        fin = np.isfinite(tot)
        self.total = float(_segment_reduce(tot[fin], np.array([0]), log)[0]) if fin.any() else INF

    def _forward(self, start_cost):
        alpha = start_cost.copy()
        plan, log = self.plan, self.log
        src_sorted, cost_sorted = plan.fwd_src, self.cost[plan.fwd_arcs]
        for lo, hi, seg, seg_len, tgt in plan.fwd:
            red = _segment_reduce(alpha[src_sorted[lo:hi]] + cost_sorted[lo:hi], seg, log, seg_len)
            alpha[tgt] = log_add(alpha[tgt], red) if log else np.minimum(alpha[tgt], red)
        return alpha

    def _backward(self):
        beta = self.final_cost.copy()
        plan, log = self.plan, self.log
        dst_sorted, cost_sorted = plan.bwd_dst, self.cost[plan.bwd_arcs]
        for lo, hi, seg, seg_len, tgt in reversed(plan.bwd):
            red = _segment_reduce(cost_sorted[lo:hi] + beta[dst_sorted[lo:hi]], seg, log, seg_len)
            beta[tgt] = log_add(beta[tgt], red) if log else np.minimum(beta[tgt], red)
        return beta

    def arc_posteriors(self) -> np.ndarray:
        """Posterior probability of each arc (log semiring) or ``exp(-(best through arc - best))``."""
        with np.errstate(invalid="ignore", over="ignore"):
            p = np.exp(-(self.alpha[self.src] + self.cost + self.beta[self.dst] - self.total))
        return np.nan_to_num(p, nan=0.0, posinf=0.0)
