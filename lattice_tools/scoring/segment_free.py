"""Segment-free scoring: one alignment per file and channel over the whole side, reported in the STM's
segments.

sclite scores each STM segment on its own and hands every CTM item (a whole ALT block counting as one item)
to one segment, so an ALT block that crosses a segment boundary is scored against one segment's words only.
:func:`score_segment_free` instead aligns, per file and channel, the hypothesis network of all its CTM items
(ALT blocks as parallel alternatives) against the reference network of all its STM segments (alternations,
optional words) in one piece, then reports every aligned word in the segment of its reference word
(insertions in the segment sclite's rule places them in, kept between their neighbours' segments), with the
STM's speakers and categories, so the ``.sys/.raw/.pra/.dtl/JSON`` reports read as sclite's.

Without a collar the alignment is sclite's (weights, float32 costs, tie rules of :mod:`.align`) on one
segment per file/channel: the counts and alignments equal sclite's with an STM merged into one segment per
side.  With ``collar`` C (meeteval's tcpWER convention), a hypothesis word may be paired (correct or
substituted) with a reference word only when the word's point in time -- its CTM midpoint -- widened by C on
both sides overlaps the reference word's span; reference words get spans the way meeteval estimates them,
the segment's time divided among its words in proportion to their characters (an alternation of the
reference takes the characters of its longest word, every word in it the whole share).  In ``levenshtein``
mode on 1-best CTMs the counts are meeteval's ``tcpwer`` with the same collar.

The band.  With a collar the alignment computes only a band of cells, chosen from the times before the DP:
the networks are cut into *slots* (the stretches between states every path passes: a word, an ALT block, a
reference alternation); for every reference slot the hypothesis slots whose time span may pair with it form
an interval; rows ``s - 1`` and ``s`` must hold that interval widened by one slot to the left (the cells a
pairing comes from); the band of each row is then widened to the smallest staircase holding all of that
(left edges: suffix minima, right edges: prefix maxima, each row reaching the next row's left edge).  Every
path between two pairings can be rerouted inside such a staircase with the same cost (insertion and deletion
costs do not depend on the cell), so the band never changes the optimal cost; it holds
O(words + words x (hypothesis words per 2C + gap)) cells: linear in the side's length for a fixed collar.
Without a collar every cell is computed (sclite's problem: quadratic in the side's length).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

import numpy as np

from .._ext import native
from ..core._budget import bytes_left, format_size
from ..core.counts import ErrorCounts
from ..core.errors import BudgetExceededError
from ..io.transcripts.ctm import CtmAltBlock
from .align import Alignment, AlignOptions, _arc_keys, _count, _extract, words_equal
from .ctm_items import item_mid
from .inputs import is_ignore
from .network import WordNetwork, from_ctm_items, parse_transcript
from .results import ScoreResult
from .segments import (
    assign_items,
    build_result,
    f32,
    group_segments,
    side_items,
)

__all__ = ["BYTES_PER_CELL", "align_side", "band_of", "boundary_moves", "reference_times", "score_segment_free",
           "side_reference", "slots_of"]

BYTES_PER_CELL = 9  # float32 value, move, two predecessor ranks (lattice_tools/_ext/banded_align.c)


def slots_of(net: WordNetwork, grouped: bool = True) -> np.ndarray:
    """The slot (1, 2, ...) of every arc: slots are the stretches between *cut* states, the states every
    path from start to final passes (no arc jumps over them).  Arcs of one slot are consecutive and slots
    increase with the arc index for every network the builders make (checked unless ``grouped`` is False:
    the band needs it)."""
    m = net.num_arcs
    if m == 0:
        return np.zeros(0, np.int64)
    src = net.src.astype(np.int64)
    dst = net.dst.astype(np.int64)
    cover = np.zeros(net.num_states + 1, np.int64)
    np.add.at(cover, src + 1, 1)
    np.add.at(cover, dst, -1)
    cut = np.cumsum(cover)[: net.num_states] == 0
    slot = np.cumsum(cut)[src]
    if grouped and np.any(np.diff(slot) < 0):
        raise AssertionError("word network arcs are not grouped by slot")
    return slot


def reference_times(net: WordNetwork, start: float, end: float) -> tuple[np.ndarray, np.ndarray]:
    """(t0, t1) of every arc of one segment's network: meeteval's ``character_based`` pseudo word timing
    over its slots (a slot's characters: its longest word as written, ``(uh)`` counting the parentheses)."""
    slot = slots_of(net)
    m = net.num_arcs
    if m == 0:
        return np.zeros(0), np.zeros(0)
    n_slots = int(slot[-1])
    chars = np.zeros(n_slots + 1, np.int64)
    lengths = np.fromiter((0 if w is None else len(w) + (2 if opt else 0)
                           for w, opt in zip(net.words, net.optional.tolist(), strict=True)), np.int64, count=m)
    np.maximum.at(chars, slot, lengths)
    chars = chars[1:]
    total = int(chars.sum())
    if n_slots == 1 or total == 0:
        t0 = np.full(n_slots, float(start))
        t1 = np.full(n_slots, float(end))
    else:
        ends = np.cumsum(chars)
        begins = np.concatenate([[0], ends[:-1]])
        per_char = (end - start) / total
        t0 = np.array([start + per_char * int(b) for b in begins])
        t1 = np.array([start + per_char * int(e) for e in ends])
    return t0[slot - 1], t1[slot - 1]


def _concat(nets: Sequence[WordNetwork]) -> WordNetwork:
    """The networks in series (each one's start state is the previous one's final state)."""
    src, dst, opt, frag = [], [], [], []
    words: list[str | None] = []
    base = 0
    for net in nets:
        if net.num_arcs == 0:
            continue
        src.append(net.src.astype(np.int64) + base)
        dst.append(net.dst.astype(np.int64) + base)
        words.extend(net.words)
        opt.append(net.optional)
        frag.append(net.fragment)
        base += net.num_states - 1
    m = len(words)

    def cat(parts, dtype):
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)

    nan = np.full(m, np.nan)
    return WordNetwork(num_states=base + 1, src=cat(src, np.int32), dst=cat(dst, np.int32), words=tuple(words),
                       optional=cat(opt, bool), fragment=cat(frag, bool), start=nan, duration=nan,
                       confidence=nan.copy())


