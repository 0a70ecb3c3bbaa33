"""Kaldi lattices (:class:`RawFst`, as stored) <-> the hub :class:`~lattice_tools.core.lattice.Lattice`
(internal helper of :mod:`lattice_tools.io.lattices.kaldi`, whose docstring gives the conventions): frames
accumulated along paths, final tid strings as epsilon arcs, the stored order kept in
``attrs["kaldi"]`` and the tid strings in ``attrs["tid_span"]`` / ``attrs["tid_pool"]``
(:func:`transition_ids`)."""
from __future__ import annotations

import numpy as np

from ..._ext import native
from ...core.errors import FormatError, LatticeError, SymbolError
from ...core.lattice import Lattice
from ...core.symbols import SymbolTable
from ._kaldi_text import RawFst


def _kernel():
    return native("kaldi_frames")


def _symbols_for(ids: np.ndarray, symbols: SymbolTable | None, key: str, name: str | None) -> SymbolTable:
    uniq = np.sort(ids[ids != 0])  # (np.unique hashes: 30x slower on 100k ids)
    uniq = uniq[np.r_[True, uniq[1:] != uniq[:-1]]] if len(uniq) else uniq
    if symbols is None:
        return SymbolTable({str(int(i)): int(i) for i in uniq})
    missing = [int(i) for i in uniq if int(i) not in symbols]
    if missing:
        raise SymbolError(f"word id {missing[0]} is not in the symbol table", path=name, key=key)
    return symbols


#: The ``attrs`` holding a Kaldi lattice's transition-id strings: only writing a Kaldi archive reads them.
TRANSITION_ID_ATTRS = ("tid_span", "tid_pool")


def transition_ids(lat: Lattice) -> list[np.ndarray] | None:
    """The transition-id string of each arc of a lattice read from a Kaldi ``CompactLattice``
    (int32 arrays; read-only views), or None if it has none.

    They are stored per arc as ``attrs["tid_span"]`` (int64, ``[start, end)``) into
    ``attrs["tid_pool"]`` (the int32 array holding the strings; the same object for every arc of
    a lattice), which cost nothing per arc to build or to carry through algorithms."""
    spans, pools = lat.attrs.get("tid_span"), lat.attrs.get("tid_pool")
    if spans is None or pools is None:
        return None
    out = []
    for pool, (a, b) in zip(pools.tolist(), spans.tolist(), strict=True):
        view = pool[a:b] if isinstance(pool, np.ndarray) else np.zeros(0, np.int32)
        view.flags.writeable = False
        out.append(view)
    return out


#: OpenFst's ``kTopSorted`` property bit.
K_TOP_SORTED = 0x0000004000000000


