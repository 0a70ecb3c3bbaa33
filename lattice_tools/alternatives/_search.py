"""Exact best-first enumeration of distinct word sequences (internal engine).

A lazy log-semiring determinization explored best-first.  A search node is a word prefix ``w``
with cost ``g(w)``, the total cost (``-ln`` of the summed probability) of all paths reading exactly
``w``, and the *determinized state* it reaches: the epsilon-closed set of automaton states with
residual costs ``r[s]`` (so that the mass of the prefix ending in ``s`` is ``g(w) + r[s]``).
Determinized states are interned (residuals compared to 1e-9), so their closures and transitions
are computed once however many prefixes reach them.  A node's priority is the cost of *all*
paths that start with ``w``::

    priority(w) = g(w) + h(D),   h(D) = (+)_s r[s] (x) beta[s]       (log semiring)

with ``beta`` the log-semiring backward cost.  Expanding a node creates one child per next word
and one *end* node whose cost is the exact total cost of ``w`` itself.  A child's paths are a
subset of its parent's, so priorities never decrease along the tree and end nodes leave the queue
in exact order of their total probability: the first ``n`` end nodes are the ``n`` most probable
distinct sequences, with exact scores.  The best single path realizing each output sequence (for
word times) is then found by a Viterbi pass restricted to the trie of the output sequences.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

from ..errors import BudgetExceededError

INF = math.inf


def log_add(a: float, b: float) -> float:
    """``-ln(e^-a + e^-b)`` for costs."""
    if a > b:
        a, b = b, a
    if b == INF:
        return a
    return a - math.log1p(math.exp(a - b))


@dataclass(frozen=True)
class SequenceResult:
    labels: tuple  # word ids (epsilons removed)
    cost: float  # log-semiring cost of all paths with this sequence
    best_cost: float  # cost of the best single path with this sequence
    best_arcs: tuple  # arc ids of that path (as given in the adjacency lists)


def _path_tuple(link) -> tuple:
    out = []
    while link is not None:
        out.append(link[0])
        link = link[1]
    return tuple(reversed(out))


def best_first_sequences(init, out_eps, out_word, exit_cost, beta, n, *, max_pops=2_000_000, key=None,
                         track_best=True, resolution=1e-9):
    """The ``n`` (``None`` = all) most probable distinct label sequences, best first.

    Args:
      init: dict ``state -> (log_cost, best_cost)``: initial weights (log and tropical).
      out_eps: dict ``state -> [(dst, cost, arc), ...]`` of epsilon arcs.
      out_word: dict ``state -> [(label, dst, cost, arc), ...]`` of labelled arcs.
      exit_cost: dict ``state -> (log_cost, best_cost)`` of final/exit weights (missing = not final).
      beta: mapping/list ``state -> log backward cost`` (exit included) for every state reached by
        a labelled arc: the exact bound of a prefix (a lower bound on costs also works).
      n: number of sequences wanted (None for all).
      max_pops: budget on popped search nodes; exceeding it raises BudgetExceededError.
      track_best: also find each sequence's best single path (``best_cost``, ``best_arcs``).

    Returns:
      list of :class:`SequenceResult`, most probable first.

    Caveats: states must be topologically numbered (``src < dst`` for every arc) so that an
    epsilon closure is one sweep in increasing state order.
    """
    results: list = []
    root = {s: lc for s, (lc, _) in init.items() if lc < INF}
    if not root:
        return results
    det_keys: dict = {}
    det_subsets: list = []  # pre-closure residuals of each determinized state
    det_h: list = []
    det_expansion: list = []  # None until expanded: (final cost, [(label, next id, arc cost)])

    def intern(subset: dict) -> int:
        k = tuple(sorted((s, round(r / resolution)) for s, r in subset.items()))
        j = det_keys.get(k)
        if j is None:
            j = det_keys[k] = len(det_subsets)
            det_subsets.append(subset)
            h = INF
            for s, r in subset.items():
                h = log_add(h, r + beta[s])
            det_h.append(h)
            det_expansion.append(None)
        return j

    def expand(j: int):
        closure = dict(det_subsets[j])
        pending = list(closure)
        heapq.heapify(pending)
        queued = set(pending)
        while pending:
            s = heapq.heappop(pending)
            eps = out_eps.get(s)
            if not eps:
                continue
            r = closure[s]
            for d, c, _ in eps:
                old = closure.get(d)
                closure[d] = r + c if old is None else log_add(old, r + c)
                if d not in queued:
                    queued.add(d)
                    heapq.heappush(pending, d)
        fin = INF
        trans: dict = {}
        for s, r in closure.items():
            ex = exit_cost.get(s)
            if ex is not None:
                fin = log_add(fin, r + ex[0])
            words = out_word.get(s)
            if not words:
                continue
            for w, d, c, _ in words:
                t = trans.get(w)
                if t is None:
                    trans[w] = t = {}
                old = t.get(d)
                t[d] = r + c if old is None else log_add(old, r + c)
        out = []
        for w, t in trans.items():
            wsum = INF
            for v in t.values():
                wsum = log_add(wsum, v)
            if wsum < INF:
                out.append((w, intern({d: v - wsum for d, v in t.items()}), wsum))
        det_expansion[j] = (fin, out)
        det_subsets[j] = None  # no longer needed
        return det_expansion[j]

    j0 = intern(root)
    heap = [(det_h[j0], 0, j0, 0.0, None)]  # (priority, tie, det id (-1 = end node), g, labels link)
    counter = 0
    pops = 0
    found: list = []
    while heap:
        prio, _, j, g, link = heapq.heappop(heap)
        pops += 1
        if pops > max_pops:
            raise BudgetExceededError(f"exact sequence search exceeded {max_pops} search nodes "
                                      f"after {len(found)} sequences; lower N or prune the lattice", key=key)
        if j < 0:
            found.append((_labels(link), prio))
            if n is not None and len(found) >= n:
                break
            continue
        exp = det_expansion[j]
        if exp is None:
            exp = expand(j)
        fin, trans = exp
        if fin < INF:
            counter += 1
            heapq.heappush(heap, (g + fin, counter, -1, g + fin, link))
        for w, nj, c in trans:
            gc = g + c
            counter += 1
            heapq.heappush(heap, (gc + det_h[nj], counter, nj, gc, (w, link)))
    if not track_best:
        return [SequenceResult(lab, cost, math.nan, ()) for lab, cost in found]
    best = _best_paths(init, out_eps, out_word, exit_cost, [lab for lab, _ in found])
    return [SequenceResult(lab, cost, *best[lab]) for lab, cost in found]


def _labels(link) -> tuple:
    out = []
    while link is not None:
        out.append(link[0])
        link = link[1]
    return tuple(reversed(out))


def _best_paths(init, out_eps, out_word, exit_cost, sequences) -> dict:
    """Best single path (cost, arcs) reading each of ``sequences`` (Viterbi over their trie)."""
    trie: dict = {}
    for seq in sequences:
        node = trie
        for w in seq:
            node = node.setdefault(w, {})
        node[None] = seq
    result: dict = {}
    stack = [(trie, {s: (bc, None) for s, (lc, bc) in init.items() if lc < INF})]
    while stack:
        node, subset = stack.pop()
        closure = dict(subset)
        pending = list(closure)
        heapq.heapify(pending)
        queued = set(pending)
        while pending:
            s = heapq.heappop(pending)
            eps = out_eps.get(s)
            if not eps:
                continue
            bc, link = closure[s]
            for d, c, a in eps:
                old = closure.get(d)
                if old is None or bc + c < old[0]:
                    closure[d] = (bc + c, (a, link))
                if d not in queued:
                    queued.add(d)
                    heapq.heappush(pending, d)
        if None in node:
            best, best_link = INF, None
            for s, (bc, link) in closure.items():
                ex = exit_cost.get(s)
                if ex is not None and bc + ex[1] < best:
                    best, best_link = bc + ex[1], link
            result[node[None]] = (best, _path_tuple(best_link))
        nexts = {w: {} for w in node if w is not None}
        if not nexts:
            continue
        for s, (bc, link) in closure.items():
            for lab, d, c, a in out_word.get(s, ()):
                nxt = nexts.get(lab)
                if nxt is not None:
                    old = nxt.get(d)
                    if old is None or bc + c < old[0]:
                        nxt[d] = (bc + c, (a, link))
        for w, nxt in nexts.items():
            stack.append((node[w], nxt))
    return result
