"""Keyword-search scoring identical to NIST F4DE ``KWSEval`` (occurrence-based): ATWV, MTWV, OTWV, STWV.

What is computed, and how (each rule checked against F4DE 3.5.0's code and golden tests):

* **Reference occurrences** of a term (``find_occurrences``): LEXEME records of one speaker, in time order;
  the first word is looked up exactly (lower-cased on both sides when the KWlist says
  ``compareNormalize="lowercase"``), each next word must be the speaker's next LEXEME, equal ignoring
  case, starting at most ``find_threshold`` (0.5 s) after the previous word ends (gap rounded to 0.1 ms).
  ``frag`` and ``fp`` words never start a term (and, not matching a term word, break one).  An
  occurrence counts when its first word lies inside an ECF excerpt.
* **Hits** count when ``[tbeg, tbeg + dur]`` lies inside an ECF excerpt.
* **Matching** per (term, file, channel): a hit may match an occurrence when its midpoint lies within
  ``[ref_begin - 0.5 s, ref_end + 0.5 s]``; the kernel value ``1 + 1e-8 * time_overlap/ref_dur +
  1e-6 * (score - min)/(max - min)`` ranks pairs; hits and occurrences are paired 1:1 by a maximum
  cardinality, maximum kernel-sum matching (:mod:`lattice_tools.kws.matching`).
* **Trials**: a matched hit is a target trial (correct when YES, a miss when NO), an unmatched occurrence
  a miss, an unmatched hit a non-target trial (false alarm when YES).  ``T`` = the ECF's total excerpt
  duration (``splitcts`` halves) / trials per second, rounded.
* **Measures** per keyword ``k`` with ``N_true(k) > 0`` (all keywords with ``include_no_targets``):
  ``P_miss = 1 - N_corr/N_true``, ``P_FA = N_FA / (T - N_true)``; ``TWV = 1 - mean P_miss - beta * mean P_FA``
  with ``beta = C/V * (1/P_target - 1) = 999.9``.  ATWV uses the system's decisions; MTWV the best single
  threshold among the distinct scores (every hit with score >= threshold is YES; the lowest threshold
  wins ties); OTWV the best threshold per keyword; STWV every hit YES and no false alarms (the
  keyword-averaged recall of the hit list).
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import FormatError, MismatchError
from ..io.ecf import Ecf
from ..io.kwlist import KwList
from ..io.kwslist import KwsList
from ..io.rttm import RttmRecord
from .matching import match
from .types import Detection, KeywordTerm

# F4DE's matching kernel weights (KWSAlignment.pm).
EPSILON_TIME = 1e-8
EPSILON_SCORE = 1e-6


def perl_num(x: float) -> str:
    """A number as Perl prints it (``%.15g``)."""
    if x != x:
        return "NaN"
    return format(x, ".15g")


def _r4(x: float) -> float:
    # Same double as float(sprintf("%.4f", x)): both round the exact binary value correctly.
    return round(x, 4)


def char_split(text: str, not_ascii: bool = False, delete_hyphens: bool = False) -> str:
    """F4DE's ``charsplit`` text prefilter: one token per character (``notASCII``: ASCII runs stay
    whole; ``deleteHyphens``: hyphens become spaces)."""
    out = " ".join(text)
    if not_ascii:
        for _ in range(2):
            out = re.sub(r"([\x01-\x7f])\s+([\x01-\x7f])", r"\1\2", out)
    if delete_hyphens:
        out = out.replace("-", " ")
    return " ".join(out.split())


@dataclass
class _Tok:
    file: str
    chan: str
    bt: float
    et: float          # begin + duration, rounded to 0.1 ms (F4DE)
    raw_bt: str
    token: str
    stype: str
    spkr: str
    nxt: _Tok | None = None
    seg: _Segment | None = None     # segment scoring: the speech segment the word lies in


@dataclass(eq=False)
class _Segment:
    type: str
    file: str
    chan: str
    bt: float
    et: float


def _segments_of(speakers: list[RttmRecord], by_spkr: dict, file: str, chan: str, bt: float, dur: float
                 ) -> list[_Segment]:
    """F4DE's ``segmentsFromTimeframe``: an excerpt cut into speech (merged speaker turns) and non-speech
    segments; each word of a turn is tagged with the segment holding it."""
    segs: list[_Segment] = []
    et = _r4(bt + dur)

    def last_et():
        return segs[-1].et if segs else bt

    for sp in sorted(speakers, key=lambda r: r.tbeg):
        sp_bt, sp_et = sp.tbeg, _r4(sp.tbeg + sp.dur)
        if sp_bt < bt or sp_et > et:
            continue
        if sp_bt > last_et():
            segs.append(_Segment("NONSPEECH", file, chan, last_et(), _r4(sp_bt)))
        if last_et() == sp_bt:
            segs.append(_Segment("SPEECH", file, chan, sp_bt, sp_et))
        elif segs and segs[-1].type == "SPEECH" and sp_et > last_et():
            segs[-1].et = sp_et
        if segs:
            last = segs[-1]
            for tok in by_spkr.get((file, chan, sp.speaker), ()):
                if tok.bt >= last.bt and tok.et <= last.et:
                    tok.seg = last
    if last_et() < et:
        segs.append(_Segment("NONSPEECH", file, chan, last_et(), et))
    return segs


class ReferenceIndex:
    """The LEXEME records of a reference, linked per speaker, with a lookup by first word."""

    def __init__(self, records: Iterable[RttmRecord], *, lowercase: bool = False, char_split_text: bool = False,
                 not_ascii: bool = False, delete_hyphens: bool = False):
        self.lowercase = lowercase
        self.by_spkr = by_spkr = {}
        self.lookup: dict[str, list[_Tok]] = {}
        for r in records:
            if r.type != "LEXEME":
                continue
            text = r.ortho
            if char_split_text:
                text = char_split(text, not_ascii, delete_hyphens)
            tokens = re.split(r"\s", text) if char_split_text else [text]
            raw_bt = r.raw_tbeg or perl_num(r.tbeg)
            bt, dur = r.tbeg, r.dur
            n = len(tokens)
            for i, token in enumerate(tokens):
                if n > 1:
                    # F4DE spreads a split word's duration evenly, rounding to ms.
                    d_s = f"{r.dur / n:.3f}"
                    dur = float(d_s)
                    raw_bt = f"{r.tbeg + dur * i:.3f}"
                    bt = float(raw_bt)
                tok = _Tok(r.file, r.channel, bt, _r4(bt + dur), raw_bt, token, r.subtype, r.speaker)
                by_spkr.setdefault((r.file, r.channel, r.speaker), []).append(tok)
                if r.subtype not in ("frag", "fp"):
                    self.lookup.setdefault(self.normalize(token), []).append(tok)
        for recs in by_spkr.values():
            ordered = sorted(recs, key=lambda t: t.bt)   # stable, like Perl's merge sort
            # F4DE links the i-th record *in file order* to the (i+1)-th *in time order*; on a
            # time-sorted RTTM that is simply "the speaker's next word".  Kept as is for identical results.
            for i in range(len(recs) - 1):
                recs[i].nxt = ordered[i + 1]

    def normalize(self, token: str) -> str:
        return token.lower() if self.lowercase else token

    def find_occurrences(self, text: str, find_threshold: float = 0.5) -> list[list[_Tok]]:
        words = self.normalize(text.strip()).split()
        if not words:
            raise FormatError(f"empty term {text!r}")
        if len(words) == 1:
            return [[t] for t in self.lookup.get(words[0], ())]
        out = []
        folded = [w.casefold() for w in words]
        for first in self.lookup.get(words[0], ()):
            occ = [first]
            hop = first
            ok = True
            for w in folded[1:]:
                nxt = hop.nxt
                if nxt is not None and _r4(nxt.bt - hop.et) <= find_threshold and nxt.token.casefold() == w:
                    occ.append(nxt)
                    hop = nxt
                else:
                    ok = False
                    break
            if ok:
                out.append(occ)
        return out


@dataclass
class Block:
    """The trials of one keyword (F4DE's block)."""

    kwid: str
    text: str
    targ: list[float] = field(default_factory=list)
    nontarg: list[float] = field(default_factory=list)
    yes_targ: int = 0
    no_targ: int = 0
    omitted: int = 0
    yes_nontarg: int = 0
    no_nontarg: int = 0
    min_yes: float | None = None
    max_no: float | None = None

    def add(self, score: float | None, decision: bool | None, is_targ: bool) -> None:
        if decision is None:                       # an occurrence no hit was matched to
            self.omitted += 1
            return
        (self.targ if is_targ else self.nontarg).append(score)
        if decision:
            if is_targ:
                self.yes_targ += 1
            else:
                self.yes_nontarg += 1
            if self.min_yes is None or score < self.min_yes:
                self.min_yes = score
        else:
            if is_targ:
                self.no_targ += 1
            else:
                self.no_nontarg += 1
            if self.max_no is None or score > self.max_no:
                self.max_no = score

    @property
    def n_true(self) -> int:
        return self.yes_targ + self.no_targ + self.omitted

    @property
    def n_corr(self) -> int:
        return self.yes_targ

    @property
    def n_fa(self) -> int:
        return self.yes_nontarg

    @property
    def n_miss(self) -> int:
        return self.no_targ + self.omitted

    @property
    def n_nontarg(self) -> int:
        return self.yes_nontarg + self.no_nontarg

    @property
    def n_sys(self) -> int:
        return len(self.targ) + len(self.nontarg)


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


@dataclass(frozen=True)
class AlignmentRow:
    """One line of F4DE's alignment CSV."""

    kwid: str
    text: str
    file: str
    channel: str
    ref_tbeg: str
    ref_tend: str
    sys_tbeg: str
    sys_tend: str
    sys_score: str
    sys_decision: str
    alignment: str


@dataclass
class KwsEvaluation:
    """The result of :func:`score_kws`: the overall scores, the conditional ones, the alignment."""

    overall: KwsScore
    conditions: dict[str, KwsScore]
    # (kwid, file, channel, occurrence or None, detection index or None, alignment label): formatted into
    # AlignmentRow only when asked for (most runs never print the alignment).
    raw_alignment: list[tuple] = field(repr=False, default_factory=list)
    language: str = ""
    system_id: str = ""
    kwslist: KwsList | None = field(repr=False, default=None)
    texts: dict[str, str] = field(repr=False, default_factory=dict)

    @property
    def alignment(self) -> list[AlignmentRow]:
        kws = self.kwslist
        raw = kws.raw if kws is not None else ()
        rows = []
        for kwid, file, chan, occ, i, label in self.raw_alignment:
            if occ is not None:
                ref_b, ref_e = occ[0].raw_bt, f"{occ[-1].et:.4f}"
            else:
                ref_b = ref_e = ""
            if i is not None:
                # F4DE prints tbeg and score as written, the end as a Perl number.
                d = kws.detections[i]
                tb, _du, sc = raw[i] if raw else (perl_num(d.tbeg), perl_num(d.dur), perl_num(d.score))
                sys_f = (tb, perl_num(d.tbeg + d.dur), sc, "YES" if d.decision else "NO")
            else:
                sys_f = ("", "", "", "")
            rows.append(AlignmentRow(kwid, self.texts[kwid], file, chan, ref_b, ref_e, *sys_f, label))
        return rows


class _Trials:
    def __init__(self, title: str, tot_dur: float, trials_per_second: float, include_no_targets: bool,
                 tot_trials: int | None = None):
        self.title = title
        self.tot_dur = tot_dur
        self.trials_per_second = trials_per_second
        self.include = include_no_targets
        # F4DE: sprintf("%.0f", TotDur / TrialsPerSecond) -- round half to even.
        self.tot_trials = int(f"{tot_dur / trials_per_second:.0f}") if tot_trials is None else tot_trials
        self.blocks: dict[str, Block] = {}

    def block(self, kwid: str, text: str) -> Block:
        b = self.blocks.get(kwid)
        if b is None:
            b = self.blocks[kwid] = Block(kwid, text)
        return b


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


class _Metric:
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


def _evaluate(trials: _Trials, metric: _Metric, path: str) -> KwsScore:
    blocks = trials.blocks
    ev = [b for b in sorted(blocks.values(), key=lambda b: b.kwid) if trials.include or b.n_true > 0]
    T = trials.tot_trials
    # Actual decisions.
    atwv, apm, apf = metric.block_set((b.n_miss, b.n_fa, b.n_true) for b in ev)
    act = OperatingPoint(atwv, apm, apf, _decision_threshold(blocks.values(), path))

    # The threshold sweep of F4DE's DETCurve ("UniqThreshold" style): thresholds are the distinct scores of
    # the evaluated blocks, ascending; at threshold t the hits with score >= t are YES.
    targ = {b.kwid: sorted(b.targ) for b in ev}
    nontarg = {b.kwid: sorted(b.nontarg) for b in ev}
    all_scores = sorted({s for b in ev for s in targ[b.kwid]} | {s for b in ev for s in nontarg[b.kwid]})
    det_points: list[tuple[float, float, float, float]] = []
    def state(b: Block, t: float) -> tuple[int, int]:
        n_miss = b.omitted + bisect.bisect_left(targ[b.kwid], t)
        n_fa = len(nontarg[b.kwid]) - bisect.bisect_left(nontarg[b.kwid], t)
        return n_miss, n_fa

    if not all_scores:
        twv, pm, pf = metric.block_set((b.omitted, 0, b.n_true) for b in ev)
        best = OperatingPoint(twv, pm, pf, "NaN")
        opt = OperatingPoint(None, None, None, None)
        sup = OperatingPoint(None, None, None, None)
        per_opt: dict[str, tuple[float, float, float, float]] = {}
    else:
        # Vectorised sweep, O(N log N): the sum over keywords of P_miss (P_FA) at each threshold is a
        # constant plus the weights 1/N_true(k) of the target scores below it (the weights 1/(T - N_true(k))
        # of the non-target scores at or above it).
        u = np.asarray(all_scores)
        n_m = sum(1 for b in ev if b.n_true > 0)
        t_sc = [s for b in ev if b.n_true > 0 for s in targ[b.kwid]]
        t_w = [1.0 / b.n_true for b in ev if b.n_true > 0 for _ in targ[b.kwid]]
        n_sc = [s for b in ev for s in nontarg[b.kwid]]
        n_w = [1.0 / (T - b.n_true) if T != b.n_true else 0.0 for b in ev for _ in nontarg[b.kwid]]
        n_f = sum(1 for b in ev if T != b.n_true)
        base = sum(b.omitted / b.n_true for b in ev if b.n_true > 0)
        miss_sum = np.full(len(u), base)
        if t_sc:
            order = np.argsort(t_sc, kind="stable")
            ts = np.asarray(t_sc)[order]
            cum = np.concatenate(([0.0], np.cumsum(np.asarray(t_w)[order])))
            miss_sum += cum[np.searchsorted(ts, u, side="left")]
        fa_sum = np.zeros(len(u))
        if n_sc:
            order = np.argsort(n_sc, kind="stable")
            ns = np.asarray(n_sc)[order]
            cum = np.concatenate(([0.0], np.cumsum(np.asarray(n_w)[order])))
            fa_sum += cum[-1] - cum[np.searchsorted(ns, u, side="left")]
        if n_m:
            twvs = 1 - (miss_sum / n_m + metric.beta * (fa_sum / max(n_f, 1)))
            top = float(twvs.max())
            # The lowest threshold whose TWV equals the maximum; F4DE keeps the first strictly greater value
            # of its ascending sweep.  Values equal up to rounding are compared exactly, per keyword.
            near = np.nonzero(twvs >= top - 1e-9 * max(1.0, abs(top)))[0]
            k_best = _exact_best(near, u, ev, state, T, metric)
            t_best = float(u[k_best])
            best_twv, best_pm, best_pf = metric.block_set((*state(b, t_best), b.n_true) for b in ev)
            best = OperatingPoint(best_twv, best_pm, best_pf, t_best)
            for k in range(len(u)):
                det_points.append((float(u[k]), float(miss_sum[k] / n_m), float(fa_sum[k] / max(n_f, 1)), float(twvs[k])))
        else:
            best_twv, best_pm, best_pf = metric.block_set((*state(b, float(u[0])), b.n_true) for b in ev)
            best = OperatingPoint(best_twv, best_pm, best_pf, float(u[0]))
        # Optimum (per keyword) and supremum.
        per_opt = {}
        for b in ev:
            if b.n_true == 0 or T == b.n_true:
                continue
            # The keyword's counts change only at its own scores; the state that rejects its scores up to
            # s first appears at the next global threshold above s (F4DE keeps the first of equal values).
            own = sorted(set(targ[b.kwid]) | set(nontarg[b.kwid]))
            cand = [all_scores[0]]
            for s_own in own:
                j = bisect.bisect_right(all_scores, s_own)
                if j < len(all_scores):
                    cand.append(all_scores[j])
            best_b = None
            for t in cand:
                n_miss, n_fa = state(b, t)
                c = metric.comb(metric.p_miss(n_miss, b.n_true), metric.p_fa(n_fa, b.n_true))
                if best_b is None or c > best_b[0]:
                    best_b = (c, n_miss, n_fa, t)
            c, n_miss, n_fa, t = best_b
            fa_t = nontarg[b.kwid][n_fa] if n_fa < len(nontarg[b.kwid]) else None
            k_mi = n_miss - b.omitted
            mi_t = targ[b.kwid][k_mi] if k_mi < len(targ[b.kwid]) else None
            if fa_t is not None and mi_t is not None:
                thr = min(fa_t, mi_t) if (fa_t > t and mi_t > t) else max(fa_t, mi_t, t)
            elif fa_t is not None:
                thr = fa_t if fa_t > t else t
            else:
                thr = mi_t if (mi_t is not None and mi_t > t) else t
            per_opt[b.kwid] = (c, n_miss, n_fa, thr)
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
                                metric.comb(metric.p_miss(b.omitted, b.n_true), 0.0) if (evald and all_scores) else None))
    return KwsScore(trials.title, trials.tot_dur, T, metric.beta, blocks, trials.include, act, best, opt, sup, terms,
                    det_points)


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
        for b in ev:
            n_miss, n_fa = state(b, t)
            if b.n_true > 0:
                miss += Fraction(n_miss, b.n_true)
            if T != b.n_true:
                fa += Fraction(n_fa, T - b.n_true)
        v = 1 - (miss / n_m + beta * fa / max(1, sum(1 for b in ev if T != b.n_true)))
        if best_v is None or v > best_v:
            best_k, best_v = int(k), v
    return best_k


