"""Binary Kaldi lattices.  The writer builds a CompactLattice's body with numpy in one pass; its bytes equal
those of the writer that packs one state and one arc at a time (tests/_reference/kaldi_binary_writer.py),
on every vendored Kaldi archive (lattices written by Kaldi itself), in float and double form, and on N-best
lattices with gaps and final strings.  The reader parses a CompactLattice's states and arcs in C; its arrays
and its errors (truncations at every byte, corrupt lengths) equal those of the reader that reads one field
at a time (tests/_reference/kaldi_binary_reader.py)."""
from __future__ import annotations

import glob
import io
import os

import numpy as np
import pytest
from _reference.kaldi_binary_reader import read_binary_fst_by_item
from _reference.kaldi_binary_writer import format_binary_fst_by_arc

from lattice_tools.alternatives.nbest_merge import nbest_lattice
from lattice_tools.core.alternatives_network import Alternative, Alternatives, Slot
from lattice_tools.core.errors import FormatError
from lattice_tools.io.lattices._kaldi_lattice import lattice_to_raw
from lattice_tools.io.lattices.kaldi import _Reader, format_binary_fst, iter_raw, read_binary_fst

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


_FIELDS = ("kind", "start", "num_states", "src", "dst", "ilabel", "olabel", "w1", "w2", "final_w1", "final_w2", "tids",
           "tid_offsets", "props")


def _read(reader, data: bytes, chunk: int):
    """(RawFst, bytes left) or the FormatError's message, reading ``data`` through a stream of small reads."""

    class Trickle(io.RawIOBase):  # returns at most `chunk` bytes a read: the FST arrives in pieces
        def __init__(self):
            self.at = 0

        def readable(self):
            return True

        def read(self, n=-1):
            out = data[self.at:self.at + min(chunk, n if n >= 0 else len(data))]
            self.at += len(out)
            return out

    r = _Reader(Trickle(), "x.ark")
    try:
        raw = reader(r, "u1")
    except FormatError as exc:
        return str(exc)
    return raw, r.tell()


def _same(a, b):
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    (ra, ta), (rb, tb) = a, b
    assert ta == tb
    for name in _FIELDS:
        x, y = getattr(ra, name), getattr(rb, name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name
        else:
            assert x == y, name
    assert ra.final_strings.keys() == rb.final_strings.keys()
    for k, v in ra.final_strings.items():
        assert v.dtype == rb.final_strings[k].dtype and np.array_equal(v, rb.final_strings[k])


def _compact_fsts():
    out = []
    for path in ARCHIVES:
        for _, raw in iter_raw(_spec(path)):
            if raw.kind == "compact":
                out.append(raw)
    return out


@pytest.mark.parametrize("double", [False, True])
def test_reader_equals_the_field_by_field_reader_on_every_vendored_lattice(double):
    for raw in _compact_fsts():
        data = format_binary_fst(raw, double) + b"next"
        for chunk in (7, 1 << 20):
            _same(_read(read_binary_fst, data, chunk), _read(read_binary_fst_by_item, data, chunk))


def test_truncations_and_corrupt_lengths_give_the_same_errors():
    raw = min(_compact_fsts(), key=lambda r: len(r.src) if r.final_strings else 1 << 30)
    data = format_binary_fst(raw)
    header = 4 + 4 + len("vector") + 4 + len("compactlattice44") + 40
    for cut in range(header, len(data)):
        _same(_read(read_binary_fst, data[:cut], 1 << 20), _read(read_binary_fst_by_item, data[:cut], 1 << 20))
    # every 32-bit field set to a negative and to a huge value in turn (lengths, counts, labels, states)
    for at in range(header, len(data) - 3, 4):
        for value in (-1, 1 << 30):
            bad = data[:at] + int(value).to_bytes(4, "little", signed=True) + data[at + 4:]
            _same(_read(read_binary_fst, bad, 1 << 20), _read(read_binary_fst_by_item, bad, 1 << 20))
