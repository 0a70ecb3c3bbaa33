"""The plain-Python graph loops of ``Lattice.from_arcs`` -- reachability, Kahn's topological order and the
arc reindexing -- as they were in lattice_tools/core/lattice.py until the C loops
(lattice_tools/_ext/lattice_order.c) replaced them: the oracle of tests/test_lattice_order.py."""
from __future__ import annotations

import math

import numpy as np

from lattice_tools.core.errors import LatticeError
from lattice_tools.core.lattice import Lattice


def _successor_lists(num_states: int, src: np.ndarray, dst: np.ndarray) -> tuple[list, list]:
    order_by_src = np.argsort(src, kind="stable")
    offsets = np.searchsorted(src[order_by_src], np.arange(num_states + 1)).tolist()
    return offsets, dst[order_by_src].tolist()


def reachable_mask(num_states: int, src: np.ndarray, dst: np.ndarray, start: int,
                   successors: tuple[list, list] | None = None) -> np.ndarray:
    offsets, succ = successors if successors is not None else _successor_lists(num_states, src, dst)
    reach_list = [False] * num_states
    reach_list[start] = True
    stack = [start]
    while stack:
        s = stack.pop()
        for d in succ[offsets[s]:offsets[s + 1]]:
            if not reach_list[d]:
                reach_list[d] = True
                stack.append(d)
    return np.array(reach_list, dtype=bool)


def topological_order(num_states: int, src: np.ndarray, dst: np.ndarray, start: int = 0, key: str = "") -> np.ndarray:
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    offsets, succ = _successor_lists(num_states, src, dst)
    reach = reachable_mask(num_states, src, dst, start, successors=(offsets, succ))
    live = reach[src]
    indeg_arr = np.bincount(dst[live], minlength=num_states)
    if indeg_arr[start] != 0:
        raise LatticeError(f"the start state {start} is on a cycle", key=key or None)
    indeg = indeg_arr.tolist()
    order_list = []
    stack = [start]
    while stack:
        s = stack.pop()
        order_list.append(s)
        for d in succ[offsets[s]:offsets[s + 1]]:
            indeg[d] -= 1
            if indeg[d] == 0:
                stack.append(d)
    order = np.array(order_list, dtype=np.int64)
    n = len(order_list)
    indeg = np.array(indeg, dtype=np.int64)
    if n != int(reach.sum()):
        on_cycle = np.nonzero(reach & (indeg > 0))[0]
        raise LatticeError(f"lattice has a cycle (through state {int(on_cycle[0])}); lattices must be acyclic",
                           key=key or None)
    return order


def from_arcs_with_maps(*, src, dst, word, symbols, final_graph_cost, final_acoustic_cost=None, num_states=None,
                        start=0, ilabel=None, t0=None, t1=None, graph_cost=None, acoustic_cost=None, frame_shift=0.01,
                        key="", word_aligned=True, attrs=None):
    """``Lattice.from_arcs_with_maps`` as it was (numpy reindexing around the Python loops above), for
    well-formed arguments (the tests draw no malformed ones: the argument checks are tested on their own)."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    m = len(src)
    final_graph_cost = np.asarray(final_graph_cost, dtype=np.float64)
    num_states = len(final_graph_cost) if num_states is None else num_states
    # a state that is not final has no final acoustic cost either
    final_acoustic_cost = np.zeros(num_states) if final_acoustic_cost is None else np.asarray(final_acoustic_cost,
                                                                                               dtype=np.float64)
    final_acoustic_cost = np.array([math.inf if math.isinf(g) else a for g, a in
                                    zip(final_graph_cost.tolist(), final_acoustic_cost.tolist(), strict=True)])

    def column(values, default, dtype):
        return np.array([default] * m, dtype=dtype) if values is None else np.asarray(values, dtype=dtype)

    word = column(word, 0, np.int64)
    ilabel = word if ilabel is None else column(ilabel, 0, np.int64)
    t0, t1 = column(t0, -1, np.int64), column(t1, -1, np.int64)
    graph_cost, acoustic_cost = column(graph_cost, 0.0, np.float64), column(acoustic_cost, 0.0, np.float64)
    attrs = {k: np.asarray(v) for k, v in (attrs or {}).items()}
    order = topological_order(num_states, src, dst, start, key=key)
    # trimmed to the states that reach a final state (a backward sweep to a fixed point)
    live = [bool(c) for c in np.isfinite(final_graph_cost)]
    changed = True
    while changed:
        changed = False
        for s, d in zip(src.tolist(), dst.tolist(), strict=True):
            if live[d] and not live[s]:
                live[s] = changed = True
    if not live[start]:
        raise LatticeError("lattice has no final state" if not np.isfinite(final_graph_cost).any() else
                           "lattice has no complete path from the start to a final state", key=key or None)
    order = np.array([s for s in order.tolist() if live[s]], dtype=np.int64)
    state_map = np.full(num_states, -1, dtype=np.int64)
    state_map[order] = np.arange(len(order))
    keep = (state_map[src] >= 0) & (state_map[dst] >= 0)
    arc_idx = np.nonzero(keep)[0]
    new_src = state_map[src[arc_idx]]
    new_dst = state_map[dst[arc_idx]]
    perm = np.lexsort((new_dst, new_src))
    arc_idx = arc_idx[perm]
    lat = Lattice(num_states=len(order), src=state_map[src[arc_idx]], dst=state_map[dst[arc_idx]],
                  word=word[arc_idx], ilabel=ilabel[arc_idx], t0=t0[arc_idx], t1=t1[arc_idx],
                  graph_cost=graph_cost[arc_idx], acoustic_cost=acoustic_cost[arc_idx],
                  final_graph_cost=final_graph_cost[order], final_acoustic_cost=final_acoustic_cost[order],
                  symbols=symbols, frame_shift=frame_shift, key=key, word_aligned=word_aligned,
                  attrs={k: v[arc_idx] for k, v in attrs.items()}, trimmed_arcs=len(src) - len(arc_idx))
    return lat, state_map, arc_idx
