"""The measures of F4DE ``KWSEval`` over the trials of a keyword-search evaluation: ATWV (the system's
decisions), MTWV (the best single threshold), OTWV (the best threshold per keyword), STWV (the hit list's
recall), with per-keyword counts and the DET points (see :mod:`lattice_tools.kws.score`)."""
from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import FormatError
from .references import perl_num
from .trials import Block, Trials


@dataclass
class OperatingPoint:
    twv: float | None
    p_miss: float | None
    p_fa: float | None
    threshold: float | str | None = None


@dataclass
class TermResult:
    kwid: str
    text: str
    n_true: int
    n_corr: int
    n_fa: int
    n_miss: int
    n_corr_nondet: int
    twv: float | None
    p_miss: float | None
    p_fa: float | None
    evaluated: bool
    otwv: float | None = None
    otwv_threshold: float | None = None
    otwv_p_miss: float | None = None
    otwv_p_fa: float | None = None
    stwv: float | None = None


@dataclass
class KwsScore:
    """Everything KWSEval reports for one set of trials (all keywords, or one condition)."""

    title: str
    tot_dur: float
    tot_trials: int
    beta: float
    blocks: dict[str, Block]
    include_no_targets: bool
    atwv: OperatingPoint
    mtwv: OperatingPoint
    otwv: OperatingPoint
    stwv: OperatingPoint
    terms: list[TermResult]
    det_points: list[tuple[float, float, float, float]]   # (threshold, P_miss, P_FA, TWV), thresholds ascending
    params: dict = field(default_factory=dict)
    segment_based: bool = False

    @property
    def evaluated_blocks(self) -> list[Block]:
        return [b for b in self.blocks.values() if self.is_evaluated(b)]

    def is_evaluated(self, b: Block) -> bool:
        return self.include_no_targets or b.n_true > 0

    def counts(self) -> dict[str, int]:
        ev = self.evaluated_blocks
        return {"keywords": len(ev), "n_true": sum(b.n_true for b in ev), "n_nontarg": sum(b.n_nontarg for b in ev),
                "n_sys": sum(b.n_sys for b in ev), "n_corr": sum(b.n_corr for b in ev),
                "n_corr_nondet": sum(b.no_nontarg for b in ev), "n_fa": sum(b.n_fa for b in ev),
                "n_miss": sum(b.n_miss for b in ev)}

    def to_json(self) -> dict:
        def op(p: OperatingPoint):
            return {"twv": p.twv, "p_miss": p.p_miss, "p_fa": p.p_fa, "threshold": p.threshold}

        return {"title": self.title, "T": self.tot_trials, "total_duration": self.tot_dur, "beta": self.beta,
                "include_no_targets": self.include_no_targets, "counts": self.counts(),
                "atwv": op(self.atwv), "mtwv": op(self.mtwv), "otwv": op(self.otwv), "stwv": op(self.stwv),
                "terms": [t.__dict__ for t in self.terms]}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


class Metric:
    """F4DE's MetricTWV: per-block P_miss/P_FA and their combination."""

    def __init__(self, tot_trials: int, cost: float, value: float, p_target: float):
        self.T = tot_trials
        self.beta = (cost / value) * ((1 / p_target) - 1)

    def p_miss(self, n_miss: int, n_true: int) -> float | None:
        return n_miss / n_true if n_true > 0 else None

    def p_fa(self, n_fa: int, n_true: int) -> float | None:
        # Undefined when every trial is a target (segment scoring: a term in every segment).
        return n_fa / (self.T - n_true) if self.T != n_true else None

    def comb(self, p_miss: float | None, p_fa: float | None) -> float | None:
        if p_miss is None or p_fa is None:
            return None
        return 1 - (p_miss + self.beta * p_fa)

    def block_set(self, counts: Iterable[tuple[int, int, int]]) -> tuple[float | None, float | None, float | None]:
        """(TWV, mean P_miss, mean P_FA) over blocks given as (n_miss, n_fa, n_true)."""
        misses, fas = [], []
        for n_miss, n_fa, n_true in counts:
            m = self.p_miss(n_miss, n_true)
            if m is not None:
                misses.append(m)
            f = self.p_fa(n_fa, n_true)
            if f is not None:
                fas.append(f)
        pm, pf = _mean(misses), _mean(fas)
        return self.comb(pm, pf), pm, pf


