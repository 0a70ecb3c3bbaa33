"""The plain-Python transcriptions of the order-dependent graph loops of
lattice_tools.algorithms.kaldi_order -- OpenFst's depth-first ``TopSort``, Kaldi's
``CompactLatticeStateTimes``, the tropical ``ShortestPath`` with float32 weights and Kaldi's
``CompactLatticeShortestPath`` -- that were the
package's implementation until the C loops (lattice_tools/_ext/kaldi_order.c) replaced them: the oracle
of tests/test_kaldi_order_loops.py.  They take Python lists."""
from __future__ import annotations

import bisect

import numpy as np


def top_sort_order(num_states: int, start: int, arc_offsets: list, arc_dst: list) -> list | None:
    """OpenFst ``TopSort``: depth-first search from ``start`` (then from every still unvisited state
    in increasing order), arcs in stored order; the new number of a state is its position in the
    reverse finishing order.  Returns ``new_id`` per state, or None if there is a cycle."""
    color = [0] * num_states  # 0 white, 1 grey, 2 black
    finish = []
    root = start
    while True:
        if color[root] == 0:
            color[root] = 1
            stack = [(root, arc_offsets[root], arc_offsets[root + 1])]
            while stack:
                s, a, end = stack[-1]
                while a < end:
                    d = arc_dst[a]
                    a += 1
                    c = color[d]
                    if c == 0:
                        stack[-1] = (s, a, end)
                        color[d] = 1
                        stack.append((d, arc_offsets[d], arc_offsets[d + 1]))
                        break
                    if c == 1:
                        return None
                else:
                    color[s] = 2
                    finish.append(s)
                    stack.pop()
        # next root: 0 after the start's tree, then increasing
        nxt = 0 if root == start else root + 1
        while nxt < num_states and color[nxt] != 0:
            nxt += 1
        if nxt >= num_states:
            break
        root = nxt
    new_id = [0] * num_states
    last = len(finish) - 1
    for i, s in enumerate(finish):
        new_id[s] = last - i
    return new_id


def state_times(num_states: int, src: list, dst: list, dur: list, strict: bool) -> tuple[list, int]:
    """Kaldi's ``CompactLatticeStateTimes`` over arcs sorted by source (topological order): the frame
    of every state, the first arc reaching a state setting it.  Returns ``(times, bad_state)``; with
    ``strict``, ``bad_state`` >= 0 names a state reached at two different frames."""
    t = [-1] * num_states
    t[0] = 0
    for s, d, n in zip(src, dst, dur, strict=True):
        want = t[s] + n
        have = t[d]
        if have < 0:
            t[d] = want
        elif have != want and strict:
            return t, d
    return [x if x >= 0 else 0 for x in t], -1


def tropical_best_path(num_states: int, arc_offsets: list, arc_dst: list, arc_cost32: np.ndarray,
                       final_cost32: np.ndarray) -> list:
    """OpenFst ``ShortestPath`` (n = 1) on a topologically numbered FST with float32 weights: states
    relaxed in numeric order, an arc replaces a distance only if strictly better, the first best
    final state wins.  Returns the arcs of the path (empty if no final state is reachable)."""
    f32 = np.float32
    inf = float("inf")
    cost = arc_cost32.astype(np.float32).tolist()  # float32 values as Python floats (exact)
    fin = final_cost32.astype(np.float32).tolist()
    dist = [inf] * num_states
    parent = [-1] * num_states
    dist[0] = 0.0
    f_dist, f_state = inf, -1
    for s in range(num_states):
        sd = dist[s]
        if sd == inf:
            continue
        if fin[s] != inf:
            t = float(f32(sd + fin[s]))  # a float32 sum, rounded once as float32 arithmetic does
            if t < f_dist:
                f_dist, f_state = t, s
        for a in range(arc_offsets[s], arc_offsets[s + 1]):
            d = arc_dst[a]
            # rounding to float32 is monotone and dist[d] is a float32 value, so a sum that is not
            # below dist[d] in double cannot be below it in float32: round only the candidates
            w = sd + cost[a]
            if w < dist[d]:
                w = float(f32(w))
                if w < dist[d]:
                    dist[d] = w
                    parent[d] = a
    path = []
    s = f_state
    while s > 0:
        a = parent[s]
        path.append(a)
        s = bisect.bisect_right(arc_offsets, a) - 1  # offsets[s] <= a < offsets[s + 1]: a leaves s
    return path[::-1] if f_state >= 0 else []


def compact_shortest_path(num_states: int, arc_offsets: list, arc_dst: list, arc_cost: list,
                          final_cost: list) -> tuple[list, int]:
    """Kaldi's ``CompactLatticeShortestPath`` on a topologically numbered lattice (double costs):
    a state keeps the first predecessor state that strictly improves it, the super-final the first
    best final state; between two consecutive states of the path, the cheapest arc (the first on a
    tie).  Returns the arcs of the path and its last state (-1: no complete path)."""
    inf = float("inf")
    best = [inf] * num_states
    pred = [-1] * num_states
    best[0] = 0.0
    sf_best, sf_pred = inf, -1
    for s in range(num_states):
        my = best[s]
        for a in range(arc_offsets[s], arc_offsets[s + 1]):
            d = arc_dst[a]
            nxt = my + arc_cost[a]
            if nxt < best[d]:
                best[d] = nxt
                pred[d] = s
        tot = my + final_cost[s]
        if tot < sf_best:
            sf_best, sf_pred = tot, s
    if sf_pred < 0:
        return [], -1
    states = [sf_pred]
    while states[-1] != 0:
        states.append(pred[states[-1]])
    states.reverse()
    arcs = []
    for s, d in zip(states, states[1:], strict=False):
        chosen = -1
        for a in range(arc_offsets[s], arc_offsets[s + 1]):
            if arc_dst[a] == d and (chosen < 0 or arc_cost[a] < arc_cost[chosen]):
                chosen = a
        arcs.append(chosen)
    return arcs, sf_pred
