"""Phrase alternatives (Faria et al., section 3.4), computed in about one pass over the lattice.

The recipe of the paper, step by step, and what this module does for each step:

1. **Word-align** the lattice (:func:`~lattice_tools.alternatives.word_alignment.word_align`; word
   lattices pass through unchanged).
2. **Phrase boundaries** are the times not crossed by any non-silence arc whose posterior is
   ``>= posterior_threshold`` (log-semiring arc posteriors under the given scales).  A time ``t``
   (a frame boundary) is *crossed* by an arc spanning frames ``[t0, t1)`` when ``t0 < t < t1``.
   Each run of consecutive uncrossed times strictly inside the utterance gives **one** cut, at
   the middle of the run (``(first + last) // 2``); runs touching the utterance start or end are
   not cuts.
3. **Arc-to-phrase rule**: an arc belongs to the phrase containing its time midpoint
   ``(t0 + t1) / 2`` (a midpoint exactly on a cut belongs to the later phrase).  If the lattice's
   times are not monotone along some path, an arc's phrase is raised to the largest phrase of the
   arcs entering its source state, so that phrase indices never decrease along a path.  Every
   path thus splits into consecutive (possibly empty) segments, one per phrase, and its word
   sequence is the concatenation of its segments' word sequences: the cross product of the
   phrase alternatives at N = infinity contains every lattice path (Faria et al., eq. 6).
4. **Per phrase**: the paper masks all arcs outside the phrase to epsilon and log-determinizes the
   whole masked lattice.  That is quadratic (one full-lattice determinization per phrase).  The
   same distribution is obtained from the arcs of the phrase alone::

       P_k(w) = 1/Z * (+)_{u, v} alpha_k(u) (x) M_w(u, v) (x) exit_k(v)

   where ``alpha_k(u)`` is the forward mass of paths that reach ``u`` with arcs of earlier phrases
   only (the *entry frontier*; the start state has ``alpha_k = 1``), ``M_w(u, v)`` the mass of the
   phrase-``k`` paths from ``u`` to ``v`` reading ``w``, and ``exit_k(v)`` the final weight of
   ``v`` plus the backward mass through arcs of later phrases (the *exit frontier*).  Because
   phrase indices never decrease along a path, the backward mass of any state inside phrase ``k``
   is the ordinary backward score, so the exact best-first search of
   :mod:`~lattice_tools.alternatives._search` (a lazy log-semiring determinization) runs on the
   phrase's arcs with these initial and final weights and returns the ``N`` most probable phrase
   alternatives with exact posteriors (they sum to 1 per phrase at ``N = None``).  The total work
   is one forward-backward pass plus the size of every phrase's sub-lattice and frontiers.
   Tests prove equality with the naive masked determinization done with kaldifst.

Silence and fillers are epsilons of the word language; a phrase may have the empty alternative
(written ``@`` in alt-CTM).  Slots whose only alternatives are empty are dropped.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from itertools import chain

import numpy as np

from ..algorithms.forward_backward import INF, ForwardBackward, _segment_reduce, log_add
from ..core._budget import check_memory
from ..core._gc import gc_paused
from ..core.alternatives_network import Alternative, Alternatives, Slot
from ..core.errors import LatticeError
from ..core.lattice import Lattice
from ._common import prepare
from ._fastsearch import SearchProblem, search_many
from ._search import DEFAULT_TUNING, SearchTuning
from .nbest_lists import alternative_from_path, arc_words_and_times


def phrase_cuts(lat: Lattice, posteriors: np.ndarray, labels: np.ndarray, posterior_threshold: float) -> np.ndarray:
    """Cut times (frames) between phrases, per step 2 of the module docstring."""
    T = lat.num_frames
    if T < 2 or not lat.has_times:
        return np.zeros(0, dtype=np.int64)
    sel = (labels > 0) & (posteriors >= posterior_threshold) & (lat.t1 - lat.t0 >= 2)
    diff = np.zeros(T + 2, dtype=np.int64)
    np.add.at(diff, lat.t0[sel] + 1, 1)
    np.add.at(diff, lat.t1[sel], -1)
    crossed = np.cumsum(diff)[: T + 1] > 0
    free = ~crossed
    free[0] = free[T] = False  # the utterance edges are not cuts
    # runs of uncrossed interior times; runs touching 0 or T are excluded
    idx = np.flatnonzero(free)
    if not len(idx):
        return np.zeros(0, dtype=np.int64)
    run_start = np.r_[True, np.diff(idx) > 1]
    starts = idx[run_start]
    ends = idx[np.r_[run_start[1:], True]]
    keep = (starts > 1) & (ends < T - 1)
    # a run that begins at time 1 touches the start edge (time 0 is always uncrossed)
    return ((starts[keep] + ends[keep]) // 2).astype(np.int64)


def arc_phrases(lat: Lattice, cuts: np.ndarray) -> np.ndarray:
    """Phrase index of every arc (step 3): midpoint rule, then made monotone along paths."""
    if not len(cuts) or not lat.num_arcs:
        return np.zeros(lat.num_arcs, dtype=np.int64)
    ph = np.searchsorted(2 * cuts, lat.t0.astype(np.int64) + lat.t1, side="right").astype(np.int64)
    while True:  # usually zero or one iteration: only inconsistent times need raising
        max_in = np.full(lat.num_states, -1, dtype=np.int64)
        np.maximum.at(max_in, lat.dst, ph)
        raised = np.maximum(ph, max_in[lat.src])
        if np.array_equal(raised, ph):
            return ph
        ph = raised


def _ranges_reduce(lo: np.ndarray, hi: np.ndarray, order: np.ndarray, values: np.ndarray, log: bool) -> np.ndarray:
    """For each pair ``p``: semiring sum of ``values[order[lo[p]:hi[p]]]`` (inf when empty)."""
    out = np.full(len(lo), INF)
    lengths = np.maximum(hi - lo, 0)
    nz = np.flatnonzero(lengths)
    if not len(nz):
        return out
    ln = lengths[nz]
    seg = np.r_[0, np.cumsum(ln)[:-1]]
    pos = np.arange(ln.sum()) - np.repeat(seg - lo[nz], ln)
    out[nz] = _segment_reduce(values[order[pos]], seg, log)
    return out


class PhraseDecomposition:
    """The phrase structure of a word lattice: cuts, arc phrases, entry/exit frontier weights.

    Built once per lattice; :meth:`alternatives` then runs the exact search in each phrase.
    """

    def __init__(self, lat: Lattice, posterior_threshold: float, *, acoustic_scale=1.0, lm_scale=1.0,
                 word_penalty=0.0, silence_words=None):
        if not 0.0 <= posterior_threshold <= 1.0:
            raise LatticeError(f"posterior_threshold must be in [0, 1], got {posterior_threshold}", key=lat.key or None)
        self.lat = lat
        self.posterior_threshold = posterior_threshold
        labels, cost, final = prepare(lat, acoustic_scale, lm_scale, word_penalty, silence_words)
        self.labels, self.cost, self.final = labels, cost, final
        fb = ForwardBackward(lat.num_states, lat.src, lat.dst, cost, final, log=True)
        vit = ForwardBackward(lat.num_states, lat.src, lat.dst, cost, final, log=False, plan=fb.plan)
        self.fb, self.total = fb, fb.total
        self.posteriors = fb.arc_posteriors()
        self.cuts = phrase_cuts(lat, self.posteriors, labels, posterior_threshold)
        self.num_phrases = len(self.cuts) + 1
        self.phrase = arc_phrases(lat, self.cuts)
        self._frontiers(fb, vit)

    def _frontiers(self, fb: ForwardBackward, vit: ForwardBackward) -> None:
        lat, ph, K = self.lat, self.phrase, self.num_phrases
        n = lat.num_states
        src, dst = lat.src.astype(np.int64), lat.dst.astype(np.int64)
        is_final = np.isfinite(self.final)
        # Entry pairs (u, k): u reached with arcs of phrases < k only, and continuing in phrase >= k.
        min_in = np.full(n, K, dtype=np.int64)
        np.minimum.at(min_in, dst, ph)
        min_in[0] = -1
        max_out = np.full(n, -1, dtype=np.int64)
        np.maximum.at(max_out, src, ph)
        hi = np.where(is_final, K - 1, max_out)
        count = np.maximum(hi - min_in, 0)
        ent_u = np.repeat(np.arange(n), count)
        ent_k = np.arange(count.sum()) - np.repeat(np.r_[0, np.cumsum(count)[:-1]] - (min_in + 1), count)
        # alpha_k(u): in-arcs of u with phrase < k.
        key_in = dst * (K + 1) + ph
        order_in = np.argsort(key_in, kind="stable")
        sorted_in = key_in[order_in]
        lo = np.searchsorted(sorted_in, ent_u * (K + 1), side="left")
        up = np.searchsorted(sorted_in, ent_u * (K + 1) + ent_k, side="left")
        a_log = _ranges_reduce(lo, up, order_in, fb.alpha[src] + self.cost, True)
        a_vit = _ranges_reduce(lo, up, order_in, vit.alpha[src] + self.cost, False)
        is_start = ent_u == 0
        a_log[is_start] = log_add(a_log[is_start], np.zeros(int(is_start.sum())))
        a_vit[is_start] = np.minimum(a_vit[is_start], 0.0)
        # Sub-lattice states: entries and destinations of each phrase's arcs; exit_k(v) for each.
        pairs = np.unique(np.r_[ent_u * (K + 1) + ent_k, dst * (K + 1) + ph])
        st_v, st_k = pairs // (K + 1), pairs % (K + 1)
        key_out = src * (K + 1) + ph
        order_out = np.argsort(key_out, kind="stable")
        sorted_out = key_out[order_out]
        lo = np.searchsorted(sorted_out, st_v * (K + 1) + st_k + 1, side="left")
        up = np.searchsorted(sorted_out, (st_v + 1) * (K + 1), side="left")
        e_log = log_add(_ranges_reduce(lo, up, order_out, self.cost + fb.beta[dst], True), self.final[st_v])
        e_vit = np.minimum(_ranges_reduce(lo, up, order_out, self.cost + vit.beta[dst], False), self.final[st_v])
        self._entries = (ent_k, ent_u, a_log, a_vit)
        self._exits = (st_k, st_v, e_log, e_vit)

    def phrase_span(self, k: int) -> tuple[int, int]:
        bounds = np.r_[0, self.cuts, self.lat.num_frames]
        return int(bounds[k]), int(bounds[k + 1])

    def problems(self) -> list:
        """Each phrase's sub-lattice as a :class:`~lattice_tools.alternatives._fastsearch.SearchProblem`:
        its arcs, with the entry frontier as initial weights and the exit frontier as final
        weights (log and tropical), in phrase-local state numbers."""
        K = self.num_phrases
        ent_k, ent_u, a_log, a_vit = self._entries
        st_k, st_v, e_log, e_vit = self._exits
        ent_order = np.argsort(ent_k, kind="stable")
        ent_off = np.searchsorted(ent_k[ent_order], np.arange(K + 1))
        ex_order = np.argsort(st_k, kind="stable")
        ex_off = np.searchsorted(st_k[ex_order], np.arange(K + 1))
        arc_order = np.argsort(self.phrase, kind="stable")
        arc_off = np.searchsorted(self.phrase[arc_order], np.arange(K + 1))
        beta = self.fb.beta
        lat = self.lat
        out = []
        for k in range(K):
            ei = ent_order[ent_off[k]:ent_off[k + 1]]
            xi = ex_order[ex_off[k]:ex_off[k + 1]]
            ai = arc_order[arc_off[k]:arc_off[k + 1]]
            gsrc, gdst = lat.src[ai].astype(np.int64), lat.dst[ai].astype(np.int64)
            member = np.zeros(lat.num_states, dtype=bool)  # faster than np.unique of the 2 x arcs ends
            for ends in (ent_u[ei], st_v[xi], gsrc, gdst):
                member[ends] = True
            states = np.flatnonzero(member)
            local = states.searchsorted  # global -> phrase-local state ids
            out.append(SearchProblem(len(states), local(gsrc), local(gdst), self.labels[ai], self.cost[ai], ai,
                                     local(ent_u[ei]), a_log[ei], a_vit[ei], local(st_v[xi]), e_log[xi], e_vit[xi],
                                     beta[states]))
        return out

    def search(self, n: int | None, max_pops: int = 2_000_000, max_states: int = 1_000_000,
               tuning: SearchTuning = DEFAULT_TUNING):
        """Yield ``(k, results)`` for each phrase: its exact ``n`` best sequences
        (:class:`~lattice_tools.alternatives._search.SequenceResult`, costs include the frontier
        weights, so ``exp(total - cost)`` is the posterior).  The phrases are searched by one
        call (:func:`~lattice_tools.alternatives._fastsearch.search_many`; ``tuning``: its
        time/memory trade-offs, which never change the result)."""
        yield from enumerate(search_many(self.problems(), n, max_pops=max_pops, key=self.lat.key or None,
                                         max_states=max_states, tuning=tuning))

    def alternatives(self, n: int | None, max_pops: int = 2_000_000, max_states: int = 1_000_000,
                     tuning: SearchTuning = DEFAULT_TUNING) -> Alternatives:
        """The phrase alternatives (see :func:`phrases`), at most ``n`` per phrase."""
        lat = self.lat
        fs = lat.frame_shift
        slots = []
        make = _AlternativeMaker(lat, self.labels)
        total = self.total
        for k, results in self.search(n, max_pops=max_pops, max_states=max_states, tuning=tuning):
            check_memory("phrase alternatives", lat.key or None)
            alts = make.many([r.best_arcs for r in results], [math.exp(-(r.cost - total)) for r in results])
            if not alts or all(a.is_empty for a in alts):
                continue
            b0, b1 = self.phrase_span(k)
            start, end = (b0 * fs, b1 * fs) if lat.has_times else (math.nan, math.nan)
            slots.append(Slot(round(start, 6), round(end, 6), alts))
        return Alternatives(key=lat.key, slots=tuple(slots), kind="phrase",
                            meta={"requested_n": n, "posterior_threshold": self.posterior_threshold,
                                  "num_phrases": self.num_phrases, "total_cost": self.total})


class _AlternativeMaker:
    """``make(arcs, posterior)`` and ``make.many(results, total)``: the :class:`Alternative` of
    :func:`~lattice_tools.alternatives.nbest_lists.alternative_from_path` (words and times of the path's
    non-silence arcs, every confidence = the posterior), built without re-validating fields that
    are already normalized here (tuples of Python floats), which is most of the cost of tens of
    thousands of small objects.  Falls back to the ordinary constructor if ``Alternative`` ever
    stops being a plain (``__dict__``) dataclass with these fields."""

    _FIELDS = ("words", "starts", "durations", "posterior", "confidences")

    def __init__(self, lat: Lattice, labels):
        self.cache: dict = {}
        self.lat, self.labels = lat, np.asarray(labels)
        fields = getattr(Alternative, "__dataclass_fields__", {})
        self.fast = tuple(fields) == self._FIELDS and not hasattr(Alternative, "__slots__")
        self.names, self.code, self.start, self.dur = arc_words_and_times(lat)

    def __call__(self, arcs, posterior: float) -> Alternative:
        return self.many([arcs], [posterior])[0]

    def many(self, paths: list, posteriors: list) -> tuple:
        """The alternatives of several paths (tuples of arc ids) at once: one numpy gather for
        all their arcs."""
        if not self.fast:
            return tuple(alternative_from_path(self.lat, self.labels, arcs, p, self.cache)
                         for arcs, p in zip(paths, posteriors, strict=False))
        lens = [len(arcs) for arcs in paths]
        flat = np.fromiter(chain.from_iterable(paths), dtype=np.int64, count=sum(lens))
        if not self.labels[flat].all():  # silence arcs are skipped (the search never returns any)
            keep = [[a for a in arcs if self.labels[a]] for arcs in paths]
            return self.many(keep, posteriors)
        names = self.names
        words = [names[c] for c in self.code[flat].tolist()]
        starts, durs = self.start[flat].tolist(), self.dur[flat].tolist()
        new = object.__new__
        out = []
        e = 0
        for n, p in zip(lens, posteriors, strict=False):
            b, e = e, e + n
            alt = new(Alternative)
            alt.__dict__.update(words=tuple(words[b:e]), starts=tuple(starts[b:e]), durations=tuple(durs[b:e]),
                                posterior=p, confidences=(p,) * n)
            out.append(alt)
        return tuple(out)


def phrases(lat: Lattice, n: int | None, posterior_threshold: float = 0.1, *, acoustic_scale: float = 1.0,
            lm_scale: float = 1.0, word_penalty: float = 0.0, silence_words: Iterable[str] | None = None,
            max_pops: int = 2_000_000, max_states: int = 1_000_000) -> Alternatives:
    """Phrase alternatives of ``lat`` (Faria et al., section 3.4) as an :class:`Alternatives`
    (``kind="phrase"``, one slot per phrase, at most ``n`` alternatives each; ``None`` = all).

    Semiring: log.  Each alternative's ``posterior`` is the exact total probability of the lattice
    paths whose phrase segment reads that word sequence (see the module docstring); word times
    are those of the best single path through the phrase with that sequence; every word's
    confidence is the alternative's posterior.  Slot times are the phrase's cut times.
    """
    if not lat.word_aligned:
        from .word_alignment import word_align
        lat = word_align(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale)
    with gc_paused():  # tens of thousands of search records and result objects, none cyclic
        dec = PhraseDecomposition(lat, posterior_threshold, acoustic_scale=acoustic_scale, lm_scale=lm_scale,
                                  word_penalty=word_penalty, silence_words=silence_words)
        return dec.alternatives(n, max_pops=max_pops, max_states=max_states)
