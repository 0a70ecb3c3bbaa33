"""Kaldi's ``lattice-best-path`` as lattice-tools computed it before the compiled engine
(lattice_tools/_ext/kaldi_order.c: ``best_path`` / ``compact_best_path``): the stored-order view in numpy
(:func:`lattice_tools.algorithms.kaldi_order.stored_order_view`, which MBR still uses), the search in plain
Python (:func:`tests._reference.kaldi_order.compact_shortest_path`), the costs summed in numpy float32.  The
oracle of tests/test_kaldi_best_path.py."""
from __future__ import annotations

import numpy as np

from lattice_tools.algorithms.kaldi_ops import KaldiBestPath
from lattice_tools.algorithms.kaldi_order import stored_order_view
from lattice_tools.core.errors import LatticeError
from lattice_tools.core.lattice import Lattice

from .kaldi_order import compact_shortest_path


def best_path_kaldi(lat: Lattice, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
                    word_penalty: float = 0.0) -> KaldiBestPath:
    v = stored_order_view(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty,
                          resort_only_if_unsorted=True)
    n = v.num_states
    cost = v.graph.astype(np.float64) + v.acoustic.astype(np.float64)
    fcost = v.final_graph.astype(np.float64) + v.final_acoustic.astype(np.float64)
    offs = np.searchsorted(v.src, np.arange(n + 1))
    path, last = compact_shortest_path(n, offs.tolist(), v.dst.tolist(), cost.tolist(), fcost.tolist())
    if last < 0:
        raise LatticeError("lattice has no complete path from the start to a final state", key=lat.key or None)
    arcs = path
    g = np.float32(0.0)
    ac = np.float32(0.0)
    for a in arcs:
        g = np.float32(g + v.graph[a])
        ac = np.float32(ac + v.acoustic[a])
    g = np.float32(g + v.final_graph[last])
    ac = np.float32(ac + v.final_acoustic[last])
    frames = int(v.dur[arcs].sum()) + int(v.final_dur[last]) if arcs else int(v.final_dur[last])
    hub = v.hub_arc[arcs] if arcs else np.zeros(0, np.int64)
    return KaldiBestPath(tuple(int(w) for w in v.word[arcs] if w != 0), tuple(int(x) for x in hub), float(g),
                         float(ac), frames)