def side_reference(segs: Sequence, *, case_sensitive: bool = False, case_language: str | None = None,
                   ref_name: str = "", times: bool = True) -> tuple[WordNetwork, np.ndarray, tuple | None]:
    """The reference of one side: the networks of its STM segments (in the order given) in series, the
    segment index of every arc, and (with ``times``, else None) every arc's (t0, t1) (:func:`reference_times`).
    FormatError names ``ref_name`` and the segment's line for a malformed transcript."""
    nets, arc_seg, t0s, t1s = [], [], [], []
    for k, seg in enumerate(segs):
        net = parse_transcript(seg.text, case_sensitive=case_sensitive, language=case_language,
                               where=f"{ref_name}:{seg.lineno}" if ref_name else None)
        nets.append(net)
        arc_seg.append(np.full(net.num_arcs, k, np.int64))
        if times:
            t0, t1 = reference_times(net, seg.start, seg.end)
            t0s.append(t0)
            t1s.append(t1)
    empty = np.zeros(0)
    return (_concat(nets), np.concatenate(arc_seg) if arc_seg else np.zeros(0, np.int64),
            (np.concatenate(t0s) if t0s else empty, np.concatenate(t1s) if t1s else empty) if times else None)


def _preds(net: WordNetwork):
    """CSR predecessor lists over local arc numbers (0 = head arc, arc i = i + 1): the head for arcs
    leaving the start state, else the in-arcs of the arc's source state in arc order; the processing
    order (arcs by source state, stable); the final arcs."""
    m = net.num_arcs
    src = net.src.astype(np.int64)
    dst = net.dst.astype(np.int64)
    indeg = np.bincount(dst, minlength=net.num_states)
    in_order = np.argsort(dst, kind="stable")
    in_ptr = np.zeros(net.num_states + 1, np.int64)
    np.cumsum(indeg, out=in_ptr[1:])
    cnt = np.where(src == 0, 1, indeg[src])
    ptr = np.zeros(m + 2, np.int64)
    np.cumsum(np.concatenate([[0], cnt]), out=ptr[1:])
    total = int(cnt.sum())
    owner = np.repeat(np.arange(m), cnt)
    rank = np.arange(total) - np.repeat(ptr[1:-1], cnt)
    so = src[owner]
    plist = np.where(so == 0, 0, in_order[np.minimum(in_ptr[so] + rank, max(m - 1, 0))] + 1) if m else \
        np.zeros(0, np.int64)
    order = np.concatenate([[0], np.argsort(src, kind="stable") + 1]).astype(np.int64)
    if m == 0:
        final = np.zeros(1, np.int64)
    else:
        fin = net.num_states - 1
        final = in_order[in_ptr[fin]:in_ptr[fin + 1]] + 1
    return ptr, plist.astype(np.int64), order, final.astype(np.int64)