def _belongs(by_chan: dict, file: str, chan: str, bt: float, et: float) -> bool:
    for ex_tbeg, ex_tend in by_chan.get((file, chan), ()):
        if bt >= ex_tbeg and et <= ex_tend:
            return True
    return False


def score_kws(ecf: Ecf, references: Sequence[RttmRecord], kwlist: KwList | Sequence[KeywordTerm],
              kwslist: KwsList, *, find_threshold: float = 0.5, similarity_threshold: float = 0.5,
              include_no_targets: bool = False, just_system_terms: bool = False,
              trials_per_second: float = 1.0, prob_of_term: float = 0.0001, cost: float = 0.1, value: float = 1.0,
              char_split_text: bool = False, not_ascii: bool = False, delete_hyphens: bool = False,
              lowercase: bool | None = None, source_type_groups: dict[str, list[str]] | None = None,
              attribute_queries: Sequence[str] = (), outside_ecf: str = "error",
              segment_based: bool = False) -> KwsEvaluation:
    """Score a system's detections like F4DE's ``KWSEval.pl`` (occurrence alignment, or segment alignment
    with ``segment_based``).

    Args:
      ecf, references, kwlist, kwslist: the evaluation's ECF, the reference LEXEMEs (from an RTTM or a CTM),
        the keyword list and the system output.
      find_threshold: largest gap (s) between consecutive words of a reference occurrence (F4DE ``-F``).
      similarity_threshold: a hit may match an occurrence when its midpoint is at most this far (s) outside
        it (F4DE ``-S``).
      include_no_targets: average over keywords without reference occurrences too (F4DE ``-inc``).
      just_system_terms: only score keywords present in the kwslist (F4DE ``-j``).
      trials_per_second, prob_of_term, cost, value: F4DE ``-n``, ``-p``, ``-k``, ``-K``.
      char_split_text, not_ascii, delete_hyphens: F4DE's ``-x charsplit|notASCII|deleteHyphens``.
      lowercase: compare lower-cased first words (default: the KWlist's ``compareNormalize``).
      source_type_groups: conditional scores per group of ECF source types (F4DE ``-Y NAME:type,type``).
      attribute_queries: conditional scores per value of KWlist ``kwinfo`` attributes (F4DE ``-q``).
      outside_ecf: ``"error"`` (default): a hit for a file/channel the ECF does not name is an error;
        ``"ignore"``: such hits are dropped, as F4DE does silently.
      segment_based: F4DE ``-g``: the trials are the speech/non-speech segments of the ECF excerpts (from the
        RTTM's SPEAKER turns, which ``references`` must then include); a keyword is a target of a segment
        holding a whole occurrence; the best-scoring hit whose midpoint falls in a segment is its detection.
    Raises:
      MismatchError for kwslist keywords missing from the KWlist or hits outside the ECF's files;
      FormatError for decisions no single threshold explains, or an empty term.
    """
    if outside_ecf not in ("error", "ignore"):
        raise ValueError("outside_ecf must be 'error' or 'ignore'")
    if isinstance(kwlist, KwList):
        kwl = kwlist
    else:
        kwl = KwList(tuple(kwlist))
    if lowercase is None:
        lowercase = kwl.compare_normalize == "lowercase"
    texts: dict[str, str] = {}
    for t in kwl.terms:
        if t.kwid in texts:
            raise MismatchError(f"duplicate keyword id {t.kwid!r} in the keyword list", key=t.kwid)
        text = t.text
        if char_split_text:
            text = char_split(text, not_ascii, delete_hyphens)
        texts[t.kwid] = text
    refs = ReferenceIndex(references, lowercase=lowercase, char_split_text=char_split_text, not_ascii=not_ascii,
                          delete_hyphens=delete_hyphens)
    by_chan: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for e in ecf.excerpts:
        by_chan.setdefault((e.file, e.channel), []).append((e.tbeg, e.tend))
    kws_path = kwslist.path
    if outside_ecf == "error":
        for i, d in enumerate(kwslist.detections):
            if (d.file, d.channel) not in by_chan:
                line = kwslist.lines[i] if kwslist.lines else None
                raise MismatchError(f"hit of {d.kwid!r} in file {d.file!r} channel {d.channel!r}, which the ECF "
                                    f"({ecf.path or 'in memory'}) does not name (pass outside_ecf='ignore' / "
                                    f"--ignore-outside-ecf to drop such hits like F4DE)", path=kws_path or None,
                                    line=line)
    tot_dur = ecf.total_duration()
    metric_args = (cost, value, prob_of_term)
    if segment_based:
        if source_type_groups or attribute_queries:
            raise MismatchError("conditional reports are not supported with segment-based scoring")
        main = _score_segments(ecf, references, kwl, kwslist, refs, texts, find_threshold, include_no_targets,
                               just_system_terms)
        overall = _evaluate(main, _Metric(main.tot_trials, *metric_args), kws_path)
        overall.params = {"cost": cost, "value": value, "prob_of_term": prob_of_term,
                          "trials_per_second": trials_per_second}
        overall.segment_based = True
        return KwsEvaluation(overall, {}, [], kwl.language, kwslist.system_id, kwslist, texts)
    main = _Trials("Occurrence", tot_dur, trials_per_second, include_no_targets)

    # Conditions (F4DE -Y / -q): name -> (trials, membership test of a record/term).
    cond: dict[str, _Trials] = {}
    excerpt_types: dict[tuple[str, str], list[tuple[float, float, str]]] = {}
    for e in ecf.excerpts:
        excerpt_types.setdefault((e.file, e.channel), []).append((e.tbeg, e.tend, e.source_type))

    def src_groups(file, chan, bt, et) -> list[str]:
        st = None
        for tb, te, s in excerpt_types.get((file, chan), ()):
            if bt >= tb and et <= te:
                st = s
                break
        if st is None:
            return []
        return [g for g, types in source_type_groups.items() if any(re.fullmatch(x, st, flags=re.I) for x in types)]

    def attr_groups(kwid) -> list[str]:
        out = []
        attrs = kwl.info.get(kwid, {})
        for q in attribute_queries:
            parts = re.split(r"\s+&&\s+", q)
            got = []
            for p in parts:
                m = re.match(r"^(.+):regex=(.+)$", p)
                name, rx = (m.group(1), m.group(2)) if m else (p, None)
                v = attrs.get(name)
                if v is not None and (rx is None or re.search(rx, v)):
                    got.append(f"{name}-{v}")
            if len(got) == len(parts):
                out.append(" X ".join(got))
        return out

    def group_duration(group: str) -> float:
        return ecf.total_duration(source_type_groups[group]) if source_type_groups else tot_dur

    def cond_trials(group: str) -> _Trials:
        tr = cond.get(group)
        if tr is None:
            tr = cond[group] = _Trials(group, group_duration(group), trials_per_second, include_no_targets)
        return tr

    def groups_of(kwid, file, chan, bt, et) -> list[str]:
        if source_type_groups:
            return src_groups(file, chan, bt, et)
        if attribute_queries:
            return attr_groups(kwid)
        return []

    alignment: list[tuple] = []
    conditional = bool(source_type_groups or attribute_queries)
    dets_by_kw: dict[str, list[int]] = {}
    for i, d in enumerate(kwslist.detections):
        dets_by_kw.setdefault(d.kwid, []).append(i)
    order = list(kwslist.kwids)
    for kwid in dets_by_kw:
        if kwid not in set(order):
            order.append(kwid)
    for kwid in order:
        if kwid not in texts:
            raise MismatchError(f"keyword {kwid!r} of the system output is not in the KWlist",
                                path=kws_path or None, key=kwid)
    if not just_system_terms:
        seen = set(order)
        order += [t.kwid for t in kwl.terms if t.kwid not in seen]
    min_max = (kwslist.min_score, kwslist.max_score) if kwslist.min_score is not None else None

    for kwid in order:
        text = texts[kwid]
        block = main.block(kwid, text)
        # Hits inside the ECF, per (file, channel), in file order.
        hits: dict[tuple[str, str], list[int]] = {}
        for i in dets_by_kw.get(kwid, ()):
            d = kwslist.detections[i]
            if _belongs(by_chan, d.file, d.channel, d.tbeg, d.tbeg + d.dur):
                hits.setdefault((d.file, d.channel), []).append(i)
        occs: dict[tuple[str, str], list[list[_Tok]]] = {}
        for occ in refs.find_occurrences(text, find_threshold):
            occs.setdefault((occ[0].file, occ[0].chan), []).append(occ)
        touched: set[str] = set()

        # this keyword's block, id, text and touched groups are bound now: `add` is called in this iteration only
        def add(score, decision, is_targ, file, chan, bt, et, block=block, kwid=kwid, text=text, touched=touched):
            block.add(score, decision, is_targ)
            if not conditional:
                return
            for g in groups_of(kwid, file, chan, bt, et):
                touched.add(g)
                cond_trials(g).block(kwid, text).add(score, decision, is_targ)

        for (file, chan), olist in occs.items():
            rlist = [o for o in olist if _belongs(by_chan, file, chan, o[0].bt, o[0].et)]
            slist = hits.get((file, chan), [])
            if slist:
                scores = [kwslist.detections[i].score for i in slist]
                lo, hi = min_max if min_max else (min(scores), max(scores))
                d_score = hi - lo
                edges = {}
                for ri, o in enumerate(rlist):
                    r_bt, r_et = o[0].bt, o[-1].et
                    ref_d = r_et - r_bt
                    for si, i in enumerate(slist):
                        d = kwslist.detections[i]
                        s_bt, s_et = d.tbeg, d.tbeg + d.dur
                        mid = d.tbeg + d.dur / 2.0
                        if mid < r_bt - similarity_threshold or mid > r_et + similarity_threshold:
                            continue
                        time_cgr = (min(s_et, r_et) - max(s_bt, r_bt)) / (ref_d if ref_d > 0.00001 else 0.00001)
                        score_cgr = (d.score - lo) / (d_score if d_score > 0.00001 else 0.00001)
                        edges[(ri, si)] = 1 + EPSILON_TIME * time_cgr + EPSILON_SCORE * score_cgr
                pairs = match(len(rlist), len(slist), edges)
            else:
                pairs = []
            matched_r = {r for r, _ in pairs}
            matched_s = {s for _, s in pairs}
            for ri, si in sorted(pairs):
                o, i = rlist[ri], slist[si]
                d = kwslist.detections[i]
                add(d.score, d.decision, True, file, chan, o[0].bt, o[0].et)
                alignment.append((kwid, file, chan, o, i, "CORR" if d.decision else "MISS"))
            for ri, o in enumerate(rlist):
                if ri not in matched_r:
                    add(None, None, True, file, chan, o[0].bt, o[0].et)
                    alignment.append((kwid, file, chan, o, None, "MISS"))
            for si, i in enumerate(slist):
                if si not in matched_s:
                    d = kwslist.detections[i]
                    add(d.score, d.decision, False, file, chan, d.tbeg, d.tbeg + d.dur)
                    alignment.append((kwid, file, chan, None, i, "FA" if d.decision else "CORR!DET"))
        for (file, chan), slist in hits.items():
            if (file, chan) in occs:
                continue
            for i in slist:
                d = kwslist.detections[i]
                add(d.score, d.decision, False, file, chan, d.tbeg, d.tbeg + d.dur)
                alignment.append((kwid, file, chan, None, i, "FA" if d.decision else "CORR!DET"))
        # F4DE adds a keyword without trials to every condition it could belong to.
        if block.n_true == 0 and block.n_sys == 0:
            possible: list[str] = []
            if source_type_groups:
                possible = list(source_type_groups)
            elif attribute_queries:
                possible = attr_groups(kwid)
            for g in possible:
                if g not in cond and group_duration(g) == 0:
                    continue   # F4DE: "No ECF segments available for group"
                cond_trials(g).block(kwid, text)

    for tr in [main, *cond.values()]:
        for b in tr.blocks.values():
            if b.n_true >= tr.tot_trials and (tr.include or b.n_true > 0):
                # P_FA = N_FA / (T - N_true) is meaningless here (F4DE dies dividing by zero, or goes negative).
                raise MismatchError(f"keyword {b.kwid!r} has {b.n_true} reference occurrences in the ECF excerpts, "
                                    f"not fewer than the number of trials T = {tr.tot_trials} (total excerpt "
                                    f"duration x trials per second); give a longer ECF or more trials per second",
                                    path=ecf.path or None, key=b.kwid)
    overall = _evaluate(main, _Metric(main.tot_trials, *metric_args), kws_path)
    conditions = {g: _evaluate(cond[g], _Metric(cond[g].tot_trials, *metric_args), kws_path) for g in sorted(cond)}
    params = {"cost": cost, "value": value, "prob_of_term": prob_of_term, "trials_per_second": trials_per_second}
    overall.params = params
    for c in conditions.values():
        c.params = params
    return KwsEvaluation(overall, conditions, alignment, kwl.language, kwslist.system_id, kwslist, texts)


