"""Oracle error over every representation of a lattice: 1-best, N-best, sausage, phrase, whole lattice.

All of them are scored by the same exact dynamic programme
(:func:`lattice_tools.oracle.lattice_oracle.oracle_graph`): an :class:`Alternatives` is turned into
a hypothesis network (one state per slot boundary, one chain per alternative, an empty
alternative = sclite's NULL word ``@``), so the oracle is the best *joint* choice of one
alternative per slot together with the alignment -- exactly what sclite computes for an alt-CTM.

Segmentation rule (seed 001 scores with the reference segmentation): lattices are per utterance
and references are per utterance; a lattice is matched to its reference by key (trn utterance id,
or STM ``file`` -- all segments of that file and its first channel, in time order, make one
reference).  Alternatives therefore never cross a reference segment boundary.  For an alt-CTM
scored against a multi-segment STM, every CTM item (word or whole ALT block) goes to the segment
that contains its midpoint; items outside every segment go to the nearest segment (where they
can only be insertions).  An ALT block is never split.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

import numpy as np

from ..alternatives.network import Alternative, Alternatives, Slot
from ..errors import LatticeToolsError, MismatchError, MissingDependencyError
from ..scoring.counts import ErrorCounts
from .lattice_oracle import OracleResult, alternatives_oracle, is_nonword, lattice_oracle

REPRESENTATIONS = ("1best", "nbest", "sausage", "phrase", "lattice")


def one_best(lat, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
             nonword: Callable[[str], bool] = is_nonword) -> Alternatives:
    """The Viterbi best path of ``lat`` (:func:`lattice_tools.algorithms.best_path`) as a 1-best
    :class:`Alternatives` (one slot per word).  Note (pitfalls.md): for pocketsphinx lattices this
    is the best path under the given scales, not ``decoder.hyp()``."""
    from ..algorithms import best_path

    arcs = best_path(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
    fs = lat.frame_shift
    slots = []
    for a in arcs.tolist():
        wid = int(lat.word[a])
        if wid == 0:
            continue
        w = lat.symbols.word(wid)
        if nonword(w):
            continue
        t0, t1 = int(lat.t0[a]), int(lat.t1[a])
        start = t0 * fs if t0 >= 0 else math.nan
        dur = (t1 - t0) * fs if t0 >= 0 and t1 >= 0 else math.nan
        alt = Alternative((w,), (start,), (dur,), 1.0)
        slots.append(Slot(start, start + dur if not math.isnan(dur) else start, (alt,)))
    return Alternatives(key=lat.key, slots=tuple(slots), kind="1best")


def make_alternatives(lat, representation: str, n: int | None, *, posterior_threshold: float = 0.1,
                      acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
                      **kwargs) -> Alternatives:
    """``representation`` in ``1best``, ``nbest``, ``sausage``, ``phrase`` -> :class:`Alternatives`
    from the toolkit's own algorithms (``n=None`` = unlimited depth)."""
    scales = dict(acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
    if representation == "1best":
        return one_best(lat, **scales)
    if representation == "nbest":
        from ..alternatives.nbest import nbest
        return nbest(lat, n, **scales, **kwargs)
    if representation == "phrase":
        from ..alternatives.phrases import phrases
        return phrases(lat, n, posterior_threshold, **scales, **kwargs)
    if representation == "sausage":
        try:
            from ..alternatives import sausage as sausage_module
        except ImportError:
            sausage_module = None
        fn = getattr(sausage_module, "sausage", None) if sausage_module is not None else None
        if fn is None:
            raise MissingDependencyError("sausage (confusion network) construction is not available "
                                         "(lattice_tools.alternatives.sausage)")
        return fn(lat, n, **scales, **kwargs)
    raise LatticeToolsError(f"unknown representation {representation!r}; expected one of {', '.join(REPRESENTATIONS)}")


@dataclass(frozen=True)
class UtteranceOracle:
    """The oracle of one utterance under one representation (``alternatives`` None for lattices)."""

    key: str
    representation: str
    n: int | None
    result: OracleResult
    alternatives: Alternatives | None = field(default=None, repr=False)

    @property
    def counts(self) -> ErrorCounts:
        return self.result.counts


def utterance_oracle(lat, reference, representation: str, n: int | None = None, *, mode: str = "sclite",
                     posterior_threshold: float = 0.1, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
                     word_penalty: float = 0.0, optional_deletable: bool = False, alternatives=None,
                     **kwargs) -> UtteranceOracle:
    """Oracle of one lattice under one representation.  ``alternatives`` may be given to reuse an
    already computed (deeper) :class:`Alternatives`; it is cut to ``n`` per slot."""
    opts = dict(mode=mode, optional_deletable=optional_deletable)
    if representation == "lattice":
        return UtteranceOracle(lat.key, "lattice", None, lattice_oracle(lat, reference, **opts))
    alts = alternatives if alternatives is not None else make_alternatives(
        lat, representation, n, posterior_threshold=posterior_threshold, acoustic_scale=acoustic_scale,
        lm_scale=lm_scale, word_penalty=word_penalty, **kwargs)
    if n is not None:
        alts = alts.truncated(n)
    return UtteranceOracle(lat.key, representation, n, alternatives_oracle(alts, reference, **opts), alts)


# ----------------------------------------------------------------------------------------------
# References
# ----------------------------------------------------------------------------------------------
def load_references(path: str, *, glm: str | None = None, fmt: str | None = None) -> dict:
    """Reference transcripts keyed for per-utterance lattices: ``{key: transcript text}``.

    ``fmt`` is ``"trn"`` (key = utterance id), ``"stm"`` (key = file; the segments of that file's
    first channel joined in time order, ``IGNORE_TIME_SEGMENT_IN_SCORING`` segments dropped) or
    ``"text"`` (``key word word ...`` per line, Kaldi style).  Guessed from the extension when None.
    ``glm``: a NIST GLM applied to the reference as csrfilt does (needs the toolkit's filter).
    """
    p = str(path)
    if fmt is None:
        low = p[:-3] if p.endswith(".gz") else p
        fmt = "stm" if low.endswith(".stm") else "trn" if low.endswith(".trn") else "text"
    if glm is not None:
        p = _filtered_copy(p, glm, fmt)
    refs: dict = {}
    if fmt == "trn":
        from ..io.trn import read_trn
        for u in read_trn(p):
            refs[u.utt_id] = u.text
        return refs
    if fmt == "stm":
        from ..io.stm import read_stm
        stm = read_stm(p)
        first_channel: dict = {}
        segs: dict = {}
        for seg in stm.segments:
            if seg.is_ignore_time_segment:
                continue
            ch = first_channel.setdefault(seg.file, seg.channel)
            if seg.channel != ch:
                continue
            segs.setdefault(seg.file, []).append(seg)
        for f, ss in segs.items():
            ss.sort(key=lambda s: s.start)
            refs[f] = " ".join(s.text for s in ss)
        return refs
    if fmt == "text":
        from ..io.common import read_text_lines
        for lineno, line in read_text_lines(p):
            parts = line.split(None, 1)
            if not parts:
                continue
            refs[parts[0]] = parts[1] if len(parts) > 1 else ""
        return refs
    raise LatticeToolsError(f"unknown reference format {fmt!r}; expected stm, trn or text", path=p)


def _filtered_copy(path: str, glm: str, fmt: str) -> str:
    """Apply a GLM to a reference file with the toolkit's csrfilt-exact filter (into a temp file)."""
    import os
    import tempfile

    from ..scoring.glm_filter import filter_file

    if fmt not in ("stm", "trn"):
        raise LatticeToolsError(f"a GLM can be applied to stm or trn references, not {fmt!r}", path=path)
    fd, tmp = tempfile.mkstemp(prefix="lattice-tools-ref.", suffix="." + fmt)
    os.close(fd)
    filter_file(glm, path, tmp, fmt)
    return tmp


def match_references(keys: Iterable[str], references: Mapping[str, object], *, what: str = "lattice") -> None:
    missing = [k for k in keys if k not in references]
    if missing:
        raise MismatchError(f"{len(missing)} {what}(s) have no reference (first: {missing[0]!r}); references are "
                            f"keyed by utterance id (trn/text) or recording file (stm)", key=missing[0])


# ----------------------------------------------------------------------------------------------
# alt-CTM against STM (what sclite scores)
# ----------------------------------------------------------------------------------------------
def ctm_oracle(ctm_path: str, stm_path: str, *, mode: str = "sclite", optional_deletable: bool = False,
               case_sensitive: bool = False) -> list[OracleResult]:
    """Oracle of an (alt-)CTM file against an STM, one result per STM segment (sclite's unit).

    Each CTM item (word or ALT block) is assigned to the segment of its ``file``/``channel`` that
    contains its time midpoint, else to the nearest one (module docstring).  Per segment, the
    best joint choice of alternatives is found exactly; in ``sclite`` mode the counts are those of
    sclite's own DP and tie rules (the scorer's re-implementation run on the segment's network cut
    to its minimum-cost alternatives), i.e. what Debian sclite reports for the same files.

    Fast path: a segment with at most one ALT block and a reference without alternations is
    scored by the batched edit distance of :mod:`lattice_tools.oracle.batch` over all its
    candidate sequences; other segments use the network DP.  The file is read with the lean
    :func:`lattice_tools.oracle.fastctm.read_scoring_ctm`.
    """
    import bisect

    from ..io.ctm import CtmAltBlock, CtmWord
    from ..io.stm import read_stm
    from ..scoring.network import from_ctm_items, parse_transcript
    from .batch import alternatives_oracle_many, linear_costs, _linear_reference
    from .fastctm import read_scoring_ctm
    from .lattice_oracle import cost_model, ref_graph

    costs = cost_model(mode)
    stm = read_stm(stm_path)
    sides = read_scoring_ctm(ctm_path)
    by_side: dict = {}
    for i, seg in enumerate(stm.segments):
        by_side.setdefault((seg.file, seg.channel.lower()), []).append(i)
    assigned: dict = {i: [] for i in range(len(stm.segments))}
    for side, items in sides.items():
        segs = by_side.get(side)
        if not segs:
            continue  # sclite ignores CTM sides that are not in the STM (it warns)
        segs = sorted(segs, key=lambda i: stm.segments[i].start)
        starts = [stm.segments[i].start for i in segs]
        for item in items:
            s = item[1]
            e = (item[1] + item[2]) if item[0] == "w" else item[2]
            if s != s:
                continue
            mid = (s + (e if e == e else s)) / 2
            k = bisect.bisect_right(starts, mid) - 1
            target = None
            if k >= 0 and stm.segments[segs[k]].start <= mid < stm.segments[segs[k]].end:
                target = segs[k]
            else:
                inside = [i for i in segs if stm.segments[i].start <= mid < stm.segments[i].end]
                target = inside[0] if inside else min(
                    segs, key=lambda i: min(abs(stm.segments[i].start - mid), abs(stm.segments[i].end - mid)))
            assigned[target].append(item)

    def to_ctm(seg, item):
        if item[0] == "w":
            return CtmWord(seg.file, seg.channel, None if item[1] != item[1] else item[1],
                           None if item[2] != item[2] else item[2], item[3], lineno=item[4])
        return CtmAltBlock(seg.file, seg.channel, tuple(tuple(CtmWord(seg.file, seg.channel,
                                                                      None if a != a else a, None if b != b else b, w)
                                                              for a, b, w in alt) for alt in item[3]), item[4])

    kept = [i for i, seg in enumerate(stm.segments) if not seg.is_ignore_time_segment]
    out: dict = {}
    fast, lin_refs, lin_opt, hyps, owner = [], [], [], [], []
    slow_alts, slow_refs, slow_idx = [], [], []
    for i in kept:
        seg = stm.segments[i]
        items = assigned[i]
        ref_net = parse_transcript(seg.text, case_sensitive=case_sensitive)
        lin = _linear_reference(ref_graph(ref_net, case_sensitive=case_sensitive,
                                          optional_deletable=optional_deletable))
        blocks = [k for k, it in enumerate(items) if it[0] == "b"]
        ok = lin is not None and len(blocks) <= 1
        if ok:
            k = blocks[0] if blocks else len(items)
            pre = [it[3] for it in items[:k]]
            post = [it[3] for it in items[k + 1:]]
            seqs = [pre + ([w for _, _, w in alt] or ["@"]) + post for alt in items[k][3]] if blocks else [pre]
            # One pass over the segment's text decides whether every word can be taken literally
            # (no ';' tags, trailing '*' or '(optional)' marks: those need the scorer's tokenizer).
            flat = " ".join(" ".join(q) for q in seqs)
            ok = not (";" in flat or "*" in flat or "(" in flat)
            if ok and not case_sensitive and flat != flat.lower():
                seqs = [[w.lower() for w in q] for q in seqs]
        if ok:
            lin_refs.append(lin[0])
            lin_opt.append(lin[1])
            for q in seqs:
                hyps.append(q)
                owner.append(len(lin_refs) - 1)
            fast.append((i, ref_net, k if blocks else None, len(seqs)))
        else:
            slot_list = []
            for it in items:
                if it[0] == "w":
                    slot_list.append(Slot(it[1], it[1], (Alternative((it[3],), (it[1],), (it[2],)),)))
                else:
                    alts = tuple(Alternative(tuple(w for _, _, w in alt), tuple(a for a, _, _ in alt),
                                             tuple(b for _, b, _ in alt)) for alt in it[3])
                    slot_list.append(Slot(it[1], it[2], alts))
            slow_alts.append(Alternatives(f"{seg.file}-{seg.channel}-{seg.start:.2f}", tuple(slot_list), kind="ctm",
                                          file=seg.file, channel=seg.channel))
            slow_refs.append(ref_net)
            slow_idx.append(i)
    if fast:
        c = linear_costs(lin_refs, lin_opt, hyps, owner, mode=costs)
        owner_arr = np.asarray(owner)
        bounds = np.flatnonzero(np.concatenate(([True], owner_arr[1:] != owner_arr[:-1], [True])))
        ref_nets, hyp_nets, info = [], [], []
        for (i, ref_net, k, nseq), lo, hi in zip(fast, bounds[:-1], bounds[1:]):
            seg = stm.segments[i]
            cc = c[lo:hi]
            best = int(cc.min())
            items = assigned[i]
            if k is None:
                ctm_items = [to_ctm(seg, it) for it in items]
                chosen = hyps[lo]
            else:
                # sclite's choice among equal-cost alternatives: its DP on the block cut to them
                tied = [alt for alt, v in zip(items[k][3], cc.tolist()) if v == best]
                block = ("b", items[k][1], items[k][2], tied, items[k][4])
                ctm_items = [to_ctm(seg, it) for it in items[:k]] + \
                    ([to_ctm(seg, block)] if (len(tied) > 1 or not tied[0])
                     else [to_ctm(seg, ("w", a, b, w, 0)) for a, b, w in tied[0]]) + \
                    [to_ctm(seg, it) for it in items[k + 1:]]
                chosen = hyps[lo + int(np.argmin(cc))]
            ref_nets.append(ref_net)
            hyp_nets.append(from_ctm_items(ctm_items, case_sensitive=case_sensitive))
            info.append((i, best, chosen))
        if costs.name == "sclite":
            from ..scoring.align import AlignOptions, align_batch

            aligned = align_batch(ref_nets, hyp_nets, AlignOptions("sclite", optional_deletable=optional_deletable))
            for (i, best, _), a in zip(info, aligned):
                seg = stm.segments[i]
                counts = a.counts if a.counts.segments else a.counts + ErrorCounts(
                    segments=1, segment_errors=int(a.counts.errors > 0))
                words = tuple(p.hyp for p in a.pairs if p.hyp is not None and p.hyp != "@")
                out[i] = OracleResult(key=f"{seg.file}-{seg.channel}-{seg.start:.2f}", mode=costs.name, counts=counts,
                                      cost=best / costs.scale, words=words, starts=(), durations=())
        else:
            from .lattice_oracle import sequence_oracle

            for (i, best, chosen), ref_net in zip(info, ref_nets):
                seg = stm.segments[i]
                r = sequence_oracle([w for w in chosen if w != "@"], ref_net, mode=costs, case_sensitive=True,
                                    optional_deletable=optional_deletable)
                out[i] = OracleResult(key=f"{seg.file}-{seg.channel}-{seg.start:.2f}", mode=costs.name,
                                      counts=r.counts, cost=best, words=r.words, starts=(), durations=(),
                                      alignment=r.alignment)
    if slow_alts:
        # CTM words are scored as written: no filler is dropped (sclite would count it too).
        res = alternatives_oracle_many(slow_alts, slow_refs, mode=mode, optional_deletable=optional_deletable,
                                       case_sensitive=case_sensitive, nonword=lambda w: False)
        for i, r in zip(slow_idx, res):
            out[i] = r
    return [out[i] for i in kept]
