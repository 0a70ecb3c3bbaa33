"""sclite-exact scoring of STM/CTM and trn/trn inputs.

:func:`score_stm_ctm` reproduces ``sclite -r ref.stm stm -h hyp.ctm ctm [-D] [-F] [-s] [-m ...]``
and :func:`score_trn` reproduces ``sclite -r ref.trn trn -h hyp.trn trn -i spu_id|wsj|sp``:
the same segment assignment of CTM words, the same networks, the same DP and tie rules
(:mod:`lattice_tools.scoring.align`), hence the same counts and alignments.

Segment assignment (sclite's ``segment_hyp_for_utt``, checked against Debian sclite): per file and
channel, CTM items (a whole ALT block counting as one item whose midpoint is the *largest* midpoint
``start + duration/2`` of its words) are handed out in time order: the current STM segment takes
items while their midpoint is ``< end`` of the segment -- so words before a segment or in a gap
go to the next segment -- and the last segment of the file/channel takes everything left.
Segments marked ``IGNORE_TIME_SEGMENT_IN_SCORING`` take their words and are not scored.
"""
from __future__ import annotations

import dataclasses
import functools
import os
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..core._budget import DEFAULT_MAX_MEMORY, budget_limit, memory_budget
from ..core.counts import ErrorCounts
from ..core.errors import FormatError, MismatchError
from ..io.transcripts.detect import sample_words
from ..io.transcripts.stm import StmSegment
from .align import AlignOptions, align_batch
from .chain_scorer import heap_reuse, score_chain_jobs
from .ctm_columns import read_ctm_columns
from .ctm_items import (
    HypItems,
    item_mid,
    item_span,
    item_t1,
    items_from_objects,
    sorted_item_order,
)
from .inputs import (
    check_encoding,
    hypothesis_format,
    is_ignore,
    match_keys,
    read_hypothesis,
    read_reference,
    reference_format,
    select_ctm_types,
    without_rt_fields,
)
from .network import from_ctm_items, parse_transcript
from .results import ScoreResult, SegmentScore, normalized_cross_entropy
from .segments import (
    assign_items,
    build_result,
    check_channels,
    drops_word_warning,
    f32,
    fold,
    group_segments,
    side_items,
)
from .tuning import DEFAULT_TUNING, EngineTuning

__all__ = ["ScoreResult", "SegmentScore", "chain_engine_applies", "merge_single_segment", "normalized_cross_entropy",
           "score_files", "score_stm_ctm", "score_trn", "select_ctm_types", "trn_speaker", "without_rt_fields"]


def merge_single_segment(segments: Sequence, case_sensitive: bool = False, case_language: str | None = None):
    """Faria et al., section 2.4: one segment per file/channel/speaker spanning all its segments, text
    concatenated in time order.  ``IGNORE_TIME_SEGMENT_IN_SCORING`` segments are kept as they are
    (their words are removed before scoring by :func:`score_stm_ctm`)."""
    groups: OrderedDict[tuple, list] = OrderedDict()
    ignored = []
    for seg in segments:
        if is_ignore(seg.text):
            ignored.append(seg)
            continue
        key = (fold(seg.file, case_sensitive, case_language), fold(seg.channel, case_sensitive, case_language),
               fold(seg.speaker, case_sensitive, case_language))
        groups.setdefault(key, []).append(seg)
    out = []
    for _key, segs in groups.items():
        segs = sorted(segs, key=lambda s: s.start)
        text = " ".join(s.text.strip() for s in segs if s.text.strip())
        first = segs[0]
        out.append(StmSegment(first.file, first.channel, first.speaker, min(s.start for s in segs),
                              max(s.end for s in segs), first.labels, text, first.lineno))
    return out, ignored


def chain_engine_applies(segments: Sequence, *, fragments: bool = False, single_segment: bool = False,
                         reduce: Sequence[str] = ()) -> bool:
    """The chain engine (:mod:`.chain_scorer`) scores everything but ``-F``, ``single_segment``,
    ``reduce`` and references with alternations; those need the general engine of :mod:`.align`."""
    if fragments or single_segment or reduce:
        return False
    return not any("{" in seg.text or "}" in seg.text for seg in segments)


