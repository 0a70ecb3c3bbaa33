#!/usr/bin/env python
"""Time forward/backward scores and arc posteriors on a big lattice.

Usage:
  python bench/bench_posteriors.py                 # a generated ~140k-arc frame-level lattice
  python bench/bench_posteriors.py LATTICE.slf     # an HTK SLF lattice (lattice_tools.io.lattices.slf)
  python bench/bench_posteriors.py LATTICES.pt     # the largest lattice of a k2 as_dict() file

k2 (the natural peer) cannot be installed here, so the peer is a straightforward per-arc
pure-Python forward/backward (the loop a user would write), run once; the script prints its
time, the vectorized time (best of --repeat runs, cold = including the level schedule) and the
ratio, and checks that both give the same numbers.
"""
from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from lattice_tools.algorithms import _batches, arc_posteriors, backward_scores, forward_scores, total_log_prob
from lattice_tools.core.lattice import Lattice
from lattice_tools.core.symbols import SymbolTable


def generated_lattice(num_frames: int = 750, num_arcs: int = 140_000, seed: int = 0) -> Lattice:
    """A frame-synchronous random lattice like a k2 one: arcs go from frame t to t+1 (10% to t+2).

    750 frames = 30 s at k2's 40 ms frame rate; the number of levels (sequential steps) is about
    the number of frames, which is the worst case for the vectorized schedule.
    """
    rng = np.random.default_rng(seed)
    arcs_per_frame = max(1, num_arcs // num_frames)
    states_per_frame = max(2, arcs_per_frame // 3)
    n = num_frames * states_per_frame + 1
    t = np.repeat(np.arange(num_frames - 1), arcs_per_frame)
    src = t * states_per_frame + rng.integers(0, states_per_frame, len(t))
    jump = 1 + (rng.random(len(t)) < 0.1)
    dst = np.minimum((t + jump) * states_per_frame + rng.integers(0, states_per_frame, len(t)), n - 2)
    start = n - 1
    src = np.concatenate([np.full(states_per_frame, start), src])
    dst = np.concatenate([np.arange(states_per_frame), dst])
    t = np.concatenate([np.zeros(states_per_frame, dtype=np.int64), t])
    final = np.full(n, np.inf)
    final[(num_frames - 1) * states_per_frame:num_frames * states_per_frame] = 0.0
    m = len(src)
    return Lattice.from_arcs(src=src, dst=dst, word=rng.integers(0, 5, m), symbols=SymbolTable.from_words("abcd"),
                             final_graph_cost=final, start=start, graph_cost=rng.uniform(0, 3, m),
                             acoustic_cost=rng.uniform(0, 10, m), t0=t, t1=t + 1, key="generated")


def load(path: str) -> Lattice:
    if path.endswith(".pt") or path.endswith(".pt.gz"):
        from lattice_tools.io.lattices.k2file import read_k2_lattices

        return max(read_k2_lattices(path), key=lambda lat: lat.num_arcs)
    try:
        from lattice_tools.io.lattices.slf import read_slf
    except ImportError:
        sys.exit("lattice_tools.io.lattices.slf is not available in this tree; give a .pt file or no argument")
    lat = read_slf(path)
    return lat[0] if isinstance(lat, list) else lat


def python_reference(lat: Lattice):
    """Per-arc pure-Python forward/backward/posteriors (log semiring)."""
    src, dst = lat.src.tolist(), lat.dst.tolist()
    score = (-lat.arc_costs()).tolist()
    final = (-lat.final_costs()).tolist()
    n = lat.num_states
    neg = -math.inf

    def logadd(a, b):
        if a == neg:
            return b
        if b == neg:
            return a
        return max(a, b) + math.log1p(math.exp(-abs(a - b)))

    alpha = [neg] * n
    alpha[0] = 0.0
    for a in range(len(src)):  # arcs sorted by src, states topological
        alpha[dst[a]] = logadd(alpha[dst[a]], alpha[src[a]] + score[a])
    beta = list(final)
    for a in range(len(src) - 1, -1, -1):
        beta[src[a]] = logadd(beta[src[a]], beta[dst[a]] + score[a])
    total = beta[0]
    post = [math.exp(alpha[src[a]] + score[a] + beta[dst[a]] - total) if total > neg else 0.0
            for a in range(len(src))]
    return alpha, beta, post


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lattice", nargs="?", help="SLF or k2 .pt lattice (default: generated)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--frames", type=int, default=750, help="frames of the generated lattice (default 750)")
    ap.add_argument("--arcs", type=int, default=140_000, help="arcs of the generated lattice (default 140000)")
    args = ap.parse_args(argv)
    lat = load(args.lattice) if args.lattice else generated_lattice(args.frames, args.arcs)
    print(f"lattice: {lat!r}")

    def vectorized(target, scale=1.0):
        t0 = time.perf_counter()
        forward_scores(target, acoustic_scale=scale)
        backward_scores(target, acoustic_scale=scale)
        post = arc_posteriors(target, acoustic_scale=scale)
        return time.perf_counter() - t0, post

    # cold: a new Lattice object (no cached level schedule, no cached scores)
    cold = min(vectorized(lat.replace())[0] for _ in range(args.repeat))
    # schedule cached, new scores (a different acoustic scale each time: no score cache hit)
    target = lat.replace()
    vectorized(target)
    warm = min(vectorized(target, 1.0 + 1e-3 * (i + 1))[0] for i in range(args.repeat))
    _, post = vectorized(lat)
    target = lat.replace()
    t0 = time.perf_counter()
    sched = _batches.schedule(target)
    t_sched = time.perf_counter() - t0
    print(f"levels (sequential numpy steps): {sched.num_levels}; schedule build {t_sched * 1e3:.1f} ms")
    print(f"vectorized forward+backward+posteriors: cold {cold * 1e3:.1f} ms (incl. schedule), "
          f"schedule cached {warm * 1e3:.1f} ms  (best of {args.repeat})")

    t0 = time.perf_counter()
    alpha, beta, ref_post = python_reference(lat)
    t_py = time.perf_counter() - t0
    print(f"pure-Python per-arc reference: {t_py * 1e3:.1f} ms")
    print(f"ratio pure-Python / vectorized: cold {t_py / cold:.1f}x, schedule cached {t_py / warm:.1f}x")

    err_total = abs(beta[0] - total_log_prob(lat))
    err_post = float(np.max(np.abs(np.array(ref_post) - post))) if lat.num_arcs else 0.0
    print(f"agreement: |total diff| = {err_total:.2e}, max |posterior diff| = {err_post:.2e}")
    if err_total > 1e-6 or err_post > 1e-6:
        sys.exit("MISMATCH between the vectorized and the reference implementation")


if __name__ == "__main__":
    main()
