"""Lattice operations with the exact semantics of Kaldi's latbin tools (``docs/kaldi.md``).

Kaldi stores lattice weights as float32 and scales them in double (``ScaleLattice``); these
functions do the same, so their weights are the ones Kaldi would write (stored here as float64
holding float32 values).  Each returns a new :class:`~lattice_tools.core.lattice.Lattice`.

* :func:`scale` -- ``lattice-scale --acoustic-scale --lm-scale``
* :func:`add_word_penalty` -- ``lattice-add-penalty --word-ins-penalty``
* :func:`prune_beam` -- ``lattice-prune --beam --acoustic-scale``
* :func:`best_path_kaldi` -- ``lattice-best-path`` / ``lattice-1best`` (``CompactLatticeShortestPath``)
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._ext import native
from ..core.errors import LatticeError
from ..core.lattice import Lattice
from ..core.symbols import SymbolTable

if TYPE_CHECKING:
    from ..io.lattices.kaldi import CompiledReader


def _f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).astype(np.float32).astype(np.float64)


def _times(values: np.ndarray, scale: float) -> np.ndarray:
    """float32(scale * value) computed in double, as ``ScaleTupleWeight`` does (``inf`` stays)."""
    with np.errstate(invalid="ignore"):
        out = (float(scale) * _f32(values)).astype(np.float32).astype(np.float64)
    return np.where(np.isinf(values), values, out)


def _unsorted(lat: Lattice, attrs=None) -> dict:
    """Rewriting weights clears OpenFst's cached "topologically sorted" property: Kaldi's MBR then
    re-sorts the states (as it does after ``lattice-scale`` through a binary archive)."""
    attrs = dict(lat.attrs if attrs is None else attrs)
    k = attrs.get("kaldi")
    if k is not None:
        k = k.copy()
        k[:, 3] = 0
        attrs["kaldi"] = k
    return attrs


def scale(lat: Lattice, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0) -> Lattice:
    """``lattice-scale``: graph costs times ``lm_scale``, acoustic costs times ``acoustic_scale``
    (the scales as float32, the products in double, stored as float32 -- Kaldi's arithmetic)."""
    if (acoustic_scale, lm_scale) == (1.0, 1.0):
        return lat
    ac, lm = float(np.float32(acoustic_scale)), float(np.float32(lm_scale))
    return lat.replace(graph_cost=_times(lat.graph_cost, lm), acoustic_cost=_times(lat.acoustic_cost, ac),
                       final_graph_cost=_times(lat.final_graph_cost, lm),
                       final_acoustic_cost=_times(lat.final_acoustic_cost, ac), attrs=_unsorted(lat))


def add_word_penalty(lat: Lattice, word_penalty: float) -> Lattice:
    """``lattice-add-penalty``: ``word_penalty`` added (in float32) to the graph cost of every arc
    with a word."""
    if not word_penalty:
        return lat
    g = _f32(lat.graph_cost)
    pen = (g.astype(np.float32) + np.float32(word_penalty)).astype(np.float64)
    return lat.replace(graph_cost=np.where(lat.word != 0, pen, g), attrs=_unsorted(lat))


def _cost(lat: Lattice, acoustic_scale: float = 1.0, lm_scale: float = 1.0):
    """Per-arc and per-final ``ConvertToCost`` (double sum of the float32 scaled weights)."""
    ac, lm = float(np.float32(acoustic_scale)), float(np.float32(lm_scale))
    arc = _times(lat.graph_cost, lm) + _times(lat.acoustic_cost, ac)
    fin = _times(lat.final_graph_cost, lm) + _times(lat.final_acoustic_cost, ac)
    return arc, fin


def prune_beam(lat: Lattice, beam: float, *, acoustic_scale: float = 1.0) -> Lattice:
    """``lattice-prune --beam``: keep the arcs (and final weights) on some path whose cost is within
    ``beam`` of the best path's, costs computed with the acoustic scale; the weights come back
    unscaled as Kaldi writes them (scaled then divided, in float32).  Then trimmed (``Connect``)."""
    from .forward_backward import ForwardBackward

    if not beam > 0:
        raise LatticeError(f"prune beam must be positive, got {beam}", key=lat.key or None)
    if acoustic_scale == 0:
        raise LatticeError("acoustic scale 0 cannot be inverted (Kaldi refuses it too)", key=lat.key or None)
    arc, fin = _cost(lat, acoustic_scale)
    fb = ForwardBackward(lat.num_states, lat.src, lat.dst, arc, fin, log=False)
    cutoff = fb.total + float(np.float32(beam))
    keep = fb.alpha[lat.src] + (arc + fb.beta[lat.dst]) <= cutoff
    fin_keep = np.isfinite(fin) & (fb.alpha + fin <= cutoff)
    ac = float(np.float32(acoustic_scale))
    out = lat
    if ac != 1.0:  # ScaleLattice(ac) then ScaleLattice(1 / ac): float32 round trip
        inv = 1.0 / ac
        out = lat.replace(acoustic_cost=_times(_times(lat.acoustic_cost, ac), inv),
                          final_acoustic_cost=_times(_times(lat.final_acoustic_cost, ac), inv), attrs=_unsorted(lat))
    out = out.replace(final_graph_cost=np.where(fin_keep, out.final_graph_cost, np.inf),
                      final_acoustic_cost=np.where(fin_keep, out.final_acoustic_cost, np.inf))
    return out.subset_arcs(keep)


@dataclass(frozen=True)
class KaldiBestPath:
    """The best path as ``lattice-best-path`` reports it: word ids (no epsilons), its arcs (hub arc
    indices, in path order), graph and acoustic cost after scaling (float32 sums along the path,
    final weight included) and the number of frames."""

    words: tuple[int, ...]
    arcs: tuple[int, ...]
    graph_cost: float
    acoustic_cost: float
    num_frames: int


def best_path_kaldi(lat: Lattice, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
                    word_penalty: float = 0.0) -> KaldiBestPath:
    """Kaldi's ``CompactLatticeShortestPath`` in Kaldi's order of states and arcs (the archive's
    stored order, depth-first re-sorted when not topological), so that ties between equal-cost
    paths go the same way: costs are double sums of the float32 scaled weights, a state keeps the
    first predecessor state that strictly improves it, and between two states the cheapest arc
    (the first one on a tie).  ``word_penalty`` is added to word arcs after scaling
    (``lattice-1best --word-ins-penalty``).  Tropical semiring; nothing is mutated; O(states + arcs), in C
    (``best_path`` of ``lattice_tools/_ext/kaldi_order.c``, which :func:`compact_best_path_reader` runs on an
    archive's bytes)."""
    from .kaldi_order import stored_arrays

    st = stored_arrays(lat)
    status, arcs, g, ac, frames = native("kaldi_order").best_path(
        st.start, _int64(st.src), _int64(st.dst), _int64(st.word), _int64(st.dur), _float64(st.graph),
        _float64(st.acoustic), _float64(st.final_graph), _float64(st.final_acoustic), _int64(st.final_dur),
        float(acoustic_scale), float(lm_scale), float(word_penalty))
    if status:
        raise LatticeError(arcs, key=lat.key or None)
    return KaldiBestPath(tuple(int(w) for w in st.word[arcs] if w != 0), tuple(int(x) for x in st.hub_arc[arcs]),
                         g, ac, frames)


#: The largest word id :func:`compact_best_path_reader` takes a table of known ids for (a byte per id).
_MAX_KNOWN_WORD_ID = 1 << 24


def compact_best_path_reader(symbols: SymbolTable | None, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
                             word_penalty: float = 0.0) -> CompiledReader | None:
    """:func:`best_path_kaldi` of every binary CompactLattice of a Kaldi archive, computed from its bytes as
    the archive is read (``compact=`` of :func:`lattice_tools.io.lattices.kaldi.read_kaldi_lattices`): the
    same compiled engine, without building the hub lattice.  The reader yields a
    :class:`~lattice_tools.io.lattices.kaldi.CompiledRecord` whose ``value`` is ``(words, starts, durations,
    graph_cost, acoustic_cost, num_frames)`` (the path's word ids with their first frame and frames); a
    lattice the reader would refuse or change (see ``compact_best_path`` in ``lattice_tools/_ext/kaldi_order.c``)
    comes as a :class:`Lattice` as usual.  ``symbols``: the word table the reader checks ids against (None:
    any id).  None when the table's ids are too large for the compiled check (then every lattice is built)."""
    known = None
    if symbols is not None:
        ids = np.fromiter((i for _, i in symbols), np.int64)
        if len(ids) and (ids.max() >= _MAX_KNOWN_WORD_ID or ids.min() < 0):
            return None
        known = np.zeros(int(ids.max()) + 1 if len(ids) else 1, np.uint8)
        known[ids] = 1
    from ..io.lattices.kaldi import CompiledReader

    kernel, args = native("kaldi_order"), (float(acoustic_scale), float(lm_scale), float(word_penalty), known)
    return CompiledReader(functools.partial(kernel.compact_best_path, *args),
                          functools.partial(kernel.compact_best_path_records, *args))


def _int64(values) -> np.ndarray:
    return np.ascontiguousarray(values, np.int64)


def _float64(values) -> np.ndarray:
    return np.ascontiguousarray(values, np.float64)


@dataclass(frozen=True)
class KaldiNbestEntry:
    """One entry of ``lattice-determinize | lattice-to-nbest``: a distinct word sequence (ids, no
    epsilons) with its best path (hub arc indices) and that path's unscaled graph and acoustic cost."""

    words: tuple[int, ...]
    arcs: tuple[int, ...]
    graph_cost: float
    acoustic_cost: float


def nbest_kaldi(lat: Lattice, n: int, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
                max_pops: int = 2_000_000) -> list[KaldiNbestEntry]:
    """Kaldi's tropical N-best (``lattice-determinize | lattice-to-nbest --n``): the ``n`` distinct
    word sequences with the cheapest best path (costs scaled for the search, reported unscaled), best
    first.  Exact: a best-first search over word prefixes, each holding the cheapest cost of
    reaching every lattice state while reading the prefix (a lazily built tropical
    determinization), with the exact best-completion (Viterbi backward) cost as the priority."""
    import heapq

    from ..core.errors import BudgetExceededError
    from .forward_backward import ForwardBackward

    if n < 1:
        raise LatticeError(f"n must be at least 1, got {n}", key=lat.key or None)
    arc, fin = _cost(lat, acoustic_scale, lm_scale)
    fb = ForwardBackward(lat.num_states, lat.src, lat.dst, arc, fin, log=False)
    beta = fb.beta.tolist()
    offs = lat.out_arc_offsets().tolist()
    dst, word, c = lat.dst.tolist(), lat.word.tolist(), arc.tolist()
    fc = fin.tolist()
    # back-pointer chains: node id -> (arc, parent node id); -1 = start
    bp_arc: list[int] = []
    bp_parent: list[int] = []

    def closure(sub: dict) -> dict:
        # epsilon arcs go to higher states (topological numbering): one ascending sweep
        heap = list(sub)
        heapq.heapify(heap)
        seen = set()
        while heap:
            s = heapq.heappop(heap)
            if s in seen:
                continue
            seen.add(s)
            cs, node = sub[s]
            for a in range(offs[s], offs[s + 1]):
                if word[a] == 0:
                    d, nc = dst[a], cs + c[a]
                    old = sub.get(d)
                    if old is None or nc < old[0]:
                        bp_arc.append(a)
                        bp_parent.append(node)
                        sub[d] = (nc, len(bp_arc) - 1)
                        heapq.heappush(heap, d)
        return sub

    out: list[KaldiNbestEntry] = []
    counter = 0
    start = closure({0: (0.0, -1)})
    # (cost, tie counter, word prefix or (prefix, end node) of a finished entry, state subset or None)
    heap: list[tuple[float, int, tuple, dict | None]] = [(min(v[0] + beta[s] for s, v in start.items()), counter,
                                                          (), start)]
    pops = 0
    while heap and len(out) < n:
        prio, _, prefix, sub = heapq.heappop(heap)
        pops += 1
        if pops > max_pops:
            raise BudgetExceededError(f"tropical N-best needed more than {max_pops} search steps",
                                      key=lat.key or None)
        if sub is None:  # a complete sequence: prefix = (words, node)
            words, node = prefix
            arcs = []
            while node >= 0:
                arcs.append(bp_arc[node])
                node = bp_parent[node]
            arcs.reverse()
            g = float(np.sum(lat.graph_cost[arcs])) if arcs else 0.0
            ac = float(np.sum(lat.acoustic_cost[arcs])) if arcs else 0.0
            last = int(lat.dst[arcs[-1]]) if arcs else 0
            g += float(lat.final_graph_cost[last])
            ac += float(lat.final_acoustic_cost[last])
            out.append(KaldiNbestEntry(words, tuple(arcs), g, ac))
            continue
        end_cost, end_node = np.inf, -1
        nxt: dict = {}
        for s in sorted(sub):
            cs, node = sub[s]
            if fc[s] != np.inf and cs + fc[s] < end_cost:
                end_cost, end_node = cs + fc[s], node
            for a in range(offs[s], offs[s + 1]):
                w = word[a]
                if w == 0:
                    continue
                d, nc = dst[a], cs + c[a]
                tgt = nxt.setdefault(w, {})
                old = tgt.get(d)
                if old is None or nc < old[0]:
                    tgt[d] = (nc, (a, node))
        if end_node != -1 or (end_cost < np.inf):
            counter += 1
            heapq.heappush(heap, (end_cost, counter, (prefix, end_node), None))
        for w, tgt in nxt.items():
            sub2 = {}
            for d, (nc, (a, node)) in tgt.items():
                bp_arc.append(a)
                bp_parent.append(node)
                sub2[d] = (nc, len(bp_arc) - 1)
            sub2 = closure(sub2)
            p2 = min(v[0] + beta[s] for s, v in sub2.items())
            if p2 < np.inf:
                counter += 1
                heapq.heappush(heap, (p2, counter, prefix + (w,), sub2))
    return out