def _choose_engine(tuning: EngineTuning, segments, fragments, single_segment, reduce) -> str:
    """The engine that scores: ``tuning.engine``, ``"auto"`` resolved (the one dispatcher)."""
    applies = chain_engine_applies(segments, fragments=fragments, single_segment=single_segment, reduce=reduce)
    if tuning.engine == "chain" and not applies:
        raise ValueError("the chain engine cannot score -F, single_segment, reduce or references with "
                         "alternations (engine='auto' or 'general')")
    if tuning.engine == "auto":
        return "chain" if applies else "general"
    return tuning.engine


def score_stm_ctm(stm, ctm_items: Iterable, *, optional_deletable: bool = False, fragments: bool = False,
                  case_sensitive: bool = False, mode: str = "sclite", single_segment: bool = False,
                  allow_missing: bool = False, reduce: Sequence[str] = (), case_language: str | None = None,
                  ref_name: str = "", hyp_name: str = "", tuning: EngineTuning = DEFAULT_TUNING,
                  executor=None) -> ScoreResult:
    """Score CTM items (words and ALT blocks) against an STM, exactly as sclite does.

    Args:
      stm: an :class:`~lattice_tools.io.transcripts.stm.Stm` or a sequence of ``StmSegment``.
      ctm_items: ``CtmWord``/``CtmAltBlock`` items (any order: they are grouped by file and
        channel and, within a file/channel without ALT blocks, sorted stably by start time, which
        is what sclite needs its input to be; with ALT blocks the file order is kept, as sclite does).
      optional_deletable: sclite ``-D``; fragments: sclite ``-F``; case_sensitive: sclite ``-s``.
      mode: ``"sclite"`` weights or ``"levenshtein"`` (1/1/1).
      single_segment: merge each file/channel/speaker's segments into one (Faria et al., section 2.4);
        hypothesis words inside ``IGNORE_TIME_SEGMENT_IN_SCORING`` spans are dropped first.
      allow_missing: a CTM file/channel absent from the STM is ignored with a warning, an STM
        file/channel without CTM words is scored as all deletions (what sclite does, test16_*);
        otherwise both raise MismatchError.
      case_language: how case is folded (:func:`~lattice_tools.scoring.network.lower_case`):
        None = ASCII only, sclite's default; ``"turkish"`` = sclite ``-e utf-8 babel_turkish``, ...
      reduce: sclite ``-m``: ``"ref"`` drops reference segments outside the span of the
        hypothesis words of their file/channel, ``"hyp"`` drops hypothesis words outside the span
        of the (kept) reference segments.
      tuning: which engine scores and how it cuts its work (:class:`~.tuning.EngineTuning`); the
        result is the same whatever it says.
      executor: the general engine's alignments run in shards of segments on its workers (any
        :class:`concurrent.futures.Executor` or ``dask.distributed.Client``; None: here); the result is the
        same.  The chain engine always runs here: its columnar pass over a 200k-word CTM takes ~0.6 s in
        all, reading included, less than shipping its inputs to workers.
    Returns:
      :class:`ScoreResult`.
    Raises:
      MismatchError as described above.
    """
    segments = list(getattr(stm, "segments", stm))
    if ref_name == "":
        ref_name = str(getattr(stm, "path", "") or "")
    if hyp_name == "":
        hyp_name = str(getattr(ctm_items, "path", "") or "")
    reduce = tuple(reduce)
    for r in reduce:
        if r not in ("ref", "hyp"):
            raise ValueError(f"reduce items must be 'ref' or 'hyp', not {r!r}")
    if _choose_engine(tuning, segments, fragments, single_segment, reduce) == "chain":
        if not isinstance(ctm_items, (list, tuple)):
            ctm_items = list(ctm_items)
        hyp = items_from_objects(ctm_items, functools.partial(fold, case_sensitive=case_sensitive,
                                                              language=case_language))
        return _score_chain(segments, hyp, optional_deletable=optional_deletable, case_sensitive=case_sensitive,
                            mode=mode, allow_missing=allow_missing, case_language=case_language,
                            ref_name=ref_name, hyp_name=hyp_name, tuning=tuning)
    return _score_general(segments, ctm_items, optional_deletable=optional_deletable, fragments=fragments,
                          case_sensitive=case_sensitive, mode=mode, single_segment=single_segment,
                          allow_missing=allow_missing, reduce=reduce, case_language=case_language,
                          ref_name=ref_name, hyp_name=hyp_name, executor=executor)


