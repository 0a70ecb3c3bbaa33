"""The C graph loops of ``Lattice.from_arcs`` (lattice_tools/_ext/lattice_order.c: reachability, Kahn's
topological order, the arcs' new order) against the plain-Python code they replaced
(tests/_reference/lattice_order.py): the same order or the same cycle error, the same reachable states, and
``from_arcs`` building the same lattice with the same maps and attributes, on random graphs with cycles,
self-loops, unreachable states and parallel arcs; bad buffers raise cleanly."""
from __future__ import annotations

import math

import numpy as np
import pytest
from _reference import lattice_order as ref
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools._ext import native
from lattice_tools.core.errors import LatticeError
from lattice_tools.core.lattice import Lattice, reachable_mask, topological_order
from lattice_tools.core.symbols import SymbolTable


@st.composite
def graphs(draw, max_states: int = 9, acyclic_bias: bool = False):
    """(num_states, start, src, dst) in any numbering and arc order; parallel arcs and self-loops allowed.
    With ``acyclic_bias`` most arcs go from a lower to a higher id (so most graphs build)."""
    n = draw(st.integers(1, max_states))
    m = draw(st.integers(0, 3 * max_states))
    arcs = []
    for _ in range(m):
        s, d = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        if acyclic_bias and draw(st.integers(0, 9)) and s != d:
            s, d = min(s, d), max(s, d)
        arcs.append((s, d))
    if draw(st.booleans()):  # a shuffled numbering
        perm = draw(st.permutations(range(n)))
        arcs = [(perm[s], perm[d]) for s, d in arcs]
    src = np.array([a[0] for a in arcs], np.int64)
    dst = np.array([a[1] for a in arcs], np.int64)
    return n, draw(st.integers(0, n - 1)), src, dst


def _outcome(fn, *args, **kwargs):
    try:
        return "ok", fn(*args, **kwargs)
    except LatticeError as error:
        return "error", str(error)


@settings(max_examples=400, deadline=None)
@given(graphs())
def test_topological_order_equals_the_python_loop(g):
    n, start, src, dst = g
    got, want = _outcome(topological_order, n, src, dst, start, key="k"), _outcome(ref.topological_order, n, src, dst,
                                                                                    start, key="k")
    assert got[0] == want[0]
    if got[0] == "ok":
        assert got[1].dtype == np.int64 and got[1].tolist() == want[1].tolist()
    else:
        assert got[1] == want[1]


@settings(max_examples=300, deadline=None)
@given(graphs())
def test_reachable_mask_equals_the_python_loop(g):
    n, start, src, dst = g
    assert reachable_mask(n, src, dst, start).tolist() == ref.reachable_mask(n, src, dst, start).tolist()


@st.composite
def arc_lists(draw):
    n, start, src, dst = draw(graphs(acyclic_bias=True))
    m = len(src)
    costs = st.sampled_from([0.0, 0.5, 2.0]) | st.floats(-5, 50)
    final = draw(st.lists(costs | st.just(math.inf), min_size=n, max_size=n))
    if draw(st.booleans()):
        final[draw(st.integers(0, n - 1))] = 0.0
    return dict(
        src=src, dst=dst, num_states=n, start=start, final_graph_cost=np.array(final),
        final_acoustic_cost=np.array(draw(st.lists(costs, min_size=n, max_size=n))),
        word=np.array(draw(st.lists(st.integers(0, 3), min_size=m, max_size=m)), np.int64),
        graph_cost=np.array(draw(st.lists(costs, min_size=m, max_size=m))),
        acoustic_cost=np.array(draw(st.lists(costs, min_size=m, max_size=m))),
        t0=np.arange(m), t1=np.arange(m) + 1, key="utt",
        attrs={"column": np.arange(m) * 7, "pairs": np.arange(2 * m).reshape(m, 2),
               "objects": np.array([f"a{i}" for i in range(m)], dtype=object)})


def _same(built, want):
    assert built[0] == want[0]
    if built[0] == "error":
        assert built[1] == want[1]
        return
    (lat, state_map, arc_map), (lat_ref, state_map_ref, arc_map_ref) = built[1], want[1]
    assert lat.equals(lat_ref)
    assert (lat.key, lat.word_aligned, lat.trimmed_arcs) == (lat_ref.key, lat_ref.word_aligned, lat_ref.trimmed_arcs)
    assert state_map.tolist() == state_map_ref.tolist() and arc_map.tolist() == arc_map_ref.tolist()
    assert sorted(lat.attrs) == sorted(lat_ref.attrs)
    for name, values in lat_ref.attrs.items():
        assert lat.attrs[name].dtype == values.dtype and lat.attrs[name].tolist() == values.tolist()
        assert not lat.attrs[name].flags.writeable


