"""Word times of the search's output sequences: the best single path reading each sequence, by a
tropical Viterbi pass over the search's prefix trie, over word arcs closed under epsilon paths
(computed for all states of one epsilon level at a time), one compiled pass per automaton
(:func:`~lattice_tools.alternatives._search_kernels.trie_viterbi`).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._budget import check_memory
from ._epsilon_closure import EpsilonClosedRows
from ._search import DEFAULT_TUNING, SearchTuning, SequenceResult
from ._search_arrays import argsort_stable_keys, trace_chains
from ._search_kernels import trie_viterbi

INF = math.inf


class LocalClosedRows(NamedTuple):
    """The closed rows of one automaton of a union (its own state numbering; labels as dense
    codes of the union's labels)."""

    m: int
    w_off: np.ndarray
    w_dlab: np.ndarray
    w_dst: np.ndarray
    w_bc: np.ndarray
    w_id: np.ndarray
    x_bc: np.ndarray


def local_closed_rows(cl: EpsilonClosedRows, dlab: np.ndarray, start: int, m: int) -> LocalClosedRows:
    lo, hi = int(cl.w_off[start]), int(cl.w_off[start + m])
    return LocalClosedRows(m, cl.w_off[start:start + m + 1] - lo, dlab[lo:hi], cl.w_dst[lo:hi] - start,
                      cl.w_bc[lo:hi], cl.w_id[lo:hi], cl.x_bc[start:start + m])


class PrefixTrie:
    """The search's word prefixes, numbered in creation order (node 0 is the empty prefix): each
    node's parent, last label and depth, appended by the best-first search (:mod:`~lattice_tools.alternatives._fastsearch`).  Every prefix is created
    once (when the transition that extends its parent is popped), so these lists are the trie of
    everything the search reached."""

    def __init__(self):
        self.parent, self.label, self.depth = [-1], [-1], [0]




def best_paths(cl: LocalClosedRows, lab_values, root_s, root_b, parent, label, depth, ends) -> tuple[list, list]:
    """Best single path (cost, word-arc ids) reading each sequence: a tropical Viterbi pass over
    the search's prefix trie (``parent``, ``label``, ``depth`` per node, node 0 the root; ``ends``:
    each sequence's node), over the closed word arcs sorted by (state, label)
    (:func:`~lattice_tools.alternatives._search_kernels.trie_viterbi`); the best candidate of each
    ``(trie node, state)`` is the cheapest, the earliest one among equal costs.

    Returns ``(costs, arcs)``: per sequence, the best path's cost and its tuple of arc ids."""
    n_nodes = len(parent)
    end_of_node = np.full(n_nodes, -1, dtype=np.int64)
    end_of_node[ends] = np.arange(len(ends))
    children = argsort_stable_keys(parent[1:]) + 1  # grouped by parent, in node order
    ch_off = np.searchsorted(parent[children], np.arange(n_nodes + 1))
    row_state = np.repeat(np.arange(cl.m, dtype=np.int64), np.diff(cl.w_off))
    row_lab = lab_values[cl.w_dlab] if len(lab_values) else np.zeros(0, dtype=np.int64)
    by_label = np.lexsort((row_lab, row_state))  # stable: row order among arcs of one label
    best_cost, best_link, link_arc, link_parent = trie_viterbi(
        cl.w_off, row_lab[by_label], cl.w_dst[by_label], cl.w_bc[by_label], cl.w_id[by_label], cl.x_bc,
        np.ascontiguousarray(root_s, dtype=np.int64), np.ascontiguousarray(root_b, dtype=np.float64), label, ch_off,
        children, end_of_node, len(ends))
    # trace every sequence's best path back at once (one arc per word of the sequence)
    found = best_link >= 0
    arcs = trace_chains(np.where(found, best_link, 0), np.where(found, depth[ends], 0), link_parent, link_arc)
    return best_cost.tolist(), arcs


def sequence_results(union, determinizer, found: list, tries: list, track_best: bool, key,
                     tuning: SearchTuning = DEFAULT_TUNING) -> list:
    """Per automaton of ``union``: its found sequences (``found[i]``: ``[(trie node, cost)]`` in
    ``tries[i]``) as :class:`SequenceResult` lists, with each one's best single path when
    ``track_best``.  The word arcs closed under epsilon paths are built for a chunk of automata at a
    time (``tuning.closed_chunk_arcs`` arcs, to bound memory)."""
    if track_best:
        arc_dlab = np.full(len(union.lab), -1, dtype=np.int64)
        arc_dlab[determinizer.word_arcs] = determinizer.word_dlab
    offset, arc_off = union.offset, union.arc_offset
    P = union.num_automata
    results = []
    chunk_end = 0
    for i in range(P):
        check_memory("exact sequence search (best paths)", key)
        if track_best and i == chunk_end:
            chunk_end = int(np.searchsorted(arc_off, arc_off[i] + tuning.closed_chunk_arcs, side="right")) - 1
            chunk_end = min(max(chunk_end, i + 1), P)
            a0, a1, s0, s1 = int(arc_off[i]), int(arc_off[chunk_end]), int(offset[i]), int(offset[chunk_end])
            closed = EpsilonClosedRows(s1 - s0, union.src[a0:a1] - s0, union.dst[a0:a1] - s0, union.lab[a0:a1],
                                       union.cost[a0:a1], union.arc_ids[a0:a1], union.exit_lc[s0:s1],
                                       union.exit_bc[s0:s1], log=False)
            closed_dlab = arc_dlab[a0:a1][closed.w_arc]  # the closed rows' labels, renumbered densely
            chunk_start = s0
        if not found[i]:
            results.append([])
            continue
        trie = tries[i]
        ends = np.array([node for node, _ in found[i]], dtype=np.int64)
        costs = [c for _, c in found[i]]
        parent, label = np.array(trie.parent, dtype=np.int64), np.array(trie.label, dtype=np.int64)
        depth = np.array(trie.depth, dtype=np.int64)
        seqs = trace_chains(ends, depth[ends], parent, label)
        if not track_best:
            results.append([SequenceResult(lab, c, math.nan, ()) for lab, c in zip(seqs, costs, strict=True)])
            continue
        local = local_closed_rows(closed, closed_dlab, int(offset[i]) - chunk_start, int(union.sizes[i]))
        rs, _, rb = union.roots[i]
        with np.errstate(invalid="ignore", over="ignore"):
            best_costs, best_arcs = best_paths(local, determinizer.lab_values, rs - offset[i], rb, parent, label,
                                               depth, ends)
        results.append(list(map(SequenceResult, seqs, costs, best_costs, best_arcs)))
    return results