def _reduce_segments(segs: list, items: list) -> list:
    """sclite ``-m ref``: which segments lie within the span of the file/channel's hypothesis items."""
    keep = [True] * len(segs)
    if items:
        h_t1 = item_t1(items[0])
        last_span = item_span(items[-1])
        h_t2 = max(t2 for _, t2 in last_span) if last_span else 0.0
        for i, seg in enumerate(segs):
            if h_t1 >= f32(seg.end) or h_t2 <= f32(seg.start):
                keep[i] = False
    return keep


def _reduce_items(segs: list, keep: list, items: list) -> list:
    """sclite ``-m hyp``: the items with a word within the span of the kept segments."""
    kept = [s for s, k in zip(segs, keep, strict=True) if k]
    if not kept:
        return items
    # sclite keeps these bounds in C floats
    bt = f32(min(f32(s.start) for s in kept))
    et = f32(max(f32(s.end) for s in kept))
    return [it for it in items if any(not (t1 > et or t2 < bt) for t1, t2 in item_span(it))]


def _score_general(segments, ctm_items, *, optional_deletable, fragments, case_sensitive, mode, single_segment,
                   allow_missing, reduce, case_language, ref_name, hyp_name, executor=None) -> ScoreResult:
    """:func:`score_stm_ctm` with the general engine (networks aligned by :func:`~.align.align_batch`)."""
    warnings: list[str] = []
    ignored_spans: dict = {}
    if single_segment:
        merged, ignored = merge_single_segment(segments, case_sensitive, case_language)
        for seg in ignored:
            key = (fold(seg.file, case_sensitive, case_language), fold(seg.channel, case_sensitive, case_language))
            ignored_spans.setdefault(key, []).append((seg.start, seg.end))
        segments = merged
    chan_segs = group_segments(segments, case_sensitive, case_language)
    chan_items = side_items(ctm_items, chan_segs, case_sensitive=case_sensitive, case_language=case_language,
                            allow_missing=allow_missing, hyp_name=hyp_name, ref_name=ref_name, warnings=warnings)

    jobs = []  # (segment, items)
    for key, segs in chan_segs.items():
        items = chan_items.get(key, [])
        if key in ignored_spans:
            spans = ignored_spans[key]
            items = [it for it in items if not any(s <= item_mid(it) < e for s, e in spans)]
        keep = _reduce_segments(segs, items) if "ref" in reduce else None
        if "hyp" in reduce:
            items = _reduce_items(segs, keep or [True] * len(segs), items)
        mids = np.array([item_mid(it) for it in items], np.float64)
        for seg, span in zip(segs, assign_items(mids, segs, keep), strict=True):
            if span is not None and not is_ignore(seg.text):
                jobs.append((seg, items[span[0]:span[1]]))

    aligner = SegmentAligner(case_sensitive, case_language, AlignOptions(mode=mode, optional_deletable=optional_deletable,
                                                                         fragments=fragments))
    aligned = align_segments(aligner, [(seg.text, f"{ref_name}:{seg.lineno}" if ref_name else None, list(items), None)
                                       for seg, items in jobs],
                             [f"{seg.file} {seg.channel} {seg.start}" for seg, _ in jobs], executor)
    alignments = [ali for ali, _conf in aligned]
    confidences = segment_confidences(aligned)
    counts = np.array([dataclasses.astuple(ali.counts) for ali in alignments], np.int64).reshape(
        -1, len(dataclasses.fields(ErrorCounts)))
    return build_result([seg for seg, _ in jobs], alignments, counts, confidences, case_sensitive=case_sensitive,
                        language=case_language, warnings=warnings, ref_name=ref_name, hyp_name=hyp_name,
                        options=dict(optional_deletable=optional_deletable, fragments=fragments,
                                     case_sensitive=case_sensitive, mode=mode, single_segment=single_segment,
                                     case_language=case_language))


