"""The exact best-first sequence search (the algorithm is described in
:mod:`lattice_tools.alternatives._search`): the best-first driver over the lazily built
determinization of :class:`~lattice_tools.alternatives._determinizer.Determinizer`.

* several automata (the phrases of a lattice) are searched by one call (:func:`search_many`),
  one at a time; every search is exactly the one it would be alone;
* the lazy search (log-sum bound, the common case) runs as one compiled call per automaton
  (:meth:`~lattice_tools.alternatives._determinizer.Determinizer.lazy_search`: the loop of
  :func:`_best_first` in lattice_tools/_ext/search/, over its own records); the exact-bound
  searches below run :func:`_best_first`, a generator that yields the determinized state it needs
  expanded.  Either way an expansion's choices (its end and one transition per word) are sorted
  once by their bound, and a successor is interned only when the search takes that choice;
* a search whose log-sum bound proves too loose falls back to the exact bound computed on the
  states that can lie on its ``n`` best (:func:`_bounded_exact_search`), or, for ``n = None``, on
  the whole determinized automaton (:func:`_exact_choices`);
* word times: :mod:`~lattice_tools.alternatives._best_paths`.

Results are deterministic and equal the per-state formulation to rounding (tests/test_phrases*.py
check them against brute force and against kaldifst).
"""
from __future__ import annotations

import heapq
import math
from typing import NamedTuple

import numpy as np

from ..core._budget import check_memory
from ..core._gc import gc_paused
from ..core.errors import BudgetExceededError
from ._best_paths import PrefixTrie, sequence_results
from ._determinizer import SUCCESSORS, AutomataUnion, Determinizer
from ._epsilon_closure import EpsilonClosedRows
from ._search import DEFAULT_TUNING, SearchTuning

INF = math.inf

#: nbest.py's name for the epsilon-closed rows (kept until that module's owner renames its import)
_Closed = EpsilonClosedRows


class SearchProblem(NamedTuple):
    """One acyclic automaton to search with :func:`search_many`.

    Fields:
      num_states: states are ``0..num_states-1``, topologically numbered (``src < dst``).
      src, dst, lab, cost, arc_ids: arc arrays (``lab`` 0 = epsilon; ``arc_ids`` are reported in
        ``best_arcs``).
      init_states, init_lc, init_bc: initial states with log and tropical initial costs.
      exit_states, exit_lc, exit_bc: final states with log and tropical final costs.
      beta: per-state log-semiring backward cost (exit included) of every state that a labelled
        arc enters -- the exact bound of the search.
    """

    num_states: int
    src: np.ndarray
    dst: np.ndarray
    lab: np.ndarray
    cost: np.ndarray
    arc_ids: np.ndarray
    init_states: np.ndarray
    init_lc: np.ndarray
    init_bc: np.ndarray
    exit_states: np.ndarray
    exit_lc: np.ndarray
    exit_bc: np.ndarray
    beta: np.ndarray


def search_many(problems: list, n, *, max_pops=2_000_000, key=None, track_best=True, resolution=1e-9,
                determinize_first=False, max_states=1_000_000, lazy_pops=50_000,
                tuning: SearchTuning = DEFAULT_TUNING) -> list:
    """Exact ``n`` best distinct label sequences (``None`` = all) of each of several independent
    acyclic automata (:class:`SearchProblem`), sharing one :class:`Determinizer`, one search at a
    time.  Each search finds what it would find alone.

    Options:
      max_pops: budget on popped search nodes per automaton (BudgetExceededError past it).
      track_best: also find each sequence's best single path (``best_cost``, ``best_arcs``).
      resolution: residual costs closer than this identify determinized states.
      determinize_first: skip the lazy search: build the whole log-determinized automaton (at
        most ``max_states`` states, else BudgetExceededError) and search it with the *exact*
        tropical bound (the best completion in the determinized automaton), so that every pop is
        on the way to an output.  Long utterances need this: there the log-sum bound of the lazy
        search is loose (probability spread over very many sequences).  Without it, the lazy
        search runs first with ``lazy_pops + 20 n`` pops; when they run out, a finite ``n``
        computes the exact bound only on the states that can lie on the ``n`` best
        (:func:`_bounded_exact_search`), ``n=None`` builds the whole automaton as above.
      tuning: time/memory trade-offs (:class:`~lattice_tools.alternatives._search.SearchTuning`);
        they never change the result.

    Returns: per automaton, a list of :class:`SequenceResult`, most probable first.
    """
    with gc_paused():  # tens of thousands of search records, none cyclic
        check_memory("exact sequence search", key)
        union = AutomataUnion(problems)
        if not union.num_states:
            return [[] for _ in problems]
        det = Determinizer(union, resolution, tuning)
        P = union.num_automata
        found: list = [None] * P
        tries = [PrefixTrie() for _ in range(P)]
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            starts = [det.intern(i, rs, rr) if len(rs) else -1 for i, (rs, rr, _) in enumerate(union.roots)]
            if not determinize_first and n is not None:
                budget = min(max_pops, lazy_pops + 20 * n)
                _lazy_searches(det, starts, tries, found, n, budget, key)
                if any(j >= 0 and found[i] is None for i, j in enumerate(starts)):
                    # a search ran out of pops: its log-sum bound is too loose.  Search those again
                    # with the best-next-word bound (same automata and state numbers, tighter bound)
                    # before the exact-bound fallbacks, which are far slower
                    union = AutomataUnion(problems, word_bound=True)
                    det = Determinizer(union, resolution, tuning)
                    starts = [det.intern(i, rs, rr) if len(rs) and found[i] is None else -1
                              for i, (rs, rr, _) in enumerate(union.roots)]
                    _lazy_searches(det, starts, tries, found, n, budget, key)
            for i in range(P):
                if starts[i] < 0 or found[i] is not None:
                    continue
                tries[i] = PrefixTrie()
                if not determinize_first and n is not None:
                    found[i] = _bounded_exact_search(det, i, starts[i], tries[i], n, max_pops, max_states, key)
                else:
                    found[i] = _search_determinized(det, i, starts[i], tries[i], n, max_pops, max_states, key)
                det.release(i)
        return sequence_results(union, det, found, tries, track_best, key)