@settings(max_examples=400, deadline=None)
@given(arc_lists())
def test_from_arcs_builds_the_same_lattice_as_before(kw):
    symbols = SymbolTable.from_words(["a", "b", "c"])
    _same(_outcome(Lattice.from_arcs_with_maps, symbols=symbols, **kw),
          _outcome(ref.from_arcs_with_maps, symbols=symbols, **kw))


def test_a_rebuilt_lattice_is_equal_and_owns_its_arrays():
    """A lattice already numbered as from_arcs numbers it (rebuilt from its own arrays) takes the path that
    copies instead of gathering: the same lattice, maps the identity, and the caller's arrays untouched."""
    src, dst = np.array([0, 0, 0, 1]), np.array([1, 1, 2, 2])  # Kahn's LIFO order is 0, 1, 2: a fixed point
    lat = Lattice.from_arcs(src=src, dst=dst, word=np.array([1, 2, 3, 1]), symbols=SymbolTable.from_words(["a", "b", "c"]),
                            final_graph_cost=np.array([np.inf, np.inf, 0.0]), graph_cost=np.array([1.0, 2, 3, 4]),
                            attrs={"x": np.arange(4)})
    assert lat.src.tolist() == [0, 0, 0, 1] and lat.dst.tolist() == [1, 1, 2, 2]
    costs = lat.graph_cost.copy()
    again, state_map, arc_map = Lattice.from_arcs_with_maps(
        src=lat.src, dst=lat.dst, word=lat.word, symbols=lat.symbols, final_graph_cost=lat.final_graph_cost,
        graph_cost=costs, attrs=dict(lat.attrs))
    assert again.equals(lat) and again.attrs["x"].tolist() == lat.attrs["x"].tolist()
    assert state_map.tolist() == [0, 1, 2] and arc_map.tolist() == [0, 1, 2, 3]
    assert costs.flags.writeable and not np.shares_memory(again.graph_cost, costs)
    assert not np.shares_memory(again.attrs["x"], lat.attrs["x"])


def test_cycle_errors_name_the_key():
    symbols = SymbolTable.from_words(["a"])
    with pytest.raises(LatticeError, match=r"lattice has a cycle \(through state 1\)") as info:
        Lattice.from_arcs(src=[0, 1, 2], dst=[1, 2, 1], word=[1, 1, 1], symbols=symbols,
                          final_graph_cost=[np.inf, np.inf, 0.0], key="utt7")
    assert "utt7" in str(info.value)
    with pytest.raises(LatticeError, match="the start state 0 is on a cycle"):
        Lattice.from_arcs(src=[0, 1], dst=[1, 0], word=[1, 1], symbols=symbols, final_graph_cost=[np.inf, 0.0])
    # a cycle that the start does not reach does not matter: its states are dropped
    lat = Lattice.from_arcs(src=[0, 2, 3], dst=[1, 3, 2], word=[1, 1, 1], symbols=symbols,
                            final_graph_cost=[np.inf, 0.0, 0.0, 0.0])
    assert (lat.num_states, lat.num_arcs) == (2, 1)


def _ints(*values):
    return np.array(values, np.int64)


def _shared_output():
    """arc_idx laid over new_dst (read back as sort keys while arc_idx is written)."""
    out = np.zeros(3, np.int64)
    return _ints(0, 0, 1), _ints(1, 2, 2), _ints(0, 1, 2), out, np.zeros(3, np.int64), out


def _output_over_input():
    src = _ints(0, 0, 1)
    return src, _ints(1, 2, 2), _ints(0, 1, 2), np.zeros(3, np.int64), src, np.zeros(3, np.int64)