def _score_chain(segments, hyp: HypItems, *, optional_deletable, case_sensitive, mode, allow_missing, case_language,
                 ref_name, hyp_name, tuning: EngineTuning) -> ScoreResult:
    """:func:`score_stm_ctm` with the chain engine, on :class:`~.ctm_items.HypItems` (from objects or
    straight from a CTM file)."""
    warnings: list[str] = []
    chan_segs = group_segments(segments, case_sensitive, case_language)
    chan_order = dict(zip(hyp.chans, sorted_item_order(hyp), strict=True))
    if hyp.drops_word.any():
        first = next(int(hyp.lineno[idx[hyp.drops_word[idx]][0]]) for idx in chan_order.values()
                     if hyp.drops_word[idx].any())
        warnings.append(drops_word_warning(int(hyp.drops_word.sum()), first))
    check_channels(chan_order, chan_segs, allow_missing, hyp_name, ref_name, warnings)
    empty = np.zeros(0, np.int64)
    job_segs, job_items = [], []
    for key, segs in chan_segs.items():
        items = chan_order.get(key, empty)
        for seg, (first, stop) in zip(segs, assign_items(hyp.mid[items], segs), strict=True):
            if not is_ignore(seg.text):
                job_segs.append(seg)
                job_items.append(items[first:stop])
    ref_tokens = [seg.text.split() for seg in job_segs]
    alignments, confidences, counts = score_chain_jobs(ref_tokens, job_items, hyp,
                                                       optional_deletable=optional_deletable,
                                                       case_sensitive=case_sensitive, language=case_language,
                                                       mode=mode, tuning=tuning)
    return build_result(job_segs, alignments, counts, confidences, case_sensitive=case_sensitive,
                        language=case_language, warnings=warnings, ref_name=ref_name, hyp_name=hyp_name,
                        options=dict(optional_deletable=optional_deletable, fragments=False,
                                     case_sensitive=case_sensitive, mode=mode, single_segment=False,
                                     case_language=case_language))


#: The scorers' alignments run in shards of this many segments on an executor's workers: a few hundred
#: milliseconds of alignment each, far above a task's round trip.
SHARD_SEGMENTS = 2048


@dataclasses.dataclass(frozen=True)
class SegmentAligner:
    """How the segments of a score are parsed and aligned (sent to the workers with each shard)."""

    case_sensitive: bool
    case_language: str | None
    options: AlignOptions
    max_memory: int | None = None   # the caller's memory budget, set again in a worker process


