"""State batches: the schedule that lets forward/backward passes run vectorized.

A lattice is a DAG.  Group its states into *levels*: level 0 holds the states without incoming
arcs, and a state's level is one more than the largest level of its predecessors (the length of
the longest path reaching it).  Every arc then goes from a lower level to a strictly higher one,
so all states of one level can be updated at once with a segmented reduction
(``np.logaddexp.reduceat`` / ``np.maximum.reduceat``) once all lower levels are done.  The number
of sequential numpy steps is the number of levels (the longest path, in arcs), not the number of
arcs; this is the same idea as k2's ``get_state_batches``.

The schedule depends only on the topology, so it is computed once per :class:`Lattice` object
(lattices are immutable) and cached in a weak-keyed dictionary.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from ..lattice import Lattice

_CACHE: "weakref.WeakKeyDictionary[Lattice, Schedule]" = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Schedule:
    """Precomputed, level-ordered views of a lattice's arcs.

    ``pos`` renumbers states so that levels are contiguous (``pos[state]``; ``order[pos] = state``).
    Forward (arcs grouped by destination): ``fwd_arcs`` lists arc indices sorted by
    ``pos[dst]`` (stable, so ties keep arc order); for level ``L`` the states ``pos``
    ``fwd_state_bounds[L]:fwd_state_bounds[L+1]`` receive the arcs
    ``fwd_arc_bounds[L]:fwd_arc_bounds[L+1]``, with ``fwd_seg_starts[L]`` the reduceat offsets.
    Backward (arcs grouped by source): ``bwd_arcs`` sorted by ``pos[src]``; for level ``L`` the
    states ``bwd_states[L]`` (positions of the states of level ``L`` that have outgoing arcs) get
    the arcs ``bwd_arc_bounds[L]:bwd_arc_bounds[L+1]`` with reduceat offsets ``bwd_seg_starts[L]``.
    """

    num_levels: int
    pos: np.ndarray
    order: np.ndarray
    fwd_arcs: np.ndarray
    fwd_src_pos: np.ndarray
    fwd_arc_bounds: list
    fwd_state_bounds: list
    fwd_seg_starts: list
    bwd_arcs: np.ndarray
    bwd_dst_pos: np.ndarray
    bwd_arc_bounds: list
    bwd_states: list
    bwd_seg_starts: list


def state_levels(num_states: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Longest-path level of every state (0 for states without incoming arcs).

    Kahn's algorithm one whole frontier at a time.  ``src`` must be sorted (as in a Lattice);
    the graph must be acyclic (a Lattice is, since every arc has ``src < dst``).
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    offsets = np.searchsorted(src, np.arange(num_states + 1))
    indeg = np.bincount(dst, minlength=num_states)
    level = np.zeros(num_states, dtype=np.int64)
    frontier = np.nonzero(indeg == 0)[0]
    current = 0
    while frontier.size:
        level[frontier] = current
        starts = offsets[frontier]
        lens = offsets[frontier + 1] - starts
        total = int(lens.sum())
        if total == 0:
            break
        # Concatenate the out-arc ranges of all frontier states without a Python loop.
        ends = np.cumsum(lens)
        arc_idx = np.arange(total) + np.repeat(starts - (ends - lens), lens)
        targets, counts = np.unique(dst[arc_idx], return_counts=True)
        indeg[targets] -= counts
        frontier = targets[indeg[targets] == 0]
        current += 1
    return level


def schedule(lat: Lattice) -> Schedule:
    """The (cached) level schedule of ``lat``."""
    try:
        return _CACHE[lat]
    except KeyError:
        pass
    sched = _build(lat)
    _CACHE[lat] = sched
    return sched


def _build(lat: Lattice) -> Schedule:
    n = lat.num_states
    src = lat.src.astype(np.int64)
    dst = lat.dst.astype(np.int64)
    level = state_levels(n, src, dst)
    num_levels = int(level.max()) + 1 if n else 0
    order = np.argsort(level, kind="stable")
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    state_bounds = np.searchsorted(level[order], np.arange(num_levels + 1)).tolist()

    # Forward: arcs grouped by destination position.  Every state of level >= 1 has at least
    # one incoming arc, so the reduceat segments of a level cover its states exactly.
    fwd_arcs = np.argsort(pos[dst], kind="stable")
    fwd_dst_pos = pos[dst[fwd_arcs]]
    fwd_src_pos = pos[src[fwd_arcs]]
    first_arc_of_pos = np.searchsorted(fwd_dst_pos, np.arange(n + 1))
    fwd_arc_bounds = [int(first_arc_of_pos[b]) for b in state_bounds]
    fwd_seg_starts = [first_arc_of_pos[state_bounds[L]:state_bounds[L + 1]] - fwd_arc_bounds[L]
                      for L in range(num_levels)]

    # Backward: arcs grouped by source position; only states with outgoing arcs get a segment.
    bwd_arcs = np.argsort(pos[src], kind="stable")
    bwd_src_pos = pos[src[bwd_arcs]]
    bwd_dst_pos = pos[dst[bwd_arcs]]
    first_out_of_pos = np.searchsorted(bwd_src_pos, np.arange(n + 1))
    has_out = first_out_of_pos[1:] > first_out_of_pos[:-1]
    bwd_arc_bounds = [int(first_out_of_pos[b]) for b in state_bounds]
    bwd_states, bwd_seg_starts = [], []
    for L in range(num_levels):
        s0, s1 = state_bounds[L], state_bounds[L + 1]
        with_out = s0 + np.nonzero(has_out[s0:s1])[0]
        bwd_states.append(with_out)
        bwd_seg_starts.append(first_out_of_pos[with_out] - bwd_arc_bounds[L])
    return Schedule(num_levels=num_levels, pos=pos, order=order, fwd_arcs=fwd_arcs, fwd_src_pos=fwd_src_pos,
                    fwd_arc_bounds=fwd_arc_bounds, fwd_state_bounds=state_bounds, fwd_seg_starts=fwd_seg_starts,
                    bwd_arcs=bwd_arcs, bwd_dst_pos=bwd_dst_pos, bwd_arc_bounds=bwd_arc_bounds,
                    bwd_states=bwd_states, bwd_seg_starts=bwd_seg_starts)