def raw_to_lattice(raw: RawFst, key: str, symbols: SymbolTable | None = None, frame_shift: float = 0.01,
                   name: str | None = None) -> Lattice:
    """Convert a Kaldi lattice to the hub type (see the module docstring for the conventions)."""
    if raw.num_states == 0:
        raise LatticeError("empty lattice (no states)", path=name, key=key)
    if len(raw.ilabel) and (raw.ilabel.min() < 0 or raw.olabel.min() < 0):
        raise FormatError("negative label", path=name, key=key)
    src, dst = raw.src, raw.dst
    n = raw.num_states
    fw1, fw2 = raw.final_w1, raw.final_w2
    attrs: dict[str, np.ndarray] = {}
    if raw.kind == "compact":
        pool, offsets = raw.tids, raw.tid_offsets
        assert pool is not None and offsets is not None, "a CompactLattice has tid strings"
        starts, ends = offsets[:-1], offsets[1:]
        if raw.final_strings:
            # Final tid strings become epsilon arcs into a new final state (keeps times + totals).
            extra = sorted(raw.final_strings)
            new_final = n
            src = np.concatenate([src, np.array(extra, np.int64)])
            dst = np.concatenate([dst, np.full(len(extra), new_final, np.int64)])
            zeros = np.zeros(len(extra), np.int64)
            ilab = np.concatenate([raw.ilabel, zeros])
            olab = np.concatenate([raw.olabel, zeros])
            w1 = np.concatenate([raw.w1, fw1[extra]])
            w2 = np.concatenate([raw.w2, fw2[extra]])
            lengths = np.array([len(raw.final_strings[s]) for s in extra], np.int64)
            extra_ends = len(pool) + np.cumsum(lengths)
            starts = np.concatenate([starts, extra_ends - lengths])
            ends = np.concatenate([ends, extra_ends])
            pool = np.concatenate([pool, *(raw.final_strings[s] for s in extra)]).astype(np.int32, copy=False)
            fw1 = np.append(fw1.copy(), 0.0)
            fw2 = np.append(fw2.copy(), 0.0)
            fw1[extra] = np.inf
            fw2[extra] = np.inf
            n += 1
        else:
            ilab, olab, w1, w2 = raw.ilabel, raw.olabel, raw.w1, raw.w2
        dur = ends - starts
        n_raw = len(raw.src)
        top_sorted = (bool(raw.props & K_TOP_SORTED) if raw.props is not None
                      else bool(np.all(raw.src < raw.dst)))
        kaldi = np.empty((len(src), 4), np.int64)  # (filled column by column: no temporaries)
        kaldi[:n_raw, 0] = np.arange(n_raw)
        kaldi[n_raw:, 0] = -1
        kaldi[:, 1], kaldi[:, 2], kaldi[:, 3] = src, dst, int(top_sorted)
        attrs["kaldi"] = kaldi
        attrs["tid_span"] = np.empty((len(src), 2), np.int64)
        attrs["tid_span"][:, 0], attrs["tid_span"][:, 1] = starts, ends
        pool = pool.view()
        pool.flags.writeable = False
        attrs["tid_pool"] = np.empty(len(src), dtype=object)
        attrs["tid_pool"].fill(pool)  # (one array, not one per arc: 138k small arrays cost 0.035 s)
        word = olab
        word_aligned = True
    else:
        ilab, olab, w1, w2 = raw.ilabel, raw.olabel, raw.w1, raw.w2
        dur = (ilab != 0).astype(np.int64)
        word = olab
        word_aligned = False
    syms = _symbols_for(word, symbols, key, name)
    # Frames: the durations summed along the paths from the start, which must all agree
    frame = np.empty(n, np.int64)
    synchronous = 0 <= raw.start < n and _kernel().state_frames(raw.start, src, dst, dur, frame)
    t0 = frame[src] if synchronous else None
    try:
        lat, _, arc_idx = Lattice.from_arcs_with_maps(
            src=src, dst=dst, word=word, ilabel=ilab, symbols=syms, final_graph_cost=fw1, final_acoustic_cost=fw2,
            num_states=n, start=raw.start, graph_cost=w1, acoustic_cost=w2, frame_shift=frame_shift, key=key,
            word_aligned=word_aligned, attrs=attrs, t0=t0, t1=None if t0 is None else t0 + dur)
    except LatticeError as exc:
        raise LatticeError(exc.message, path=name, key=key) from None
    if not synchronous:
        if raw.kind != "compact":
            raise LatticeError("paths reach a state at different frames; a frame-level Kaldi lattice must be "
                               "time-synchronous", path=name, key=key)
        # Determinized CompactLattices need not be time-synchronous (tid strings are not aligned
        # to words): split each state into one copy per arrival frame, which keeps every path.
        # (Kaldi's MBR refuses such lattices; the stored order no longer applies.)
        lat = lat.replace(attrs={k: v for k, v in lat.attrs.items() if k != "kaldi"})
        expanded = _expand_by_frame(lat, dur[arc_idx])
        return expanded.replace(trimmed_arcs=expanded.trimmed_arcs + lat.trimmed_arcs)
    return lat


def _expand_by_frame(lat: Lattice, dur: np.ndarray) -> Lattice:
    """An equivalent lattice whose states are (state, frame) pairs, so every arc has exact times."""
    offsets = lat.out_arc_offsets().tolist()
    dst, dl = lat.dst.tolist(), dur.tolist()
    copies: list[dict] = [dict() for _ in range(lat.num_states)]
    copies[0][0] = 0
    orig = [0]
    new_src, new_dst, arc_idx, t0 = [], [], [], []
    for s in range(lat.num_states):  # topological order
        for f, sid in copies[s].items():
            for a in range(offsets[s], offsets[s + 1]):
                fd = f + dl[a]
                did = copies[dst[a]].get(fd)
                if did is None:
                    did = len(orig)
                    copies[dst[a]][fd] = did
                    orig.append(dst[a])
                new_src.append(sid)
                new_dst.append(did)
                arc_idx.append(a)
                t0.append(f)
    idx = np.array(arc_idx, np.int64)
    orig_arr = np.array(orig, np.int64)
    t0a = np.array(t0, np.int64)
    return Lattice.from_arcs(src=new_src, dst=new_dst, word=lat.word[idx], ilabel=lat.ilabel[idx], symbols=lat.symbols,
                             final_graph_cost=lat.final_graph_cost[orig_arr],
                             final_acoustic_cost=lat.final_acoustic_cost[orig_arr], num_states=len(orig),
                             t0=t0a, t1=t0a + dur[idx], graph_cost=lat.graph_cost[idx],
                             acoustic_cost=lat.acoustic_cost[idx], frame_shift=lat.frame_shift, key=lat.key,
                             word_aligned=lat.word_aligned, attrs={k: v[idx] for k, v in lat.attrs.items()})