def _slot_hull(slot: np.ndarray, t0: np.ndarray, t1: np.ndarray, n_slots: int):
    """Per slot (0 = head): the smallest span holding its arcs' spans (NaN where no arc has a time)."""
    lo = np.full(n_slots + 1, np.inf)
    hi = np.full(n_slots + 1, -np.inf)
    ok = ~(np.isnan(t0) | np.isnan(t1))
    np.minimum.at(lo, slot[ok], t0[ok])
    np.maximum.at(hi, slot[ok], t1[ok])
    empty = ~np.isfinite(lo)
    lo[empty] = np.nan
    hi[empty] = np.nan
    return lo, hi


def band_of(r_slot, r_t0, r_t1, h_slot, h_t0, h_t1) -> tuple[np.ndarray, np.ndarray]:
    """The band (``lo``, ``hi``: inclusive hypothesis arc range per reference row, row 0 the head arc) in
    which a pairing needs ``r_t0 < h_t1 and r_t1 > h_t0`` (see the module docstring for why it holds an
    optimal alignment).  Arguments per arc (without the head arcs); times already widened by the collar."""
    kr = int(r_slot[-1]) if len(r_slot) else 0
    kh = int(h_slot[-1]) if len(h_slot) else 0
    rlo, rhi = _slot_hull(r_slot, r_t0, r_t1, kr)
    hlo, hhi = _slot_hull(h_slot, h_t0, h_t1, kh)
    need_lo = np.full(kr + 1, kh + 1, np.int64)
    need_hi = np.full(kr + 1, -1, np.int64)
    need_lo[0] = need_hi[0] = 0
    need_lo[kr] = min(int(need_lo[kr]), kh)
    need_hi[kr] = kh
    if kr and kh:
        # hypothesis slots 1..kh: every slot that may pair with [a, b] lies in [first, last] below
        # (a slot without times may pair with anything)
        h0 = np.where(np.isnan(hlo[1:]), -np.inf, hlo[1:])
        h1 = np.where(np.isnan(hhi[1:]), np.inf, hhi[1:])
        pref_max_t1 = np.maximum.accumulate(h1)
        suff_min_t0 = np.minimum.accumulate(h0[::-1])[::-1]
        a = np.where(np.isnan(rlo[1:]), -np.inf, rlo[1:])
        b = np.where(np.isnan(rhi[1:]), np.inf, rhi[1:])
        first = np.searchsorted(pref_max_t1, a, side="right") + 1       # first slot with h1 > a
        last = np.searchsorted(suff_min_t0, b, side="left")             # last slot with h0 < b
        rows = np.flatnonzero(first <= last) + 1
        lo_need = first[rows - 1] - 1
        hi_need = last[rows - 1]
        np.minimum.at(need_lo, rows, lo_need)
        np.maximum.at(need_hi, rows, hi_need)
        np.minimum.at(need_lo, rows - 1, lo_need)
        np.maximum.at(need_hi, rows - 1, hi_need)
    L = np.minimum.accumulate(need_lo[::-1])[::-1]
    R = np.maximum.accumulate(need_hi)
    R[:-1] = np.maximum(R[:-1], L[1:])
    # slot ranges -> arc index ranges (slot 0 = the head arc 0)
    first_arc = np.concatenate([[0], np.searchsorted(h_slot, np.arange(1, kh + 1), side="left") + 1])
    last_arc = np.concatenate([[0], np.searchsorted(h_slot, np.arange(1, kh + 1), side="right")])
    row_slot = np.concatenate([[0], r_slot]).astype(np.int64)
    return first_arc[L[row_slot]].astype(np.int64), last_arc[R[row_slot]].astype(np.int64)