def _decision_threshold(blocks: Iterable[Block], path: str) -> float | None:
    min_yes = max_no = None
    for b in blocks:
        if b.min_yes is not None and (min_yes is None or b.min_yes < min_yes):
            min_yes = b.min_yes
        if b.max_no is not None and (max_no is None or b.max_no > max_no):
            max_no = b.max_no
    if min_yes is not None and max_no is not None and max_no > min_yes:
        # F4DE refuses such a system output too: one global threshold cannot explain the decisions.
        raise FormatError(f"inconsistent decisions: a hit with score {perl_num(max_no)} is NO while one with "
                          f"score {perl_num(min_yes)} is YES", path=path or None)
    if max_no is None:
        return min_yes
    if min_yes is None:
        return max_no
    return (min_yes + max_no) / 2


def _score_table(ev: list[Block], attr: str) -> tuple[list[list[float]], np.ndarray, np.ndarray, np.ndarray]:
    """Each evaluated block's ``targ`` or ``nontarg`` scores sorted, and all of them concatenated (blocks in
    order, each ascending) with the block number of each and where each block's run starts."""
    lists = [sorted(getattr(b, attr)) for b in ev]
    sizes = np.fromiter(map(len, lists), np.int64, len(lists))
    flat = np.fromiter(itertools.chain.from_iterable(lists), np.float64, int(sizes.sum()))
    block = np.repeat(np.arange(len(lists)), sizes)
    return lists, flat, block, np.cumsum(sizes) - sizes


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending (np.unique without its import of numpy.ma, ~30 ms)."""
    values = np.sort(values)
    keep = np.ones(len(values), dtype=bool)
    keep[1:] = values[1:] != values[:-1]
    return values[keep]


def _keys(block: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Keys that numpy orders by block, then value (complex numbers sort lexicographically)."""
    keys = np.empty(len(block), dtype=np.complex128)
    keys.real = block
    keys.imag = value
    return keys