__all__ = ["score_kws", "score_kws_files", "KwsEvaluation", "KwsScore", "OperatingPoint", "TermResult", "AlignmentRow", "Block",
           "ReferenceIndex", "char_split", "perl_num"]


def _score_segments(ecf: Ecf, references: Sequence[RttmRecord], kwl: KwList, kwslist: KwsList,
                    refs: ReferenceIndex, texts: dict[str, str], find_threshold: float, include_no_targets: bool,
                    just_system_terms: bool) -> _Trials:
    """F4DE's ``KWSSegAlign::alignSegments`` (``-g``)."""
    speakers: dict[tuple[str, str], list[RttmRecord]] = {}
    for r in references:
        if r.type == "SPEAKER":
            speakers.setdefault((r.file, r.channel), []).append(r)
    segments: list[_Segment] = []
    for e in ecf.excerpts:
        segments += _segments_of(speakers.get((e.file, e.channel), []), refs.by_spkr, e.file, e.channel, e.tbeg,
                                 e.dur)
    if not segments:
        raise MismatchError("segment-based scoring found no segment in the ECF excerpts")
    seg_lookup: dict[tuple[str, str], list[_Segment]] = {}
    for sg in segments:
        seg_lookup.setdefault((sg.file, sg.chan), []).append(sg)
    main = _Trials("Segment", 0.0, 1.0, include_no_targets, tot_trials=len(segments))
    dets_by_kw: dict[str, list[Detection]] = {}
    for d in kwslist.detections:
        dets_by_kw.setdefault(d.kwid, []).append(d)
    order = list(kwslist.kwids)
    for kwid in dets_by_kw:
        if kwid not in order:
            order.append(kwid)
    for kwid in order:
        if kwid not in texts:
            raise MismatchError(f"keyword {kwid!r} of the system output is not in the KWlist",
                                path=kwslist.path or None, key=kwid)
    # Unlike the occurrence alignment, F4DE's segment alignment scores the keywords missing from the
    # system output even with -j (which then only leaves out their empty blocks).
    seen = set(order)
    order += [t.kwid for t in kwl.terms if t.kwid not in seen]
    for kwid in order:
        text = texts[kwid]
        block = main.block(kwid, text)
        best: dict[int, tuple[_Segment, Detection]] = {}
        for d in dets_by_kw.get(kwid, ()):
            mid = d.tbeg + d.dur / 2.0
            seg = next((sg for sg in seg_lookup.get((d.file, d.channel), ()) if sg.bt <= mid <= sg.et), None)
            if seg is None:
                continue
            if id(seg) not in best or d.score > best[id(seg)][1].score:
                best[id(seg)] = (seg, d)
        sys_by_chan: dict[tuple[str, str], list[tuple[_Segment, Detection]]] = {}
        for seg, d in best.values():
            sys_by_chan.setdefault((d.file, d.channel), []).append((seg, d))
        occ_by_chan: dict[tuple[str, str], list[list[_Tok]]] = {}
        for occ in refs.find_occurrences(text, find_threshold):
            occ_by_chan.setdefault((occ[0].file, occ[0].chan), []).append(occ)
        for key, occs in occ_by_chan.items():
            ref_segs = {id(o[0].seg): o[0].seg for o in occs if o[0].seg is not None and o[0].seg is o[-1].seg}
            # F4DE's _seg_aligner: a hit whose midpoint lies in a target segment is no false alarm; each target
            # segment keeps one of its hits (F4DE: the last in hash order; here: the best-scoring) and further
            # hits matching it vanish from the trials.  Only overlapping ECF excerpts (whose segments overlap)
            # can give a target segment two hits.
            mapped: dict[int, Detection] = {}
            for _seg, d in sys_by_chan.get(key, ()):
                mid = d.tbeg + d.dur / 2.0
                hit = [rid for rid, rs in ref_segs.items() if rs.bt <= mid <= rs.et]
                if not hit:
                    block.add(d.score, d.decision, False)
                for rid in hit:
                    if rid not in mapped or d.score > mapped[rid].score:
                        mapped[rid] = d
            for rid in ref_segs:
                d = mapped.get(rid)
                if d is None:
                    block.add(None, None, True)
                else:
                    block.add(d.score, d.decision, True)
        for key, pairs in sys_by_chan.items():
            if key in occ_by_chan:
                continue
            for _seg, d in pairs:
                block.add(d.score, d.decision, False)
        if just_system_terms and block.n_true == 0 and block.n_sys == 0:
            del main.blocks[kwid]      # F4DE adds empty blocks only without -j
    return main


