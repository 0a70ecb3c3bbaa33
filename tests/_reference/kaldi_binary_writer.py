"""The OpenFst binary writer of Kaldi lattices with one ``struct.pack`` per state and per arc: the oracle of
tests/test_kaldi_io.py for :func:`lattice_tools.io.lattices.kaldi.format_binary_fst`, which builds a
CompactLattice's body with numpy in one pass (the same bytes)."""
from __future__ import annotations

import struct

import numpy as np

from lattice_tools.io.lattices.kaldi import FST_MAGIC, RawFst


def format_binary_fst_by_arc(raw: RawFst, double: bool = False) -> bytes:
    """OpenFst binary ``vector`` FST of arc type lattice4/compactlattice44 (or the 8-byte forms)."""
    ff = "d" if double else "f"
    arc_type = ("compactlattice8" if double else "compactlattice4") + "4" if raw.kind == "compact" else \
        ("lattice8" if double else "lattice4")
    parts = [struct.pack("<i", FST_MAGIC)]
    for s in ("vector", arc_type):
        b = s.encode()
        parts.append(struct.pack("<i", len(b)) + b)
    # version 2 (VectorFst), no flags, properties = kExpanded|kMutable (nothing else claimed)
    parts.append(struct.pack("<iiQqqq", 2, 0, 3, 0, raw.num_states, len(raw.src)))
    order = np.argsort(raw.src, kind="stable")
    offsets = np.searchsorted(raw.src[order], np.arange(raw.num_states + 1))
    inf = float("inf")
    if raw.kind != "compact":
        arc_dtype = np.dtype([("il", "<i4"), ("ol", "<i4"), ("g", "<" + ff), ("a", "<" + ff), ("ns", "<i4")])
        arcs = np.zeros(len(order), dtype=arc_dtype)
        arcs["il"] = raw.ilabel[order]
        arcs["ol"] = raw.olabel[order]
        arcs["g"] = raw.w1[order]
        arcs["a"] = raw.w2[order]
        arcs["ns"] = raw.dst[order]
    wfmt = struct.Struct("<" + ff + ff)
    for s in range(raw.num_states):
        fin = np.isfinite(raw.final_w1[s])
        parts.append(wfmt.pack(raw.final_w1[s], raw.final_w2[s]) if fin else wfmt.pack(inf, inf))
        if raw.kind == "compact":
            t = raw.final_strings.get(s) if fin else None
            t = np.zeros(0, np.int32) if t is None else np.asarray(t, "<i4")
            parts.append(struct.pack("<i", len(t)) + t.astype("<i4").tobytes())
        a, b = offsets[s], offsets[s + 1]
        parts.append(struct.pack("<q", b - a))
        if raw.kind != "compact":
            parts.append(arcs[a:b].tobytes())
        else:
            for i in order[a:b].tolist():
                t = np.asarray(raw.string(i), "<i4")
                parts.append(struct.pack("<ii" + ff + ff + "i", raw.olabel[i], raw.olabel[i], raw.w1[i], raw.w2[i], len(t))
                             + t.tobytes() + struct.pack("<i", raw.dst[i]))
    return b"".join(parts)
