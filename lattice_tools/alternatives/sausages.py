"""Confusion networks ("sausages") and MBR decoding, identical to Kaldi's ``lattice-mbr-decode``.

Method: H. Xu, D. Povey, L. Mangu, J. Zhu, "Minimum Bayes Risk decoding and system combination
based on a recursion for edit distance", Computer Speech & Language 25(4), 2011, as Kaldi
implements it (``MinimumBayesRisk`` in ``lat/sausages.cc``; reimplemented here, not copied).

Starting from the lattice's best path ``R`` with an epsilon slot around every word, a forward pass
computes for every state the expected edit distance of the lattice prefixes against every prefix
of ``R``; a backward pass turns the choices of that recursion into ``gamma[q][w]``, the posterior
that word ``w`` (or epsilon) is aligned to position ``q`` of ``R``.  ``R`` becomes the most
probable entry of every position and the passes repeat until no position changes its
posterior.  The positions of the last pass are the **bins** of the confusion network.

What makes the numbers Kaldi's (``docs/kaldi.md`` has the details and the tests):

* **State order.**  The alignment depends on the order in which states and arcs are visited.
  Like Kaldi: a super-final state is added (unless there is exactly one final state, with weight
  One and no arcs out), and the lattice is renumbered by OpenFst's depth-first ``TopSort`` when
  it is not known to be topologically sorted -- always when the states are not numbered
  topologically, and also whenever an acoustic/LM scale other than 1 (or a word penalty) was
  applied, because rewriting the weights clears OpenFst's cached "sorted" property.  Lattices read
  from Kaldi archives carry their stored state numbering and arc order (``attrs["kaldi"]``, see
  :mod:`lattice_tools.io.lattices.kaldi`), so the order is the one Kaldi sees in the same archive; other
  lattices use their own numbering (the one ``lattice-tools convert --to kaldi`` writes).  That
  view of the lattice is :func:`lattice_tools.algorithms.kaldi_order.stored_order_view`.
* **Arithmetic.**  Weights are float32 as in Kaldi (scaled in double, stored in float); the
  recursion runs in double in Kaldi's order (compiled C: ``lattice_tools/_ext/mbr.c``, tested bit
  for bit against the literal transcription in ``tests/_reference/mbr.py``); bin posteriors and
  times are rounded to float32 as Kaldi stores them; within a bin, entries are sorted by posterior, ties by
  the larger word id first; the tie-breaking ``delta`` (1e-5) is added only to edits that cost
  something (Kaldi's "conceptual bug-fix").
* **Epsilon bins.**  Kaldi keeps every position of ``R``, including pure-epsilon bins ``[ <eps> 1 ]``
  between words.  :func:`mbr_decode` returns all of them (as Kaldi prints them); :func:`sausage`
  (the alt-CTM representation) keeps the bins holding at least one word -- so every word of
  Kaldi's sausage is in it -- and drops only the bins whose sole entry is epsilon.
* **One engine.**  :func:`sausage` is :func:`mbr_decode`'s bins, never a second alignment: silence and
  filler words are aligned as the words Kaldi sees and only shown as epsilon afterwards, so alt-CTMs,
  oracles and keyword indexes put every word in the bin ``lattice-tools mbr-decode`` (and Kaldi) put it.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from .._ext import native
from ..algorithms.kaldi_order import StoredOrderView, state_times, stored_order_view, tropical_best_path
from ..core._budget import check_allocation
from ..core.alternatives_network import Alternative, Alternatives, Slot
from ..core.errors import BudgetExceededError, LatticeError
from ..core.lattice import Lattice, connect
from ._common import dense_codes, is_silence, word_labels

#: Kaldi stops ``MbrDecode`` after this many passes (``counter > 100``) with a warning.
MAX_PASSES = 102
#: Memory cap of one pass of the recursion (see :func:`_pass_bytes`).
MAX_STATS_BYTES = 2 * 10**9


def _pass_bytes(num_bins: int, num_words: int, num_states: int, num_arcs: int) -> int:
    """Memory of one pass of the recursion (``lattice_tools/_ext/mbr.c``), per position 0..Q: three
    doubles per word (gamma, tau_b, tau_e), one per state (the forward, then the backward edit
    distances) and the byte of the move chosen per arc."""
    return (num_bins + 1) * (24 * num_words + 8 * num_states + num_arcs)


def kaldi_order(lat: Lattice, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
                labels: np.ndarray | None = None) -> StoredOrderView:
    """The lattice as Kaldi's ``MinimumBayesRisk`` prepares it: ``ScaleLattice``, ``CreateSuperFinal``,
    ``TopSort`` unless known sorted (see :func:`stored_order_view`); the last state is the only final."""
    return stored_order_view(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty,
                             labels=labels, super_final=True)


def _state_times(n, src, dst, dur, key, strict: bool = True) -> np.ndarray:
    """Kaldi's ``CompactLatticeStateTimes``: every path must reach a state at the same frame (Kaldi
    asserts it).  ``strict=False``: a state keeps the frame of the first arc that reaches it in
    Kaldi's order (what Kaldi's loop computes without the assertion)."""
    times, bad = state_times(n, src, dst, dur, strict)
    if bad >= 0:
        arr = [int(times[s]) + int(d) for s, d2, d in zip(src, dst, dur, strict=False) if d2 == bad]
        raise LatticeError(f"paths reach a state at frames {min(arr)} and {max(arr)}: Kaldi needs consistent "
                           "state times (word-level lattices with their frame counts)", key=key or None)
    return times


@dataclass(frozen=True)
class MbrResult:
    """What ``lattice-mbr-decode`` / ``lattice-to-ctm-conf`` write for one lattice (times in frames).

    ``bins``: every sausage bin (Kaldi's sausage stats), each a list of ``(word id, posterior)``
    most probable first (ties: larger id first); ``bin_times``: ``(start, end)`` per bin after
    Kaldi's overlap fix; ``word_times``: per bin, ``(start, end)`` of each entry;
    ``words``: the MBR hypothesis (ids, no epsilons); ``one_best_times`` and ``confidences``:
    per hypothesis word (``--one-best-times``; the CTM confidences).  ``bayes_risk`` is the
    expected number of word errors of ``words`` (float32, as Kaldi returns it).
    """

    key: str
    words: tuple[int, ...]
    bayes_risk: float
    bins: tuple[tuple[tuple[int, float], ...], ...]
    bin_times: tuple[tuple[float, float], ...]
    word_times: tuple[tuple[tuple[float, float], ...], ...]
    one_best_times: tuple[tuple[float, float], ...]
    confidences: tuple[float, ...]
    passes: int = 0
    meta: dict = field(default_factory=dict)


def _normalize_eps(words) -> np.ndarray:
    words = [int(x) for x in words if x != 0]
    out = np.zeros(2 * len(words) + 1, dtype=np.int64)
    out[1::2] = words
    return out


def _sorted_entries(words, gamma) -> tuple[np.ndarray, ...]:
    """Kaldi's map entries of every bin q = 1..Q (the non-zero ``gamma`` sums) in Kaldi's order:
    bin by bin, posterior (as float32) descending, then the larger word id first.  Returns the
    arrays ``(bin, code, posterior32, word)`` of the entries and ``(start, count)`` per bin."""
    Q = gamma.shape[0] - 1
    qs, cs = np.nonzero(gamma[1:])
    g32 = gamma[1:][qs, cs].astype(np.float32)
    w = words[cs]
    order = np.lexsort((-w, -g32, qs))
    counts = np.bincount(qs, minlength=Q)
    return qs[order], cs[order], g32[order], w[order], np.cumsum(counts) - counts, counts


def _next_hypothesis(Rn: np.ndarray, entries) -> tuple[list[int], float]:
    """Kaldi's update of ``R`` after a pass: every bin's first entry (0 for an empty bin), and
    ``delta_q``, the sum over bins of (posterior of the old word - posterior of the new one)."""
    qs, _, g32, w, starts, counts = entries
    has = counts > 0
    first = np.minimum(starts, max(len(w) - 1, 0))
    top = np.where(has, w[first], 0) if len(w) else np.zeros(len(Rn), np.int64)
    new = np.where(has, g32[first], 0.0).astype(np.float64) if len(w) else np.zeros(len(Rn))
    old = np.zeros(len(Rn))
    mine = w == Rn[qs]  # (bin, word) pairs are unique
    old[qs[mine]] = g32[mine]
    delta_q = 0.0
    for o, n in zip(old.tolist(), new.tolist(), strict=True):  # summed in Kaldi's order
        delta_q += o - n
    return top.tolist(), delta_q


def _final_bins(entries, tau_b, tau_e):
    """Per bin: its entries ``(word, float32 posterior)`` in Kaldi's order, their times as Kaldi's
    ``times_`` holds them (tau / posterior in float32; nan for a zero posterior), and the bin's
    ``(sum of tau_b, sum of tau_e)`` added entry by entry in that order."""
    qs, cs, g32, w, starts, counts = entries
    tb, te = tau_b[1:][qs, cs], tau_e[1:][qs, cs]
    g64 = g32.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        wb = np.where(g32 != 0, (tb / g64).astype(np.float32), np.nan)
        we = np.where(g32 != 0, (te / g64).astype(np.float32), np.nan)
    w, g64, tb, te, wb, we = (x.tolist() for x in (w, g64, tb, te, wb, we))
    bins, word_times, tau_sums = [], [], []
    for i, j in zip(starts.tolist(), (starts + counts).tolist(), strict=True):
        bins.append(tuple(zip(w[i:j], g64[i:j], strict=True)))
        word_times.append(tuple(zip(wb[i:j], we[i:j], strict=True)))
        t_b = t_e = 0.0
        for x, y in zip(tb[i:j], te[i:j], strict=True):
            t_b += x
            t_e += y
        tau_sums.append((t_b, t_e))
    return bins, word_times, tau_sums


def _f(x: float) -> float:
    return float(np.float32(x))


def mbr_decode(lat: Lattice, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
               silence_words: Iterable[str] | None = (), initial_words: Iterable[int] | None = None,
               strict_times: bool = True) -> MbrResult:
    """Kaldi's ``lattice-mbr-decode`` on one lattice (also what ``lattice-to-ctm-conf`` prints).

    ``silence_words``: words treated as epsilon; the default ``()`` treats every non-zero id as a
    word, as Kaldi does (``None`` = lattice-tools' silence/filler rule).  ``initial_words``: the
    starting hypothesis (word ids; ``lattice-to-ctm-conf``'s 1-best input) instead of the best path.
    ``strict_times``: paths reaching a state (or the final states) at different frames raise
    :class:`LatticeError`, as Kaldi refuses them; ``False`` takes the first frame in Kaldi's order.
    """
    # Readers build trimmed lattices (Lattice.from_arcs); one built with the plain constructor may hold arcs on
    # no complete path, and a dead-end word would take a bin with posterior 1: trimmed here (a no-op check
    # on a trimmed lattice), once for every caller of the engine
    lat = connect(lat)
    if not lat.word_aligned:
        from .word_alignment import word_align
        lat = word_align(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale)
    labels = word_labels(lat, None if silence_words is None else frozenset(silence_words))
    ko = kaldi_order(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty, labels=labels)
    N = ko.num_states
    times = _state_times(N, ko.src, ko.dst, ko.dur, lat.key, strict_times)
    loglike = (-(ko.graph + ko.acoustic)).astype(np.float64)   # float sum, as Kaldi
    words, code = dense_codes(np.r_[0, ko.word])  # word ids -> dense codes, 0 = epsilon
    code = code[1:].astype(np.int64)

    kernels = native("mbr")
    arc_start = np.ascontiguousarray(ko.src, np.int64)
    arc_offsets = np.searchsorted(ko.src, np.arange(N + 1))
    pre_arcs = np.argsort(ko.dst, kind="stable")
    pre_offsets = np.searchsorted(ko.dst[pre_arcs], np.arange(N + 1))
    if initial_words is None:
        final32 = np.full(N, np.inf, np.float32)
        final32[N - 1] = 0.0
        path = tropical_best_path(N, arc_offsets, ko.dst, (ko.graph + ko.acoustic).astype(np.float32), final32)
        R = [int(x) for x in ko.word[path] if x != 0]
    else:
        R = [int(x) for x in initial_words]
    passes = 0
    while True:
        Rn = _normalize_eps(R)
        Rcode = np.searchsorted(words, Rn)
        if np.any(words[np.minimum(Rcode, len(words) - 1)] != Rn):  # a starting word not in the lattice
            extra = np.setdiff1d(Rn, words)
            words = np.r_[words, extra]
            order = np.argsort(words, kind="stable")
            words = words[order]
            remap = np.empty(len(order), np.int64)
            remap[order] = np.arange(len(order))
            code = remap[code]
            Rcode = np.searchsorted(words, Rn)
        need = _pass_bytes(len(Rn), len(words), N, len(pre_arcs))
        # the memory budget in force (--max-memory) is asked before the pass's tables are allocated
        check_allocation(need, f"the MBR statistics of {len(Rn)} bins x {len(words)} distinct words on {N} states "
                               f"and {len(pre_arcs)} arcs", key=lat.key or None, advice=" or prune the lattice")
        if need > MAX_STATS_BYTES:
            raise BudgetExceededError(f"MBR statistics for {len(Rn)} bins x {len(words)} distinct words on {N} states "
                                      f"and {len(pre_arcs)} arcs would need more than {MAX_STATS_BYTES // 10**9} GB",
                                      key=lat.key or None)
        stats = np.empty((len(Rn) + 1, len(words), 3))
        risk = kernels.acc_stats(pre_offsets, pre_arcs, arc_start, code, loglike, times, Rcode, stats, len(words))
        gamma, tau_b, tau_e = stats[:, :, 0], stats[:, :, 1], stats[:, :, 2]
        passes += 1
        Q = len(Rn)
        entries = _sorted_entries(words, gamma)
        R, delta_q = _next_hypothesis(Rn, entries)
        if delta_q == 0 or passes >= MAX_PASSES:
            break
    bins, word_times, tau_sums = _final_bins(entries, tau_b, tau_e)
    one_best_times: list[list[float]] = []
    confidences: list[float] = []
    for q in range(Q):
        if R[q] != 0:  # R[q] is the first entry of bin q
            one_best_times.append(list(word_times[q][0]))
            i = len(one_best_times)
            if i > 1 and one_best_times[i - 2][1] > one_best_times[i - 1][0]:
                _fix_overlap(one_best_times, i)
            confidences.append(bins[q][0][1])
    bin_times = []
    for q, (t_b, t_e) in enumerate(tau_sums):
        bin_times.append([_f(t_b), _f(t_e)])
        if q > 0 and bin_times[q - 1][1] > bin_times[q][0]:
            mid = _f(0.5 * float(np.float32(bin_times[q - 1][1]) + np.float32(bin_times[q][0])))
            bin_times[q - 1][1] = bin_times[q][0] = mid
    return MbrResult(
        key=lat.key, words=tuple(w for w in R if w != 0), bayes_risk=_f(risk), bins=tuple(bins),
        bin_times=tuple((a, b) for a, b in bin_times), word_times=tuple(word_times),
        one_best_times=tuple((a, b) for a, b in one_best_times),
        confidences=tuple(confidences), passes=passes,
        meta={"resorted": ko.resorted, "frame_shift": lat.frame_shift, "has_times": lat.has_times,
              "symbols": lat.symbols})


def _fix_overlap(t: list[list[float]], i: int) -> None:
    """Kaldi's redistribution of overlapping one-best word times (in float, as Kaldi computes)."""
    f = np.float32
    prev_right = t[i - 3][1] if i > 2 else 0.0
    left = max(f(prev_right), min(f(t[i - 2][0]), f(t[i - 1][0])))
    right = max(f(t[i - 2][1]), f(t[i - 1][1]))
    first_dur = f(f(t[i - 2][1]) - f(t[i - 2][0]))
    second_dur = f(f(t[i - 1][1]) - f(t[i - 1][0]))
    mid = f(left + (right - left) * first_dur / (first_dur + second_dur)) if first_dur > 0 else left
    t[i - 2][0] = float(left)
    t[i - 2][1] = t[i - 1][0] = float(mid)
    t[i - 1][1] = float(right)


def sausage(lat: Lattice, n: int | None = None, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
            word_penalty: float = 0.0, silence_words: Iterable[str] | None = None) -> Alternatives:
    """Confusion network of ``lat`` as an :class:`Alternatives` (``kind="sausage"``): the bins of
    :func:`mbr_decode` (Kaldi's ``lattice-mbr-decode``, see the module docstring) that hold at least one
    word, one slot each, in Kaldi's order, with Kaldi's posteriors (also the words' confidences), most
    probable first, single-word alternatives and ``()`` for epsilon, cut to ``n`` (``None`` = all).  Slot
    times are Kaldi's bin times, word times the word's own average; seconds = frames x frame shift.

    One engine: the bins are those of ``mbr_decode`` at the same scales, always aligned as Kaldi aligns
    them (every word id a word), so every caller (alt-CTMs, oracles, keyword indexes) sees the bins
    ``lattice-tools mbr-decode`` prints.  ``silence_words`` only says which words are *shown* as
    epsilon: ``None`` (lattice-tools' silence/filler rule: ``<sil>``, ``[NOISE]``, ``++LAUGH++``, ...),
    ``()`` none.  A silence word's posterior joins its bin's epsilon entry, and a bin left with epsilon
    alone is dropped like Kaldi's pure-epsilon bins.  Final states at different frames are accepted (the
    super-final state takes the first one's frame in Kaldi's order).  ``meta``: ``risk`` (Kaldi's Bayes
    risk), ``kaldi_bins`` (the index of each slot's bin among Kaldi's bins), ``requested_n``.
    """
    res = mbr_decode(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty,
                     silence_words=(), strict_times=False)
    fs = lat.frame_shift
    known = lat.has_times
    shown_as_epsilon = _silence_ids(lat, res.bins, silence_words)
    slots, kept = [], []
    limit = n if n is not None and n >= 1 else None  # bins are sorted: what the cut drops is not built
    for q, (b, (tb, te), wt) in enumerate(zip(res.bins, res.bin_times, res.word_times, strict=True)):
        if all(w == 0 or w in shown_as_epsilon for w, _ in b):
            continue
        entries = list(zip(b, wt, strict=True))
        if shown_as_epsilon and any(w in shown_as_epsilon for w, _ in b):
            entries = _silence_as_epsilon(entries, shown_as_epsilon)
        alts: list[Alternative] = []
        for (w, gam), (wb, we) in entries:
            if limit is not None and len(alts) == limit:
                break
            if gam <= 0:
                continue
            if w == 0:
                alts.append(Alternative((), posterior=gam))
            else:
                st = round(wb * fs, 6) if known else math.nan
                du = round(max(we - wb, 0.0) * fs, 6) if known else math.nan
                alts.append(Alternative((lat.symbols.word(int(w)),), (st,), (du,), gam, (gam,)))
        slot = Slot(round(tb * fs, 6) if known else math.nan, round(te * fs, 6) if known else math.nan, tuple(alts))
        slots.append(slot.truncated(n))
        kept.append(q)
    return Alternatives(key=lat.key, slots=tuple(slots), kind="sausage",
                        meta={"risk": res.bayes_risk, "requested_n": n, "kaldi_bins": tuple(kept)})


def _silence_ids(lat: Lattice, bins, silence_words: Iterable[str] | None) -> frozenset[int]:
    """The word ids of the bins that ``silence_words`` (see :func:`sausage`) shows as epsilon."""
    if silence_words is not None and not silence_words:
        return frozenset()
    rule = None if silence_words is None else frozenset(silence_words)
    ids = {w for b in bins for w, _ in b if w != 0}
    return frozenset(w for w in ids if is_silence(lat.symbols.word(w) if w in lat.symbols else str(w), rule))


def _silence_as_epsilon(entries: list, silent: frozenset[int]) -> list:
    """A bin's ``((word, posterior), (start, end))`` entries with the silence words' posteriors added to
    the epsilon entry, re-sorted as Kaldi sorts a bin (posterior descending, then the larger id first)."""
    eps = math.fsum(g for (w, g), _ in entries if w == 0 or w in silent)
    rest = [e for e in entries if e[0][0] != 0 and e[0][0] not in silent]
    merged = [*rest, ((0, eps), (math.nan, math.nan))]
    return sorted(merged, key=lambda e: (-e[0][1], -e[0][0]))