def aligned_of_shard(aligner: SegmentAligner, items) -> list:
    """What a worker computes for a shard of segments: ``(ref_text, ref_where, hyp, hyp_where)`` each, ``hyp``
    a transcript (trn) or a list of CTM items -> ``(alignment, confidences)`` each.  Confidences (CTM
    hypotheses only, else None): ``(True, [(op, confidence) per hypothesis word])`` for a segment with a
    confidence, else ``(False, ids of its null hypothesis arcs)``, from which :func:`segment_confidences`
    makes its list only if another segment has one (making an alignment's pairs costs time)."""
    fold_kw: dict[str, Any] = dict(case_sensitive=aligner.case_sensitive, language=aligner.case_language)
    refs = [parse_transcript(text, where=where, **fold_kw) for text, where, _hyp, _hw in items]
    hyps = [parse_transcript(hyp, where=hyp_where, **fold_kw) if isinstance(hyp, str) else from_ctm_items(hyp, **fold_kw)
            for _text, _where, hyp, hyp_where in items]
    names = [f"the segment at {where or 'reference'}" for _text, where, _hyp, _hw in items]
    with memory_budget(aligner.max_memory):
        alignments = align_batch(refs, hyps, aligner.options, names=names)
    out = []
    for (_text, _where, hyp, _hw), ali, hnet in zip(items, alignments, hyps, strict=True):
        conf: tuple[bool, Sequence] | None = None
        if not isinstance(hyp, str):
            if hnet.num_arcs and not np.isnan(hnet.confidence).all():
                conf = (True, [(p.op, float(np.nan_to_num(hnet.confidence[p.hyp_arc], nan=0.0))) for p in ali.pairs
                               if p.hyp_arc >= 0 and hnet.words[p.hyp_arc] is not None])
            else:
                conf = (False, tuple(i for i, w in enumerate(hnet.words) if w is None))
        out.append((ali, conf))
    return out


def segment_confidences(aligned: list) -> list | None:
    """The ``(op, confidence)`` lists of :func:`aligned_of_shard`'s segments, or None when no word has a
    confidence: sclite reports NCE when any word of the CTM has one (a word without counts as 0) and
    leaves null words out of it."""
    if not any(has for _ali, (has, _c) in aligned):
        return None
    def without_confidence(ali, nulls):
        nulls = set(nulls)
        return [(p.op, 0.0) for p in ali.pairs if p.hyp_arc >= 0 and p.hyp_arc not in nulls]

    return [c if has else without_confidence(ali, c) for ali, (has, c) in aligned]


def align_segments(aligner: SegmentAligner, items: list, keys: list, executor=None) -> list:
    """:func:`aligned_of_shard` of every item, in order: here in one batch, or on the workers of ``executor``
    in shards of :data:`SHARD_SEGMENTS` (the same alignments: each segment is aligned on its own).  Both go
    through :func:`~lattice_tools.core.parallel.run_shards` (here: one shard), which measures the work's CPU
    seconds for ``bench/bench_parallel.py``."""
    from ..core.parallel import run_shards, shard_items

    aligner = dataclasses.replace(aligner, max_memory=budget_limit())   # (workers have no budget of their own)
    per_shard = SHARD_SEGMENTS if executor is not None else max(1, len(items))
    out: list = []
    for _shard, aligned in run_shards(aligned_of_shard, shard_items(items, keys, per_shard), executor=executor,
                                      args=(aligner,)):
        out.extend(aligned)
    return out


def trn_speaker(utt_id: str, id_type: str = "spu_id") -> str:
    """sclite's speaker of a trn utterance id: ``spu_id``/``swb``/``rm``: the part before the first
    ``-`` (or, without ``-``, the first ``_``); ``wsj``/``atis``: the first three characters;
    ``sp``: the whole id."""
    if id_type in ("spu_id", "swb", "rm"):
        for sep in ("-", "_"):
            k = utt_id.find(sep)
            if k >= 0:
                return utt_id[:k]
        raise MismatchError(f"expected '-' or '_' in utterance id {utt_id!r} to find its speaker ({id_type})")
    if id_type in ("wsj", "atis"):
        return utt_id[:3]
    if id_type == "sp":
        return utt_id
    raise ValueError(f"unknown id_type {id_type!r} (spu_id, wsj, atis, swb, rm, sp)")


