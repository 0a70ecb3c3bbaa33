"""Word alignment of frame-level lattices (k2/icefall, Kaldi raw lattices) without an HMM model.

A frame-level lattice has one arc per frame (or per transition id) and carries a word id on *some*
arcs.  Convention (icefall's ``get_texts_with_timestamp``): **a word starts at the arc that
carries its id**.  It ends where the next word starts (or where the path ends): the arcs without
a word that follow a word arc -- trailing blanks, repeated tokens, silence -- are assigned to the
preceding word.  Only the non-word arcs *before the first word* become a separate epsilon arc
(leading silence) at the start of the output.

Construction.  Call *boundary states* the states with an outgoing word arc, plus the final
states.  Every complete path splits uniquely into: a leading non-word stretch from the start to a
boundary state, then repeatedly a word arc ``s -w-> d`` followed by a non-word stretch from ``d``
to a boundary state ``e`` (possibly ``e = d``), and the final weight of the last ``e``.  The
output has one arc ``s -w-> e`` for each (word arc, reachable boundary state ``e``), whose weight
is the word arc's weight times the *total* (log-semiring) weight of all non-word stretches from
``d`` to ``e``; parallel arcs with the same ``(s, e, w)`` are merged by log-addition.  Hence the
weighted word language is preserved exactly: every word sequence keeps its total probability.

Weights: the merged weight is exact for the combined cost ``lm_scale * graph + acoustic_scale *
acoustic`` under the scales given to :func:`word_align` (default 1, 1).  The ``graph_cost`` of an
output arc is the graph cost along the best (tropical) stretch; ``acoustic_cost`` takes the rest,
so that the combined cost is exact under those scales (and approximate under other scales when
several stretches with different graph costs were merged).

Times: an output word arc spans ``[t0 of the word arc, time of e)``, where a state's time is the
earliest start frame of the arcs leaving it (the latest end frame of the arcs entering it for
states without outgoing arcs).  The two words of a k2 arc that carries two words (read as a chain
of two arcs at one frame) thus get the same start frame, the first with zero duration.

Complexity: one forward sweep over the non-word arcs reachable from each word arc's destination,
i.e. O(arcs x stretch length).
"""
from __future__ import annotations

import heapq
import math

import numpy as np

from ..core.errors import LatticeError
from ..core.lattice import Lattice
from ._search import log_add

INF = math.inf