@pytest.mark.parametrize("call,error,match", [
    (lambda C: C.topological_order(0, np.array([0], np.int32), _ints(0), np.empty(1, np.int64)), TypeError,
     "topological_order: argument src must be a C-contiguous array of int64"),
    (lambda C: C.topological_order(0, _ints(0), _ints(0, 1), np.empty(2, np.int64)), ValueError,
     "topological_order: src has 1 items, dst 2"),
    (lambda C: C.topological_order(0, _ints(0), _ints(2), np.empty(2, np.int64)), ValueError,
     r"arc 0 \(0 -> 2\) has a state outside 0 .. 1"),
    (lambda C: C.topological_order(0, _ints(-1), _ints(1), np.empty(2, np.int64)), ValueError,
     r"arc 0 \(-1 -> 1\) has a state outside"),
    (lambda C: C.topological_order(2, _ints(), _ints(), np.empty(2, np.int64)), ValueError,
     r"start 2 is not a state \(0 .. 1\)"),
    (lambda C: C.topological_order(0, _ints(), _ints(), np.empty(0, np.int64)), ValueError,
     "start 0 is not a state"),
    (lambda C: C.topological_order(0, _ints(), _ints(), np.empty(4, np.int64)[::2]), TypeError,
     r"topological_order: argument order must be a C-contiguous writable array of int64 \(numpy.ndarray is not one\)"),
    (lambda C: C.topological_order(0, _ints(), _ints(), b"0123456789abcdef"), TypeError,
     r"topological_order: argument order must be a C-contiguous writable array of int64 \(bytes is not one\)"),
    (lambda C: C.reachable(0, _ints(0), _ints(1), np.empty(2, np.int64)), TypeError,
     "reachable: argument mask must be a C-contiguous writable array of bool or uint8"),
    (lambda C: C.reachable(0, _ints(0), _ints(1), np.empty(2, np.float64)), TypeError,
     "reachable: argument mask must be a C-contiguous writable array of bool or uint8"),
    (lambda C: C.reachable(0, [0], _ints(1), np.empty(2, bool)), TypeError,
     r"reachable: argument src must be a C-contiguous array of int64 \(list is not one\)"),
    (lambda C: C.arc_order(_ints(0), _ints(1), _ints(0, 1), np.empty(1, np.int64), np.empty(1, np.int64),
                           np.empty(2, np.int64)), ValueError, "arc_idx, new_src and new_dst must have 1 items"),
    (lambda C: C.arc_order(_ints(0), _ints(1), _ints(0, 2), np.empty(1, np.int64), np.empty(1, np.int64),
                           np.empty(1, np.int64)), ValueError, r"state_map\[1\] = 2 is neither -1 nor a state"),
    (lambda C: C.arc_order(_ints(0), _ints(1), _ints(0, -2), np.empty(1, np.int64), np.empty(1, np.int64),
                           np.empty(1, np.int64)), ValueError, r"state_map\[1\] = -2"),
    (lambda C: C.arc_order(_ints(), _ints(), _ints(), _ints(), _ints(), _ints()), ValueError,
     "state_map is empty"),
    (lambda C: C.arc_order(_ints(0), _ints(1), _ints(0, 1), np.empty(1, np.float64), np.empty(1, np.int64),
                           np.empty(1, np.int64)), TypeError,
     "arc_order: argument arc_idx must be a C-contiguous writable array of int64"),
    (lambda C: C.arc_order(*_shared_output()), ValueError, "must not share memory"),
    (lambda C: C.arc_order(*_output_over_input()), ValueError, "must not share memory"),
])
def test_bad_buffers_raise(call, error, match):
    with pytest.raises(error, match=match):
        call(native("lattice_order"))


def test_arc_order_sorts_like_lexsort_and_drops_arcs_of_dropped_states():
    C = native("lattice_order")
    src, dst = _ints(2, 0, 2, 1, 0, 3), _ints(1, 2, 1, 1, 1, 1)
    state_map = _ints(0, 2, 1, -1)  # state 3 dropped; 1 -> 2, 2 -> 1
    idx, new_src, new_dst = (np.full(6, -9, np.int64) for _ in range(3))
    count, unchanged = C.arc_order(src, dst, state_map, idx, new_src, new_dst)
    ns, nd = state_map[src], state_map[dst]
    keep = np.flatnonzero((ns >= 0) & (nd >= 0))
    want = keep[np.lexsort((nd[keep], ns[keep]))]
    assert (count, unchanged) == (5, False)
    assert idx[:count].tolist() == want.tolist() == [1, 4, 0, 2, 3]
    assert new_src[:count].tolist() == ns[want].tolist() and new_dst[:count].tolist() == nd[want].tolist()
    assert C.arc_order(_ints(0, 0, 1), _ints(1, 2, 2), _ints(0, 1, 2), *(np.empty(3, np.int64) for _ in range(3))) \
        == (3, True)


def test_from_arcs_never_shares_or_freezes_the_callers_arrays():
    src, dst = np.array([0, 2, 0]), np.array([2, 1, 1])  # renumbered and reordered
    costs, column = np.array([1.0, 2.0, 3.0]), np.array([7, 8, 9])
    lat = Lattice.from_arcs(src=src, dst=dst, word=np.array([1, 1, 1]), symbols=SymbolTable.from_words(["a"]),
                            final_graph_cost=np.array([np.inf, 0.0, np.inf]), graph_cost=costs,
                            attrs={"column": column})
    assert lat.attrs["column"].tolist() == [7, 9, 8] and lat.graph_cost.tolist() == [1.0, 3.0, 2.0]
    for mine, theirs in ((lat.attrs["column"], column), (lat.graph_cost, costs)):
        assert theirs.flags.writeable and not mine.flags.writeable and not np.shares_memory(mine, theirs)
