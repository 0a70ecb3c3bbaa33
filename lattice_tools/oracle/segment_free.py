"""Segment-free oracle: the best path of a whole-side lattice against all the STM segments of its side.

A lattice decoded over a whole conversation side has paths that cross the STM's segment boundaries; the
per-utterance oracle (:func:`~lattice_tools.oracle.api.lattice_oracle`) needs one lattice per reference
segment.  :func:`segment_free_oracle` aligns each lattice, as a word network (epsilons and non-words free to
pass), against the side's reference network -- its segments in time order, in series
(:func:`~lattice_tools.scoring.segment_free.side_reference`) -- with the sclite-recursion alignment of
:mod:`lattice_tools.scoring.segment_free`: the lowest-cost lattice path in the mode's weights, optionally
under meeteval's time constraint (``collar``: a lattice word pairs only with reference words whose estimated
span, widened by the collar, holds its midpoint).  The counts are those of scoring the oracle word sequence
(sclite's tie rules), as :func:`~lattice_tools.oracle.api.lattice_oracle` reports them.

Every cell (reference arc x lattice arc) is computed: memory is 9 bytes a cell, quadratic in the side
(word-level lattices: frame-level ones need :func:`lattice_tools.alternatives.word_align` first), bounded by
the memory budget.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..core.errors import LatticeError, MismatchError
from ..scoring.align import AlignOptions
from ..scoring.inputs import is_ignore
from ..scoring.network import WordNetwork, linear_network
from ..scoring.segment_free import align_side, side_reference
from ..scoring.segments import fold, group_segments
from .dp import OracleResult
from .graphs import fold_word, is_nonword

__all__ = ["lattice_network", "segment_free_oracle", "side_of_key"]


def lattice_network(lat, *, nonword: Callable[[str], bool] = is_nonword, case_sensitive: bool = False) -> WordNetwork:
    """A lattice as a word network for the alignment: its arcs reachable from the start state (epsilon and
    non-word arcs, and ``@``, as null words), plus a null arc from every final state to one new final
    state; words carry their times in seconds (NaN where unknown)."""
    n = int(lat.num_states)
    src = np.asarray(lat.src, np.int64)
    dst = np.asarray(lat.dst, np.int64)
    reach = np.zeros(n, bool)
    reach[0] = True
    for s, d in zip(src.tolist(), dst.tolist(), strict=True):   # arcs sorted by source state
        if reach[s]:
            reach[d] = True
    keep = reach[src]
    ids = np.asarray(lat.word, np.int64)[keep]
    labels = {}
    for wid in np.unique(ids).tolist():
        w = "" if wid == 0 else lat.symbols.word(wid)
        labels[wid] = None if wid == 0 or w == "@" or nonword(w) else fold_word(w, case_sensitive)
    finals = np.flatnonzero(np.asarray(lat.is_final) & reach)
    fs = float(lat.frame_shift)
    t0 = np.asarray(lat.t0, np.float64)[keep]
    t1 = np.asarray(lat.t1, np.float64)[keep]
    start = np.where(t0 >= 0, t0 * fs, np.nan)
    duration = np.where((t0 >= 0) & (t1 >= 0), (t1 - t0) * fs, np.nan)
    m = int(keep.sum()) + len(finals)
    pad = np.full(len(finals), np.nan)
    return WordNetwork(num_states=n + 1, src=np.concatenate([src[keep], finals]).astype(np.int32),
                       dst=np.concatenate([dst[keep], np.full(len(finals), n)]).astype(np.int32),
                       words=tuple(labels[w] for w in ids.tolist()) + (None,) * len(finals),
                       optional=np.zeros(m, bool), fragment=np.zeros(m, bool),
                       start=np.concatenate([start, pad]), duration=np.concatenate([duration, pad]),
                       confidence=np.full(m, np.nan))


def side_of_key(key: str, sides: Iterable[tuple], case_sensitive: bool = False) -> tuple | None:
    """The (file, channel) side a lattice key names: ``file-channel``, ``file_channel``, or ``file`` when the
    file has one channel in the reference (case folded unless ``case_sensitive``)."""
    k = fold(key, case_sensitive)
    by_file: dict = {}
    for f, ch in sides:
        if k in (f"{f}-{ch}", f"{f}_{ch}"):
            return f, ch
        by_file.setdefault(f, []).append(ch)
    chans = by_file.get(k)
    return (k, chans[0]) if chans and len(chans) == 1 else None


def segment_free_oracle(lattices: Iterable, stm, *, collar: float | None = None, mode: str = "sclite",
                        optional_deletable: bool = False, case_sensitive: bool = False,
                        nonword: Callable[[str], bool] = is_nonword, allow_missing: bool = False,
                        warnings: list | None = None, ref_name: str = "") -> list[OracleResult]:
    """The oracle of each whole-side lattice against its side's STM segments (see the module docstring).

    Args:
      lattices: :class:`~lattice_tools.core.lattice.Lattice` objects, one per side, keyed ``file-channel``,
        ``file_channel`` or ``file`` (:func:`side_of_key`).
      stm: an :class:`~lattice_tools.io.transcripts.stm.Stm` or a sequence of ``StmSegment``; its
        ``IGNORE_TIME_SEGMENT_IN_SCORING`` segments are left out of the reference.
      collar: None, or seconds >= 0 (:func:`~lattice_tools.scoring.segment_free.score_segment_free`).
      allow_missing: sides of the STM without a lattice are left out (a note in ``warnings``) instead of
        raising MismatchError.
    Returns:
      one :class:`~lattice_tools.oracle.dp.OracleResult` per lattice (key = the lattice's key; its counts are
      over the whole side, counted as one segment).
    Raises:
      MismatchError for a lattice key that names no side, two lattices of one side, or (without
      ``allow_missing``) a side without lattice; LatticeError for a collar on a lattice without word times;
      BudgetExceededError past the memory budget.
    """
    options = AlignOptions(mode=mode, optional_deletable=optional_deletable)
    if collar is not None and not (float(collar) >= 0):
        raise ValueError(f"collar must be a number of seconds >= 0, not {collar!r}")
    segments = list(getattr(stm, "segments", stm))
    ref_name = ref_name or str(getattr(stm, "path", "") or "")
    sides = group_segments(segments, case_sensitive, None)
    results: list[OracleResult] = []
    seen: dict = {}
    for lat in lattices:
        side = side_of_key(lat.key, sides, case_sensitive)
        if side is None:
            raise MismatchError(f"lattice key {lat.key!r} names no file/channel of the reference (expected "
                                "file-channel, file_channel, or a file with one channel)", path=ref_name or None,
                                key=lat.key)
        if side in seen:
            raise MismatchError(f"lattices {seen[side]!r} and {lat.key!r} are of the same side {side[0]} "
                                f"{side[1]}", key=lat.key)
        seen[side] = lat.key
        segs = [s for s in sides[side] if not is_ignore(s.text)]
        ref, _arc_seg, ref_times = side_reference(segs, case_sensitive=case_sensitive, ref_name=ref_name,
                                                  times=collar is not None)
        hyp = lattice_network(lat, nonword=nonword, case_sensitive=case_sensitive)
        if collar is not None and np.isnan(hyp.start[[w is not None for w in hyp.words]]).any():
            raise LatticeError("a collar needs the times of the lattice's words; this lattice has words without "
                               "times", key=lat.key)
        mid = (hyp.start + (hyp.start + np.nan_to_num(hyp.duration))) / 2
        timed: dict[str, Any] = dict(collar=collar, ref_times=ref_times) if collar is not None else {}
        what = f"the segment-free oracle of lattice {lat.key}"
        best, _ = align_side(ref, hyp, options, hyp_times=(mid, mid), banded=False, free_hyp_nulls=True,
                             what=what, **timed)
        path = [p.hyp_arc for p in best.pairs if p.hyp_arc >= 0 and hyp.words[p.hyp_arc] is not None]
        words = tuple(hyp.words[a] for a in path)
        starts = tuple(float(hyp.start[a]) for a in path)
        durations = tuple(float(hyp.duration[a]) for a in path)
        # the counts of scoring the oracle words (sclite's tie rules), as lattice_oracle reports them
        line = linear_network(words, starts=starts, durations=durations, case_sensitive=True)
        lmid = (line.start + (line.start + np.nan_to_num(line.duration))) / 2
        scored, _ = align_side(ref, line, options, hyp_times=(lmid, lmid), banded=collar is not None, what=what,
                               **timed)
        results.append(OracleResult(lat.key, mode, scored.counts, float(best.cost), words, starts, durations))
    missing = [f"{f} {ch}" for f, ch in sides if (f, ch) not in seen]
    if missing:
        msg = f"{len(missing)} reference side(s) without lattice, e.g. {missing[0]}"
        if not allow_missing:
            raise MismatchError(msg + " (--allow-missing leaves them out)", path=ref_name or None)
        if warnings is not None:
            warnings.append(msg + " (left out)")
    return results