def score_kws_files(ecf: str, kwlist: str, kwslist: str, *, rttm: str | None = None, ctm: str | None = None,
                    encoding: str = "utf-8", check_reference_overlaps: bool = True, **options) -> KwsEvaluation:
    """Read the files of an evaluation and :func:`score_kws` them.  The reference occurrences come from
    ``rttm`` (LEXEME lines) or from ``ctm`` (reference word times, one speaker per file/channel).  With
    ``check_reference_overlaps``, two overlapping words of one speaker are an error (FormatError)."""
    from ..io.ecf import read_ecf
    from ..io.kwlist import read_kwlist_file
    from ..io.kwslist import read_kwslist
    from ..io.rttm import check_overlaps, lexemes_from_ctm, read_rttm

    if (rttm is None) == (ctm is None):
        raise MismatchError("give the reference as exactly one of an RTTM or a CTM")
    enc = None if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
    e = read_ecf(ecf, encoding=enc)
    kwl = read_kwlist_file(kwlist, encoding=encoding)
    kws = read_kwslist(kwslist, encoding=enc)
    if rttm is not None:
        refs = read_rttm(rttm, encoding=encoding,
                         types=("LEXEME", "SPEAKER") if options.get("segment_based") else ("LEXEME",))
    else:
        refs = lexemes_from_ctm(ctm, encoding=encoding)
    if check_reference_overlaps:
        check_overlaps(refs, rttm or ctm)
    return score_kws(e, refs, kwl, kws, **options)
