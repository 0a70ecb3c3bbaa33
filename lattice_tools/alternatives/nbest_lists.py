"""Exact N-best lists: the N most probable *distinct* word sequences of a lattice.

Algorithm: best-first search over word prefixes, i.e. a lazily explored log-semiring
determinization of the lattice (see :mod:`lattice_tools.alternatives._search`).  The priority of a
prefix is the exact total probability of all paths that start with it (forward mass of the prefix
times the log-semiring backward score), an admissible bound for every completion, so sequences
come out in exact order of their total posterior ``P(W) = sum over paths with words W / Z``.
When that bound is too loose (long utterances spread their probability over astronomically many
sequences) the search ranks by the exact best-completion bound, computed on the determinized
states that can lie on the N best (A* over determinized states with :func:`best_word_bound`; see
``_fastsearch._bounded_exact_search``); for N = inf it log-determinizes the whole lattice
(``max_states`` budget) and searches it with that bound.  Not
sampled, not an approximation: equal to enumerating every path and summing by word sequence
(tests check this against brute force and against kaldifst ``shortest_path(n)`` on the
log-determinized lattice).
"""
from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ..lattice import Lattice
from ._common import dense_codes, prepare
from ._fastsearch import SearchProblem, search_many
from ._fb import ForwardBackward
from .network import Alternative, Alternatives, Slot


def arc_words_and_times(lat: Lattice) -> tuple[list, np.ndarray, np.ndarray, np.ndarray]:
    """Per arc, as arrays: ``(names, code, start, duration)`` -- the arc's word is
    ``names[code[a]]`` (``""`` for epsilon), its start and duration in seconds rounded to 1e-6
    (NaN when unknown)."""
    fs = lat.frame_shift
    known = (lat.t0 >= 0) & (lat.t1 >= 0)
    uniq, code = dense_codes(lat.word.astype(np.int64))
    names = [lat.symbols.word(int(w)) if w else "" for w in uniq.tolist()]
    start = np.where(lat.t0 >= 0, np.round(lat.t0 * fs, 6), np.nan)
    dur = np.where(known, np.round((lat.t1 - lat.t0) * fs, 6), np.nan)
    return names, code, start, dur


def alternative_from_path(lat: Lattice, labels, arcs: Iterable[int], posterior: float, _cache: dict | None = None
                          ) -> Alternative:
    """An :class:`Alternative` whose words and times are those of the lattice path ``arcs``
    (silence arcs skipped); every word's confidence is the alternative's ``posterior``.
    ``_cache`` (a dict kept by the caller for one lattice) avoids re-converting arrays."""
    if _cache is None:
        _cache = {}
    if not _cache:
        names, code, start, dur = arc_words_and_times(lat)
        _cache["labels"] = np.asarray(labels).tolist()
        _cache["word"] = [names[i] for i in code.tolist()]
        _cache["start"] = start.tolist()
        _cache["dur"] = dur.tolist()
    lab, wid, st, du = _cache["labels"], _cache["word"], _cache["start"], _cache["dur"]
    arcs = [a for a in arcs if lab[a] != 0]
    words = [wid[a] for a in arcs]
    starts = [st[a] for a in arcs]
    durs = [du[a] for a in arcs]
    return Alternative(tuple(words), tuple(starts), tuple(durs), posterior, (posterior,) * len(words))


def nbest_sequences(lat: Lattice, n: int | None, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
                    word_penalty: float = 0.0, silence_words: Iterable[str] | None = None,
                    max_pops: int = 2_000_000, max_states: int = 1_000_000):
    """``(results, total_cost, labels)``: the exact ``n`` best distinct sequences as
    :class:`~lattice_tools.alternatives._search.SequenceResult` (word ids, log cost, best-path
    cost and arcs), the log-semiring total cost of the lattice, and the per-arc labels used."""
    labels, cost, final = prepare(lat, acoustic_scale, lm_scale, word_penalty, silence_words)
    fb = ForwardBackward(lat.num_states, lat.src, lat.dst, cost, final, log=True)
    bound = best_word_bound(lat.num_states, lat.src, lat.dst, labels, cost, final)
    problem = lattice_search_problem(lat, labels, cost, final, np.maximum(bound, fb.beta))
    results = search_many([problem], n, max_pops=max_pops, key=lat.key or None, max_states=max_states)[0]
    return results, fb.total, labels