def _lazy_searches(det: Determinizer, starts: list, tries: list, found: list, n: int, budget: int, key) -> None:
    """The lazy searches with the log-sum bound, one automaton at a time, each one compiled call
    (:meth:`Determinizer.lazy_search`).  A search that finishes puts its sequences in ``found`` and
    its prefixes in ``tries``; one whose bound proves too loose (its ``budget`` of pops runs out:
    probability spread over very many sequences), or that meets the memory budget, leaves
    ``found[i]`` None for the exact-bound search."""
    def check():
        check_memory("exact sequence search", key)

    for i, j0 in enumerate(starts):
        if j0 < 0:
            continue
        try:
            result = det.lazy_search(j0, n, budget, check)
        except BudgetExceededError:
            continue
        if result is not None:
            found[i], tries[i] = result
            det.release(i)


def _search_determinized(det: Determinizer, automaton: int, j0: int, trie: PrefixTrie, n, max_pops: int,
                         max_states: int, key) -> list:
    """The best-first search over the whole determinized automaton with the exact bound."""
    exact = _exact_choices(det, automaton, j0, max_states, key)
    gen = _best_first(j0, det.resolve, exact, trie, n, max_pops, key)
    try:
        next(gen)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("the exact search expands nothing")  # every state is expanded


def _post_order(j0, det_exp, within=None) -> list:
    """The determinized states reachable from ``j0`` (only through states in ``within`` when given), in
    depth-first post-order, i.e. reverse topological order; iterative, so deep automata do not overflow."""
    order: list = []
    done: set = set()
    stack = [(j0, False)]
    while stack:
        j, finished = stack.pop()
        if finished:
            order.append(j)
            continue
        if j in done:
            continue
        done.add(j)
        stack.append((j, True))
        rec = det_exp[j]
        stack.extend((nj, False) for w, nj in zip(rec[1], rec[4], strict=False)
                     if w >= 0 and nj not in done and (within is None or nj in within))
    return order


