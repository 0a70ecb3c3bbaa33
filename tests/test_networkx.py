"""Lattice.to_networkx / Lattice.from_networkx: lossless round trips on real lattices, and networkx's own
shortest-path algorithm as an independent check of our Viterbi best path."""
from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from _data import TEST_DATA

from lattice_tools.algorithms import best_path
from lattice_tools.core.errors import LatticeError
from lattice_tools.core.lattice import Lattice
from lattice_tools.core.symbols import SymbolTable
from lattice_tools.io import read_lattices

KALDI = TEST_DATA / "kaldi" / "lats"
SLF = TEST_DATA / "slf" / "htk_lmscale.slf"


def _real_lattices():
    lats = list(read_lattices("ark:gunzip -c " + str(KALDI / "bundled.ark.gz") + " |", format="kaldi", symbols=str(KALDI / "bundled.words.txt")))
    lats += list(read_lattices(str(SLF)))
    return lats


@pytest.fixture(scope="module")
def real_lattices():
    return _real_lattices()


def test_round_trip_is_exact_on_real_lattices(real_lattices):
    assert len(real_lattices) >= 11
    for lat in real_lattices:
        graph = lat.to_networkx()
        assert graph.number_of_nodes() == lat.num_states and graph.number_of_edges() == lat.num_arcs
        back = Lattice.from_networkx(graph)
        assert back.equals(lat), lat.key
        assert back.key == lat.key and back.word_aligned == lat.word_aligned
        assert back.attrs.keys() == lat.attrs.keys()
        for name, column in lat.attrs.items():  # e.g. Kaldi's transition-id strings (object) and 2-D columns
            assert back.attrs[name].dtype == column.dtype and back.attrs[name].shape == column.shape
            assert all(np.array_equal(a, b) for a, b in zip(back.attrs[name], column, strict=True))


def test_attrs_and_parallel_arcs_survive():
    table = SymbolTable.from_words(["a", "b"])
    lat = Lattice.from_arcs(src=[0, 0, 1], dst=[1, 1, 2], word=[1, 1, 2], symbols=table,
                            final_graph_cost=[math.inf, math.inf, 0.5], graph_cost=[1.0, 2.0, 0.0],
                            t0=[0, 0, 3], t1=[3, 3, 5], attrs={"p": [0.25, 0.75, 1.0]})
    graph = lat.to_networkx()
    assert graph.number_of_edges(0, 1) == 2
    assert [d["p"] for _, _, d in graph.edges(data=True)] == [0.25, 0.75, 1.0]
    back = Lattice.from_networkx(graph)
    assert back.equals(lat) and np.array_equal(back.attrs["p"], lat.attrs["p"])


def _networkx_best_cost(lat: Lattice) -> float:
    """Minimum path cost by networkx's Bellman-Ford (costs may be negative), through a super-final node."""
    graph = nx.DiGraph()
    costs = lat.arc_costs()
    for arc in range(lat.num_arcs):  # keep the cheapest of parallel arcs
        u, v, c = int(lat.src[arc]), int(lat.dst[arc]), float(costs[arc])
        if not graph.has_edge(u, v) or graph[u][v]["cost"] > c:
            graph.add_edge(u, v, cost=c)
    final = lat.final_costs()
    for state in np.nonzero(np.isfinite(final))[0]:
        graph.add_edge(int(state), "final", cost=float(final[state]))
    return nx.bellman_ford_path_length(graph, 0, "final", weight="cost")


def test_best_path_cost_equals_networkx_shortest_path(real_lattices):
    for lat in real_lattices:
        path = best_path(lat)
        end = int(lat.dst[path[-1]]) if len(path) else 0
        ours = float(lat.arc_costs()[path].sum() + lat.final_costs()[end])
        assert ours == pytest.approx(_networkx_best_cost(lat), rel=1e-9, abs=1e-6), lat.key


def test_hand_built_digraph_and_errors():
    graph = nx.DiGraph()
    graph.add_edge("s", "m", word="hello", graph_cost=1.0)
    graph.add_edge("m", "e", word="world")
    graph.add_node("e", final_graph_cost=0.0)
    graph.graph["start"] = "s"
    lat = Lattice.from_networkx(graph, key="utt1")
    assert lat.key == "utt1" and lat.words() == ["hello", "world"] and not lat.has_times
    graph.add_edge("e", "s", word="loop")
    with pytest.raises(LatticeError, match="cycle"):
        Lattice.from_networkx(graph)
    bad = nx.DiGraph()
    bad.add_edge(0, 1)
    bad.add_node(1, final_graph_cost=0.0)
    with pytest.raises(LatticeError, match="neither a 'word' nor a 'word_id'"):
        Lattice.from_networkx(bad)
    partial = nx.DiGraph()
    partial.add_edge(0, 1, word="a", p=0.5)
    partial.add_edge(1, 2, word="b")
    partial.add_node(2, final_graph_cost=0.0)
    with pytest.raises(LatticeError, match="'p' is set on some edges only"):
        Lattice.from_networkx(partial)
    with pytest.raises(LatticeError, match="no start node"):
        Lattice.from_networkx(nx.DiGraph([(5, 6)]))
