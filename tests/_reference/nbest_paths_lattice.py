"""The join="paths" merge of an N-best list as plain Python: the oracle of tests/test_nbest_lists_io.py for
the compiled ``paths_lattice`` of lattice_tools/_ext/nbest_tree.c, which does the same operations in the same
order (the prefix tree, the pushed weights, the states with the same weighted future merged from the leaves
up; see lattice_tools.alternatives.nbest_merge)."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from lattice_tools.core.alternatives_network import Alternative
from lattice_tools.core.errors import LatticeError
from lattice_tools.core.lattice import Lattice
from lattice_tools.core.symbols import SymbolTable

# The entries' arcs, written here again from their definition (lattice_tools/alternatives/nbest_merge.py has
# its own): each word's (first frame, end frame) rounded from its times, and an epsilon arc over each gap.
_MAX_FRAME = 2**31 - 1  # the lattice's frame arrays are int32


def _frames(alt: Alternative, frame_shift: float, key: str = "") -> list[tuple[int, int]] | None:
    out = []
    for s, d in zip(alt.starts, alt.durations, strict=True):
        if s != s or d != d:  # NaN: no times
            return None
        if not (0 <= s and 0 <= s + d <= _MAX_FRAME * frame_shift):
            raise LatticeError(f"word time {s!r} + {d!r} s is outside 0 .. {_MAX_FRAME} frames of {frame_shift} s",
                               key=key or None)
        t0, t1 = int(round(s / frame_shift)), int(round((s + d) / frame_shift))
        out.append((t0, max(t1, t0)))
    return out or None


def _tokens(alt: Alternative, frames: list[tuple[int, int]] | None, word_id):
    if frames is None:
        return [(word_id(w), (-1, -1)) for w in alt.words]
    out, t = [], 0
    for w, (a, b) in zip(alt.words, frames, strict=True):
        if a > t:
            out.append((0, (t, a)))
        out.append((word_id(w), (a, b)))
        t = max(t, b)
    return out


def paths_lattice(key: str, entries: Sequence[Alternative], table: SymbolTable, frame_shift: float) -> Lattice:
    total = math.fsum(a.posterior for a in entries)
    # prefix tree: node 0 = root; per node its children (word id, t0, t1, child), mass, end mass
    children: list[list[tuple[int, int, int, int]]] = [[]]
    mass = [0.0]
    end_mass = [0.0]
    node_time = [0]  # frame at which each tree node is reached (with times; 0 otherwise)
    frames_of = [_frames(alt, frame_shift, key) for alt in entries]
    timed = all(f is not None for f, alt in zip(frames_of, entries, strict=True) if alt.words)
    word_id = table.id
    for alt, frames in zip(entries, frames_of, strict=True):
        p = alt.posterior / total
        node = 0
        mass[0] += p
        for wid, span in _tokens(alt, frames if timed else None, word_id):
            nxt = -1
            for cw, ct0, ct1, child in children[node]:
                if cw == wid and (ct0 < 0 or (span[0] < ct1 and ct0 < span[1]) or (ct0, ct1) == span):
                    nxt = child
                    break
            if nxt < 0:
                if span[0] >= 0:
                    # a path reaches each state at one frame: a new arc starts where its source is reached
                    span = (node_time[node], max(span[1], node_time[node]))
                nxt = len(mass)
                children[node].append((wid, span[0], span[1], nxt))
                children.append([])
                mass.append(0.0)
                end_mass.append(0.0)
                node_time.append(span[1] if span[1] >= 0 else 0)
            mass[nxt] += p
            node = nxt
        end_mass[node] += p
    n = len(mass)
    # weights pushed to the front: arc cost -log(mass(child)/mass(parent)), final -log(end/mass)
    log_mass = [math.log(m) for m in mass]
    # merge states with the same weighted future, leaves first (children have larger ids than parents)
    cls = [-1] * n
    signatures: dict[tuple, int] = {}
    for v in range(n - 1, -1, -1):
        kids = children[v]
        lv = log_mass[v]
        if not kids:
            arcs: tuple = ()
        elif len(kids) == 1:
            w, t0, t1, c = kids[0]
            arcs = ((w, t0, t1, lv - log_mass[c], cls[c]),)
        else:
            arcs = tuple(sorted((w, t0, t1, lv - log_mass[c], cls[c]) for w, t0, t1, c in kids))
        final = lv - math.log(end_mass[v]) if end_mass[v] > 0 else math.inf
        sig = (final, arcs, node_time[v])  # the frame too: a state is reached at one frame
        c = signatures.get(sig)
        if c is None:
            c = signatures[sig] = len(signatures)
        cls[v] = c
    src, dst, word, t0s, t1s, cost = [], [], [], [], [], []
    final_cost = [math.inf] * len(signatures)
    for sig, c in signatures.items():
        final_cost[c] = sig[0]
        for w, t0, t1, arc_cost, target in sig[1]:
            src.append(c)
            dst.append(target)
            word.append(w)
            t0s.append(t0)
            t1s.append(t1)
            cost.append(arc_cost)
    return Lattice.from_arcs(src=np.asarray(src, np.int64), dst=np.asarray(dst, np.int64),
                             word=np.asarray(word, np.int64), symbols=table, final_graph_cost=np.asarray(final_cost),
                             num_states=len(signatures), start=cls[0], t0=np.asarray(t0s, np.int64),
                             t1=np.asarray(t1s, np.int64), graph_cost=np.asarray(cost), frame_shift=frame_shift,
                             key=key)
