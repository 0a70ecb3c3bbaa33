"""Vectorized forward/backward passes over a topologically numbered lattice (internal helper).

Weights are **costs** (``-ln p``).  In the log semiring ``a (+) b = -ln(e^-a + e^-b)``; in the
tropical semiring ``a (+) b = min(a, b)``.  States are processed in *blocks*: maximal runs of
consecutive state ids with no arc between two states of the same run, so that each block is one
numpy reduction over its incoming (forward) or outgoing (backward) arcs.  The number of blocks is
at most the depth of the lattice, not its size.
"""
from __future__ import annotations

import numpy as np

INF = float("inf")


def state_blocks(num_states: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Block boundaries ``b`` (``blocks = [b[i], b[i+1])``) such that no arc joins two states of
    one block.  States are topologically numbered (``src < dst``)."""
    min_dst = np.full(num_states, num_states, dtype=np.int64)
    if len(src):
        np.minimum.at(min_dst, src, dst)
    bounds = [0]
    reach = num_states  # smallest dst of an arc leaving the current block
    for s, m in enumerate(min_dst.tolist()):
        if s >= reach:
            bounds.append(s)
            reach = m
        elif m < reach:
            reach = m
    bounds.append(num_states)
    return np.asarray(bounds, dtype=np.int64)


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
    """The per-block index work of the forward and backward passes over one graph, done once so
    that several passes (e.g. log and tropical) share it.  For each block: the slice of in-arcs
    (forward, arcs ordered by destination) or out-arcs (backward), the segment starts and
    lengths of the reduction, and the states it writes."""

    def __init__(self, num_states, src, dst, blocks=None):
        self.blocks = state_blocks(num_states, src, dst) if blocks is None else blocks
        order = np.argsort(dst, kind="stable")
        dst_sorted = dst[order]
        self.fwd_arcs = order
        self.fwd_src = src[order]
        self.fwd = self._segments(dst_sorted, np.searchsorted(dst_sorted, self.blocks))
        self.bwd = self._segments(src, np.searchsorted(src, self.blocks))

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

    def __init__(self, num_states, src, dst, cost, final_cost, *, log=True, start_cost=None, blocks=None,
                 plan: BlockPlan | None = None):
        self.num_states = num_states
        self.src, self.dst, self.cost = src, dst, np.asarray(cost, dtype=np.float64)
        self.final_cost = np.asarray(final_cost, dtype=np.float64)
        self.log = log
        self.plan = plan if plan is not None else BlockPlan(num_states, src, dst, blocks)
        self.blocks = self.plan.blocks
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
        cost, dst, log = self.cost, self.dst, self.log
        for lo, hi, seg, seg_len, tgt in reversed(self.plan.bwd):
            red = _segment_reduce(cost[lo:hi] + beta[dst[lo:hi]], seg, log, seg_len)
            beta[tgt] = log_add(beta[tgt], red) if log else np.minimum(beta[tgt], red)
        return beta

    def arc_posteriors(self) -> np.ndarray:
        """Posterior probability of each arc (log semiring) or ``exp(-(best through arc - best))``."""
        with np.errstate(invalid="ignore", over="ignore"):
            p = np.exp(-(self.alpha[self.src] + self.cost + self.beta[self.dst] - self.total))
        return np.nan_to_num(p, nan=0.0, posinf=0.0)
