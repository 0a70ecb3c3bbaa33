"""Word times of the search's output sequences: the best single path reading each sequence, by a
tropical Viterbi pass over the search's prefix trie (only the prefixes of the output sequences),
one compiled pass per automaton (``WordTimes.best_paths`` of lattice_tools/_ext/search/) over the
determinizer's own tables: each state's epsilon closure, then the closure states' arcs of the next
word.
"""
from __future__ import annotations

import math

import numpy as np

from ..core._budget import bytes_left, check_memory, refuse_growth
from ._search import SequenceResult
from ._search_arrays import argsort_stable_keys, trace_chains

INF = math.inf


class PrefixTrie:
    """The search's word prefixes, numbered in creation order (node 0 is the empty prefix): each
    node's parent, last label and depth, appended by the best-first search (:mod:`~lattice_tools.alternatives._fastsearch`).  Every prefix is created
    once (when the transition that extends its parent is popped), so these lists are the trie of
    everything the search reached."""

    def __init__(self):
        self.parent, self.label, self.depth = [-1], [-1], [0]


def best_paths(tables, root_s, root_b, parent, label, depth, ends, key=None) -> tuple[list, list]:
    """Best single path (cost, word-arc ids) reading each sequence: a tropical Viterbi pass over
    the prefixes of the sequences in the search's prefix trie (``parent``, ``label``, ``depth`` per
    node, node 0 the root; ``ends``: each sequence's node) from the initial states ``root_s``
    (costs ``root_b``), over the determinizer's ``tables``
    (:meth:`~lattice_tools.alternatives._determinizer.Determinizer.word_time_tables`); the best
    candidate of each ``(trie node, state)`` is the cheapest, the earliest one among equal costs.
    The pass's columns (per trie node and state reached) stay within the memory budget
    (:mod:`lattice_tools.core._budget`; BudgetExceededError naming ``key`` past it).

    Returns ``(costs, arcs)``: per sequence, the best path's cost and its tuple of arc ids."""
    n_nodes = len(parent)
    end_of_node = np.full(n_nodes, -1, dtype=np.int64)
    end_of_node[ends] = np.arange(len(ends))
    children = argsort_stable_keys(parent[1:]) + 1  # grouped by parent, in node order
    ch_off = np.searchsorted(parent[children], np.arange(n_nodes + 1))
    status, *columns = tables.best_paths(
        np.ascontiguousarray(root_s, dtype=np.int64), np.ascontiguousarray(root_b, dtype=np.float64), label, parent,
        ch_off.astype(np.int64), children.astype(np.int64), end_of_node, len(ends), _bytes_left())
    if status:
        refuse_growth("exact sequence search (best paths)", key)
    best_cost, best_link, link_arc, link_parent = (np.frombuffer(c, dtype=t) for c, t in zip(
        columns, (np.float64, np.int64, np.int64, np.int64), strict=True))
    # trace every sequence's best path back at once (one arc per word of the sequence)
    found = best_link >= 0
    arcs = trace_chains(np.where(found, best_link, 0), np.where(found, depth[ends], 0), link_parent, link_arc)
    return best_cost.tolist(), arcs


def _bytes_left() -> int:
    """What the memory budget (if one is set) leaves above what the process holds (-1: no budget)."""
    left = bytes_left()
    return -1 if left is None else left


def sequence_results(union, determinizer, found: list, tries: list, track_best: bool, key) -> list:
    """Per automaton of ``union``: its found sequences (``found[i]``: ``[(trie node, cost)]`` in
    ``tries[i]``) as :class:`SequenceResult` lists, with each one's best single path when
    ``track_best``."""
    tables = determinizer.word_time_tables() if track_best else None
    results: list[list[SequenceResult]] = []
    for i in range(union.num_automata):
        check_memory("exact sequence search (best paths)", key)
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
        rs, _, rb = union.roots[i]
        with np.errstate(invalid="ignore", over="ignore"):
            best_costs, best_arcs = best_paths(tables, rs, rb, parent, label, depth, ends, key)
        results.append(list(map(SequenceResult, seqs, costs, best_costs, best_arcs)))
    return results
