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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ..alternatives.network import Alternative, Alternatives, Slot
from ..errors import LatticeToolsError, MismatchError
from ..scoring.counts import ErrorCounts
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
    scales = dict(acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
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
def load_references(path: str, *, glm: str | None = None, fmt: str | None = None, encoding: str = "utf-8") -> dict:
    """Reference transcripts keyed for per-utterance lattices: ``{key: transcript text}``.

    ``fmt`` is ``"trn"`` (key = utterance id), ``"stm"`` (key = file; the segments of that file's
    first channel joined in time order, ``IGNORE_TIME_SEGMENT_IN_SCORING`` segments dropped) or
    ``"text"`` (``key word word ...`` per line, Kaldi style).  When None it comes from a
    ``.stm``/``.trn`` extension, else from the content
    (:func:`lattice_tools.io.detect.detect_transcript_format`: Kaldi's ``data/eval/stm`` and
    csrfilt's ``ref.stm.filt`` are STM; ambiguous content is refused, naming ``--ref-format``).
    ``glm``: a NIST GLM applied to the reference as csrfilt does (needs the toolkit's filter).
    An utterance id given twice with different words raises MismatchError naming both lines.
    ``encoding``: the text encoding of the reference and GLM files.
    """
    from ..io.detect import detect_transcript_format

    p = str(path)
    fmt = detect_transcript_format(p, fmt, allowed=("stm", "trn", "text"), role="reference",
                                   option="--ref-format", encoding=encoding)
    if glm is not None:
        from ..files import discard_temporary

        tmp = glm_filtered_copy(p, glm, fmt, encoding)
        try:  # (the filtered copy is a scratch file: removed as soon as it is read)
            return load_references(tmp, fmt=fmt, encoding=encoding)
        finally:
            discard_temporary(tmp)
    refs: dict = {}
    if fmt in ("trn", "text"):
        from ..io.kaldi_data import read_kaldi_text
        from ..io.trn import read_trn
        lines: dict = {}
        for u in (read_trn(p, encoding) if fmt == "trn" else read_kaldi_text(p, encoding)):
            if u.utt_id in refs and refs[u.utt_id] != u.text:
                raise MismatchError(f"utterance id {u.utt_id!r} appears twice in the reference with different "
                                    f"words (lines {lines[u.utt_id]} and {u.lineno})", path=str(path), key=u.utt_id)
            refs[u.utt_id] = u.text
            lines.setdefault(u.utt_id, u.lineno)
        return refs
    if fmt == "stm":
        from ..io.stm import read_stm
        stm = read_stm(p, encoding)
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
    raise LatticeToolsError(f"unknown reference format {fmt!r}; expected stm, trn or text", path=p)


def glm_filtered_copy(path: str, glm: str, fmt: str, encoding: str = "utf-8") -> str:
    """Apply a GLM to a reference file with the toolkit's csrfilt-exact filter (into a temp file)."""
    import os
    import tempfile

    from ..scoring.glm import GlmFilterOptions, filter_file

    if fmt not in ("stm", "trn", "text"):
        raise LatticeToolsError(f"a GLM can be applied to stm, trn or text references, not {fmt!r}", path=path)
    import atexit

    from ..files import _LIVE_TEMPS, discard_temporary

    fd, tmp = tempfile.mkstemp(prefix="lattice-tools-ref.", suffix="." + fmt)
    os.close(fd)
    # a scratch file: removed when the process ends, also by SIGTERM/SIGINT (the CLI's handlers)
    _LIVE_TEMPS.add(tmp)
    atexit.register(discard_temporary, tmp)
    try:
        # csrfilt's 'txt' mode filters the whole line, utterance id included: a Kaldi text is filtered
        # as trn, one '(id)' per line, then turned back into 'id words'
        if fmt == "text":
            from ..io.kaldi_data import read_kaldi_text
            from ..io.trn import read_trn, write_trn

            write_trn(tmp, read_kaldi_text(path, encoding), encoding=encoding)
            filter_file(glm, tmp, tmp, "trn", GlmFilterOptions(encoding=encoding))
            utts = read_trn(tmp, encoding)
            with open(tmp, "w", encoding=encoding) as out:
                for u in utts:
                    out.write(f"{u.utt_id} {u.text}\n")
            return tmp
        filter_file(glm, path, tmp, fmt, GlmFilterOptions(encoding=encoding))
    except BaseException:
        discard_temporary(tmp)
        raise
    return tmp


def match_references(keys: Iterable[str], references: Mapping[str, object], *, what: str = "lattice") -> None:
    missing = [k for k in keys if k not in references]
    if missing:
        raise MismatchError(f"{len(missing)} {what}(s) have no reference (first: {missing[0]!r}); references are "
                            f"keyed by utterance id (trn/text) or recording file (stm)", key=missing[0])


def check_references_covered(keys, refs: dict, allow_missing: bool, reference: str, warnings: list) -> None:
    """References without a lattice (or CTM file) would silently leave their words out of the WER."""
    have = set(keys)
    missing = [k for k in refs if k not in have]
    if not missing:
        return
    msg = f"{len(missing)} reference utterance(s) have no lattice, e.g. {missing[0]!r}"
    if not allow_missing:
        raise MismatchError(msg + " (--allow-missing leaves them out of the WER, as sclite does for trn)",
                            path=str(reference), key=missing[0])
    warnings.append(msg + " (left out of the WER)")


# ----------------------------------------------------------------------------------------------
# alt-CTM against STM (what sclite scores)
# ----------------------------------------------------------------------------------------------
def ctm_oracle(ctm_path: str, stm_path: str, *, mode: str = "sclite", optional_deletable: bool = False,
               case_sensitive: bool = False, with_words: bool = True, encoding: str = "utf-8") -> list[OracleResult]:
    """Oracle of an (alt-)CTM file against an STM, one result per scored STM segment.

    This is exactly what sclite computes for an alt-CTM, so it *is* the scorer
    (:func:`lattice_tools.scoring.sclite.score_files`): the same assignment of CTM items to STM
    segments (time midpoint; gap words to the next segment; leftovers to the last; ALT-block
    channels in file order), the same network DP that picks, per segment, the best joint choice of
    alternatives with sclite's costs and tie rules (``mode="sclite"``) or with 1/1/1 costs
    (``mode="levenshtein"``), and its batched fast path for large files.  CTM files or channels
    missing from the STM are skipped, as sclite does.

    Returns one :class:`OracleResult` per segment (``counts`` with ``segments=1``; ``cost`` in the
    mode's units; ``words`` the chosen hypothesis words (``()`` with ``with_words=False``, which
    skips building the alignment pairs: counts only, as ``sclite -o sum``); no times; ``alignment``
    left empty -- the scorer's own alignment pairs are in its ``.pra`` report).
    """
    from ..scoring.sclite import score_files

    result = score_files(str(stm_path), str(ctm_path), ref_format="stm", hyp_format="ctm", mode=mode,
                         optional_deletable=optional_deletable, case_sensitive=case_sensitive, allow_missing=True,
                         encoding=encoding)
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
