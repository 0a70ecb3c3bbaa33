"""N-best lists (and several systems' N-best lists) as word lattices.

A decoder that writes N-best lists instead of lattices (sherpa-onnx, ESPnet, NeMo, Hugging Face
``generate``, Kaldi ``lattice-to-nbest``; see :mod:`lattice_tools.io.transcripts.nbest`) gets the whole toolkit
through :func:`nbest_lattice`: sausages, phrases, oracles, alt-CTMs, the study and the keyword
index all take the :class:`~lattice_tools.core.lattice.Lattice` it returns.  Two ways to join:

``join="paths"`` (default): no new paths.
  The entries are put in a prefix tree -- an entry follows an existing arc when the word agrees
  and, when both have times, the two words overlap in time (the arc keeps the times of the more
  probable entry, inserted first) -- whose weights are pushed (an arc's probability is the share
  of its target's entries among its source's), and then states with the same weighted future
  (same final weight, same arcs with the same words, frames, weights and targets) are merged
  from the leaves up: shared suffixes become one path.  Both steps keep the weighted set of
  paths, so **every path of the lattice is an entry and its probability (graph cost; total 1) is
  the entry's normalized N-best posterior**; the lattice oracle equals the best entry's.

``join="times"`` (entries with word times): words that agree and span the same frames are one arc.
  States are the word boundaries (frames); an arc is a distinct ``(word, start, end)`` and its
  probability given its source state is ``gamma(arc) / gamma(source)``, where ``gamma`` sums the
  posteriors of the entries through it.  Flow is conserved at every boundary, so the lattice's
  arc posteriors equal the N-best word posteriors ``gamma`` exactly, but entries that share a word
  now cross: **new paths appear** (e.g. ``a b d`` from ``a b c`` and ``x b d``) and the lattice
  oracle can be lower than the best entry's.  Path probabilities are then those of this Markov
  chain, not the entries' posteriors.  Gaps between words become epsilon arcs.

In ``join="paths"`` a lattice has times only when every entry (with words) has them; gaps before
words become epsilon arcs, and an arc added under a joined one starts where that one ends (so
that every path reaches a state at one frame, as Kaldi's lattices need).

``join="align"`` (any entries, no times needed): the entries, most probable first, are aligned into a
  word transition network with NIST ROVER's alignment (:mod:`.rover`): a chain of slots, each entry
  one word or nothing per slot.  An arc's probability is the posterior mass of the entries with that
  word in that slot, so the lattice is a confusion network whose **arc posteriors are the entries'
  word posteriors per slot**, with **new paths** (and a lattice oracle that can be lower than the best
  entry's).  No times; the alignment costs O(N^2 x words^2) for N entries.

Entries with zero posterior are dropped (they would carry an infinite cost).  Costs are graph
costs (``acoustic_cost`` is 0), so read the lattice with ``lm_scale=1`` and any acoustic scale.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from itertools import chain

import numpy as np

from .._ext import native
from ..core._budget import check_allocation, check_memory
from ..core.alternatives_network import Alternative, Alternatives
from ..core.errors import LatticeError
from ..core.lattice import Lattice
from ..core.symbols import SymbolTable
from .rover import NetworkWord, align_into_network, rover_distance

__all__ = ["nbest_lattice", "JOINS", "combine_nbests", "confidence_lattice", "mix_lattices"]

JOINS = ("paths", "times", "align")

#: what the memory budget's error (``--max-memory``) calls the merge
MERGING = "merging the N-best list into a lattice"


def _entries(nbest: Alternatives) -> list[Alternative]:
    if len(nbest.slots) != 1:
        raise LatticeError(f"an N-best list has one slot, this one has {len(nbest.slots)}", key=nbest.key or None)
    alts = [a for a in nbest.slots[0].alternatives if a.posterior > 0]
    if not alts:
        raise LatticeError("no entry of the N-best list has a posterior above 0", key=nbest.key or None)
    total = math.fsum(a.posterior for a in alts)
    if not math.isfinite(total):
        raise LatticeError("the N-best posteriors do not sum to a finite number", key=nbest.key or None)
    return sorted(alts, key=lambda a: -a.posterior)


_MAX_FRAME = 2**31 - 1  # the lattice's frame arrays are int32


def _frames(alt: Alternative, frame_shift: float, key: str = "") -> list[tuple[int, int]] | None:
    """Each word's (first frame, end frame), or None when a time is unknown."""
    out = []
    for s, d in zip(alt.starts, alt.durations, strict=True):
        if s != s or d != d:  # NaN
            return None
        if not (0 <= s and 0 <= s + d <= _MAX_FRAME * frame_shift):
            raise LatticeError(f"word time {s!r} + {d!r} s is outside 0 .. {_MAX_FRAME} frames of {frame_shift} s",
                               key=key or None)
        t0 = int(round(s / frame_shift))
        t1 = int(round((s + d) / frame_shift))
        out.append((t0, t1 if t1 > t0 else t0))
    return out if out else None