def align_side(ref: WordNetwork, hyp: WordNetwork, options: AlignOptions | None = None, *,
               ref_times: tuple | None = None, hyp_times: tuple | None = None, collar: float | None = None,
               banded: bool = True, free_hyp_nulls: bool = False,
               what: str = "segment-free alignment") -> tuple[Alignment, int]:
    """Align two networks with sclite's recursion; with ``collar``, pair arcs only where
    ``ref_t0 < hyp_t1 + collar and ref_t1 > hyp_t0 - collar`` (``ref_times``/``hyp_times``: per-arc (t0, t1)
    arrays; an arc without time takes its slot's span) and compute only the band (``banded=False``: every
    cell, for tests and for networks whose arcs are not grouped in slots, such as lattices).
    ``free_hyp_nulls``: the hypothesis's null arcs cost nothing to pass (lattice epsilons) instead of the
    mode's cost of ``@``.

    Returns (alignment, number of cells computed).  Memory: :data:`BYTES_PER_CELL` per cell; refused with
    BudgetExceededError beyond the memory budget (``--max-memory``)."""
    banded_align = native("banded_align").banded_align

    options = options or AlignOptions()
    c = options.costs
    vocab: dict = {}           # (compare string, fragment flag) -> word id
    sides = []
    for net, null_cost in ((ref, float(c["null"])), (hyp, 0.0 if free_hyp_nulls else float(c["null"]))):
        keys, optdel, frag = _arc_keys(net, options)
        word = np.array([-1] + [-1 if k is None else vocab.setdefault((k, bool(f)), len(vocab))
                                for k, f in zip(keys, frag, strict=True)], np.int64)
        cost = np.array([0.0] + [null_cost if k is None else float(c["optdel"] if od else c["insdel"])
                                 for k, od in zip(keys, optdel, strict=True)], np.float32)
        sides.append((keys, optdel, frag, word, cost, *_preds(net)))
    NA, NB = ref.num_arcs + 1, hyp.num_arcs + 1
    use_time = collar is not None
    if collar is not None:
        if ref_times is None or hyp_times is None:
            raise ValueError("a collar needs the times of both sides (ref_times and hyp_times)")
        r0, r1 = (np.asarray(x, np.float64) for x in ref_times)
        h0, h1 = (np.asarray(x, np.float64) for x in hyp_times)
        h0, h1 = h0 - collar, h1 + collar
        r0, r1 = _fill_times(ref, r0, r1)
        h0, h1 = _fill_times(hyp, h0, h1)
        if banded:
            lo, hi = band_of(slots_of(ref), r0, r1, slots_of(hyp), h0, h1)
        else:
            lo, hi = np.zeros(NA, np.int64), np.full(NA, NB - 1, np.int64)
        rt = (np.concatenate([[0.0], r0]), np.concatenate([[0.0], r1]))
        ht = (np.concatenate([[0.0], h0]), np.concatenate([[0.0], h1]))
    else:
        lo, hi = np.zeros(NA, np.int64), np.full(NA, NB - 1, np.int64)
        rt = (np.zeros(NA), np.zeros(NA))
        ht = (np.zeros(NB), np.zeros(NB))
    cells = int((hi - lo + 1).sum())
    left = bytes_left()
    if left is not None and cells * BYTES_PER_CELL > left:
        raise BudgetExceededError(f"{what} needs {format_size(cells * BYTES_PER_CELL)} for {cells} cells, more "
                                  f"than the memory budget leaves ({format_size(left)}); raise it or give a collar")
    (rk, ro, rf, rw, rc, rp, rpl, rord, rfin), (hk, ho, hf, hw, hc, hp, hpl, hord, hfin) = sides
    path_a = np.zeros(NA + NB, np.int64)
    path_b = np.zeros(NA + NB, np.int64)
    rowoff = np.zeros(NA, np.int64)
    weights = np.array([c["sub"], c["nullsub"]], np.float32)
    equal = _fragment_matches(vocab, set(rw[1:].tolist()), set(hw[1:].tolist()))
    try:
        cost, n_path, cells = banded_align(rw, rc, rp, rpl, rord, rt[0], rt[1], hw, hc, hp, hpl, hord, ht[0], ht[1],
                                           lo, hi, rfin, hfin, weights, path_a, path_b, rowoff, equal, len(vocab),
                                           int(options.mode == "levenshtein"), int(use_time))
    except MemoryError:
        raise BudgetExceededError(f"{what}: out of memory for {cells} cells ({format_size(cells * BYTES_PER_CELL)}); "
                                  "give a collar") from None
    back = {(int(a), int(b)): (int(pa), int(pb)) for a, b, pa, pb in
            zip(path_a[:n_path - 1], path_b[:n_path - 1], path_a[1:n_path], path_b[1:n_path], strict=True)}
    ali = _extract(ref, hyp, options, rk, ro, rf, hk, ho, hf, None, None, int(path_a[0]), int(path_b[0]),
                   float(cost), back=lambda x, y: back[(x, y)])
    return ali, cells