def _state_frames(lat: Lattice) -> np.ndarray | None:
    """Each state's frame (-1: not reached), or LatticeError naming the first arc, in arc order, that starts
    at another frame than its source state or reaches its target at another frame than an earlier arc.

    The arcs are walked in order: state 0 is at frame 0 and a state is at the end frame of the first arc that
    enters it.  In one pass of numpy: an arc is consistent when its source is state 0 or entered by an earlier
    arc, at the arc's start frame, and its target is at the arc's end frame; the loop below runs only to name
    the first inconsistent arc."""
    if not lat.has_times or lat.num_arcs == 0:
        return None
    src, dst = lat.src.astype(np.int64), lat.dst.astype(np.int64)
    t0, t1 = lat.t0.astype(np.int64), lat.t1.astype(np.int64)
    targets, first_in = np.unique(dst, return_index=True)
    entered = np.full(lat.num_states, lat.num_arcs, np.int64)
    entered[targets] = first_in
    fr = np.full(lat.num_states, -1, np.int64)
    fr[targets] = t1[first_in]
    fr[0] = 0
    entered[0] = -1
    ok = (entered[src] < np.arange(lat.num_arcs)) & (fr[src] == t0) & (fr[dst] == t1)
    if ok.all():
        return fr
    f = [-1] * lat.num_states
    f[0] = 0
    for i in range(int(np.argmin(ok)) + 1):
        s, d, t = int(src[i]), int(dst[i]), int(t1[i])
        if f[s] != t0[i]:
            raise LatticeError(f"arc {i} starts at frame {t0[i]} but its source state is at frame {f[s]} "
                               "(Kaldi lattices count frames from 0 along every path)", key=lat.key or None)
        if f[d] < 0:
            f[d] = t
        elif f[d] != t:
            raise LatticeError(f"paths reach state {d} at frames {f[d]} and {t}", key=lat.key or None)
    raise AssertionError("unreachable: the arc the check found is inconsistent")  # pragma: no cover


def _frame_level_mismatch(lat: Lattice) -> int | None:
    """The first arc whose duration is not what a frame-level Kaldi Lattice would give it (one
    frame for a non-zero input label, none for 0), or None (also for lattices without times)."""
    if not lat.has_times or lat.num_arcs == 0:
        return None
    bad = np.nonzero((lat.t1 - lat.t0) != (lat.ilabel != 0))[0]
    return int(bad[0]) if len(bad) else None


def lattice_to_raw(lat: Lattice, lattice_type: str = "auto", placeholder_tid: int = 1) -> RawFst:
    """Convert a hub lattice to Kaldi's representation.

    ``lattice_type``: ``"compact"`` (word-aligned: labels = words, tid strings carry durations),
    ``"lattice"`` (ilabel = ``lat.ilabel``, olabel = word; times are implicit in the arcs: one
    frame per non-zero ilabel; FormatError if the lattice's times differ), or ``"auto"``
    (compact when ``lat.word_aligned`` or when the times differ from that, else lattice).
    """
    if lattice_type not in ("auto", "compact", "lattice"):
        raise ValueError(f"lattice_type must be 'auto', 'compact' or 'lattice', not {lattice_type!r}")
    # A frame-level Lattice has no times of its own: each arc with a non-zero input label (a
    # transition id) takes one frame, label 0 none.  A lattice whose times say otherwise -- k2 CTC
    # lattices give their blank token 0 a frame -- would be written with the wrong times (and be
    # unreadable when paths then reach a state at different frames), so it goes out as a
    # CompactLattice, whose tid strings carry any duration.
    bad = _frame_level_mismatch(lat)
    if lattice_type == "auto":
        kind = "compact" if lat.word_aligned or bad is not None else "lattice"
    else:
        kind = lattice_type
    if kind == "lattice" and bad is not None:
        raise FormatError(f"arc {bad} (input label {int(lat.ilabel[bad])}) spans {int(lat.t1[bad] - lat.t0[bad])} "
                          "frame(s): a frame-level Kaldi Lattice gives one frame to each non-zero input label and "
                          "none to label 0, so its times would be lost; write a CompactLattice instead",
                          key=lat.key or None)
    raw = RawFst(kind, 0, lat.num_states, lat.src.astype(np.int64), lat.dst.astype(np.int64),
                 lat.ilabel.astype(np.int64), lat.word.astype(np.int64), lat.graph_cost.copy(),
                 lat.acoustic_cost.copy(), lat.final_graph_cost.copy(), lat.final_acoustic_cost.copy())
    if kind == "compact":
        raw.ilabel = raw.olabel.copy()
        tids = transition_ids(lat)
        if lat.has_times and lat.num_arcs:
            _state_frames(lat)  # consistency check
            dur = (lat.t1 - lat.t0).astype(np.int64)
            if tids is None:  # every arc's string is `placeholder_tid` once per frame: built in one pass
                raw.tid_offsets = np.zeros(lat.num_arcs + 1, np.int64)
                np.cumsum(dur, out=raw.tid_offsets[1:])
                raw.tids = np.full(int(raw.tid_offsets[-1]), placeholder_tid, np.int32)
            else:
                raw.set_strings([np.asarray(t, np.int32) if len(t) == d else np.full(d, placeholder_tid, np.int32)
                                 for t, d in zip(tids, dur.tolist(), strict=True)])
        else:
            raw.tid_offsets = np.zeros(lat.num_arcs + 1, np.int64)
            raw.tids = np.zeros(0, np.int32)
    return raw