def _exact_choices(det: Determinizer, automaton: int, j0: int, max_states: int, key) -> dict:
    """Expand every determinized state reachable from ``j0`` and re-rank each one's choices by the
    *exact* bound ``cost + best(next)``, with ``best`` the cost of a state's best completion
    (tropical shortest distance to the end in the determinized automaton).  Returns the choice
    records (the shape :meth:`Determinizer.expand` gives, every successor resolved) by state id.

    The states are expanded one breadth-first frontier at a time, in batches (all of them are
    needed, in any order), then ranked in reverse topological order."""
    det_sets, det_exp, resolve, tuning = det.subsets, det.records, det.resolve, det.tuning
    expand_batch = det.expander_for(automaton)
    visited = {j0}
    frontier = [j0]
    while frontier:
        new: list = []
        start = 0
        while start < len(frontier):
            stop, members = start, 0
            while stop < len(frontier) and stop - start < tuning.exact_batch_states \
                    and members < tuning.exact_batch_members:
                sets = det_sets[frontier[stop]]
                members += len(sets[1]) // 8 if sets is not None else 0  # (key, float64 residuals)
                stop += 1
            batch = frontier[start:stop]
            check_memory("log-determinization for the exact-bound sequence search", key)
            todo = [j for j in batch if det_exp[j] is None]
            if todo:
                expand_batch(todo)
            for j in batch:  # resolve the batch at once, so that its successor data can go
                rec = det_exp[j]
                nexts = rec[4]
                for i, w in enumerate(rec[1]):
                    if w >= 0:
                        nj = nexts[i] if nexts[i] >= 0 else resolve(rec, i)
                        if nj not in visited:
                            visited.add(nj)
                            if len(visited) > max_states:
                                raise BudgetExceededError(f"log-determinization exceeded {max_states} states",
                                                          key=key)
                            new.append(nj)
                rec[SUCCESSORS] = None  # every successor is resolved
            start = stop
        frontier = new
    order = _post_order(j0, det_exp)
    best: dict = {}
    exact: dict = {}
    for j in order:
        _, labels, costs, _, nexts, _, _ = det_exp[j]
        items = sorted((c if w < 0 else c + best[nj], w, nj, c) for w, c, nj in zip(labels, costs, nexts, strict=False))
        best[j] = items[0][0] if items else INF
        bounds, labels, nexts, costs = (list(col) for col in zip(*items, strict=False)) if items else ([], [], [], [])
        exact[j] = [bounds, labels, costs, None, nexts, None, None]
    return exact


class _Region(dict):
    """Choice records of the explored determinized states; a state outside is ``None`` (what
    :func:`_best_first` asks to be expanded)."""

    def __missing__(self, j):
        return None


def _bounded_exact_search(det: Determinizer, automaton: int, j0: int, trie: PrefixTrie, n: int, max_pops: int,
                          max_states: int, key) -> list:
    """The ``n`` best sequences by the exact bound, computed only on the determinized states that can
    lie on them (instead of log-determinizing the whole automaton, which long utterances make
    astronomically large).

    1. A* over determinized *states* (prefixes reaching the same state are merged; each state is
       expanded once, at its cheapest prefix cost ``g``, since the bound is consistent) expands the
       states with ``g + h <= T``: the region ``E``.  The first end popped is the best sequence.
    2. In ``E``, each state's exact best completion, where a successor outside ``E`` counts with
       its admissible bound: still an admissible, consistent bound, exact inside ``E``.
    3. The best-first prefix search with that bound.  If it reaches a state outside ``E`` before
       its ``n``-th sequence, the region was too small: ``T`` grows past that priority, 1-3 again.
    Every state of an output sequence has ``g + h <= cost``, so the region needed is the states
    with ``g + h <= c_n``: small when ``h`` is tight (see ``nbest.best_word_bound``)."""
    det_exp, resolve = det.records, det.resolve
    expand_one = det.expander_for(automaton)
    g_of: dict = {}
    heap: list = [(0.0, 0.0, 0, j0)]
    counter = 0
    best_end = INF
    threshold = None
    margin = 1.0
    while True:
        while heap and (threshold is None or heap[0][0] <= threshold):
            # pop a batch of states (expanded in one numpy pass); a state popped in a batch may
            # get its cheapest prefix only later, which can only make the region larger than
            # needed, never the result wrong (step 3 checks every state it uses)
            batch: list = []
            while heap and (threshold is None or heap[0][0] <= threshold) and len(batch) < det.tuning.exact_batch_states:
                f, g, _, j = heapq.heappop(heap)
                if j < 0:  # an end: the first one popped is the best sequence (consistent bound)
                    best_end = min(best_end, f)
                    if threshold is None:
                        threshold = f + margin
                        break
                    continue
                if j in g_of:
                    continue
                g_of[j] = g
                batch.append(j)
                if threshold is None and len(batch) >= 8:  # before the first end: stay close to A* order
                    break
            if not batch:
                continue
            check_memory("exact sequence search", key)
            if len(g_of) > max_states:
                raise BudgetExceededError(f"exact sequence search exceeded {max_states} determinized states", key=key)
            todo = [j for j in batch if det_exp[j] is None]
            if todo:
                expand_one(todo)
            for j in batch:
                rec = det_exp[j]
                g = g_of[j]
                bounds, labels, costs, nexts = rec[0], rec[1], rec[2], rec[4]
                for c in range(len(bounds)):
                    counter += 1
                    if labels[c] < 0:
                        heapq.heappush(heap, (g + costs[c], g + costs[c], counter, -1))
                        continue
                    nj = nexts[c] if nexts[c] >= 0 else resolve(rec, c)
                    if nj not in g_of:
                        heapq.heappush(heap, (g + bounds[c], g + costs[c], counter, nj))
                rec[SUCCESSORS] = None  # every successor is resolved: the batch's successor data can go
        if threshold is None:
            return []  # no end reachable
        # exact completions in the region (reverse topological order), bounds outside it
        order = _post_order(j0, det_exp, g_of)
        best: dict = {}
        region = _Region()
        for j in order:
            bounds, labels, costs, _, nexts, _, _ = det_exp[j]
            items = sorted((c if w < 0 else (c + best[nj] if nj in best else b), w, nj, c)
                           for b, w, c, nj in zip(bounds, labels, costs, nexts, strict=False))
            best[j] = items[0][0] if items else INF
            b_, l_, n_, c_ = (list(col) for col in zip(*items, strict=False)) if items else ([], [], [], [])
            region[j] = [b_, l_, c_, None, n_, None, None]
        del trie.parent[1:], trie.label[1:], trie.depth[1:]
        gen = _best_first(j0, resolve, region, trie, n, max_pops, key)
        try:
            outside = next(gen)
        except StopIteration as stop:
            return stop.value
        # the prefix search needs a state outside the region: grow it past that state's bound
        del gen
        need = min(f for f, _, _, j in heap if j == outside) if any(j == outside for _, _, _, j in heap) else None
        margin *= 2
        threshold = max(threshold + margin, (need if need is not None else threshold) + margin)


