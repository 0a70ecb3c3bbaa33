"""The binary writer of Kaldi lattices builds a CompactLattice's body with numpy in one pass; its bytes equal
those of the writer that packs one state and one arc at a time (tests/_reference/kaldi_binary_writer.py),
on every vendored Kaldi archive (lattices written by Kaldi itself), in float and double form, and on N-best
lattices with gaps and final strings."""
from __future__ import annotations

import glob
import os

import numpy as np
import pytest
from _reference.kaldi_binary_writer import format_binary_fst_by_arc

from lattice_tools.alternatives.nbest_merge import nbest_lattice
from lattice_tools.core.alternatives_network import Alternative, Alternatives, Slot
from lattice_tools.io.lattices._kaldi_lattice import lattice_to_raw
from lattice_tools.io.lattices.kaldi import format_binary_fst, iter_raw

KALDI = os.path.join(os.path.dirname(__file__), "data", "kaldi")
ARCHIVES = sorted(p for p in glob.glob(os.path.join(KALDI, "**", "*.ark*"), recursive=True)
                  if p.endswith((".ark", ".ark.gz")))


def _spec(path: str) -> str:
    return f"ark:gunzip -c {path}|" if path.endswith(".gz") else f"ark:{path}"


@pytest.mark.parametrize("path", ARCHIVES, ids=lambda p: os.path.relpath(p, KALDI))
def test_vendored_archives_are_written_as_before(path):
    kinds = set()
    for _, raw in iter_raw(_spec(path)):
        kinds.add(raw.kind)
        for double in (False, True):
            assert format_binary_fst(raw, double) == format_binary_fst_by_arc(raw, double)
    assert kinds


def test_the_vendored_archives_hold_compact_lattices_with_final_strings():
    """(what makes the comparison above cover the compact writer's every part)"""
    compact = [raw for path in ARCHIVES for _, raw in iter_raw(_spec(path)) if raw.kind == "compact"]
    assert compact
    assert any(raw.final_strings for raw in compact)


def test_nbest_lattices_with_gaps_and_final_strings(tmp_path):
    alts = (Alternative(("a", "b"), (0.1, 0.5), (0.3, 0.2), posterior=0.6),
            Alternative(("a", "c", "d"), (0.1, 0.4, 0.9), (0.3, 0.4, 0.0), posterior=0.3),
            Alternative((), posterior=0.1))
    lat = nbest_lattice(Alternatives("u1", (Slot(0.0, 1.0, alts),), kind="nbest"))
    raw = lattice_to_raw(lat)
    assert raw.kind == "compact"
    for double in (False, True):
        assert format_binary_fst(raw, double) == format_binary_fst_by_arc(raw, double)
    raw.final_strings[int(np.flatnonzero(np.isfinite(raw.final_w1))[0])] = np.array([3, 3, 4], np.int32)
    assert format_binary_fst(raw) == format_binary_fst_by_arc(raw)


def test_a_cost_beyond_float32_is_refused_as_before():
    lat = nbest_lattice(Alternatives("u1", (Slot(0.0, 1.0, (Alternative(("a",), (0.0,), (0.1,), posterior=1.0),)),),
                                     kind="nbest"))
    raw = lattice_to_raw(lat)
    raw.w1 = raw.w1.astype(np.float64) + 1e39
    with pytest.raises(OverflowError):
        format_binary_fst_by_arc(raw)
    with pytest.raises(OverflowError):
        format_binary_fst(raw)