def word_align(lat: Lattice, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0) -> Lattice:
    """Word-aligned lattice of a frame-level ``lat`` (returned unchanged if ``lat.word_aligned``).

    Args:
      lat: acyclic lattice; ``word`` > 0 on the arc where each word starts.
      acoustic_scale, lm_scale: the scales under which merged stretch weights are exact
        (see the module docstring); ``acoustic_scale`` must be positive.

    Returns:
      a new word-aligned :class:`Lattice` (``word_aligned=True``, ``ilabel = word``, attrs dropped)
      with the same weighted word language.
    """
    if lat.word_aligned:
        return lat
    if acoustic_scale <= 0:
        raise LatticeError(f"word_align needs a positive acoustic_scale, got {acoustic_scale}", key=lat.key or None)
    n = lat.num_states
    cost = lat.arc_costs(acoustic_scale, lm_scale, 0.0)
    final = lat.final_costs(acoustic_scale, lm_scale)
    word = lat.word
    is_word = word > 0
    boundary = np.isfinite(final).copy()
    boundary[lat.src[is_word]] = True
    # A state's time: the earliest start of the arcs leaving it (so a word ends exactly where
    # the next one starts, even for 2-word arcs split into a chain at one frame), else the
    # latest end of the arcs entering it.
    in_time = np.full(n, -1, dtype=np.int64)
    np.maximum.at(in_time, lat.dst, lat.t1.astype(np.int64))
    out_time = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(out_time, lat.src, lat.t0.astype(np.int64))
    state_time = np.where(out_time < np.iinfo(np.int64).max, out_time, in_time)
    state_time[0] = max(state_time[0], 0)
    # Non-word adjacency as Python lists (stretch sweeps are sparse and per source).
    nw_out: dict[int, list] = {}
    nw_idx = np.flatnonzero(~is_word)
    for s, d, c, g in zip(lat.src[nw_idx].tolist(), lat.dst[nw_idx].tolist(), cost[nw_idx].tolist(),
                          lat.graph_cost[nw_idx].tolist(), strict=False):
        nw_out.setdefault(s, []).append((d, c, g))
    boundary_l = boundary.tolist()

    def stretches(d: int) -> list:
        """[(e, log cost, best cost, graph cost of best)] over non-word paths d -> boundary e."""
        mass = {d: (0.0, 0.0, 0.0)}
        heap = [d]
        seen = {d}
        out = []
        while heap:
            s = heapq.heappop(heap)
            lc, bc, bg = mass[s]
            if boundary_l[s]:
                out.append((s, lc, bc, bg))
            for t, c, g in nw_out.get(s, ()):
                old = mass.get(t)
                if old is None:
                    mass[t] = (lc + c, bc + c, bg + g)
                else:
                    nb = bc + c
                    mass[t] = (log_add(old[0], lc + c), nb, bg + g) if nb < old[1] else (log_add(old[0], lc + c),
                                                                                         old[1], old[2])
                if t not in seen:
                    seen.add(t)
                    heapq.heappush(heap, t)
        return out

    cache: dict[int, list] = {}
    merged: dict[tuple, list] = {}  # (src, dst, word) -> [log cost, best cost, graph of best, t0, t1]

    def add(s, e, w, lc, bc, bg, t0, t1):
        k = (s, e, w)
        old = merged.get(k)
        if old is None:
            merged[k] = [lc, bc, bg, t0, t1]
        else:
            old[0] = log_add(old[0], lc)
            if bc < old[1]:
                old[1], old[2], old[3], old[4] = bc, bg, t0, t1

    w_idx = np.flatnonzero(is_word)
    for s, d, w, c, g, t0 in zip(lat.src[w_idx].tolist(), lat.dst[w_idx].tolist(), word[w_idx].tolist(),
                                 cost[w_idx].tolist(), lat.graph_cost[w_idx].tolist(), lat.t0[w_idx].tolist(),
                                 strict=True):
        st = cache.get(d)
        if st is None:
            st = cache[d] = stretches(d)
        for e, lc, bc, bg in st:
            add(s, e, w, c + lc, c + bc, g + bg, t0, int(state_time[e]))
    new_start = n
    lead = stretches(0)
    use_new_start = not (len(lead) == 1 and lead[0][0] == 0)
    if use_new_start:
        t_start = int(state_time[0])
        for e, lc, bc, bg in lead:
            add(new_start, e, 0, lc, bc, bg, t_start, int(state_time[e]))
    if not merged and not np.isfinite(final[0]):
        raise LatticeError("frame-level lattice has no complete path", key=lat.key or None)
    keys = list(merged)
    vals = [merged[k] for k in keys]
    src = np.array([k[0] for k in keys], dtype=np.int64)
    dst = np.array([k[1] for k in keys], dtype=np.int64)
    wid = np.array([k[2] for k in keys], dtype=np.int64)
    combined = np.array([v[0] for v in vals])
    graph = np.array([v[2] for v in vals])
    acoustic = (combined - lm_scale * graph) / acoustic_scale
    t0 = np.array([v[3] for v in vals], dtype=np.int64)
    t1 = np.array([v[4] for v in vals], dtype=np.int64)
    final_g = np.r_[np.where(boundary, lat.final_graph_cost, INF), INF]
    final_a = np.r_[np.where(boundary, lat.final_acoustic_cost, INF), INF]
    return Lattice.from_arcs(src=src, dst=dst, word=wid, symbols=lat.symbols, final_graph_cost=final_g,
                             final_acoustic_cost=final_a, num_states=n + 1,
                             start=new_start if use_new_start else 0, t0=t0, t1=t1, graph_cost=graph,
                             acoustic_cost=acoustic, frame_shift=lat.frame_shift, key=lat.key, word_aligned=True)
