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

from ..core.lattice import Lattice

_CACHE: weakref.WeakKeyDictionary[Lattice, Schedule] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Schedule:
    """Precomputed, level-ordered views of a lattice's arcs.

    ``pos`` renumbers states so that levels are contiguous (``pos[state]``; ``order[pos] = state``);
    inside a level, states that have outgoing arcs or are final come first.
    Forward (arcs grouped by destination): ``fwd_arcs`` lists arc indices sorted by
    ``pos[dst]`` (stable, so ties keep arc order) and ``fwd_src_pos`` their source positions.
    ``fwd_levels`` holds, for each level >= 1, ``(a0, a1, s0, s1, seg_starts)``: the states at
    positions ``s0:s1`` receive the arcs ``a0:a1`` and ``seg_starts`` are the reduceat offsets.
    Backward (arcs grouped by source): real arcs plus one pseudo-arc per final state (index
    ``num_arcs + j`` for the j-th final state, into position ``num_states``, whose backward score
    is 0), sorted by source position into ``bwd_arcs``; ``bwd_levels`` holds, for each level from
    the last one down, ``(a0, a1, s0, s1, seg_starts)`` with ``s0:s1`` the states of that level
    having any outgoing (pseudo-)arc.
    """

    num_levels: int
    pos: np.ndarray
    order: np.ndarray
    final_states: np.ndarray
    fwd_arcs: np.ndarray
    fwd_src_pos: np.ndarray
    fwd_levels: list
    bwd_arcs: np.ndarray
    bwd_dst_pos: np.ndarray
    bwd_levels: list


def state_levels(num_states: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Longest-path level of every state (0 for states without incoming arcs).

    Kahn's algorithm one whole frontier at a time.  ``src`` must be sorted (as in a Lattice);
    the graph must be acyclic (a Lattice is, since every arc has ``src < dst``).
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    offsets = np.searchsorted(src, np.arange(num_states + 1))
    out_len = np.diff(offsets)
    indeg = np.bincount(dst, minlength=num_states)
    level = np.zeros(num_states, dtype=np.int64)
    last_seen = np.empty(num_states, dtype=np.int64)
    frontier = np.nonzero(indeg == 0)[0]
    current = 0
    while frontier.size:
        level[frontier] = current
        lens = out_len[frontier]
        ends = np.cumsum(lens)
        total = int(ends[-1])
        if total == 0:
            break
        # Concatenate the out-arc ranges of all frontier states without a Python loop.
        targets = dst[np.repeat(offsets[frontier] - (ends - lens), lens) + np.arange(total)]
        np.subtract.at(indeg, targets, 1)
        ready = targets[indeg[targets] == 0]
        # A state reached by several frontier arcs appears several times: keep one copy
        # (cheaper than np.unique, which sorts).
        idx = np.arange(ready.size)
        last_seen[ready] = idx
        frontier = ready[last_seen[ready] == idx]
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
    num_levels = int(level.max()) + 1
    final_states = np.nonzero(lat.is_final)[0]
    has_succ = np.bincount(src, minlength=n) > 0
    has_succ[final_states] = True
    # Level-major positions; within a level the states with successors first (so the backward
    # pass assigns a contiguous slice), then by state id.
    order = np.lexsort((~has_succ, level))
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    state_bounds = np.searchsorted(level[order], np.arange(num_levels + 1))
    succ_counts = np.add.reduceat(has_succ[order].astype(np.int64), state_bounds[:-1]) if n else np.zeros(0, int)

    # Forward: arcs grouped by destination position.  Every state of level >= 1 has at least
    # one incoming arc, so the reduceat segments of a level cover its states exactly.
    fwd_arcs = np.argsort(pos[dst], kind="stable")
    fwd_dst_pos = pos[dst[fwd_arcs]]
    fwd_src_pos = pos[src[fwd_arcs]]
    first_in = np.searchsorted(fwd_dst_pos, np.arange(n + 1))
    fwd_levels = []
    for L in range(1, num_levels):
        s0, s1 = int(state_bounds[L]), int(state_bounds[L + 1])
        a0, a1 = int(first_in[s0]), int(first_in[s1])
        fwd_levels.append((a0, a1, s0, s1, first_in[s0:s1] - a0))

    # Backward: real arcs and final pseudo-arcs grouped by source position.
    ext_src_pos = np.concatenate([pos[src], pos[final_states]])
    ext_dst_pos = np.concatenate([pos[dst], np.full(len(final_states), n, dtype=np.int64)])
    bwd_arcs = np.argsort(ext_src_pos, kind="stable")
    bwd_src_pos = ext_src_pos[bwd_arcs]
    bwd_dst_pos = ext_dst_pos[bwd_arcs]
    first_out = np.searchsorted(bwd_src_pos, np.arange(n + 1))
    bwd_levels = []
    for L in range(num_levels - 1, -1, -1):
        s0 = int(state_bounds[L])
        s1 = s0 + int(succ_counts[L])
        if s1 > s0:
            a0, a1 = int(first_out[s0]), int(first_out[s1])
            bwd_levels.append((a0, a1, s0, s1, first_out[s0:s1] - a0))
    return Schedule(num_levels=num_levels, pos=pos, order=order, final_states=final_states, fwd_arcs=fwd_arcs,
                    fwd_src_pos=fwd_src_pos, fwd_levels=fwd_levels, bwd_arcs=bwd_arcs, bwd_dst_pos=bwd_dst_pos,
                    bwd_levels=bwd_levels)
