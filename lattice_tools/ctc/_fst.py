"""Exact conversions between OpenFst graphs (kaldifst) and parallel numpy arc arrays.

OpenFst's text printer rounds weights to 6 significant digits, so graphs are never round-tripped
through text here: arcs are read with ``kaldifst.ArcIterator`` (float32 weights kept exactly) and
written with ``add_arc``.  Labels follow OpenFst: 0 is epsilon.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FstArrays:
    """A weighted transducer as arrays (tropical semiring, weights are costs).

    ``final[s]`` is the final cost of state ``s`` (``inf`` = not final); ``start`` is the start state.
    Arrays are not validated beyond their lengths; they are plain data passed between the
    kaldifst and k2 builders.
    """

    num_states: int
    start: int
    src: np.ndarray
    dst: np.ndarray
    ilabel: np.ndarray
    olabel: np.ndarray
    weight: np.ndarray
    final: np.ndarray

    @property
    def num_arcs(self) -> int:
        return len(self.src)

    def relabel(self, ilabel=None, olabel=None) -> FstArrays:
        return FstArrays(self.num_states, self.start, self.src, self.dst,
                         self.ilabel if ilabel is None else np.asarray(ilabel, dtype=np.int64),
                         self.olabel if olabel is None else np.asarray(olabel, dtype=np.int64),
                         self.weight, self.final)


def make_arrays(num_states, start, arcs, finals) -> FstArrays:
    """``arcs``: iterable of ``(src, dst, ilabel, olabel, cost)``; ``finals``: ``{state: cost}``."""
    arcs = list(arcs)
    a = np.array([x[:4] for x in arcs], dtype=np.int64).reshape(-1, 4)
    w = np.array([x[4] for x in arcs], dtype=np.float64)
    final = np.full(num_states, np.inf)
    for s, c in finals.items():
        final[s] = c
    return FstArrays(int(num_states), int(start), a[:, 0].copy(), a[:, 1].copy(), a[:, 2].copy(), a[:, 3].copy(),
                     w, final)


def fst_to_arrays(fst) -> FstArrays:
    """Read every arc and final weight of a kaldifst ``StdVectorFst`` (or ``StdConstFst``)."""
    from ..core._optional import kaldifst as _kaldifst

    kaldifst = _kaldifst()

    src, dst, il, ol, w = [], [], [], [], []
    n = fst.num_states
    final = np.full(n, np.inf)
    for s in kaldifst.StateIterator(fst):
        final[s] = fst.final(s).value
        for arc in kaldifst.ArcIterator(fst, s):
            src.append(s)
            dst.append(arc.nextstate)
            il.append(arc.ilabel)
            ol.append(arc.olabel)
            w.append(arc.weight.value)
    return FstArrays(n, int(fst.start), np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64),
                     np.array(il, dtype=np.int64), np.array(ol, dtype=np.int64), np.array(w, dtype=np.float64),
                     final)


def arrays_to_fst(arr: FstArrays):
    """Build a kaldifst ``StdVectorFst`` with exactly these states, arcs (in order) and finals."""
    from ..core._optional import kaldifst as _kaldifst

    kaldifst = _kaldifst()

    fst = kaldifst.StdVectorFst()
    for _ in range(arr.num_states):
        fst.add_state()
    if arr.num_states:
        fst.start = arr.start
    for s in np.nonzero(np.isfinite(arr.final))[0]:
        fst.set_final(state=int(s), weight=float(arr.final[s]))
    Arc = kaldifst.StdArc
    for s, d, i, o, w in zip(arr.src.tolist(), arr.dst.tolist(), arr.ilabel.tolist(), arr.olabel.tolist(),
                             arr.weight.tolist(), strict=False):
        fst.add_arc(state=s, arc=Arc(i, o, w, d))
    return fst