def evaluate(trials: Trials, metric: Metric, path: str) -> KwsScore:
    blocks = trials.blocks
    ev = [b for b in sorted(blocks.values(), key=lambda b: b.kwid) if trials.include or b.n_true > 0]
    T = trials.tot_trials
    # Actual decisions.
    atwv, apm, apf = metric.block_set((b.n_miss, b.n_fa, b.n_true) for b in ev)
    act = OperatingPoint(atwv, apm, apf, _decision_threshold(blocks.values(), path))

    # The threshold sweep of F4DE's DETCurve ("UniqThreshold" style): thresholds are the distinct scores of
    # the evaluated blocks, ascending; at threshold t the hits with score >= t are YES.
    targ_l, t_flat, t_block, t_start = _score_table(ev, "targ")
    non_l, n_flat, n_block, n_start = _score_table(ev, "nontarg")
    u = _distinct(np.concatenate((t_flat, n_flat)))
    det_points: list[tuple[float, float, float, float]] = []

    def state(k: int, t: float) -> tuple[int, int]:
        n_miss = ev[k].omitted + bisect.bisect_left(targ_l[k], t)
        n_fa = len(non_l[k]) - bisect.bisect_left(non_l[k], t)
        return n_miss, n_fa

    if not len(u):
        twv, pm, pf = metric.block_set((b.omitted, 0, b.n_true) for b in ev)
        best = OperatingPoint(twv, pm, pf, "NaN")
        opt = OperatingPoint(None, None, None, None)
        sup = OperatingPoint(None, None, None, None)
        per_opt: dict[str, tuple[float, int, int, float]] = {}
    else:
        # Vectorised sweep, O(N log N): the sum over keywords of P_miss (P_FA) at each threshold is a
        # constant plus the weights 1/N_true(k) of the target scores below it (the weights 1/(T - N_true(k))
        # of the non-target scores at or above it).
        n_true = np.fromiter((b.n_true for b in ev), np.int64, len(ev))
        n_m = int((n_true > 0).sum())
        keep = n_true[t_block] > 0
        t_sc = t_flat[keep]
        t_w = 1.0 / n_true[t_block[keep]]
        with np.errstate(divide="ignore"):
            n_w = np.where(T != n_true[n_block], 1.0 / (T - n_true[n_block]), 0.0)
        n_f = sum(1 for b in ev if T != b.n_true)
        base = sum(b.omitted / b.n_true for b in ev if b.n_true > 0)
        miss_sum = np.full(len(u), base)
        if len(t_sc):
            order = np.argsort(t_sc, kind="stable")
            cum = np.concatenate(([0.0], np.cumsum(t_w[order])))
            miss_sum += cum[np.searchsorted(t_sc[order], u, side="left")]
        fa_sum = np.zeros(len(u))
        if len(n_flat):
            order = np.argsort(n_flat, kind="stable")
            cum = np.concatenate(([0.0], np.cumsum(n_w[order])))
            fa_sum += cum[-1] - cum[np.searchsorted(n_flat[order], u, side="left")]
        if n_m:
            twvs = 1 - (miss_sum / n_m + metric.beta * (fa_sum / max(n_f, 1)))
            top = float(twvs.max())
            # The lowest threshold whose TWV equals the maximum; F4DE keeps the first strictly greater value
            # of its ascending sweep.  Values equal up to rounding are compared exactly, per keyword.
            near = np.nonzero(twvs >= top - 1e-9 * max(1.0, abs(top)))[0]
            k_best = _exact_best(near, u, ev, state, T, metric)
            t_best = float(u[k_best])
            best_twv, best_pm, best_pf = metric.block_set((*state(k, t_best), b.n_true) for k, b in enumerate(ev))
            best = OperatingPoint(best_twv, best_pm, best_pf, t_best)
            det_points = list(zip(u.tolist(), (miss_sum / n_m).tolist(), (fa_sum / max(n_f, 1)).tolist(),
                                  twvs.tolist(), strict=True))
        else:
            best_twv, best_pm, best_pf = metric.block_set((*state(k, float(u[0])), b.n_true)
                                                          for k, b in enumerate(ev))
            best = OperatingPoint(best_twv, best_pm, best_pf, float(u[0]))
        per_opt = _optimum_per_keyword(ev, targ_l, non_l, (t_flat, t_block, t_start), (n_flat, n_block, n_start),
                                       u, T, metric)
        o_twv, o_pm, o_pf = metric.block_set((per_opt[k][1], per_opt[k][2], blocks[k].n_true) for k in sorted(per_opt))
        opt = OperatingPoint(o_twv, o_pm, o_pf, None)
        s_twv, s_pm, s_pf = metric.block_set((b.omitted, 0, b.n_true) for b in ev)
        sup = OperatingPoint(s_twv, s_pm, s_pf, None)

    terms = []
    for kwid in sorted(blocks):
        b = blocks[kwid]
        evald = trials.include or b.n_true > 0
        pm = metric.p_miss(b.n_miss, b.n_true)
        pf = metric.p_fa(b.n_fa, b.n_true)
        o = per_opt.get(kwid)
        terms.append(TermResult(kwid, b.text, b.n_true, b.n_corr, b.n_fa, b.n_miss, b.no_nontarg,
                                metric.comb(pm, pf), pm, pf, evald, o[0] if o else None, o[3] if o else None,
                                metric.p_miss(o[1], b.n_true) if o else None, metric.p_fa(o[2], b.n_true) if o else None,
                                metric.comb(metric.p_miss(b.omitted, b.n_true), 0.0) if (evald and len(u)) else None))
    return KwsScore(trials.title, trials.tot_dur, T, metric.beta, blocks, trials.include, act, best, opt, sup, terms,
                    det_points)


