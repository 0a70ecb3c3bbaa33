"""F4DE's occurrence alignment (``KWSAlignment``) over whole arrays: which hits and which reference occurrences
lie inside the ECF excerpts, which pairs may match, and the 1:1 matching of every keyword and channel at once.

The rules are those of :mod:`lattice_tools.kws.score`; this module only computes them on numpy arrays (one
pass over all keywords instead of a Python loop over every hit), so that scoring a kwslist of millions of
hits takes seconds.  Floating-point expressions are written in the same order as the rules state them, so
that every comparison and kernel value is the same double.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..io.keyword_search.ecf import Ecf
from ..io.keyword_search.kwslist import KwsList
from .matching import match_windows
from .references import ReferenceIndex

# F4DE's matching kernel weights (KWSAlignment.pm).
EPSILON_TIME = 1e-8
EPSILON_SCORE = 1e-6


class _MissingIsMinusOne(dict):
    def __missing__(self, key):
        return -1


class ExcerptTable:
    """The ECF's (file, channel) pairs numbered, and F4DE's ``belongsInECF`` test on arrays."""

    def __init__(self, ecf: Ecf):
        self.code: dict[tuple[str, str], int] = _MissingIsMinusOne()
        per: list[list[tuple[float, float]]] = []
        for e in ecf.excerpts:
            c = self.code.get((e.file, e.channel))
            if c is None or c < 0:
                c = self.code[(e.file, e.channel)] = len(per)
                per.append([])
            per[c].append((e.tbeg, e.tend))
        self.n_channels = len(per)
        depth = max((len(x) for x in per), default=0)
        # bounds[k][c]: the k-th excerpt of channel c (NaN where c has fewer: comparisons with NaN fail).
        self.bounds = [(np.array([x[k][0] if k < len(x) else np.nan for x in per] + [np.nan]),
                        np.array([x[k][1] if k < len(x) else np.nan for x in per] + [np.nan])) for k in range(depth)]

    def codes(self, files: list[str], channels: list[str]) -> np.ndarray:
        """The channel number of each (file, channel); -1 for one the ECF does not name."""
        return np.fromiter(map(self.code.__getitem__, zip(files, channels, strict=True)), np.int64, len(files))

    def inside(self, code: np.ndarray, bt: np.ndarray, et: np.ndarray) -> np.ndarray:
        """True where ``[bt, et]`` lies inside one excerpt of channel ``code`` (-1: never)."""
        out = np.zeros(len(code), dtype=bool)
        for ex_b, ex_e in self.bounds:   # code -1 reads the NaN sentinel at the end
            out |= (bt >= ex_b[code]) & (et <= ex_e[code])
        return out


@dataclass
class OccurrenceAlignment:
    """Everything the trials and the alignment CSV are made of, one array entry per hit or occurrence."""

    order: list[str]               # keyword ids, in alignment order
    h_kw: np.ndarray               # per detection: position of its keyword in ``order``
    h_code: np.ndarray             # per detection: ECF channel number (-1: not in the ECF)
    h_in: np.ndarray               # per detection: inside an ECF excerpt
    h_match: np.ndarray            # per detection: the occurrence it is paired with, -1 if none
    o_kw: np.ndarray               # per occurrence (all keywords, in order): keyword position
    o_first: np.ndarray            # first word (ReferenceIndex.words position)
    o_last: np.ndarray             # last word
    o_in: np.ndarray               # first word inside an ECF excerpt
    o_match: np.ndarray            # detection it is paired with, -1 if none
    o_code: np.ndarray


def align_occurrences(order: list[str], texts: dict[str, str], kwslist: KwsList, refs: ReferenceIndex,
                      excerpts: ExcerptTable, *, find_threshold: float, similarity_threshold: float,
                      min_max: tuple[float, float] | None,
                      channel_kept: np.ndarray | None = None) -> OccurrenceAlignment:
    """Pair every keyword's hits with its reference occurrences, per (file, channel), like F4DE.

    ``channel_kept`` (one bool per ECF channel number): F4DE's file/channel filter (``-N``).  Occurrences on a
    channel it drops do not count; a hit on such a channel is dropped only when its keyword has a reference
    occurrence (anywhere in the recording) on that channel -- F4DE filters the hits of the (keyword, file,
    channel) groups it aligns and counts the hits of the other groups unfiltered."""
    cols = kwslist.columns
    tbeg, dur, score, _decision = cols.arrays()
    n_kw = len(order)
    position = {k: i for i, k in enumerate(order)}
    h_kw = np.fromiter(map(position.__getitem__, cols.kwid), np.int64, len(cols))
    h_code = excerpts.codes(cols.file, cols.channel)
    h_in = excerpts.inside(h_code, tbeg, tbeg + dur)

    firsts, lasts, kws = [], [], []
    for i, kwid in enumerate(order):
        f, la = refs.occurrence_spans(texts[kwid], find_threshold)
        firsts.append(f)
        lasts.append(la)
        kws.append(np.full(len(f), i, np.int64))
    o_first = np.concatenate(firsts) if firsts else np.zeros(0, np.int64)
    o_last = np.concatenate(lasts) if lasts else np.zeros(0, np.int64)
    o_kw = np.concatenate(kws) if kws else np.zeros(0, np.int64)
    w_bt, w_et, w_code = refs_arrays(refs, excerpts)
    o_code = w_code[o_first]
    o_in = excerpts.inside(o_code, w_bt[o_first], w_et[o_first])
    if channel_kept is not None:
        kept = np.append(np.asarray(channel_kept, dtype=bool), False)   # code -1 reads False
        o_in &= kept[o_code]
        n_chan_all = max(excerpts.n_channels, 1)
        with_occ = np.unique(o_kw[o_code >= 0] * n_chan_all + o_code[o_code >= 0])
        h_has_occ = np.isin(h_kw * n_chan_all + h_code, with_occ) & (h_code >= 0)
        h_in &= kept[h_code] | ~h_has_occ

    n_chan = max(excerpts.n_channels, 1)
    hits = np.nonzero(h_in)[0]
    occs = np.nonzero(o_in)[0]
    h_group = h_kw[hits] * n_chan + h_code[hits]
    o_group = o_kw[occs] * n_chan + o_code[occs]
    r_bt, r_et = w_bt[o_first[occs]], w_et[o_last[occs]]
    s_bt = tbeg[hits]
    s_et = s_bt + dur[hits]
    s_score = score[hits]
    if min_max is not None:
        g_lo = np.full(len(hits), min_max[0])
        g_hi = np.full(len(hits), min_max[1])
    else:
        # The kernel's score range is that of the hits of the same keyword and channel.
        g_lo, g_hi = _group_min_max(h_group, s_score, n_kw * n_chan)
    sim = similarity_threshold

    def kernel(r, s):
        ref_d = r_et[r] - r_bt[r]
        time_cgr = (np.minimum(s_et[s], r_et[r]) - np.maximum(s_bt[s], r_bt[r])) / np.where(ref_d > 0.00001, ref_d,
                                                                                               0.00001)
        d_score = g_hi[s] - g_lo[s]
        score_cgr = (s_score[s] - g_lo[s]) / np.where(d_score > 0.00001, d_score, 0.00001)
        return 1 + EPSILON_TIME * time_cgr + EPSILON_SCORE * score_cgr

    r, s = match_windows(h_group, s_bt + dur[hits] / 2.0, hits, o_group, r_bt - sim, r_et + sim, occs, kernel)
    h_match = np.full(len(cols), -1, np.int64)
    o_match = np.full(len(o_kw), -1, np.int64)
    h_match[hits[s]] = occs[r]
    o_match[occs[r]] = hits[s]
    return OccurrenceAlignment(order, h_kw, h_code, h_in, h_match, o_kw, o_first, o_last, o_in, o_match, o_code)


def refs_arrays(refs: ReferenceIndex, excerpts: ExcerptTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Begin, end and ECF channel number of every reference word."""
    return (np.asarray(refs.bt, dtype=np.float64), np.asarray(refs.et, dtype=np.float64),
            excerpts.codes(refs.file, refs.chan))


def _group_min_max(group: np.ndarray, values: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    lo = np.full(n_groups, np.inf)
    hi = np.full(n_groups, -np.inf)
    np.minimum.at(lo, group, values)
    np.maximum.at(hi, group, values)
    return lo[group], hi[group]


__all__ = ["ExcerptTable", "OccurrenceAlignment", "align_occurrences", "EPSILON_TIME", "EPSILON_SCORE"]
