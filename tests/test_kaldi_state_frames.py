"""The Kaldi writer's frame check (``_state_frames``: one pass of numpy) equals the walk over the arcs in order,
in the frames it finds and in the error it raises, on random lattices with consistent and inconsistent times; and
the writer's tid strings (one placeholder tid per frame) are those of a per-arc loop."""
from __future__ import annotations

import numpy as np
import pytest

from lattice_tools.core.errors import LatticeError
from lattice_tools.core.lattice import Lattice
from lattice_tools.core.symbols import SymbolTable
from lattice_tools.io.lattices._kaldi_lattice import _state_frames, lattice_to_raw


def _frames_by_arc_walk(lat):
    """The plain transcription: state 0 at frame 0, each arc must start where its source is and reach its target
    where earlier arcs did; (frames, None) or (None, the error message)."""
    f = [-1] * lat.num_states
    f[0] = 0
    for i, (s, d, a, b) in enumerate(zip(lat.src.tolist(), lat.dst.tolist(), lat.t0.tolist(), lat.t1.tolist(),
                                         strict=True)):
        if f[s] != a:
            return None, (f"arc {i} starts at frame {a} but its source state is at frame {f[s]} "
                          "(Kaldi lattices count frames from 0 along every path)")
        if f[d] < 0:
            f[d] = b
        elif f[d] != b:
            return None, f"paths reach state {d} at frames {f[d]} and {b}"
    return np.array(f, np.int64), None


def _random_lattice(rng, consistent: bool, moved: bool = False) -> Lattice:
    """Times from state frames (consistent), one arc's end then moved a frame later (moved), or random."""
    while True:
        lat = _random_arcs(rng, consistent or moved, moved)
        if lat.num_arcs:  # (arcs that no path uses are dropped)
            return lat


def _random_arcs(rng, consistent: bool, moved: bool) -> Lattice:
    n = int(rng.integers(2, 12))
    m = int(rng.integers(1, 30))
    src = rng.integers(0, n - 1, m)
    dst = np.array([rng.integers(s + 1, n) for s in src], np.int64)
    if consistent:
        frame = np.sort(rng.integers(0, 8, n))
        frame[0] = 0
        t0, t1 = frame[src], frame[dst]
        if moved:
            t1[rng.integers(0, m)] += 1
    else:
        t0 = rng.integers(0, 4, m)
        t1 = t0 + rng.integers(0, 3, m)
    return Lattice.from_arcs(src=src, dst=dst, word=np.ones(m, np.int64), symbols=SymbolTable({"a": 1}),
                             final_graph_cost=np.zeros(n), num_states=n, t0=t0, t1=t1, key="u")


def test_state_frames_equal_the_arc_walk():
    rng = np.random.default_rng(11)
    outcomes = set()
    for trial in range(3000):
        lat = _random_lattice(rng, consistent=trial % 3 == 0, moved=trial % 3 == 1)
        want, message = _frames_by_arc_walk(lat)
        outcomes.add(message.split()[0] if message else None)
        if message is None:
            got = _state_frames(lat)
            assert got is not None and np.array_equal(got, want), trial
        else:
            with pytest.raises(LatticeError) as err:
                _state_frames(lat)
            assert message in str(err.value), trial
    assert outcomes == {None, "arc", "paths"}


def test_placeholder_strings_equal_one_array_per_arc():
    rng = np.random.default_rng(5)
    done = 0
    while done < 200:
        lat = _random_lattice(rng, consistent=True)
        if _frames_by_arc_walk(lat)[1] is not None:
            continue
        raw = lattice_to_raw(lat, "compact", placeholder_tid=7)
        dur = (lat.t1 - lat.t0).tolist()
        assert raw.tids is not None and raw.tids.dtype == np.int32
        assert [s.tolist() for s in raw.strings] == [[7] * d for d in dur]
        done += 1
