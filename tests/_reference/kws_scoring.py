"""The keyword-search scorer's occurrence alignment and measures one keyword and one hit at a time: the oracle
the array implementation (lattice_tools.kws.occurrence_alignment, occurrence_trials, measures.evaluate) is
tested against (tests/test_kws_score_arrays.py).

It was the package's implementation until fc6d2d7 (then 10x slower than F4DE-relative targets at 100
files); kept verbatim in its logic: per keyword, per (file, channel), a dict of kernel values given to
lattice_tools.kws.matching.match, trials added one by one, the threshold sweep with bisect per keyword,
occurrences found by walking the linked RefWord objects from every occurrence of the first word.
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

import numpy as np

from lattice_tools.core.errors import FormatError, MismatchError
from lattice_tools.io.keyword_search.kwslist import KwsList
from lattice_tools.kws.matching import match
from lattice_tools.kws.measures import KwsScore, Metric, OperatingPoint, TermResult
from lattice_tools.kws.references import ReferenceIndex, RefWord, round4
from lattice_tools.kws.score import perl_num
from lattice_tools.kws.trials import Block, Trials

EPSILON_TIME = 1e-8
EPSILON_SCORE = 1e-6

# The keyword order, the decision and optimum thresholds and the conditional trials are written here from
# F4DE's KWSEval behaviour, not imported from the package: the package's own are checked against F4DE's
# golden reports (tests/test_kws_score.py: -Y source-type groups in test 2a, -q attribute queries in 2b/2c,
# the keyword order in every block report) and against F4DE itself on random cases.


def _keyword_order(listed_kwids, detected_kwids, texts, kwl, just_system_terms, kws_path) -> list[str]:
    """KWSEval's keyword order: the system output's kwlist elements, then keywords that only have
    detections (first detection first), then, without -j, the KWlist's remaining terms."""
    order: list[str] = []
    for kwid in [*listed_kwids, *detected_kwids]:
        if kwid not in order:
            if kwid not in texts:
                raise MismatchError(f"keyword {kwid!r} of the system output is not in the KWlist",
                                    path=kws_path or None, key=kwid)
            order.append(kwid)
    if not just_system_terms:
        order += [t.kwid for t in kwl.terms if t.kwid not in order]
    return order


def _decision_threshold(blocks, path) -> float | None:
    """KWSEval's actual decision threshold: halfway between the lowest YES score and the highest NO score
    (either alone when the other is missing); a NO above a YES is refused."""
    yes = [b.min_yes for b in blocks if b.min_yes is not None]
    no = [b.max_no for b in blocks if b.max_no is not None]
    if yes and no and max(no) > min(yes):
        raise FormatError(f"inconsistent decisions: a hit with score {perl_num(max(no))} is NO while one with "
                          f"score {perl_num(min(yes))} is YES", path=path or None)
    if not yes or not no:
        return min(yes) if yes else (max(no) if no else None)
    return (min(yes) + max(no)) / 2


def _optimum_threshold(targets, nontargets, n_target_misses, n_fa, t) -> float:
    """The threshold KWSEval reports for a keyword's optimum at score t: the next non-target score after the
    false alarms and the next target score after the misses -- the lower one when both lie above t, else the
    highest of them and t."""
    nxt = [x[k] for x, k in ((nontargets, n_fa), (targets, n_target_misses)) if k < len(x)]
    if len(nxt) == 2:
        return min(nxt) if min(nxt) > t else max(*nxt, t)
    return nxt[0] if nxt and nxt[0] > t else t


class _Conditions:
    """KWSEval's conditional trials, created as trials reach them: per group of ECF source types (-Y: a trial
    belongs to the groups matching the source type of the first excerpt holding it) or per combination of
    KWlist kwinfo attribute values (-q "name[:regex=RX] && ...": a keyword belongs when it has every
    attribute, matching RX)."""

    def __init__(self, ecf, kwl, source_type_groups, attribute_queries, trials_per_second, include_no_targets):
        self.ecf, self.kwl, self.groups, self.queries = ecf, kwl, source_type_groups or {}, list(attribute_queries)
        self.trials_per_second, self.include_no_targets = trials_per_second, include_no_targets
        self.trials: dict[str, Trials] = {}

    def _duration(self, group):
        return self.ecf.total_duration(self.groups[group]) if self.groups else self.ecf.total_duration()

    def _trials(self, group) -> Trials:
        if group not in self.trials:
            self.trials[group] = Trials(group, self._duration(group), self.trials_per_second, self.include_no_targets)
        return self.trials[group]

    def _attribute_conditions(self, kwid) -> list[str]:
        info = self.kwl.info.get(kwid, {})
        out = []
        for query in self.queries:
            labels = []
            for part in re.split(r"\s+&&\s+", query):
                name, _, rx = part.partition(":regex=") if ":regex=" in part else (part, "", "")
                value = info.get(name)
                if value is not None and (not rx or re.search(rx, value)):
                    labels.append(f"{name}-{value}")
            if len(labels) == len(re.split(r"\s+&&\s+", query)):
                out.append(" X ".join(labels))
        return out

    def _conditions(self, kwid, file, chan, bt, et) -> list[str]:
        if self.groups:
            types = [e.source_type for e in self.ecf.excerpts
                     if (e.file, e.channel) == (file, chan) and e.tbeg <= bt and et <= e.tend][:1]
            return [g for g, patterns in self.groups.items()
                    if types and any(re.fullmatch(p, types[0], flags=re.I) for p in patterns)]
        return self._attribute_conditions(kwid) if self.queries else []

    def add(self, kwid, text, score, decision, is_targ, file, chan, bt, et) -> None:
        for group in self._conditions(kwid, file, chan, bt, et):
            self._trials(group).block(kwid, text).add(score, decision, is_targ)

    def add_empty(self, kwid, text) -> None:
        """A keyword without trials joins every condition it could belong to (one with ECF time)."""
        for group in (list(self.groups) if self.groups else self._attribute_conditions(kwid)):
            if group in self.trials or self._duration(group) != 0:
                self._trials(group).block(kwid, text)