def _fragment_matches(vocab: dict, ref_ids: set, hyp_ids: set) -> np.ndarray:
    """The (reference id, hypothesis id) pairs of different words that sclite's ``-F`` equality matches (a
    fragment ``pla-``/``-ing`` against a word it begins or ends), as sorted ``x * len(vocab) + y`` keys."""
    words = {i: key for key, i in vocab.items()}
    frag_ref = [i for i in ref_ids if i >= 0 and words[i][1]]
    frag_hyp = [i for i in hyp_ids if i >= 0 and words[i][1]]
    if not frag_ref and not frag_hyp:
        return np.zeros(0, np.int64)
    n = len(vocab)
    pairs = {(x, y) for x in frag_ref for y in hyp_ids if y >= 0}
    pairs |= {(x, y) for x in ref_ids if x >= 0 for y in frag_hyp}
    keys = sorted(x * n + y for x, y in pairs if x != y and words_equal(*words[x], *words[y]))
    return np.array(keys, np.int64)


def _fill_times(net: WordNetwork, t0: np.ndarray, t1: np.ndarray):
    """Arcs without a time (NaN: the null arc of an empty alternative) take their slot's span; in a slot
    without any time they pair with anything (-inf, inf)."""
    t0, t1 = t0.copy(), t1.copy()
    miss = np.isnan(t0) | np.isnan(t1)
    if miss.any():
        slot = slots_of(net, grouped=False)
        lo, hi = _slot_hull(slot, t0, t1, int(slot[-1]))
        t0[miss] = lo[slot[miss]]
        t1[miss] = hi[slot[miss]]
    return np.where(np.isnan(t0), -np.inf, t0), np.where(np.isnan(t1), np.inf, t1)


def _hyp_times(hyp: WordNetwork):
    """Per hypothesis arc (t0, t1): meeteval's ``character_based_points`` of a one-word CTM line, the point
    ``(start + (start + duration)) / 2`` (NaN for the null arc of an empty alternative)."""
    start = hyp.start
    mid = (start + (start + np.nan_to_num(hyp.duration, nan=0.0))) / 2
    return mid, mid.copy()


def _segment_of_pairs(pairs, arc_seg: np.ndarray, hyp: WordNetwork, seg_ends: np.ndarray) -> np.ndarray:
    """The segment index of every aligned pair: its reference word's; a pair without reference word goes
    where sclite's rule places its hypothesis word by midpoint (the first segment whose end is after it, the
    last segment for the rest), kept between the segments of its neighbours so each segment's pairs stay
    one contiguous piece of the side's alignment."""
    n = len(pairs)
    seg = np.full(n, -1, np.int64)
    for k, p in enumerate(pairs):
        if p.ref_arc >= 0:
            seg[k] = arc_seg[p.ref_arc]
    if n == 0 or len(seg_ends) == 0:
        return seg
    free = np.flatnonzero(seg < 0)
    if len(free):
        mids = np.array([(hyp.start[pairs[k].hyp_arc] + np.nan_to_num(hyp.duration[pairs[k].hyp_arc]) / 2.0)
                         for k in free])
        ends = np.maximum.accumulate(seg_ends)
        by_time = np.minimum(np.searchsorted(ends, np.nan_to_num(mids, nan=-np.inf), side="right"), len(ends) - 1)
        known = seg >= 0
        before = np.maximum.accumulate(np.where(known, seg, 0))
        after_src = np.where(known, seg, len(seg_ends) - 1)[::-1]
        after = np.minimum.accumulate(after_src)[::-1]
        seg[free] = np.clip(by_time, before[free], after[free])
        seg = np.maximum.accumulate(seg)
    return seg


