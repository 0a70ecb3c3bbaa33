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

The implementation: :class:`~lattice_tools.alternatives._determinizer.Determinizer` (the lazily
built determinized automaton: subsets, their expansions into choices, interning) and the best-first
driver :func:`lattice_tools.alternatives._fastsearch.search_many`; word times come from
:mod:`~lattice_tools.alternatives._best_paths`.  This module holds what they share: the result
type, the tuning parameters and a scalar helper.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

INF = math.inf


def log_add(a: float, b: float) -> float:
    """``-ln(e^-a + e^-b)`` for costs."""
    if a > b:
        a, b = b, a
    if b == INF:
        return a
    return a - math.log1p(math.exp(a - b))


class SequenceResult(NamedTuple):
    """One output sequence of the search (a named tuple: tens of thousands are built per lattice)."""

    labels: tuple  # word ids (epsilons removed)
    cost: float  # log-semiring cost of all paths with this sequence
    best_cost: float  # cost of the best single path with this sequence
    best_arcs: tuple  # ids of the word arcs of that path


@dataclass(frozen=True)
class SearchTuning:
    """How the search engine spends time and memory; none of these changes what it finds (tests
    check every setting against the defaults).

    Exact-bound fallback (the lazy searches run one at a time, each in one compiled call):
      exact_batch_states, exact_batch_members: an exact-bound expansion batch holds at most this
        many determinized states, and stops growing once their subsets hold this many lattice
        states (bounds the batch's temporary arrays).
    """

    exact_batch_states: int = 1024
    exact_batch_members: int = 20_000


DEFAULT_TUNING = SearchTuning()
