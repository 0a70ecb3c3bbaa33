"""Kaldi's view of a lattice: its states and arcs in the order Kaldi visits them, and the linear-time
graph loops that depend on that order (OpenFst's ``TopSort``, ``CompactLatticeStateTimes``,
``CompactLatticeShortestPath`` and the tropical ``ShortestPath``).

Results of Kaldi tools that break ties (best paths, MBR alignments) depend on the order of states and
arcs, so :func:`stored_order_view` reproduces it: lattices read from Kaldi archives carry their stored
state numbering and arc order (``attrs["kaldi"]``, see :mod:`lattice_tools.io.lattices.kaldi`); weights are
float32 as Kaldi holds them (scaled in double, stored in float); the states are renumbered by
depth-first ``TopSort`` when Kaldi would (see :func:`stored_order_view`).

``TopSort``, the state times, the tropical best path and ``CompactLatticeShortestPath`` (``best-path``) run
in C (``lattice_tools/_ext/kaldi_order.c``; measured on 138k arcs: 0.1-0.2 ms each, 9-15 ms each as the
Python loops they replaced, which are now the tests' oracle in ``tests/_reference/kaldi_order.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._ext import native
from ..core.errors import LatticeError
from ..core.lattice import Lattice


def _f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).astype(np.float32)


def _scaled(values: np.ndarray, scale: float) -> np.ndarray:
    """Kaldi's ``ScaleLattice``: the (float) scale times the float weight in double, stored as float."""
    return (float(np.float32(scale)) * values.astype(np.float64)).astype(np.float32)


def _stored_order(lat: Lattice):
    """(num_states, start, arc index per stored arc, stored src, stored dst, final-string arcs,
    kaldi_sorted) of a lattice read from a Kaldi archive, or None when ``lat`` does not carry a
    consistent stored order (then its own numbering is Kaldi's)."""
    info = lat.attrs.get("kaldi")
    if info is None or info.ndim != 2 or info.shape[1] != 4 or lat.num_arcs == 0:
        return None
    file_idx, ksrc, kdst, ksorted = (info[:, i].astype(np.int64) for i in range(4))
    real = file_idx >= 0
    # hub state -> stored state, which must be one-to-one
    n = lat.num_states
    orig = np.full(n, -1, np.int64)
    hub_ids = np.concatenate([lat.src[real], lat.dst[real], lat.src[~real]]).astype(np.int64)
    st_ids = np.concatenate([ksrc[real], kdst[real], ksrc[~real]])
    orig[hub_ids] = st_ids
    if not np.array_equal(orig[hub_ids], st_ids):
        return None
    used = orig[orig >= 0]
    if _has_repeats(used) or _has_repeats(file_idx[real]):
        return None
    return orig, file_idx, real, bool(ksorted[0])


def _in_stored_order(arcs: np.ndarray, file_idx: np.ndarray) -> np.ndarray:
    """``arcs`` sorted by their (distinct, non-negative) stored index: placed by index, O(arcs) (a stable
    argsort takes 0.6 ms on 138k arcs); by argsort when the indices are too sparse to place."""
    if len(arcs) == 0:
        return arcs
    positions = file_idx[arcs]
    top = int(positions.max())
    if top > 4 * len(arcs) + 64:  # (not an archive's numbering: the reader stores 0 .. arcs - 1)
        return arcs[np.argsort(positions, kind="stable")]
    slots = np.full(top + 1, -1, np.int64)
    slots[positions] = arcs
    return slots[slots >= 0]


def _has_repeats(values: np.ndarray) -> bool:
    s = np.sort(values)  # (np.unique hashes: 30x slower on 100k values)
    return bool(np.any(s[1:] == s[:-1]))


@dataclass(frozen=True)
class StoredOrderView:
    """A lattice as Kaldi holds it after reading and ``ScaleLattice``: states in stored (or re-sorted)
    order, arcs of each state in stored order (arrays per arc, sorted by ``src``), scaled float32
    weights, per-state final weights (``inf`` = not final) with their frame counts.  ``hub_arc``:
    the lattice arc each arc comes from (-1: a super-final arc)."""

    num_states: int
    src: np.ndarray
    dst: np.ndarray
    word: np.ndarray
    graph: np.ndarray
    acoustic: np.ndarray
    dur: np.ndarray
    hub_arc: np.ndarray
    final_graph: np.ndarray
    final_acoustic: np.ndarray
    final_dur: np.ndarray
    resorted: bool


@dataclass(frozen=True)
class StoredArrays:
    """A lattice's arcs and states in Kaldi's stored order, as read (before ``ScaleLattice``): the states
    Kaldi holds (stored ids compacted, order kept), the arcs in stored order, weights as stored (float64), per-state final weights (``inf`` = not final) with the frames of
    their final strings; ``hub_arc``: the lattice arc each arc comes from; ``sorted_prop``: whether Kaldi's
    cached property says the stored numbering is topologically sorted."""

    num_states: int
    start: int
    src: np.ndarray
    dst: np.ndarray
    word: np.ndarray
    dur: np.ndarray
    graph: np.ndarray
    acoustic: np.ndarray
    hub_arc: np.ndarray
    final_graph: np.ndarray
    final_acoustic: np.ndarray
    final_dur: np.ndarray
    sorted_prop: bool