def boundary_moves(pairs, hyp: WordNetwork, items: Sequence, arc_seg: np.ndarray, all_segs: Sequence,
                   segs: Sequence) -> tuple[int, int]:
    """``(paired, moved)`` on one file/channel: ``paired`` hypothesis words the side's alignment pairs with a
    reference word (correct or substituted), of which ``moved`` are *words that moved across a boundary*: their
    reference word is in another STM segment than the one sclite's segmented scoring hands their CTM item to
    (a word, or its whole ALT block, goes to a segment by its midpoint: :func:`~.segments.assign_items`; an
    item sclite hands to an ``IGNORE_TIME_SEGMENT_IN_SCORING`` segment is scored nowhere there, so pairing it
    counts as a move too).

    ``hyp`` is :func:`~.network.from_ctm_items` of ``items`` (its arcs are the items' words and empty
    alternatives, in order); ``arc_seg`` the segment (index into ``segs``, the side's scored segments) of every
    reference arc; ``all_segs`` the side's segments in order, ignored ones included."""
    # the item of every hypothesis arc: one per word, one per empty alternative of a block
    per_item = [sum(max(len(alt), 1) for alt in it.alternatives) if isinstance(it, CtmAltBlock) else 1
                for it in items]
    if sum(per_item) != hyp.num_arcs:
        raise AssertionError("the hypothesis network's arcs are not its items' words")
    item_of_arc = np.repeat(np.arange(len(items)), per_item)
    scored = {id(s): k for k, s in enumerate(segs)}
    seg_of_item = np.full(len(items), -1, np.int64)
    mids = np.array([item_mid(it) for it in items], np.float64)
    for seg, (first, stop) in zip(all_segs, assign_items(mids, all_segs), strict=True):
        seg_of_item[first:stop] = scored.get(id(seg), -1)
    paired = n_moved = 0
    for p in pairs:
        if p.ref_arc >= 0 and p.hyp_arc >= 0 and hyp.words[p.hyp_arc] is not None and p.op in ("C", "S"):
            paired += 1
            n_moved += int(arc_seg[p.ref_arc] != seg_of_item[item_of_arc[p.hyp_arc]])
    return paired, n_moved


