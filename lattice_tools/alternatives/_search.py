"""Exact best-first enumeration of distinct word sequences (internal engine).

This is a lazy log-semiring determinization explored best-first.  A search node is a word prefix
``w`` together with the weighted set of automaton states it reaches: ``mass[s]`` = total cost
(``-ln`` of the summed probability) of all paths that read exactly ``w`` (epsilons free) and end
in ``s`` with a word arc (or at an initial state).  Its priority is the cost of *all* paths that
start with ``w``::

    priority(w) = (+)_s mass[s] (x) beta[s]          (log semiring)

where ``beta`` is the log-semiring backward cost.  Expanding a node takes its epsilon closure and
creates one child per next word plus one *end* node whose cost is the exact total cost of the
sequence ``w`` itself.  Every child costs at least as much as its parent (a subset of the parent's
paths), so end nodes leave the priority queue in exact order of their total probability: the
first ``n`` end nodes popped are the ``n`` most probable distinct sequences, with exact scores.
Alongside the log mass each state keeps the best single path (tropical) that realizes the prefix,
so each sequence comes with the arcs of its best path (for word times).
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


def best_first_sequences(init, out_eps, out_word, exit_cost, beta, n, *, max_pops=2_000_000, key=None):
    """The ``n`` (``None`` = all) most probable distinct label sequences, best first.

    Args:
      init: dict ``state -> (log_cost, best_cost)``: initial weights (log and tropical).
      out_eps: mapping ``state -> [(dst, cost, arc), ...]`` of epsilon arcs.
      out_word: mapping ``state -> [(label, dst, cost, arc), ...]`` of labelled arcs.
      exit_cost: mapping ``state -> (log_cost, best_cost)`` of final/exit weights (missing = not final).
      beta: mapping/array ``state -> log backward cost`` (exit included); used as the exact
        log-semiring bound of a prefix, so it must be exact (or a lower bound on the cost).
      n: number of sequences wanted (None for all).
      max_pops: budget on popped search nodes; exceeding it raises BudgetExceededError.

    Returns:
      list of :class:`SequenceResult`, most probable first (ties: first found first).

    Caveats: states must be topologically numbered (``src < dst`` for every arc) so that an
    epsilon closure is one sweep in increasing state order.
    """
    results: list[SequenceResult] = []
    heap: list = []
    counter = 0
    # A node: (priority, counter, is_end, labels, payload); payload is the subset (dict) for
    # prefix nodes and (cost, best_cost, best_link) for end nodes.
    root = {s: (lc, bc, None) for s, (lc, bc) in init.items() if lc < INF}
    if not root:
        return results
    heapq.heappush(heap, (0.0, counter, False, (), root))
    pops = 0
    empty_eps: list = []
    while heap:
        prio, _, is_end, labels, payload = heapq.heappop(heap)
        pops += 1
        if pops > max_pops:
            raise BudgetExceededError(f"exact sequence search exceeded {max_pops} search nodes "
                                      f"after {len(results)} sequences; lower N or prune the lattice", key=key)
        if is_end:
            cost, best_cost, link = payload
            results.append(SequenceResult(labels, cost, best_cost, _path_tuple(link)))
            if n is not None and len(results) >= n:
                break
            continue
        # Epsilon closure, in increasing (topological) state order.
        closure = dict(payload)
        pending = list(closure)
        heapq.heapify(pending)
        queued = set(pending)
        while pending:
            s = heapq.heappop(pending)
            eps = out_eps.get(s, empty_eps) if isinstance(out_eps, dict) else out_eps[s]
            if not eps:
                continue
            lc, bc, link = closure[s]
            for d, c, a in eps:
                old = closure.get(d)
                if old is None:
                    closure[d] = (lc + c, bc + c, (a, link))
                else:
                    nb = bc + c
                    closure[d] = (log_add(old[0], lc + c), nb, (a, link)) if nb < old[1] else \
                        (log_add(old[0], lc + c), old[1], old[2])
                if d not in queued:
                    queued.add(d)
                    heapq.heappush(pending, d)
        # End node: the sequence `labels` itself.
        end_lc, end_bc, end_link = INF, INF, None
        children: dict = {}
        for s, (lc, bc, link) in closure.items():
            ex = exit_cost.get(s)
            if ex is not None:
                end_lc = log_add(end_lc, lc + ex[0])
                if bc + ex[1] < end_bc:
                    end_bc, end_link = bc + ex[1], link
            words = out_word.get(s) if isinstance(out_word, dict) else out_word[s]
            if not words:
                continue
            for w, d, c, a in words:
                sub = children.get(w)
                if sub is None:
                    children[w] = sub = {}
                old = sub.get(d)
                if old is None:
                    sub[d] = (lc + c, bc + c, (a, link))
                else:
                    nb = bc + c
                    sub[d] = (log_add(old[0], lc + c), nb, (a, link)) if nb < old[1] else \
                        (log_add(old[0], lc + c), old[1], old[2])
        if end_lc < INF:
            counter += 1
            heapq.heappush(heap, (end_lc, counter, True, labels, (end_lc, end_bc, end_link)))
        for w, sub in children.items():
            p = INF
            for d, (lc, _, _) in sub.items():
                p = log_add(p, lc + beta[d])
            if p < INF:
                counter += 1
                heapq.heappush(heap, (p, counter, False, labels + (w,), sub))
    return results