def reference_trials(ecf, refs, kwl, kwslist: KwsList, texts: dict[str, str], *, find_threshold=0.5,
                     similarity_threshold=0.5, include_no_targets=False, just_system_terms=False,
                     trials_per_second=1.0, source_type_groups=None, attribute_queries=()):
    """(main trials, conditional trials, raw alignment) as fc6d2d7 computed them."""
    tot_dur = ecf.total_duration()
    by_chan: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for e in ecf.excerpts:
        by_chan.setdefault((e.file, e.channel), []).append((e.tbeg, e.tend))
    kws_path = kwslist.path
    main = Trials("Occurrence", tot_dur, trials_per_second, include_no_targets)
    conds = _Conditions(ecf, kwl, source_type_groups, attribute_queries, trials_per_second, include_no_targets)
    alignment: list[tuple] = []
    dets_by_kw: dict[str, list[int]] = {}
    for i, d in enumerate(kwslist.detections):
        dets_by_kw.setdefault(d.kwid, []).append(i)
    order = _keyword_order(kwslist.kwids, list(dets_by_kw), texts, kwl, just_system_terms, kws_path)
    min_max = (kwslist.min_score, kwslist.max_score) if kwslist.min_score is not None else None
    for kwid in order:
        _align_keyword(kwid, texts[kwid], main.block(kwid, texts[kwid]), dets_by_kw.get(kwid, ()), kwslist, refs,
                       by_chan, conds, alignment, find_threshold=find_threshold,
                       similarity_threshold=similarity_threshold, min_max=min_max)

    return main, conds.trials, alignment


def _belongs(by_chan: dict, file: str, chan: str, bt: float, et: float) -> bool:
    for ex_tbeg, ex_tend in by_chan.get((file, chan), ()):
        if bt >= ex_tbeg and et <= ex_tend:
            return True
    return False


def _kernel_edges(rlist, slist, kwslist, similarity_threshold, min_max) -> dict:
    """F4DE's kernel value of each (occurrence, hit) pair that may match."""
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
    return edges


def _align_keyword(kwid: str, text: str, block: Block, det_ids: Sequence[int], kwslist: KwsList,
                   refs: ReferenceIndex, by_chan: dict, conds: _Conditions, alignment: list, *,
                   find_threshold: float, similarity_threshold: float, min_max) -> None:
    """Pair one keyword's hits with its reference occurrences (per file/channel) and record the trials."""

    def add(score, decision, is_targ, file, chan, bt, et):
        block.add(score, decision, is_targ)
        conds.add(kwid, text, score, decision, is_targ, file, chan, bt, et)

    # Hits inside the ECF, per (file, channel), in file order.
    hits: dict[tuple[str, str], list[int]] = {}
    for i in det_ids:
        d = kwslist.detections[i]
        if _belongs(by_chan, d.file, d.channel, d.tbeg, d.tbeg + d.dur):
            hits.setdefault((d.file, d.channel), []).append(i)
    occs: dict[tuple[str, str], list[list[RefWord]]] = {}
    for occ in find_occurrences_reference(refs, text, find_threshold):
        occs.setdefault((occ[0].file, occ[0].chan), []).append(occ)
    for (file, chan), olist in occs.items():
        rlist = [o for o in olist if _belongs(by_chan, file, chan, o[0].bt, o[0].et)]
        slist = hits.get((file, chan), [])
        pairs = match(len(rlist), len(slist), _kernel_edges(rlist, slist, kwslist, similarity_threshold,
                                                            min_max)) if slist else []
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
    if block.n_true == 0 and block.n_sys == 0:
        conds.add_empty(kwid, text)


def find_occurrences_reference(self, text: str, find_threshold: float = 0.5) -> list[list[RefWord]]:
    words = self.normalize(text.strip()).split()
    if not words:
        raise FormatError(f"empty term {text!r}")
    if len(words) == 1:
        return [[t] for t in [self.words[i] for i in self.lookup.get(words[0], ())]]
    out = []
    folded = [w.casefold() for w in words]
    for first in [self.words[i] for i in self.lookup.get(words[0], ())]:
        occ = [first]
        hop = first
        ok = True
        for w in folded[1:]:
            nxt = hop.nxt
            if nxt is not None and round4(nxt.bt - hop.et) <= find_threshold and nxt.token.casefold() == w:
                occ.append(nxt)
                hop = nxt
            else:
                ok = False
                break
        if ok:
            out.append(occ)
    return out



def evaluate_reference(trials: Trials, metric: Metric, path: str) -> KwsScore:
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
            k_best = _exact_best_reference(near, u, ev, state, T, metric)
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
            per_opt[b.kwid] = (c, n_miss, n_fa, _optimum_threshold(targ[b.kwid], nontarg[b.kwid], n_miss - b.omitted,
                                                                   n_fa, t))
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


def _exact_best_reference(near, u, ev, state, T, metric) -> int:
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


