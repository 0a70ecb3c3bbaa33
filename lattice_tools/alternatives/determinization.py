"""Determinization of word lattices on word sequences (epsilon removal included).

Weighted subset construction (Mohri 1997; Allauzen & Mohri's epsilon-removing variant, as in
Kaldi's ``DeterminizeStar``) specialised to acyclic lattices.  A determinized state is a set of
``(lattice state, residual cost)`` pairs, closed under epsilon arcs (silence and fillers count as
epsilons, see :func:`~lattice_tools.alternatives._common.is_silence`).  For each word ``w`` leaving
the set, the output arc weight is the semiring sum ``(+)`` of ``residual + arc cost`` over the
``w`` arcs, and the new residuals are what is left after dividing by it.

Semirings:

* ``"log"``: ``(+)`` is log-addition; each word sequence of the output carries the **total**
  probability of all lattice paths with those words (what N-best posteriors and phrase
  alternatives need).
* ``"tropical"``: ``(+)`` is min; each sequence carries its **best** path's cost.

Output: a word-aligned, epsilon-free, deterministic :class:`Lattice` whose ``graph_cost`` holds
the combined scaled cost (``lm_scale * graph + acoustic_scale * acoustic + word_penalty``) and
``acoustic_cost`` is 0 (the split cannot be kept through log-addition).  An output arc's times are
those of the input arc that contributed the smallest ``residual + cost`` (in the tropical semiring
that is the best path's arc; with shared prefixes, the best path through the output arc).
Residual subsets are compared after rounding residuals to ``delta`` (default 1e-6).

Budget: more than ``max_states`` output states or ``max_arcs`` output arcs raises
:class:`~lattice_tools.core.errors.BudgetExceededError` (determinization can be exponential).
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Iterable

import numpy as np

from ..core.errors import BudgetExceededError, LatticeError
from ..core.lattice import Lattice
from ._common import adjacency, prepare
from ._search import log_add

INF = math.inf


def determinize(lat: Lattice, semiring: str = "log", *, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
                word_penalty: float = 0.0, silence_words: Iterable[str] | None = None, delta: float = 1e-6,
                max_states: int = 1_000_000, max_arcs: int = 10_000_000) -> Lattice:
    """Determinize ``lat`` on word sequences in the ``"log"`` or ``"tropical"`` semiring.

    Frame-level lattices are word-aligned first.  See the module docstring for the output's
    weights and times.  Raises BudgetExceededError past ``max_states``/``max_arcs``.
    """
    if semiring not in ("log", "tropical"):
        raise LatticeError(f"semiring must be 'log' or 'tropical', got {semiring!r}", key=lat.key or None)
    if not lat.word_aligned:
        from .word_alignment import word_align
        lat = word_align(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale)
    use_log = semiring == "log"
    plus = log_add if use_log else min
    labels, cost, final = prepare(lat, acoustic_scale, lm_scale, word_penalty, silence_words)
    out_eps, out_word = adjacency(lat.src, lat.dst, labels, cost)
    final_l = final.tolist()
    t0_l, t1_l = lat.t0.tolist(), lat.t1.tolist()

    def closure(subset: dict) -> dict:
        """Epsilon closure; values are (residual, best residual + path to here is irrelevant)."""
        out = dict(subset)
        heap = list(out)
        heapq.heapify(heap)
        queued = set(heap)
        while heap:
            s = heapq.heappop(heap)
            r = out[s]
            for d, c, _ in out_eps.get(s, ()):
                out[d] = plus(out[d], r + c) if d in out else r + c
                if d not in queued:
                    queued.add(d)
                    heapq.heappush(heap, d)
        return out

    def key_of(subset: dict) -> tuple:
        return tuple(sorted((s, round(r / delta)) for s, r in subset.items()))

    ids: dict[tuple, int] = {}
    queue: list[dict] = []
    start = {0: 0.0}
    ids[key_of(start)] = 0
    queue.append(start)
    arcs_src, arcs_dst, arcs_word, arcs_cost, arcs_t0, arcs_t1 = [], [], [], [], [], []
    finals: list[float] = []
    i = 0
    while i < len(queue):
        subset = closure(queue[i])
        fw = INF
        trans: dict[int, dict] = {}
        best_arc: dict[int, tuple] = {}
        for s, r in subset.items():
            f = final_l[s]
            if f < INF:
                fw = plus(fw, r + f)
            for w, d, c, a in out_word.get(s, ()):
                t = trans.setdefault(w, {})
                v = r + c
                t[d] = plus(t[d], v) if d in t else v
                if w not in best_arc or v < best_arc[w][0]:
                    best_arc[w] = (v, a)
        finals.append(fw)
        for w, t in trans.items():
            wsum = INF
            for v in t.values():
                wsum = plus(wsum, v)
            nxt = {d: v - wsum for d, v in t.items()}
            k = key_of(nxt)
            j = ids.get(k)
            if j is None:
                j = ids[k] = len(queue)
                queue.append(nxt)
                if len(queue) > max_states:
                    raise BudgetExceededError(f"determinization exceeded {max_states} states", key=lat.key or None)
            a = best_arc[w][1]
            arcs_src.append(i)
            arcs_dst.append(j)
            arcs_word.append(w)
            arcs_cost.append(wsum)
            arcs_t0.append(t0_l[a])
            arcs_t1.append(t1_l[a])
            if len(arcs_src) > max_arcs:
                raise BudgetExceededError(f"determinization exceeded {max_arcs} arcs", key=lat.key or None)
        queue[i] = {}  # free the residuals of processed states
        i += 1
    return Lattice.from_arcs(src=arcs_src, dst=arcs_dst, word=arcs_word, symbols=lat.symbols,
                             final_graph_cost=np.array(finals), num_states=len(finals), t0=arcs_t0, t1=arcs_t1,
                             graph_cost=arcs_cost, acoustic_cost=np.zeros(len(arcs_cost)),
                             frame_shift=lat.frame_shift, key=lat.key, word_aligned=True)
