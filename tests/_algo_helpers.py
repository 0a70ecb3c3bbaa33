"""Helpers for the algorithm and k2-loader tests: random DAG lattices and brute-force references."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from lattice_tools.core.lattice import Lattice
from lattice_tools.core.symbols import SymbolTable

SYMBOLS = SymbolTable.from_words(["a", "b", "c", "d"])


def random_lattice(rng: np.random.Generator, num_states: int, num_arcs: int, *, final_prob: float = 0.3,
                   tie_costs: bool = False, key: str = "rand") -> Lattice:
    """A random DAG lattice (arcs go from lower to higher input state ids; renumbered by from_arcs).

    ``tie_costs`` draws costs from a few integers so that equal-cost paths (ties) are common.
    Redraws until some final state is reachable from state 0 (from_arcs drops unreachable states).
    """
    from lattice_tools.core.errors import LatticeError

    while True:
        try:
            return _random_lattice_once(rng, num_states, num_arcs, final_prob, tie_costs, key)
        except LatticeError:
            continue


def _random_lattice_once(rng, num_states, num_arcs, final_prob, tie_costs, key):
    src = rng.integers(0, num_states - 1, size=num_arcs)
    dst = src + 1 + (rng.integers(0, num_states, size=num_arcs) % (num_states - 1 - src))
    if tie_costs:
        graph = rng.integers(0, 3, size=num_arcs).astype(float)
        acoustic = rng.integers(0, 3, size=num_arcs).astype(float)
    else:
        graph = rng.uniform(0.0, 5.0, size=num_arcs)
        acoustic = rng.normal(3.0, 4.0, size=num_arcs)
    final = np.where(rng.random(num_states) < final_prob, rng.uniform(0, 2, num_states), np.inf)
    final[-1] = 0.5
    word = rng.integers(0, 5, size=num_arcs)
    t0 = rng.integers(0, 50, size=num_arcs)
    return Lattice.from_arcs(src=src, dst=dst, word=word, symbols=SYMBOLS, final_graph_cost=final,
                             final_acoustic_cost=np.where(np.isinf(final), np.inf, 0.25),
                             graph_cost=graph, acoustic_cost=acoustic, t0=t0, t1=t0 + rng.integers(0, 5, num_arcs),
                             key=key)


@st.composite
def lattices(draw, max_states: int = 9, max_arcs: int = 18, tie_costs: bool | None = None):
    """Hypothesis strategy: small random lattices (few enough paths to enumerate)."""
    n = draw(st.integers(2, max_states))
    m = draw(st.integers(1, max_arcs))
    seed = draw(st.integers(0, 2**32 - 1))
    ties = draw(st.booleans()) if tie_costs is None else tie_costs
    fp = draw(st.sampled_from([0.0, 0.3, 0.8]))
    return random_lattice(np.random.default_rng(seed), n, m, final_prob=fp, tie_costs=ties)


def enumerate_paths(lat: Lattice, costs: np.ndarray, final_costs: np.ndarray):
    """All complete paths as ``(arc_indices, total_cost)``, by depth-first search (exponential)."""
    out_arcs = [[] for _ in range(lat.num_states)]
    for a in range(lat.num_arcs):
        out_arcs[int(lat.src[a])].append(a)
    paths = []

    def visit(state, arcs, cost):
        if math.isfinite(final_costs[state]):
            paths.append((tuple(arcs), cost + float(final_costs[state])))
        for a in out_arcs[state]:
            visit(int(lat.dst[a]), arcs + [a], cost + float(costs[a]))

    visit(0, [], 0.0)
    return paths


def reference_forward_backward(lat: Lattice, log_semiring: bool = True, **scales):
    """Per-arc pure-Python forward/backward scores (arcs sorted by src, states topological)."""
    score = (-lat.arc_costs(**scales)).tolist()
    final = (-lat.final_costs(acoustic_scale=scales.get("acoustic_scale", 1.0),
                              lm_scale=scales.get("lm_scale", 1.0))).tolist()
    src, dst = lat.src.tolist(), lat.dst.tolist()
    neg = -math.inf

    def plus(a, b):
        if not log_semiring:
            return max(a, b)
        if a == neg:
            return b
        if b == neg:
            return a
        return max(a, b) + math.log1p(math.exp(-abs(a - b)))

    alpha = [neg] * lat.num_states
    alpha[0] = 0.0
    for a in range(len(src)):
        alpha[dst[a]] = plus(alpha[dst[a]], alpha[src[a]] + score[a])
    beta = list(final)
    for a in range(len(src) - 1, -1, -1):
        beta[src[a]] = plus(beta[src[a]], beta[dst[a]] + score[a])
    return np.array(alpha), np.array(beta)