def score_trn(ref_utts: Iterable, hyp_utts: Iterable, *, optional_deletable: bool = False,
              fragments: bool = False, case_sensitive: bool = False, mode: str = "sclite",
              id_type: str = "spu_id", allow_missing: bool = False, case_language: str | None = None,
              ref_name: str = "", hyp_name: str = "", executor=None) -> ScoreResult:
    """Score trn hypotheses against trn references, exactly as ``sclite ... trn -i <id_type>``.

    Utterances are matched by id (case folded unless ``case_sensitive``); they are scored in
    hypothesis order, speakers come from the ids (:func:`trn_speaker`).  A hypothesis id without
    reference or a reference without hypothesis raises MismatchError unless ``allow_missing``
    (then it is skipped with a warning, as sclite skips a reference;
    :func:`lattice_tools.scoring.inputs.match_keys`).  Both sides may contain alternations,
    optional words and ``@``.  ``executor``: the alignments run in shards of utterances on its workers
    (None: here); the result is the same.
    """
    ref_utts = list(ref_utts)
    hyp_utts = list(hyp_utts)
    refs: dict = {}
    for u in ref_utts:
        uid = fold(u.utt_id, case_sensitive, case_language)
        first = refs.setdefault(uid, u)
        # sclite refuses a repeated id; a repeat with the same words cannot change a count
        if first is not u and first.text != u.text:
            raise MismatchError(f"utterance id '{u.utt_id}' appears twice in the reference with different "
                                f"words (lines {first.lineno} and {u.lineno})", path=ref_name or None, key=u.utt_id)
    jobs = []
    seen: dict = {}
    for u in hyp_utts:
        uid = fold(u.utt_id, case_sensitive, case_language)
        if uid in seen:
            # it would be scored twice (sclite refuses it)
            raise MismatchError(f"utterance id '{u.utt_id}' appears twice in the hypothesis (lines "
                                f"{seen[uid].lineno} and {u.lineno})", path=hyp_name or None, line=u.lineno,
                                key=u.utt_id)
        seen[uid] = u
        if uid in refs:
            jobs.append((uid, refs[uid], u))
    warnings: list[str] = []
    match_keys(seen, refs, allow_missing=allow_missing, warnings=warnings, hyp_name=hyp_name, ref_name=ref_name,
               ref_format="trn", show=lambda k: repr((seen.get(k) or refs[k]).utt_id))
    aligner = SegmentAligner(case_sensitive, case_language, AlignOptions(mode=mode, optional_deletable=optional_deletable,
                                                                         fragments=fragments))
    aligned = align_segments(aligner, [(r.text, f"{ref_name}:{r.lineno}" if ref_name else None, h.text,
                                        f"{hyp_name}:{h.lineno}" if hyp_name else None) for _, r, h in jobs],
                             [uid for uid, _r, _h in jobs], executor)
    alignments = [ali for ali, _conf in aligned]
    scored = []
    per_speaker: OrderedDict[str, list] = OrderedDict()
    for (uid, r, _h), ali in zip(jobs, alignments, strict=False):
        spk = trn_speaker(uid, id_type)
        per_speaker.setdefault(spk, []).append(ali.counts)
        scored.append(SegmentScore(f"({uid})", spk, "", "", None, None, r.text, ali))
    speakers = OrderedDict((k, ErrorCounts.sum(v)) for k, v in per_speaker.items())
    return ScoreResult(tuple(scored), speakers, ErrorCounts.sum(list(speakers.values())), ref_name, hyp_name,
                       tuple(warnings), dict(optional_deletable=optional_deletable, fragments=fragments,
                                             case_sensitive=case_sensitive, mode=mode, id_type=id_type,
                                             case_language=case_language))