def best_word_bound(num_states: int, src, dst, labels, cost, final) -> np.ndarray:
    """Per state ``s``, a lower bound ``h[s]`` on the cost ``-ln max_W M_s(W)`` of the most probable
    completion from ``s``, where ``M_s(W)`` sums the paths from ``s`` reading exactly ``W``
    (epsilons skipped, exit weight included).

    The log-semiring backward cost ``-ln sum_W M_s(W)`` bounds it too, but it counts *every*
    completion: on a long utterance that mass is spread over astronomically many sequences, so it
    is far below the cost of any one of them.  This bound takes, at every state, only the best next
    word, while still summing the paths of that word (and its epsilon variants)::

        h[s] = min( exit(s), min_w (+)_{closed word arcs a of s with label w} (cost(a) + h[dst(a)]) )

    (``(+)`` the log sum; closed arcs: reached through epsilon paths, their costs included).  For
    every ``W``, ``M_s(W) <= exp(-h[s])`` by induction in reverse topological order, so it is
    admissible; and ``h[s]`` is at most the bound of each of ``s``'s choices, so it is consistent
    (priorities never decrease along the search tree), which the search needs.  Requires
    ``src < dst`` (topologically numbered states).
    """
    from ._fastsearch import _Closed

    m = int(num_states)
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    lab = np.asarray(labels, dtype=np.int64)
    cost = np.asarray(cost, dtype=np.float64)
    final = np.asarray(final, dtype=np.float64)
    cl = _Closed(m, src, dst, lab, cost, np.arange(len(src)), final, final, log=True, tropical=False)
    w_off, w_lab, w_dst, w_lc = cl.w_off, cl.w_lab, cl.w_dst, cl.w_lc
    h = np.array(cl.x_lc, dtype=np.float64)
    off = w_off.tolist()
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for s in range(m - 1, -1, -1):
            a, b = off[s], off[s + 1]
            if a == b:
                continue
            v = w_lc[a:b] + h[w_dst[a:b]]
            if b - a == 1:
                best = float(v[0])
            else:
                labs = w_lab[a:b]
                order = np.argsort(labs, kind="stable")
                ls, vs = labs[order], v[order]
                starts = np.flatnonzero(np.r_[True, ls[1:] != ls[:-1]])
                lo = np.minimum.reduceat(vs, starts)
                finite = np.isfinite(lo)
                if not finite.any():
                    continue
                shift = np.repeat(np.where(finite, lo, 0.0), np.diff(np.r_[starts, len(vs)]))
                sums = np.add.reduceat(np.exp(-(vs - shift)), starts)  # per label, shifted by its minimum
                best = float(np.min(np.where(finite, lo - np.log(sums), np.inf)))
            if best < h[s]:
                h[s] = best
    return h


def lattice_search_problem(lat: Lattice, labels, cost, final, beta) -> SearchProblem:
    """The whole lattice as a :class:`~lattice_tools.alternatives._fastsearch.SearchProblem`
    (start state 0, every arc's id its index; ``beta``: the log-semiring backward costs)."""
    fin = np.flatnonzero(np.isfinite(final))
    return SearchProblem(lat.num_states, lat.src, lat.dst, labels, cost, np.arange(lat.num_arcs), np.array([0]),
                         np.array([0.0]), np.array([0.0]), fin, final[fin], final[fin], beta)


def nbest(lat: Lattice, n: int | None, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
          word_penalty: float = 0.0, silence_words: Iterable[str] | None = None,
          max_pops: int = 2_000_000, max_states: int = 1_000_000) -> Alternatives:
    """Exact N-best list of ``lat`` as an :class:`Alternatives` with one slot (``kind="nbest"``).

    Semiring: log.  Each alternative's ``posterior`` is the total probability of all lattice
    paths with exactly that word sequence (silence and fillers are epsilons, see
    :func:`~lattice_tools.alternatives._common.is_silence`), divided by the lattice total, under
    ``lm_scale * graph + acoustic_scale * acoustic + word_penalty * #words``.  Word times come from
    the best single path with that word sequence; NaN when the lattice has no times.  ``n=None``
    lists every sequence (bounded by ``max_pops`` search nodes, else BudgetExceededError).

    Frame-level lattices are word-aligned first (:func:`word_align`).
    """
    if not lat.word_aligned:
        from .word_alignment import word_align
        lat = word_align(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale)
    results, total, labels = nbest_sequences(lat, n, acoustic_scale=acoustic_scale, lm_scale=lm_scale,
                                             word_penalty=word_penalty, silence_words=silence_words,
                                             max_pops=max_pops, max_states=max_states)
    cache: dict = {}
    alts = tuple(alternative_from_path(lat, labels, r.best_arcs, math.exp(-(r.cost - total)), cache) for r in results)
    end = lat.duration if lat.has_times else math.nan
    if not alts:  # pragma: no cover - a valid lattice always has a sequence
        alts = (Alternative((), posterior=1.0),)
    return Alternatives(key=lat.key, slots=(Slot(0.0, end, alts),), kind="nbest",
                        meta={"total_cost": total, "requested_n": n})