def _optimum_threshold(targets, nontargets, n_target_misses: int, n_fa: int, t: float) -> float:
    """F4DE's reported threshold of a keyword's optimum (OTWV) operating point at score ``t``: from the next
    non-target score after the ``n_fa`` false alarms and the next target score after the ``n_target_misses``
    misses of scored targets (``targets``/``nontargets``: the keyword's sorted scores), whichever exist."""
    fa_t = nontargets[n_fa] if n_fa < len(nontargets) else None
    mi_t = targets[n_target_misses] if n_target_misses < len(targets) else None
    if fa_t is not None and mi_t is not None:
        return min(fa_t, mi_t) if (fa_t > t and mi_t > t) else max(fa_t, mi_t, t)
    if fa_t is not None:
        return fa_t if fa_t > t else t
    return mi_t if (mi_t is not None and mi_t > t) else t


def _optimum_per_keyword(ev, targ_l, non_l, targ_table, non_table, u, T, metric) -> dict:
    """F4DE's optimum (per keyword) threshold of every keyword with targets: kwid -> (TWV, N_miss, N_FA,
    threshold).  A keyword's counts change only at its own scores; the state that rejects its scores up to s
    first appears at the next global threshold above s, and F4DE keeps the first of equal values (the lowest
    threshold).  All candidates of all keywords are evaluated at once."""
    t_flat, t_block, t_start = targ_table
    n_flat, n_block, n_start = non_table
    n_true = np.fromiter((b.n_true for b in ev), np.int64, len(ev))
    omitted = np.fromiter((b.omitted for b in ev), np.int64, len(ev))
    n_non = np.fromiter((len(x) for x in non_l), np.int64, len(ev))
    live = (n_true > 0) & (n_true != T)
    # Candidates: the lowest threshold, then the next threshold above each own score.
    own_block = np.concatenate((t_block, n_block))
    own = np.concatenate((t_flat, n_flat))
    nxt = np.searchsorted(u, own, side="right")
    ok = nxt < len(u)
    c_block = np.concatenate((np.nonzero(live)[0], own_block[ok]))
    c_t = np.concatenate((np.full(int(live.sum()), u[0]), u[nxt[ok]]))
    sel = live[c_block]
    c_block, c_t = c_block[sel], c_t[sel]
    keys = _keys(c_block, c_t)
    n_miss = omitted[c_block] + (np.searchsorted(_keys(t_block, t_flat), keys, side="left") - t_start[c_block])
    n_fa = n_non[c_block] - (np.searchsorted(_keys(n_block, n_flat), keys, side="left") - n_start[c_block])
    nt = n_true[c_block]
    c = 1 - (n_miss / nt + metric.beta * (n_fa / (T - nt)))
    pick = np.lexsort((c_t, -c, c_block))
    first = np.ones(len(pick), dtype=bool)
    first[1:] = c_block[pick[1:]] != c_block[pick[:-1]]
    per_opt = {}
    for j in pick[first].tolist():
        k = int(c_block[j])
        t, nm, nf = float(c_t[j]), int(n_miss[j]), int(n_fa[j])
        targ, nontarg = targ_l[k], non_l[k]
        per_opt[ev[k].kwid] = (float(c[j]), nm, nf, _optimum_threshold(targ, nontarg, nm - ev[k].omitted, nf, t))
    return per_opt


def _exact_best(near, u, ev, state, T, metric) -> int:
    """Index of the lowest threshold among ``near`` whose TWV is exactly maximal (rational arithmetic)."""
    from fractions import Fraction

    if len(near) == 1:
        return int(near[0])
    beta = Fraction(metric.beta)
    n_m = sum(1 for b in ev if b.n_true > 0)
    best_k, best_v = None, None
    for k in near:
        t = float(u[k])
        miss = Fraction(0)
        fa = Fraction(0)
        for j, b in enumerate(ev):
            n_miss, n_fa = state(j, t)
            if b.n_true > 0:
                miss += Fraction(n_miss, b.n_true)
            if T != b.n_true:
                fa += Fraction(n_fa, T - b.n_true)
        v = 1 - (miss / n_m + beta * fa / max(1, sum(1 for b in ev if T != b.n_true)))
        if best_v is None or v > best_v:
            best_k, best_v = int(k), v
    assert best_k is not None, "near holds the maximum"
    return best_k


__all__ = ["OperatingPoint", "TermResult", "KwsScore", "Metric", "evaluate"]