def score_files(ref: str, hyp: str, *, glms: Sequence[str] = (), ref_format: str | None = None,
                hyp_format: str | None = None, optional_deletable: bool = False, fragments: bool = False,
                case_sensitive: bool = False, mode: str = "sclite", single_segment: bool = False,
                allow_missing: bool = False, reduce: Sequence[str] = (), id_type: str = "spu_id",
                case_language: str | None = None, nested_alternatives: str = "flatten",
                ctm_types: Sequence[str] = (), encoding: str = "utf-8",
                tuning: EngineTuning = DEFAULT_TUNING, segment_free: bool = False,
                collar: float | None = None, max_memory: int | None = DEFAULT_MAX_MEMORY,
                executor=None) -> ScoreResult:
    """Read, GLM-filter and score files (what ``lattice-tools score`` does).

    Args:
      ref: an STM, trn or Kaldi ``text`` file; hyp: a CTM (with or without ALT blocks), trn or Kaldi
        ``text`` file.  Formats come from ``ref_format``/``hyp_format``, else from a ``.stm``/``.trn``/
        ``.ctm`` extension, else from the content
        (:func:`lattice_tools.io.transcripts.detect.detect_transcript_format`; ambiguous content is refused).
      glms: GLM files applied in order to both sides, exactly like ``csrfilt.sh`` (see
        :mod:`lattice_tools.scoring.glm`).
      nested_alternatives: a GLM rule with an alternation that rewrites a word inside an ALT block
        makes csrfilt write a nested ALT block, which sclite mis-scores: ``"flatten"`` (default)
        flattens it (:func:`~lattice_tools.io.transcripts.ctm.flatten_nested_block`: alternatives in listed
        order, so sclite's ties still favour the earlier one) and warns, ``"error"`` refuses.
      encoding: text encoding of the reference, hypothesis and GLM files (e.g. ``latin-1``,
        ``gb2312``); reports written by :func:`~lattice_tools.scoring.reports.write_reports` use it
        too and pad their columns by its bytes, as sclite (which works on bytes) does.
      ctm_types: NIST RT CTM token types to score (:func:`select_ctm_types`); ``()`` scores every
        token, as sclite does, with a warning when some are not ``lex``.
      tuning: which STM/CTM engine scores and how it cuts its work (:class:`~.tuning.EngineTuning`; the
        result is the same whatever it says).
      segment_free: STM/CTM only: one alignment per file and channel, reported in the STM's segments
        (:func:`~.segment_free.score_segment_free`); ``collar``: its time constraint in seconds (None: none).
      max_memory: bytes of resident memory the scoring may use (None: no bound); an alignment table that
        would not fit (a long segment whose GLM alternations or ALT blocks multiply its arcs) is refused
        before it is allocated, with BudgetExceededError naming the segment.
      executor: where the alignments run (:func:`score_stm_ctm`, :func:`score_trn`; segment-free scoring runs
        here); reading, filtering and the reports stay in this process; the result is the same.
      the other arguments: as :func:`score_stm_ctm` / :func:`score_trn`.
    Raises:
      FormatError for unreadable inputs, MismatchError for inputs that do not correspond.
    """
    with memory_budget(max_memory):
        return _score_files(ref, hyp, glms=glms, ref_format=ref_format, hyp_format=hyp_format,
                            optional_deletable=optional_deletable, fragments=fragments, case_sensitive=case_sensitive,
                            mode=mode, single_segment=single_segment, allow_missing=allow_missing, reduce=reduce,
                            id_type=id_type, case_language=case_language, nested_alternatives=nested_alternatives,
                            ctm_types=ctm_types, encoding=encoding, tuning=tuning, segment_free=segment_free,
                            collar=collar, executor=executor)