def _tokens(alt: Alternative, frames: list[tuple[int, int]] | None, word_id):
    """The arcs of one entry: ``(word id, (t0, t1))``, with an epsilon arc (id 0) over each gap before a
    word (from frame 0), so that times along a path are contiguous; ``(-1, -1)`` spans without times."""
    if frames is None:
        return [(word_id(w), (-1, -1)) for w in alt.words]
    out, t = [], 0
    for w, (a, b) in zip(alt.words, frames, strict=True):
        if a > t:
            out.append((0, (t, a)))
        out.append((word_id(w), (a, b)))
        t = max(t, b)
    return out


def _symbols(symbols: SymbolTable | None, entries: Iterable[Alternative]) -> SymbolTable:
    table = symbols if symbols is not None else SymbolTable()
    new = sorted(w for w in set(chain.from_iterable(a.words for a in entries)) if w not in table)
    return table.with_words(new) if new else table


def _paths_lattice(key: str, entries: Sequence[Alternative], table: SymbolTable, frame_shift: float) -> Lattice:
    """The prefix tree of the entries, its weights pushed, states with the same weighted future merged (the
    module docstring; the loops in C: ``lattice_tools/_ext/nbest_tree.c``, whose Python transcription
    ``tests/_reference/nbest_paths_lattice.py`` is the differential oracle of the tests)."""
    total = math.fsum(a.posterior for a in entries)
    lengths = [len(a.words) for a in entries]
    offsets = np.zeros(len(entries) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    n_words = int(offsets[-1])
    # (chain.from_iterable and map over a dict of the list's words: the per-word loops stay in C)
    id_of = {w: table.id(w) for w in set(chain.from_iterable(a.words for a in entries))}
    ids = np.fromiter(map(id_of.__getitem__, chain.from_iterable(a.words for a in entries)), np.int64,
                      count=n_words)
    starts = np.fromiter(chain.from_iterable(a.starts for a in entries), np.float64, count=n_words)
    ends = starts + np.fromiter(chain.from_iterable(a.durations for a in entries), np.float64, count=n_words)
    unknown = np.isnan(starts) | np.isnan(ends)
    # an entry is untimed from its first unknown time on (_frames); a bad time before that is an error
    in_range = (starts >= 0) & (ends >= 0) & (ends <= _MAX_FRAME * frame_shift)
    if not (in_range | unknown).all():
        for alt in entries:  # the first offending word, in the order and words of _frames' error
            _frames(alt, frame_shift, key)
    entry_of = np.repeat(np.arange(len(entries)), lengths)
    untimed_entries = np.unique(entry_of[unknown])
    timed = not any(lengths[e] for e in untimed_entries)
    if not timed:
        f0 = f1 = ids  # not read
    else:
        f0 = np.rint(starts / frame_shift).astype(np.int64)
        f1 = np.maximum(np.rint(ends / frame_shift).astype(np.int64), f0)
    probs = np.fromiter((a.posterior / total for a in entries), np.float64, count=len(entries))
    # the tree has at most one node per word and gap (+ the root): its arrays, the classes and the output
    check_allocation((2 * n_words + 1) * _BYTES_PER_TREE_NODE, MERGING, key or None)
    src, dst, word, t0s, t1s, cost, final, start = _merge_kernel().paths_lattice(ids, f0, f1, offsets, probs, timed)
    def as_ints(b):
        return np.frombuffer(b, np.int64)

    return Lattice.from_arcs(src=as_ints(src), dst=as_ints(dst), word=as_ints(word), symbols=table,
                             final_graph_cost=np.frombuffer(final, np.float64), num_states=len(final) // 8,
                             start=start, t0=as_ints(t0s), t1=as_ints(t1s), graph_cost=np.frombuffer(cost, np.float64),
                             frame_shift=frame_shift, key=key)


#: what the compiled merge allocates per tree node (its arrays, the classes' table and arcs, the output)
_BYTES_PER_TREE_NODE = 240


def _merge_kernel():
    return native("nbest_tree")


def _times_lattice(key: str, entries: Sequence[Alternative], table: SymbolTable, frame_shift: float) -> Lattice:
    total = math.fsum(a.posterior for a in entries)
    spans = []
    for alt in entries:
        frames = _frames(alt, frame_shift, key) if alt.words else []
        if frames is None:
            raise LatticeError("join='times' needs word times on every entry (use join='paths')", key=key or None)
        spans.append(frames)
    first = 0  # times are absolute: a lattice's frames count from 0 along every path
    last = max((f[-1][1] for f in spans if f), default=0)
    if any(f and f[0][0] < 0 for f in spans):
        raise LatticeError("join='times': a word starts before time 0", key=key or None)
    # states: the start (frame `first`), every word boundary frame, the end (frame `last`)
    gamma_arc: dict[tuple[int, int, int], float] = {}  # (word id or 0, t0, t1) -> gamma
    gamma_state: dict[int, float] = {}
    for i, (alt, frames) in enumerate(zip(entries, spans, strict=True)):
        if not i & 1023:
            check_memory(MERGING, key or None)
        p = alt.posterior / total
        t = first
        gamma_state[t] = gamma_state.get(t, 0.0) + p
        seq = []
        for w, (a, b) in zip(alt.words, frames, strict=True):
            if a < t:
                raise LatticeError(f"join='times': words of an entry overlap in time (at {w!r}); use join='paths'",
                                   key=key or None)
            if a > t:
                seq.append((0, t, a))
            seq.append((table.id(w), a, b))
            t = b
        if t < last:
            seq.append((0, t, last))
        for arc in seq:
            gamma_arc[arc] = gamma_arc.get(arc, 0.0) + p
            gamma_state[arc[2]] = gamma_state.get(arc[2], 0.0) + p
    states: dict[int, int] = {}

    def state(frame: int) -> int:
        if frame not in states:
            states[frame] = len(states)
        return states[frame]

    state(first)
    src, dst, word, t0s, t1s, cost = [], [], [], [], [], []
    for (wid, a, b), g in sorted(gamma_arc.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        if a == b:
            # it would be a self-loop on its boundary state
            raise LatticeError("join='times' cannot place a word of zero duration (use join='paths')",
                               key=key or None)
        s = state(a)
        src.append(s)
        dst.append(state(b))
        word.append(wid)
        t0s.append(a)
        t1s.append(b)
        cost.append(-math.log(g / gamma_state[a]))
    end = state(last)
    num = len(states)
    final = np.full(num, np.inf)
    final[end] = 0.0
    return Lattice.from_arcs(src=np.asarray(src, np.int64), dst=np.asarray(dst, np.int64),
                             word=np.asarray(word, np.int64), symbols=table, final_graph_cost=final, num_states=num,
                             start=0, t0=np.asarray(t0s, np.int64), t1=np.asarray(t1s, np.int64),
                             graph_cost=np.asarray(cost), frame_shift=frame_shift, key=key)


def nbest_lattice(nbest: Alternatives, *, join: str = "paths", symbols: SymbolTable | None = None,
                  frame_shift: float = 0.01) -> Lattice:
    """The word lattice of one N-best list (see the module docstring for the two joins).

    Args:
      nbest: an N-best list (one slot; posteriors as the readers of :mod:`lattice_tools.io.transcripts.nbest`
        give them; they are renormalized over the entries with a posterior above 0).
      join: ``"paths"`` (no new paths; path probabilities = N-best posteriors), ``"times"``
        (words that agree and span the same frames joined; new paths; arc posteriors = N-best
        word posteriors) or ``"align"`` (ROVER's alignment of the entries, no times needed; new paths).
      symbols: a table to number the words with (new words are appended); default a new one.
      frame_shift: seconds per frame of the lattice's times (word times are rounded to frames).

    Nothing is mutated.  Cost: O(total words x branching) for the prefix tree and the merge.
    """
    if join not in JOINS:
        raise LatticeError(f"unknown join {join!r} (expected one of {', '.join(JOINS)})")
    if not frame_shift > 0:
        raise LatticeError(f"frame_shift must be > 0, got {frame_shift!r}")
    entries = _entries(nbest)
    table = _symbols(symbols, entries)
    if join == "paths":
        return _paths_lattice(nbest.key, entries, table, frame_shift)
    if join == "align":
        return _aligned_lattice(nbest.key, entries, table, frame_shift)
    return _times_lattice(nbest.key, entries, table, frame_shift)


def _aligned_lattice(key: str, entries: Sequence[Alternative], table: SymbolTable, frame_shift: float) -> Lattice:
    """The entries aligned, most probable first, into a word transition network with ROVER's alignment
    (:mod:`.rover`); each slot's arcs carry the posterior mass of the entries with that word there (an
    entry without a word there goes through an epsilon arc)."""
    total = math.fsum(a.posterior for a in entries)
    null_alt = NetworkWord("@", 0.0, 0.0, -1.0)
    slots: list[list] = [[None], *[[NetworkWord(w, 0.0, 0.0, entries[0].posterior / total)] for w in entries[0].words]]
    for it, alt in enumerate(entries[1:], 1):
        if not it & 255:
            check_memory(MERGING, key or None)
        align_into_network(slots, [NetworkWord(w, 0.0, 0.0, alt.posterior / total) for w in alt.words], rover_distance, null_alt, it)
    src, dst, word, cost = [], [], [], []
    for k, slot in enumerate(slots[1:]):
        mass: dict[str, float] = {}
        for w in slot:
            if w.value != "@" or w.conf >= 0:  # a word (an entry's own "@" token counts as a word)
                mass[w.value] = mass.get(w.value, 0.0) + w.conf
        words_mass = math.fsum(mass.values())
        # every entry has exactly one arc per slot: what the words do not carry went through "@"
        arcs = sorted(mass.items(), key=lambda kv: (-kv[1], kv[0]))
        if 1.0 - words_mass > 1e-12:
            arcs.append(("", 1.0 - words_mass))
        for w, m in arcs:
            src.append(k)
            dst.append(k + 1)
            word.append(table.id(w) if w else 0)
            cost.append(-math.log(min(m, 1.0)))
    n = len(slots)
    final = np.full(n, np.inf)
    final[n - 1] = 0.0
    return Lattice.from_arcs(src=np.asarray(src, np.int64), dst=np.asarray(dst, np.int64),
                             word=np.asarray(word, np.int64), symbols=table, final_graph_cost=final, num_states=n,
                             start=0, graph_cost=np.asarray(cost), frame_shift=frame_shift, key=key)


def combine_nbests(nbests: Sequence[Alternatives], weights: Sequence[float] | None = None) -> Alternatives:
    """Several systems' N-best lists of one utterance as one list: each system's posteriors (normalized
    over its list) times its weight (default equal weights, normalized to sum 1); the same word sequence from several systems is
    one entry whose posterior is the sum (times of its most probable occurrence).  Keys must agree."""
    if not nbests:
        raise LatticeError("no N-best lists to combine")
    key = nbests[0].key
    for nb in nbests:
        if nb.key != key:
            raise LatticeError(f"N-best lists of different utterances: {key!r} and {nb.key!r}", key=key)
    w = list(weights) if weights is not None else [1.0] * len(nbests)
    if len(w) != len(nbests) or any(not math.isfinite(x) or x < 0 for x in w) or math.fsum(w) <= 0:
        raise LatticeError("system weights must be one finite number >= 0 per system, not all 0", key=key)
    tw = math.fsum(w)
    merged: dict[tuple[str, ...], list] = {}
    for nb, wt in zip(nbests, w, strict=True):
        entries = _entries(nb) if wt > 0 else []
        system_total = math.fsum(a.posterior for a in entries)  # a list cut from a lattice sums to < 1
        for alt in entries:
            p = alt.posterior / system_total * wt / tw
            slot = merged.get(alt.words)
            if slot is None:
                merged[alt.words] = [p, p, alt]
            else:
                slot[0] += p
                if p > slot[1]:
                    slot[1], slot[2] = p, alt
    alts = tuple(replace(a, posterior=total, confidences=(total,) * len(a.words))
                 for total, _, a in sorted(merged.values(), key=lambda v: -v[0]))
    first = nbests[0].slots[0]
    start = min(nb.slots[0].start for nb in nbests)
    end = max(nb.slots[0].end for nb in nbests)
    return replace(nbests[0], slots=(replace(first, start=start, end=end, alternatives=alts),),
                   meta={"systems": len(nbests), "weights": tuple(x / tw for x in w)})


def confidence_lattice(key: str, words: Sequence[tuple[str, float, float, float]], *,
                       symbols: SymbolTable | None = None, frame_shift: float = 0.01) -> Lattice:
    """The lattice of a 1-best system with word confidences: ``words`` are ``(word, start, end, confidence)``
    in seconds, in time order, each confidence in [0, 1].

    **A confidence is read as the posterior of its word**, independently of the others: word *i* is one arc of
    probability ``c_i`` beside an epsilon arc of probability ``1 - c_i`` over the same frames (the
    probability that the word is not there), so the lattice is a confusion network with one bin per word,
    and the probability of a word sequence is the product over the bins.  A word without a confidence is
    given 1.  Gaps between words (and from time 0 to the first word) are epsilon arcs; a word that starts
    before the previous one ends is moved to start there.  No words: one epsilon path.  Nothing is mutated;
    O(words).
    """
    if not frame_shift > 0:
        raise LatticeError(f"frame_shift must be > 0, got {frame_shift!r}")
    table = _symbols(symbols, (Alternative(tuple(w for w, *_ in words)),))
    src, dst, word, t0s, t1s, cost = [], [], [], [], [], []
    state, frame = 0, 0
    for w, start, end, conf in words:
        if not 0.0 <= conf <= 1.0:
            raise LatticeError(f"confidence {conf!r} of {w!r} is not in [0, 1]", key=key or None)
        if not (0 <= start <= end <= _MAX_FRAME * frame_shift):
            raise LatticeError(f"word time {start!r} .. {end!r} s of {w!r} is not within 0 .. {_MAX_FRAME} frames",
                               key=key or None)
        a = max(int(round(start / frame_shift)), frame)
        b = max(int(round(end / frame_shift)), a)
        if a > frame:  # the gap before the word
            src.append(state)
            dst.append(state + 1)
            word.append(0)
            t0s.append(frame)
            t1s.append(a)
            cost.append(0.0)
            state += 1
        for wid, p in ((table.id(w), conf), (0, 1.0 - conf)):
            if p > 0:
                src.append(state)
                dst.append(state + 1)
                word.append(wid)
                t0s.append(a)
                t1s.append(b)
                cost.append(-math.log(p))
        state, frame = state + 1, b
    if state == 0:
        src, dst, word, t0s, t1s, cost = [0], [1], [0], [0], [0], [0.0]
        state = 1
    final = np.full(state + 1, np.inf)
    final[state] = 0.0
    return Lattice.from_arcs(src=np.asarray(src, np.int64), dst=np.asarray(dst, np.int64),
                             word=np.asarray(word, np.int64), symbols=table, final_graph_cost=final,
                             num_states=state + 1, start=0, t0=np.asarray(t0s, np.int64), t1=np.asarray(t1s, np.int64),
                             graph_cost=np.asarray(cost), frame_shift=frame_shift, key=key)


def mix_lattices(parts: Sequence[tuple[Lattice, float]], *, key: str | None = None) -> Lattice:
    """The weighted union of lattices of one utterance: a new start state with an epsilon arc of probability
    ``w / sum(w)`` to each part's start, so a word sequence's probability is the weighted mean of its
    probabilities in the parts (a mixture).  Parts of weight 0 are left out.  The word table is the last
    part's, which must extend the others' (what building the parts with one shared table gives).  Times are
    kept when every part has them (else every arc is untimed).  Costs are graph costs: a part's acoustic
    costs are added to its graph costs.  Nothing is mutated; O(arcs).
    """
    kept = [(lat, float(w)) for lat, w in parts if w > 0]
    if not kept or any(not math.isfinite(w) for _, w in kept):
        raise LatticeError("the lattices to mix need finite weights >= 0, not all 0", key=key)
    table = kept[-1][0].symbols
    for lat, _ in kept:
        if lat.symbols is not table and any(table.get_id(w) != i for w, i in lat.symbols):
            raise LatticeError("the lattices to mix were not numbered with one word table", key=key)
    total = math.fsum(w for _, w in kept)
    timed = all(lat.has_times for lat, _ in kept)
    src, dst, word, t0, t1, cost, final = [], [], [], [], [], [], [np.array([np.inf])]
    offset = 1
    for lat, w in kept:
        src.append(np.array([0], np.int64))
        dst.append(np.array([offset + lat.start], np.int64))
        word.append(np.array([0], np.int64))
        t0.append(np.array([0], np.int64))
        t1.append(np.array([0], np.int64))
        cost.append(np.array([-math.log(w / total)]))
        src.append(lat.src.astype(np.int64) + offset)
        dst.append(lat.dst.astype(np.int64) + offset)
        word.append(lat.word.astype(np.int64))
        t0.append(lat.t0.astype(np.int64))
        t1.append(lat.t1.astype(np.int64))
        cost.append(lat.graph_cost + lat.acoustic_cost)
        final.append(lat.final_graph_cost + lat.final_acoustic_cost)
        offset += lat.num_states
    t0a, t1a = np.concatenate(t0), np.concatenate(t1)
    if not timed:
        t0a[:] = -1
        t1a[:] = -1
    frame_shift = kept[0][0].frame_shift
    return Lattice.from_arcs(src=np.concatenate(src), dst=np.concatenate(dst), word=np.concatenate(word),
                             symbols=table, final_graph_cost=np.concatenate(final), num_states=offset, start=0,
                             t0=t0a, t1=t1a, graph_cost=np.concatenate(cost), frame_shift=frame_shift,
                             key=kept[0][0].key if key is None else key)