def _best_first(j0, resolve, det_exp, trie, n, max_pops, key):
    """The best-first loop, as a generator: it yields a determinized state id whenever it needs
    that state's choice record in ``det_exp`` (the caller builds it, then resumes it) and returns
    ``[(prefix node, cost)]``, the first ``n`` end choices popped (prefix nodes are added to
    ``trie``, a :class:`~lattice_tools.alternatives._best_paths.PrefixTrie`).

    A state's choice record holds its end and its transitions sorted by their bound ``cost +
    h(next)`` (see :meth:`Determinizer.expand`).  Lazy successor enumeration: a heap entry is "choice ``i``
    of state ``j`` after prefix cost ``g``", and popping it pushes only choice ``i + 1`` and the
    first choice of the next state.  Entries still leave the heap in nondecreasing bound order
    (choices are sorted and a state's first choice is no better than its bound), so the output
    is the same as pushing every child, with two pushes per pop.
    """
    heapq_push, heapq_pop = heapq.heappush, heapq.heappop
    t_parent, t_label, t_depth = trie.parent, trie.label, trie.depth
    if det_exp[j0] is None:
        yield j0
    rec = det_exp[j0]
    heap: list = []
    # the entry to handle next when it is known without the heap: a new prefix's first choice
    # that is strictly better than the heap's top (the heap would return it at once: on equal
    # priority the older entry goes first), which saves a push and a pop for ~40 % of the pops
    nxt_entry = (rec, 0, 0.0, 0) if rec[0] else None
    counter = 0
    pops = 0
    found: list = []
    while True:
        if nxt_entry is not None:
            rec, i, g, link = nxt_entry
            nxt_entry = None
        elif heap:
            _, _, rec, i, g, link = heapq_pop(heap)
        else:
            break
        pops += 1
        if not pops & 4095:
            check_memory("exact sequence search", key)
        if pops > max_pops:
            raise BudgetExceededError(f"exact sequence search exceeded {max_pops} search nodes "
                                      f"after {len(found)} sequences; lower N or prune the lattice", key=key)
        bounds, labels, costs, _, nexts, _, _ = rec
        if i + 1 < len(bounds):
            counter += 1
            heapq_push(heap, (g + bounds[i + 1], counter, rec, i + 1, g, link))
        w = labels[i]
        if w < 0:
            found.append((link, g + costs[i]))
            if n is not None and len(found) >= n:
                break
            continue
        nj = nexts[i]
        if nj < 0:
            nj = resolve(rec, i)
        nxt = det_exp[nj]
        if nxt is None:
            yield nj
            nxt = det_exp[nj]
        if nxt[0]:
            gc = g + costs[i]
            counter += 1
            t_parent.append(link)  # the new prefix: this one extended by w
            t_label.append(w)
            t_depth.append(t_depth[link] + 1)
            prio = gc + nxt[0][0]
            if not heap or prio < heap[0][0]:
                nxt_entry = (nxt, 0, gc, len(t_parent) - 1)
            else:
                heapq_push(heap, (prio, counter, nxt, 0, gc, len(t_parent) - 1))
    return found
