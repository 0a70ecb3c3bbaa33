"""The binary lattice reader that reads one field at a time through the archive reader: the oracle of
tests/test_kaldi_binary_io.py for :func:`lattice_tools.io.lattices.kaldi.read_binary_fst`, whose
CompactLattice states and arcs are parsed in C (lattice_tools/_ext/kaldi_binary.c): the same arrays and the
same errors."""
from __future__ import annotations

import math
import struct

import numpy as np

from lattice_tools.core.errors import FormatError
from lattice_tools.io.lattices.kaldi import FST_MAGIC, RawFst

_INT32 = struct.Struct("<i")
# OpenFst's arc type names of Kaldi's lattices: (kind, bytes per float)
_ARC_TYPES = {"lattice4": ("lattice", 4), "lattice8": ("lattice", 8), "compactlattice44": ("compact", 4),
              "compactlattice84": ("compact", 8), "standard": ("standard", 4)}


def _read_string(r, key) -> str:
    """An FST header string: int32 length (0 .. 256), then its bytes."""
    (n,) = struct.unpack("<i", r.read(4, "FST header string length", key))
    if not 0 <= n <= 256:
        raise FormatError(f"corrupt FST header (string length {n}) at byte {r.tell() - 4}", path=r.name, key=key)
    return r.read(n, "FST header string", key).decode("latin-1")


def read_binary_fst_by_item(r, key: str | None) -> RawFst:
    """Read one OpenFst binary ``vector`` FST of a lattice arc type from ``r`` (the archive reader: ``read(n,
    what, key)``, ``tell()``, ``name``)."""
    at = r.tell()
    (magic,) = struct.unpack("<i", r.read(4, "FST magic number", key))
    if magic != FST_MAGIC:
        raise FormatError(f"bad FST magic number {magic} at byte {at} (expected {FST_MAGIC})", path=r.name, key=key)
    fst_type = _read_string(r, key)
    arc_type = _read_string(r, key)
    if fst_type != "vector":
        raise FormatError(f"FST type {fst_type!r} is not supported (only 'vector', as Kaldi writes)", path=r.name, key=key)
    if arc_type not in _ARC_TYPES:
        raise FormatError(f"arc type {arc_type!r} is not a Kaldi lattice type (expected one of "
                          f"{', '.join(_ARC_TYPES)})", path=r.name, key=key)
    kind, fsize = _ARC_TYPES[arc_type]
    version, flags, props, start, num_states, _num_arcs = struct.unpack("<iiQqqq", r.read(40, "FST header", key))
    if flags & 3:
        raise FormatError("FSTs with embedded symbol tables are not supported", path=r.name, key=key)
    if num_states < 0:
        raise FormatError("FST header has an unknown number of states (stream-written FST); not supported",
                          path=r.name, key=key)
    if num_states >= 1 << 31:
        raise FormatError(f"corrupt FST header ({num_states} states)", path=r.name, key=key)
    ff = "f" if fsize == 4 else "d"
    nw = 1 if kind == "standard" else 2
    wfmt = "<" + ff * nw
    wsize = struct.calcsize(wfmt)
    # Lists, not arrays of num_states: a corrupt count then fails at end of file, not in malloc.
    fw1: list[float] = []
    fw2: list[float] = []
    final_strings = {}
    srcs, dsts, ils, ols, w1s, w2s = [], [], [], [], [], []
    strings = [] if kind == "compact" else None
    compact_arcs: list[tuple] = []  # (src, dst, ilabel, olabel, graph, acoustic) of a CompactLattice
    head = struct.Struct("<ii" + ff + ff + "i")  # a CompactLattice arc up to its tid string
    if kind != "compact":
        arc_dtype = np.dtype([("il", "<i4"), ("ol", "<i4")] + [(f"w{i}", "<" + ff + str(fsize)) for i in range(nw)]
                             + [("ns", "<i4")])
    for s in range(num_states):
        w = struct.unpack(wfmt, r.read(wsize, f"final weight of state {s}", key))
        if kind == "compact":
            (n,) = struct.unpack("<i", r.read(4, f"final string of state {s}", key))
            if not 0 <= n < 1 << 24:
                raise FormatError(f"corrupt string length {n} at state {s}", path=r.name, key=key)
            tids = np.frombuffer(r.read(4 * n, f"final string of state {s}", key), dtype="<i4").astype(np.int32)
        if not math.isinf(w[0]):
            fw1.append(w[0])
            fw2.append(w[1] if nw == 2 else 0.0)
            if kind == "compact" and n:
                final_strings[s] = tids
        else:
            fw1.append(math.inf)
            fw2.append(math.inf)
        (narcs,) = struct.unpack("<q", r.read(8, f"arc count of state {s}", key))
        if not 0 <= narcs < 1 << 31:
            raise FormatError(f"corrupt arc count {narcs} at state {s}", path=r.name, key=key)
        if kind != "compact":
            a = np.frombuffer(r.read(narcs * arc_dtype.itemsize, f"arcs of state {s}", key), dtype=arc_dtype)
            srcs.append(np.full(narcs, s, np.int64))
            dsts.append(a["ns"].astype(np.int64))
            ils.append(a["il"].astype(np.int64))
            ols.append(a["ol"].astype(np.int64))
            w1s.append(a["w0"].astype(np.float64))
            w2s.append(a["w1"].astype(np.float64) if nw == 2 else np.zeros(narcs))
        else:  # variable-length arcs: one at a time, into lists of Python numbers (one array each at the end)
            for _ in range(narcs):
                il, ol, g, ac, n = head.unpack(r.read(head.size, f"arc of state {s}", key))
                if not 0 <= n < 1 << 24:
                    raise FormatError(f"corrupt string length {n} in an arc of state {s}", path=r.name, key=key)
                strings.append(np.frombuffer(r.read(4 * n, f"arc of state {s}", key), dtype="<i4").astype(np.int32))
                (ns,) = _INT32.unpack(r.read(4, f"arc of state {s}", key))
                compact_arcs.append((s, ns, il, ol, g, ac))
    if kind == "compact":
        cols = list(zip(*compact_arcs, strict=True)) if compact_arcs else [()] * 6
        srcs, dsts, ils, ols = ([np.array(c, np.int64)] for c in cols[:4])
        w1s, w2s = ([np.array(c, np.float64)] for c in cols[4:])
    cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)  # noqa: E731
    fw1, fw2 = np.array(fw1, np.float64), np.array(fw2, np.float64)
    raw = RawFst(kind, start, num_states, cat(srcs, np.int64), cat(dsts, np.int64), cat(ils, np.int64),
                 cat(ols, np.int64), cat(w1s, np.float64), cat(w2s, np.float64), fw1, fw2,
                 final_strings=final_strings, props=props)
    if strings is not None:
        raw.set_strings(strings)
    for name in ("w1", "w2"):
        arr = getattr(raw, name)
        if not np.all(np.isfinite(arr)):
            raise FormatError("arc with a non-finite weight (NaN or Zero)", path=r.name, key=key)
    if np.isnan(fw1).any() or np.isnan(fw2).any():
        raise FormatError("NaN final weight", path=r.name, key=key)
    if len(raw.dst) and (raw.dst.min() < 0 or raw.dst.max() >= num_states):
        raise FormatError(f"arc to state {raw.dst.max()} outside 0..{num_states - 1}", path=r.name, key=key)
    if num_states and not 0 <= start < num_states:
        raise FormatError(f"start state {start} outside 0..{num_states - 1}", path=r.name, key=key)
    return raw
