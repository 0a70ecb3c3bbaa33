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
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from ..alternatives.network import Alternative, Alternatives, Slot, depth_statistics
from ..errors import LatticeToolsError, MismatchError, MissingDependencyError
from ..scoring.counts import ErrorCounts
from .lattice_oracle import (OracleResult, _with_sclite_ties, alternatives_oracle, hyp_graph_from_network, is_nonword,
                             lattice_oracle, oracle_graph)

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
                     word_penalty: float = 0.0, optional_deletable: bool = True, alternatives=None,
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
def ctm_oracle(ctm_path: str, stm_path: str, *, mode: str = "sclite", optional_deletable: bool = True,
               case_sensitive: bool = False) -> list[OracleResult]:
    """Oracle of an (alt-)CTM file against an STM, one result per STM segment (sclite's unit).

    Each CTM item (word or ALT block) is assigned to the segment of its ``file``/``channel`` that
    contains its time midpoint, else to the nearest one (module docstring); per segment the
    items, in file order, form the hypothesis network (:func:`lattice_tools.scoring.network.from_ctm_items`)
    and the exact network DP picks the best joint alternative choice.  In ``sclite`` mode this is
    the number sclite reports for the same files.
    """
    from ..io.ctm import CtmAltBlock, read_ctm
    from ..io.stm import read_stm
    from ..scoring.network import from_ctm_items, parse_transcript

    stm = read_stm(stm_path)
    items = read_ctm(ctm_path)
    by_side: dict = {}
    for i, seg in enumerate(stm.segments):
        by_side.setdefault((seg.file, seg.channel.lower()), []).append(i)
    assigned: dict = {i: [] for i in range(len(stm.segments))}
    for item in items:
        side = (item.file, item.channel.lower())
        segs = by_side.get(side)
        if not segs:
            continue  # sclite ignores CTM sides that are not in the STM (it warns)
        s, e = item.start, item.end
        if s is None:
            continue
        mid = (s + (e if e is not None else s)) / 2
        inside = [i for i in segs if stm.segments[i].start <= mid < stm.segments[i].end]
        if inside:
            target = inside[0]
        else:
            target = min(segs, key=lambda i: min(abs(stm.segments[i].start - mid), abs(stm.segments[i].end - mid)))
        assigned[target].append(item)
    from .batch import alternatives_oracle_many

    alts_list, refs = [], []
    for i, seg in enumerate(stm.segments):
        if seg.is_ignore_time_segment:
            continue
        slots = []
        for item in assigned[i]:
            if isinstance(item, CtmAltBlock):
                alts = tuple(Alternative(tuple(w.word for w in alt),
                                         tuple(math.nan if w.start is None else w.start for w in alt),
                                         tuple(math.nan if w.duration is None else w.duration for w in alt))
                             for alt in item.alternatives)
                slots.append(Slot(item.start or 0.0, item.end or 0.0, alts))
            else:
                t = math.nan if item.start is None else item.start
                d = math.nan if item.duration is None else item.duration
                slots.append(Slot(item.start or 0.0, item.end or 0.0, (Alternative((item.word,), (t,), (d,)),)))
        key = f"{seg.file}-{seg.channel}-{seg.start:.2f}"
        alts_list.append(Alternatives(key, tuple(slots), kind="ctm", file=seg.file, channel=seg.channel))
        refs.append(parse_transcript(seg.text, case_sensitive=case_sensitive))
    # CTM words are scored as written: no filler is dropped (sclite would count it too).
    out = alternatives_oracle_many(alts_list, refs, mode=mode, optional_deletable=optional_deletable,
                                   case_sensitive=case_sensitive, nonword=lambda w: False)
    return out
