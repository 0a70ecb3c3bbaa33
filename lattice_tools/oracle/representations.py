"""Oracle error over every representation of a lattice: 1-best, N-best, sausage, phrase, whole lattice.

All of them are scored by the same exact dynamic programme
(:func:`lattice_tools.oracle.dp.oracle_graph`): an :class:`Alternatives` is turned into
a hypothesis network (one state per slot boundary, one chain per alternative, an empty
alternative = sclite's NULL word ``@``), so the oracle is the best *joint* choice of one
alternative per slot together with the alignment -- exactly what sclite computes for an alt-CTM.

Segmentation rule (Faria et al. scores with the reference segmentation): lattices are per utterance
and references are per utterance; a lattice is matched to its reference by key (trn utterance id,
or STM ``file`` -- all segments of that file and its first channel, in time order, make one
reference).  Alternatives therefore never cross a reference segment boundary.  An alt-CTM scored
against a multi-segment STM is placed exactly as sclite places it (:func:`ctm_oracle` is the
scorer): every CTM item (word or whole ALT block, never split) goes to the segment that contains
its midpoint, items in a gap go to the next segment and the last segment of a file/channel takes
what is left.
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from typing import Any

from ..core.alternatives_network import Alternative, Alternatives, Slot
from ..core.counts import ErrorCounts
from ..core.errors import LatticeToolsError
from .api import alternatives_oracle, lattice_oracle
from .dp import OracleResult
from .graphs import is_nonword

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
    scales: dict[str, Any] = dict(acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
    if representation == "1best":
        return one_best(lat, **scales)
    from .. import alternatives

    if representation == "nbest":
        return alternatives.nbest(lat, n, **scales, **kwargs)
    if representation == "phrase":
        return alternatives.phrases(lat, n, posterior_threshold, **scales, **kwargs)
    if representation == "sausage":
        return alternatives.sausage(lat, n, **scales, **kwargs)
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
    opts: dict[str, Any] = dict(mode=mode, optional_deletable=optional_deletable)
    if representation == "lattice":
        return UtteranceOracle(lat.key, "lattice", None, lattice_oracle(lat, reference, **opts))
    alts = alternatives if alternatives is not None else make_alternatives(
        lat, representation, n, posterior_threshold=posterior_threshold, acoustic_scale=acoustic_scale,
        lm_scale=lm_scale, word_penalty=word_penalty, **kwargs)
    if n is not None:
        alts = alts.truncated(n)
    return UtteranceOracle(lat.key, representation, n, alternatives_oracle(alts, reference, **opts), alts)


# ----------------------------------------------------------------------------------------------
# References and hypotheses: through the scorer's input layer (lattice_tools.scoring.inputs)
# ----------------------------------------------------------------------------------------------
def glm_list(glm) -> tuple:
    """``glm``: None, one GLM file or a sequence of them (applied in order)."""
    if glm is None:
        return ()
    return (glm,) if isinstance(glm, (str, os.PathLike)) else tuple(glm)


def lattice_specs(specs) -> list[str]:
    """Lattice specs with Kaldi's idioms and quoted shell patterns (``lat.*.gz``) expanded, in job order, as
    every lattice input is (:func:`lattice_tools.io.lattices.inputs.expand_lattice_specs`; a pattern that matches
    nothing is refused, not silently an empty set)."""
    from ..io.lattices.inputs import expand_lattice_specs

    return expand_lattice_specs([os.fspath(specs)] if isinstance(specs, (str, os.PathLike)) else list(specs))


def load_references(path: str, *, glm=None, fmt: str | None = None, encoding: str = "utf-8") -> dict:
    """Reference transcripts keyed for per-utterance lattices: ``{key: transcript text}``.

    Read, checked and GLM-filtered by :func:`lattice_tools.scoring.inputs.read_reference` (what
    ``score`` reads), keyed by :func:`lattice_tools.scoring.inputs.reference_transcripts`: ``trn``
    and ``text`` by utterance id, ``stm`` by recording file (its scored segments joined in time
    order).  ``fmt`` None: detected (extension, else content); ``glm``: one GLM file or several,
    applied as csrfilt does; ``encoding``: of the reference and GLM files.
    """
    from ..scoring.inputs import read_reference, reference_transcripts

    return reference_transcripts(read_reference(str(path), fmt, glms=glm_list(glm), encoding=encoding))


def filter_alternatives(alts_list: list, glms, *, encoding: str = "utf-8") -> list:
    """``alts_list`` with the GLMs applied to their words as csrfilt does to a hypothesis alt-CTM
    (:func:`lattice_tools.scoring.inputs.filter_hypothesis_items`: what ``score --glm`` does to
    the alt-CTM of the same alternatives).  Needs word times (an alt-CTM has them)."""
    glms = glm_list(glms)
    if not glms:
        return list(alts_list)
    from ..io.transcripts.altctm import alternatives_from_ctm_items, alternatives_to_ctm_items
    from ..scoring.inputs import filter_hypothesis_items

    out = []
    for alts in alts_list:
        # without confidences (the oracle does not use them): csrfilt reads a confidence only in fixed
        # notation, and a posterior such as 8.1e-06 would come back as an extra word of the alternative
        items = [_without_confidence(x) for x in alternatives_to_ctm_items(alts)]
        items, _ = filter_hypothesis_items(items, glms, fmt="ctm", encoding=encoding)
        back = alternatives_from_ctm_items(items, alts.kind)
        slots = tuple(slot for a in back for slot in a.slots)
        out.append(dc_replace(alts, slots=slots))
    return out


def _without_confidence(item):
    """A CTM word or ALT block of :func:`alternatives_to_ctm_items` with every confidence dropped."""
    from ..io.transcripts.ctm import CtmAltBlock

    if isinstance(item, CtmAltBlock):
        return dc_replace(item, alternatives=tuple(tuple(dc_replace(w, confidence=None) for w in alt)
                                                   for alt in item.alternatives))
    return dc_replace(item, confidence=None)


def refuse_glm_on_lattice(glm, representations) -> None:
    """A GLM rewrites transcripts; a whole lattice is not one, and filtering only the reference
    would make its oracle a wrong number: refused."""
    if glm_list(glm) and "lattice" in representations:
        raise LatticeToolsError("a GLM cannot be applied to a whole lattice (only to the words of its "
                                "1best/nbest/sausage/phrase alternatives, as to an alt-CTM); leave the lattice "
                                "representation out or drop the GLM")


def deletions_only(keys: Iterable[str], references: Mapping[str, object], *, mode: str = "sclite",
                   optional_deletable: bool = False) -> list[OracleResult]:
    """The results of references without any hypothesis (an STM file the lattices miss, scored
    as all deletions with ``allow_missing``, as sclite scores an STM channel without CTM words)."""
    from .api import alternatives_oracle_many

    keys = list(keys)
    empty = [Alternatives(key=k, slots=(), kind="1best") for k in keys]
    return alternatives_oracle_many(empty, [references[k] for k in keys], mode=mode,
                                    optional_deletable=optional_deletable)


# ----------------------------------------------------------------------------------------------
# alt-CTM against STM (what sclite scores)
# ----------------------------------------------------------------------------------------------
def ctm_oracle(ctm_path: str, stm_path: str, *, mode: str = "sclite", optional_deletable: bool = False,
               case_sensitive: bool = False, with_words: bool = True, encoding: str = "utf-8", glm=None,
               allow_missing: bool = False, warnings: list | None = None) -> list[OracleResult]:
    """Oracle of an (alt-)CTM file against an STM, one result per scored STM segment.

    This is exactly what sclite computes for an alt-CTM, so it *is* the scorer
    (:func:`lattice_tools.scoring.sclite.score_files`): the same GLM filtering of both sides
    (``glm``: one GLM file or several), the same matching of files and channels (a CTM file or
    channel missing from the STM, or an STM file/channel without CTM words, is a MismatchError
    unless ``allow_missing``; then they are ignored / scored as deletions and said in
    ``warnings``), the same assignment of CTM items to STM segments (time midpoint; gap words to
    the next segment; leftovers to the last; ALT-block channels in file order), the same network
    DP that picks, per segment, the best joint choice of alternatives with sclite's costs and tie
    rules (``mode="sclite"``) or with 1/1/1 costs (``mode="levenshtein"``), and its batched fast
    path for large files.

    Returns one :class:`OracleResult` per segment (``counts`` with ``segments=1``; ``cost`` in the
    mode's units; ``words`` the chosen hypothesis words (``()`` with ``with_words=False``, which
    skips building the alignment pairs: counts only, as ``sclite -o sum``); no times; ``alignment``
    left empty -- the scorer's own alignment pairs are in its ``.pra`` report).
    """
    from ..scoring.sclite import score_files

    result = score_files(str(stm_path), str(ctm_path), glms=glm_list(glm), ref_format="stm", hyp_format="ctm",
                         mode=mode, optional_deletable=optional_deletable, case_sensitive=case_sensitive,
                         allow_missing=allow_missing, encoding=encoding)
    if warnings is not None:
        warnings.extend(result.warnings)
    out = []
    for seg in result.segments:
        a = seg.alignment
        counts = a.counts if a.counts.segments else a.counts + ErrorCounts(
            segments=1, segment_errors=int(a.counts.errors > 0))
        words = tuple(p.hyp for p in a.pairs if p.hyp is not None and p.hyp != "@") if with_words else ()
        start = -1.0 if seg.start is None else seg.start
        out.append(OracleResult(key=f"{seg.file}-{seg.channel}-{start:.2f}", mode=mode, counts=counts,
                                cost=float(a.cost), words=words, starts=(), durations=()))
    return out