def stored_arrays(lat: Lattice, labels: np.ndarray | None = None) -> StoredArrays:
    """The lattice's stored order (see the module docstring), unscaled: what :func:`stored_order_view` and the
    compiled best path (:func:`lattice_tools.algorithms.kaldi_ops.best_path_kaldi`) start from."""
    labels = lat.word.astype(np.int64) if labels is None else np.asarray(labels, np.int64)
    dur = (lat.t1 - lat.t0).astype(np.int64) if lat.has_times else np.zeros(lat.num_arcs, np.int64)
    fin_hub = np.flatnonzero(np.isfinite(lat.final_graph_cost))
    stored = _stored_order(lat)
    if stored is not None:
        orig, file_idx, real, sorted_prop = stored
        # stored state ids compacted (order kept), arcs in stored order, final strings back to finals
        present = np.flatnonzero(orig >= 0)
        order_states = present[np.argsort(orig[present], kind="stable")]
        new_of_hub = np.full(lat.num_states, -1, np.int64)
        new_of_hub[order_states] = np.arange(len(order_states))
        arcs = _in_stored_order(np.flatnonzero(real), file_idx)
        n_states = len(order_states)
        src, dst = new_of_hub[lat.src[arcs]], new_of_hub[lat.dst[arcs]]
        f_g = np.full(n_states, np.inf)
        f_a = np.full(n_states, np.inf)
        f_dur = np.zeros(n_states, np.int64)
        for h in fin_hub.tolist():
            if new_of_hub[h] >= 0:
                f_g[new_of_hub[h]] = lat.final_graph_cost[h]
                f_a[new_of_hub[h]] = lat.final_acoustic_cost[h]
        for a in np.flatnonzero(~real).tolist():  # final strings: arcs into the hub's extra final state
            st = new_of_hub[lat.src[a]]
            f_g[st] = lat.graph_cost[a] + lat.final_graph_cost[lat.dst[a]]
            f_a[st] = lat.acoustic_cost[a] + lat.final_acoustic_cost[lat.dst[a]]
            f_dur[st] = dur[a]
        start = int(new_of_hub[0])
        g, ac, w, d = lat.graph_cost[arcs], lat.acoustic_cost[arcs], labels[arcs], dur[arcs]
        hub = arcs.astype(np.int64)
    else:
        n_states, start, sorted_prop = lat.num_states, 0, True
        src, dst = lat.src.astype(np.int64), lat.dst.astype(np.int64)
        g, ac, w, d = lat.graph_cost, lat.acoustic_cost, labels, dur
        f_g, f_a = lat.final_graph_cost.copy(), lat.final_acoustic_cost.copy()
        f_dur = np.zeros(n_states, np.int64)
        hub = np.arange(lat.num_arcs, dtype=np.int64)
    return StoredArrays(n_states, start, src, dst, w, d, g, ac, hub, f_g, f_a, f_dur, sorted_prop)


def stored_order_view(lat: Lattice, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
                      labels: np.ndarray | None = None, super_final: bool = False,
                      resort_only_if_unsorted: bool = False) -> StoredOrderView:
    """The lattice in the order Kaldi visits it (see the module docstring).

    ``super_final``: add Kaldi's ``CreateSuperFinal`` state (MBR).  Re-sorting (OpenFst's
    depth-first ``TopSort``): when the stored numbering is not topological, and -- unless
    ``resort_only_if_unsorted`` (tools that test the property, such as ``lattice-best-path``) --
    also when Kaldi's cached property is unknown: the archive said so, or the weights were
    rewritten (a scale other than 1 or a word penalty), as ``lattice-mbr-decode`` does."""
    st = stored_arrays(lat, labels)
    n_states, start, sorted_prop = st.num_states, st.start, st.sorted_prop
    src, dst, w, d, g, ac, hub = st.src, st.dst, st.word, st.dur, st.graph, st.acoustic, st.hub_arc
    f_g, f_a, f_dur = st.final_graph, st.final_acoustic, st.final_dur
    g, ac, f_g, f_a = _f32(g), _f32(ac), _f32(f_g), _f32(f_a)
    if (lm_scale, acoustic_scale) != (1.0, 1.0):
        g, ac = _scaled(g, lm_scale), _scaled(ac, acoustic_scale)
        f_g, f_a = _scaled(f_g, lm_scale), _scaled(f_a, acoustic_scale)
        sorted_prop = False
    if word_penalty:
        g = np.where(w != 0, (g + np.float32(word_penalty)).astype(np.float32), g)
        sorted_prop = False
    finals = np.flatnonzero(np.isfinite(f_g))
    if len(finals) == 0:
        raise LatticeError("lattice has no final state", key=lat.key or None)
    if super_final:  # CreateSuperFinal
        has_out = np.zeros(n_states, bool)
        has_out[src] = True
        if not (len(finals) == 1 and f_g[finals[0]] == 0 and f_a[finals[0]] == 0 and f_dur[finals[0]] == 0
                and not has_out[finals[0]]):
            sf = n_states
            n_states += 1
            src = np.concatenate([src, finals])
            dst = np.concatenate([dst, np.full(len(finals), sf)])
            w = np.concatenate([w, np.zeros(len(finals), np.int64)])
            d = np.concatenate([d, f_dur[finals]])
            g = np.concatenate([g, f_g[finals]])
            ac = np.concatenate([ac, f_a[finals]])
            hub = np.concatenate([hub, np.full(len(finals), -1, np.int64)])
            f_g = np.r_[np.full(n_states - 1, np.inf, np.float32), np.float32(0)]
            f_a = f_g.copy()
            f_dur = np.zeros(n_states, np.int64)
    if np.any(src[1:] < src[:-1]):  # (archives list arcs state by state: usually sorted already)
        by_src = np.argsort(src, kind="stable")  # arcs of each state in stored order
        src, dst, w, d, g, ac, hub = (c[by_src] for c in (src, dst, w, d, g, ac, hub))
    topological = start == 0 and not np.any(dst <= src)
    resorted = not topological or (not sorted_prop and not resort_only_if_unsorted)
    if resorted:
        offs = np.searchsorted(src, np.arange(n_states + 1))
        new_id = top_sort_order(n_states, start, offs, dst)
        if new_id is None:
            raise LatticeError("lattice has a cycle", key=lat.key or None)
        src, dst = new_id[src], new_id[dst]
        inv = np.empty_like(new_id)
        inv[new_id] = np.arange(n_states)
        f_g, f_a, f_dur = f_g[inv], f_a[inv], f_dur[inv]
        by_src = np.argsort(src, kind="stable")
        src, dst, w, d, g, ac, hub = (c[by_src] for c in (src, dst, w, d, g, ac, hub))
        if np.any(dst <= src) or new_id[start] != 0:
            raise LatticeError("states unreachable from the start state: Kaldi's TopSort would not number "
                               "the start state 0", key=lat.key or None)
    return StoredOrderView(n_states, src, dst, w, g, ac, d, hub, f_g, f_a, f_dur, resorted)


