"""Word times of the search's output sequences: the best single path reading each sequence, by a
tropical Viterbi pass over the search's prefix trie, over word arcs closed under epsilon paths
(computed for all states of one epsilon level at a time), whose per-step "cheapest candidate per
(trie node, state)" is a dense scatter-minimum (or a sort, when the dense table would be sparse).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._budget import check_memory
from ._epsilon_closure import EpsilonClosedRows
from ._search import DEFAULT_TUNING, SearchTuning, SequenceResult
from ._search_arrays import (
    argsort_stable_keys,
    first_min_per_cell,
    first_min_per_group,
    gather_rows,
    radix_halves,
    stable_order,
    trace_chains,
)

INF = math.inf


def cheapest_per_cell(cells: np.ndarray, values: np.ndarray, num_cells: int, tuning: SearchTuning) -> np.ndarray:
    """Index of the cheapest value of each cell (``0 <= cells < num_cells``; earliest index among
    ties; cells in increasing order): a dense scatter-minimum when the table is not much larger
    than the candidates, else a sort (the same indices)."""
    if tuning.dense_best_paths and num_cells <= tuning.dense_cells_per_candidate * len(cells) + 4096:
        return first_min_per_cell(cells, values, num_cells)
    return first_min_per_group(cells, values)


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




def best_paths(cl: LocalClosedRows, lab_values, root_s, root_b, parent, label, depth, ends,
               tuning: SearchTuning = DEFAULT_TUNING) -> tuple[list, list]:
    """Best single path (cost, word-arc ids) reading each sequence: a tropical Viterbi pass over
    the search's prefix trie (``parent``, ``label``, ``depth`` per node, node 0 the root; ``ends``:
    each sequence's node), vectorized over all trie nodes of one depth at a time.  Closed word
    arcs are indexed by ``(state, label)`` (a dense table over the automaton's states and its
    labels) so that only arcs matching a trie child are touched; the best candidate of each
    ``(trie node, state)`` is the cheapest, the earliest one among equal costs.

    Returns ``(costs, arcs)``: per sequence, the best path's cost and its tuple of arc ids."""
    n_nodes = len(parent)
    end_arr = np.full(n_nodes, -1, dtype=np.int64)
    end_arr[ends] = np.arange(len(ends))
    # rank of every trie node among the nodes of its depth, in node-id order: the dense index
    # of a node within one depth step (monotone, so cell order is (node, state) order)
    by_depth = argsort_stable_keys(depth)
    depth_start = np.searchsorted(depth[by_depth], np.arange(int(depth.max()) + 2))
    depth_rank = np.empty(n_nodes, dtype=np.int64)
    depth_rank[by_depth] = np.arange(n_nodes) - depth_start[depth[by_depth]]
    cid = argsort_stable_keys(parent[1:]) + 1  # children grouped by parent
    ch_label = label[cid]
    ch_off = np.searchsorted(parent[cid], np.arange(n_nodes + 1))
    # closed word arcs sorted by (state, label); labels renumbered densely again within this
    # automaton (order-preserving) so that the arc range of any (state, label) is two table look-ups
    present = np.zeros(len(lab_values), dtype=bool)
    present[cl.w_dlab] = True
    code = np.cumsum(present) - 1
    L = int(code[-1]) + 1 if len(code) else 0
    row_state = np.repeat(np.arange(cl.m, dtype=np.int64), np.diff(cl.w_off))
    sl_key = row_state * L + code[cl.w_dlab]
    arange = np.arange(len(sl_key), dtype=np.int64)
    sl_order = stable_order(sl_key, arange, *radix_halves(sl_key, cl.m * L, tuning), arange, tuning)
    sl_dst, sl_bc, sl_id = cl.w_dst[sl_order], cl.w_bc[sl_order], cl.w_id[sl_order]
    sl_count = np.bincount(sl_key, minlength=cl.m * L)
    sl_start = np.cumsum(sl_count) - sl_count
    g = np.minimum(np.searchsorted(lab_values, ch_label), max(len(lab_values) - 1, 0))
    if len(lab_values):
        ch_label_c = np.where((lab_values[g] == ch_label) & present[g], code[g], -1)
    else:
        ch_label_c = np.full(len(ch_label), -1)
    link_arc: list = []
    link_parent: list = []
    n_links = 0
    node = np.zeros(len(root_s), dtype=np.int64)
    state, bc, link = root_s, root_b, np.full(len(root_s), -1, dtype=np.int64)
    best_cost = np.full(len(ends), INF)
    best_link = np.full(len(ends), -1, dtype=np.int64)
    while len(node):
        seq = end_arr[node]
        fin = np.flatnonzero(seq >= 0)
        if len(fin):
            tot = bc[fin] + cl.x_bc[state[fin]]
            first = cheapest_per_cell(seq[fin], tot, len(ends), tuning)
            q = seq[fin][first]
            best_cost[q] = tot[first]
            best_link[q] = link[fin][first]
        cidx, prow = gather_rows(ch_off, node)  # (row, child) pairs
        if not len(cidx):
            break
        lab_c = ch_label_c[cidx]
        key = state[prow] * L + lab_c
        cnt = np.where(lab_c >= 0, sl_count[np.maximum(key, 0)], 0)
        lo = sl_start[np.maximum(key, 0)]
        total = int(cnt.sum())
        if not total:
            break
        # per (row, child) query first, then per candidate arc (a query's arcs are contiguous
        # in the (state, label) order)
        q_child = cid[cidx]
        q_rank = depth_rank[q_child]
        pair = np.repeat(np.arange(len(key)), cnt)
        pos = np.arange(total) - np.repeat(np.cumsum(cnt) - cnt - lo, cnt)
        d = sl_dst[pos]
        v = bc[prow].repeat(cnt) + sl_bc[pos]
        first = cheapest_per_cell(q_rank.repeat(cnt) * cl.m + d, v, (int(q_rank.max()) + 1) * cl.m, tuning)
        pf = pair[first]
        link_arc.append(sl_id[pos[first]])
        link_parent.append(link[prow[pf]])
        node, state, bc = q_child[pf], d[first], v[first]
        link = np.arange(n_links, n_links + len(first), dtype=np.int64)
        n_links += len(first)
    # trace every sequence's best path back at once (one arc per word of the sequence)
    arcs_np = np.concatenate(link_arc) if link_arc else np.zeros(0, dtype=np.int64)
    parents_np = np.concatenate(link_parent) if link_parent else np.zeros(0, dtype=np.int64)
    found = best_link >= 0
    arcs = trace_chains(np.where(found, best_link, 0), np.where(found, depth[ends], 0), parents_np, arcs_np)
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
                                               depth, ends, tuning)
        results.append(list(map(SequenceResult, seqs, costs, best_costs, best_arcs)))
    return results
