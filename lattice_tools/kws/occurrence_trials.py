"""The trials of an occurrence alignment (:mod:`lattice_tools.kws.occurrence_alignment`): each keyword's
:class:`~lattice_tools.kws.trials.Block` counted on arrays, and F4DE's alignment CSV lines in its order.

A paired hit is a target trial (correct when YES, a miss when NO), an occurrence without a hit a miss, a hit
without an occurrence a non-target trial (a false alarm when YES); only hits and occurrences inside the ECF
excerpts count.
"""
from __future__ import annotations

import numpy as np

from ..io.keyword_search.kwslist import DetectionColumns
from .occurrence_alignment import OccurrenceAlignment
from .references import ReferenceIndex
from .trials import Block, Trials


def positions_by_keyword(kw: np.ndarray, positions: np.ndarray, n_kw: int) -> list[list[int]]:
    """``positions`` split by keyword (``kw`` gives each one's keyword), each list in ascending order."""
    order = np.lexsort((positions, kw))
    bounds = np.searchsorted(kw[order], np.arange(n_kw + 1)).tolist()
    ordered = positions[order].tolist()
    return [ordered[bounds[k]:bounds[k + 1]] for k in range(n_kw)]


def _split_sorted(kw: np.ndarray, values: np.ndarray, n_kw: int) -> list[list[float]]:
    order = np.lexsort((values, kw))
    bounds = np.searchsorted(kw[order], np.arange(n_kw + 1)).tolist()
    ordered = values[order].tolist()
    return [ordered[bounds[k]:bounds[k + 1]] for k in range(n_kw)]


def fill_blocks(trials: Trials, al: OccurrenceAlignment, texts: dict[str, str], cols: DetectionColumns) -> None:
    """One block per keyword of ``al.order`` in ``trials``, with its target and non-target scores (ascending)
    and decision counts."""
    _tbeg, _dur, score, decision = cols.arrays()
    n_kw = len(al.order)
    targ = al.h_match >= 0
    nontarg = al.h_in & ~targ
    t_kw, n_kw_of = al.h_kw[targ], al.h_kw[nontarg]
    t_score, n_score = score[targ], score[nontarg]
    t_dec, n_dec = decision[targ], decision[nontarg]

    def count(kw):
        return np.bincount(kw, minlength=n_kw).tolist()

    yes_targ, no_targ = count(t_kw[t_dec]), count(t_kw[~t_dec])
    yes_non, no_non = count(n_kw_of[n_dec]), count(n_kw_of[~n_dec])
    omitted = count(al.o_kw[al.o_in & (al.o_match < 0)])
    targ_scores = _split_sorted(t_kw, t_score, n_kw)
    non_scores = _split_sorted(n_kw_of, n_score, n_kw)
    yes_kw = np.concatenate((t_kw[t_dec], n_kw_of[n_dec]))
    yes_sc = np.concatenate((t_score[t_dec], n_score[n_dec]))
    no_kw = np.concatenate((t_kw[~t_dec], n_kw_of[~n_dec]))
    no_sc = np.concatenate((t_score[~t_dec], n_score[~n_dec]))
    min_yes = np.full(n_kw, np.inf)
    np.minimum.at(min_yes, yes_kw, yes_sc)
    max_no = np.full(n_kw, -np.inf)
    np.maximum.at(max_no, no_kw, no_sc)
    min_yes_l, max_no_l = min_yes.tolist(), max_no.tolist()
    for k, kwid in enumerate(al.order):
        trials.blocks[kwid] = Block(kwid, texts[kwid], targ_scores[k], non_scores[k], yes_targ[k], no_targ[k],
                                    omitted[k], yes_non[k], no_non[k],
                                    min_yes_l[k] if yes_targ[k] + yes_non[k] else None,
                                    max_no_l[k] if no_targ[k] + no_non[k] else None)


def alignment_rows(al: OccurrenceAlignment, cols: DetectionColumns, refs: ReferenceIndex) -> list[tuple]:
    """F4DE's alignment, in its order: per keyword, per (file, channel) with reference occurrences (in the
    order they are found): the pairs, the missed occurrences, the unmatched hits; then the channels with
    hits only.  Each row: (kwid, file, channel, (first word, last word) or None, detection or None, label)."""
    n_kw = len(al.order)
    hits_of = positions_by_keyword(al.h_kw[al.h_in], np.nonzero(al.h_in)[0], n_kw)
    occs_of = positions_by_keyword(al.o_kw, np.arange(len(al.o_kw)), n_kw)
    h_match, o_match, o_in = al.h_match.tolist(), al.o_match.tolist(), al.o_in.tolist()
    o_first, o_last = al.o_first.tolist(), al.o_last.tolist()
    rows: list[tuple] = []
    for k, kwid in enumerate(al.order):
        hits: dict[tuple[str, str], list[int]] = {}
        for i in hits_of[k]:
            hits.setdefault((cols.file[i], cols.channel[i]), []).append(i)
        occs: dict[tuple[str, str], list[int]] = {}
        for o in occs_of[k]:
            occs.setdefault((refs.file[o_first[o]], refs.chan[o_first[o]]), []).append(o)
        for (file, chan), olist in occs.items():
            rlist = [o for o in olist if o_in[o]]
            for o in rlist:
                i = o_match[o]
                if i >= 0:
                    rows.append((kwid, file, chan, (refs.word(o_first[o]), refs.word(o_last[o])), i,
                                 "CORR" if cols.decision[i] else "MISS"))
            for o in rlist:
                if o_match[o] < 0:
                    rows.append((kwid, file, chan, (refs.word(o_first[o]), refs.word(o_last[o])), None, "MISS"))
            for i in hits.get((file, chan), ()):
                if h_match[i] < 0:
                    rows.append((kwid, file, chan, None, i, "FA" if cols.decision[i] else "CORR!DET"))
        for (file, chan), slist in hits.items():
            if (file, chan) in occs:
                continue
            for i in slist:
                rows.append((kwid, file, chan, None, i, "FA" if cols.decision[i] else "CORR!DET"))
    return rows


__all__ = ["fill_blocks", "alignment_rows", "positions_by_keyword"]