def score_segment_free(stm, ctm_items: Iterable, *, collar: float | None = None, optional_deletable: bool = False,
                       fragments: bool = False, case_sensitive: bool = False, mode: str = "sclite",
                       allow_missing: bool = False,
                       case_language: str | None = None, ref_name: str = "", hyp_name: str = "",
                       moved: list | None = None) -> ScoreResult:
    """Score CTM items (words and ALT blocks) against an STM with one alignment per file and channel
    (see the module docstring), reported in the STM's segments.

    Args:
      stm: an :class:`~lattice_tools.io.transcripts.stm.Stm` or a sequence of ``StmSegment``.
      ctm_items: ``CtmWord``/``CtmAltBlock`` items (grouped by file/channel and ordered as
        :func:`~.sclite.score_stm_ctm` orders them).
      collar: None: no time constraint (sclite with one segment per side); a number of seconds >= 0: a
        hypothesis word pairs only with a reference word whose span, widened by it, holds the word's midpoint
        (meeteval's tcpWER convention; with ``mode="levenshtein"`` the counts are meeteval's ``tcpwer``).
      optional_deletable, fragments, case_sensitive, mode, allow_missing, case_language: as
        :func:`~.sclite.score_stm_ctm`.
      moved: a list to receive, per file and channel, the words that moved across a segment boundary
        (:func:`boundary_moves`): ``{"file", "channel", "paired", "moved"}``.
    Returns:
      :class:`~.results.ScoreResult` with one :class:`~.results.SegmentScore` per scored STM segment.
      Hypothesis words inside ``IGNORE_TIME_SEGMENT_IN_SCORING`` segments are dropped.
    Raises:
      MismatchError (file/channels on one side only, unless ``allow_missing``), FormatError (reference
      text), BudgetExceededError (an alignment beyond the memory budget), ValueError (a bad collar).
    """
    if collar is not None:
        collar = float(collar)
        if not math.isfinite(collar) or collar < 0:
            raise ValueError(f"collar must be a number of seconds >= 0, not {collar!r}")
    options = AlignOptions(mode=mode, optional_deletable=optional_deletable, fragments=fragments)
    segments = list(getattr(stm, "segments", stm))
    if ref_name == "":
        ref_name = str(getattr(stm, "path", "") or "")
    if hyp_name == "":
        hyp_name = str(getattr(ctm_items, "path", "") or "")
    warnings: list[str] = []
    chan_segs = group_segments(segments, case_sensitive, case_language)
    chan_items = side_items(ctm_items, chan_segs, case_sensitive=case_sensitive, case_language=case_language,
                            allow_missing=allow_missing, hyp_name=hyp_name, ref_name=ref_name, warnings=warnings)

    job_segs, job_alis, job_conf = [], [], []
    any_conf = False
    for key, segs in chan_segs.items():
        ignored = [(f32(s.start), f32(s.end)) for s in segs if is_ignore(s.text)]
        all_segs = segs
        segs = [s for s in segs if not is_ignore(s.text)]
        items = chan_items.get(key, [])
        if ignored:
            items = [it for it in items if not any(s <= item_mid(it) < e for s, e in ignored)]
        if not segs:
            continue
        ref, arc_seg_a, ref_times = side_reference(segs, case_sensitive=case_sensitive, case_language=case_language,
                                                   ref_name=ref_name, times=collar is not None)
        hyp = from_ctm_items(items, case_sensitive=case_sensitive, language=case_language)
        times = {}
        if collar is not None:
            times = dict(ref_times=ref_times, hyp_times=_hyp_times(hyp))
        ali, _cells = align_side(ref, hyp, options, collar=collar,
                                 what=f"the segment-free alignment of file {key[0]} channel {key[1]}", **times)
        pairs = ali.pairs
        seg_ends = np.array([f32(s.end) for s in segs], np.float64)
        seg_of = _segment_of_pairs(pairs, arc_seg_a, hyp, seg_ends)
        if moved is not None:
            paired, n_moved = boundary_moves(pairs, hyp, items, arc_seg_a, all_segs, segs)
            moved.append({"file": key[0], "channel": key[1], "paired": paired, "moved": n_moved})
        if hyp.num_arcs and not np.isnan(hyp.confidence).all():
            any_conf = True
        cut = np.searchsorted(seg_of, np.arange(len(segs) + 1), side="left").tolist()
        conf = np.nan_to_num(hyp.confidence, nan=0.0).tolist()
        hwords = hyp.words
        for k, seg in enumerate(segs):
            piece = pairs[cut[k]:cut[k + 1]]
            job_segs.append(seg)
            job_alis.append(Alignment(piece, _count(piece, ref, hyp), _piece_cost(piece, options)))
            job_conf.append([(p.op, conf[p.hyp_arc]) for p in piece
                             if p.hyp_arc >= 0 and hwords[p.hyp_arc] is not None])
    names = [f.name for f in dataclasses.fields(ErrorCounts)]   # the counts, not the class-level `zero`
    counts = np.array([[getattr(a.counts, f) for f in names] for a in job_alis], np.int64).reshape(-1, len(names))
    return build_result(job_segs, job_alis, counts, job_conf if any_conf else None, case_sensitive=case_sensitive,
                        language=case_language, warnings=warnings, ref_name=ref_name, hyp_name=hyp_name,
                        options=dict(optional_deletable=optional_deletable, fragments=fragments,
                                     case_sensitive=case_sensitive, mode=mode, single_segment=False,
                                     case_language=case_language, segment_free=True, collar=collar))


def _piece_cost(pairs, options: AlignOptions) -> float:
    """The alignment cost of a segment's pairs (the side's cost shared out; optional words at their cost)."""
    c = options.costs
    total = np.float32(0.0)
    for p in pairs:
        if p.op == "S":
            total += c["sub"]
        elif p.op in ("D", "I"):
            total += c["insdel"]
        elif p.op == "C" and (p.ref == "" or p.hyp == ""):
            total += c["optdel"]
    return float(total)