def _score_files(ref, hyp, *, glms, ref_format, hyp_format, optional_deletable, fragments, case_sensitive, mode,
                 single_segment, allow_missing, reduce, id_type, case_language, nested_alternatives, ctm_types,
                 encoding, tuning, segment_free, collar, executor) -> ScoreResult:
    if nested_alternatives not in ("flatten", "error"):
        raise ValueError(f"nested_alternatives must be 'flatten' or 'error', not {nested_alternatives!r}")
    check_encoding(encoding)
    if collar is not None and not segment_free:
        raise ValueError("collar applies to segment-free scoring only (segment_free=True)")
    if segment_free and (single_segment or reduce):
        raise ValueError("segment_free does not combine with single_segment or reduce")
    rfmt = reference_format(ref, ref_format, encoding=encoding)
    hfmt = hypothesis_format(hyp, hyp_format, reference=rfmt, encoding=encoding)
    _check_not_word_ids(ref, rfmt, hyp, hfmt, encoding)
    if rfmt == "stm" and hfmt != "ctm":
        raise FormatError(f"an STM reference needs a CTM hypothesis (got {hfmt}; --hyp-format overrides the "
                          "detected format)", path=hyp)
    if rfmt != "stm" and hfmt == "ctm":
        raise FormatError(f"a {rfmt} reference needs a trn or text hypothesis (got ctm; --ref-format overrides "
                          "the detected format)", path=hyp)
    if segment_free and rfmt != "stm":
        raise FormatError(f"segment-free scoring needs an STM reference (got {rfmt}; --ref-format overrides the "
                          "detected format)", path=ref)
    reference = read_reference(ref, rfmt, glms=glms, encoding=encoding)
    ref_obj = reference.records
    if rfmt == "stm" and not glms and not ctm_types and not segment_free \
            and _choose_engine(tuning, reference.segments, fragments, single_segment, reduce) == "chain":
        # The chain engine's common input, a canonical CTM file, is read into columns without one
        # object per line (the columns have no RT token types: --ctm-type needs the objects); any file the columnar reader does not read exactly (None) is read below by
        # the CTM reader of io.transcripts.ctm, which gives the precise error or the objects.
        try:
            big = os.path.getsize(hyp) > (16 << 20)
        except OSError:
            big = False
        with heap_reuse(big):
            hyp_items = read_ctm_columns(hyp, functools.partial(fold, case_sensitive=case_sensitive,
                                                                language=case_language), encoding, tuning)
            if hyp_items is not None:
                result = _score_chain(reference.segments, hyp_items, optional_deletable=optional_deletable,
                                      case_sensitive=case_sensitive, mode=mode, allow_missing=allow_missing,
                                      case_language=case_language, ref_name=str(ref), hyp_name=str(hyp),
                                      tuning=tuning)
                return dataclasses.replace(result, options={**result.options, "encoding": encoding})
    hyp_obj, glm_warnings = read_hypothesis(hyp, hfmt, glms=glms, encoding=encoding, ctm_types=ctm_types,
                                            nested=nested_alternatives)
    common = dict(optional_deletable=optional_deletable, fragments=fragments, case_sensitive=case_sensitive,
                  mode=mode, allow_missing=allow_missing, case_language=case_language, ref_name=str(ref),
                  hyp_name=str(hyp))
    if segment_free:
        from .segment_free import score_segment_free

        result = score_segment_free(ref_obj, hyp_obj, collar=collar, **common)
    elif rfmt == "stm":
        result = score_stm_ctm(ref_obj, hyp_obj, single_segment=single_segment, reduce=reduce, tuning=tuning,
                               executor=executor, **common)
    else:
        if single_segment or reduce:
            raise ValueError("single_segment and reduce apply to STM/CTM scoring only")
        result = score_trn(reference.segments, hyp_obj, id_type=id_type, executor=executor, **common)
    return dataclasses.replace(result, warnings=tuple(glm_warnings) + result.warnings,
                               options={**result.options, "encoding": encoding})


def _check_not_word_ids(ref: str, rfmt: str, hyp: str, hfmt: str, encoding: str) -> None:
    """One side in integer word ids, the other in words (Kaldi's lattice-best-path or nbest-to-ctm
    output before utils/int2sym.pl) would score as a WER near 100 %: refuse it.  Judged on the first
    lines of each file; a side counts as ids when every sampled word (at least 5) is an integer, and
    the other side as words when fewer than half of its sampled words are integers."""
    sides = [(ref, sample_words(ref, rfmt, encoding)), (hyp, sample_words(hyp, hfmt, encoding))]
    for (path, words), (other_path, other) in (sides, sides[::-1]):
        if len(words) >= 5 and all(w.isdigit() for w in words) and other \
                and sum(w.isdigit() for w in other) < len(other) / 2:
            raise MismatchError(f"its words are integers ({' '.join(words[:5])} ...) while {other_path}'s are "
                                "words: word ids? map them to words first (Kaldi: utils/int2sym.pl -f 2- "
                                "words.txt for text, -f 5 for a CTM)", path=str(path))