def top_sort_order(num_states: int, start: int, arc_offsets: np.ndarray, arc_dst: np.ndarray) -> np.ndarray | None:
    """OpenFst ``TopSort``: depth-first search from ``start`` (then from every still unvisited state
    in increasing order), arcs in stored order; the new number of a state is its position in the
    reverse finishing order.  Returns ``new_id`` per state, or None if there is a cycle."""
    new_id = np.empty(num_states, np.int64)
    if not native("kaldi_order").top_sort(start, _int64(arc_offsets), _int64(arc_dst), new_id):
        return None
    return new_id


def state_times(num_states: int, src: np.ndarray, dst: np.ndarray, dur: np.ndarray,
                strict: bool) -> tuple[np.ndarray, int]:
    """Kaldi's ``CompactLatticeStateTimes`` over arcs sorted by source (topological order): the frame
    of every state, the first arc reaching a state setting it.  Returns ``(times, bad_state)``; with
    ``strict``, ``bad_state`` >= 0 names a state reached at two different frames (``times`` then
    holds the frames set before that arc, -1 for the states not reached yet)."""
    times = np.empty(num_states, np.int64)
    bad = native("kaldi_order").state_times(_int64(src), _int64(dst), _int64(dur), times, strict)
    return times, bad


def tropical_best_path(num_states: int, arc_offsets: np.ndarray, arc_dst: np.ndarray, arc_cost32: np.ndarray,
                       final_cost32: np.ndarray) -> list:
    """OpenFst ``ShortestPath`` (n = 1) on a topologically numbered FST with float32 weights: states
    relaxed in numeric order, an arc replaces a distance only if strictly better (in float32), the
    first best final state wins.  Returns the arcs of the path (empty if no final state is reachable)."""
    if len(final_cost32) != num_states:
        raise ValueError(f"tropical_best_path: {len(final_cost32)} final costs for {num_states} states")
    return native("kaldi_order").tropical_best_path(
        _int64(arc_offsets), _int64(arc_dst), np.ascontiguousarray(arc_cost32, np.float32),
        np.ascontiguousarray(final_cost32, np.float32))


def _int64(values) -> np.ndarray:
    return np.ascontiguousarray(values, np.int64)


def compact_shortest_path(num_states: int, arc_offsets: np.ndarray, arc_dst: np.ndarray, arc_cost: np.ndarray,
                          final_cost: np.ndarray) -> tuple[list, int]:
    """Kaldi's ``CompactLatticeShortestPath`` on a topologically numbered lattice (double costs):
    a state keeps the first predecessor state that strictly improves it, the super-final the first
    best final state; between two consecutive states of the path, the cheapest arc (the first on a
    tie).  Returns the arcs of the path and its last state (-1: no complete path)."""
    if len(final_cost) != num_states:
        raise ValueError(f"compact_shortest_path: {len(final_cost)} final costs for {num_states} states")
    return native("kaldi_order").compact_shortest_path(
        _int64(arc_offsets), _int64(arc_dst), np.ascontiguousarray(arc_cost, np.float64),
        np.ascontiguousarray(final_cost, np.float64))
