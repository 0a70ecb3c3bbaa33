"""What both STM/CTM scoring engines share: case folding, STM grouping, the channel checks, sclite's
segment assignment of CTM items, and the assembly of the :class:`~.results.ScoreResult` (speaker
numbering, per-speaker sums, NCE).  Written once, so a semantic change is made once.

Segment assignment (sclite's ``segment_hyp_for_utt``, checked against Debian sclite): per file and
channel, CTM items (a whole ALT block counting as one item whose midpoint is the *largest* midpoint
``start + duration/2`` of its words) are handed out in time order: the current STM segment takes
items while their midpoint is ``< end`` of the segment -- so words before a segment or in a gap
go to the next segment -- and the last segment of the file/channel takes everything left.
"""
from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from ..core.counts import ErrorCounts
from ..core.errors import MismatchError
from ..io.transcripts.ctm import CtmAltBlock
from .ctm_items import sclite_drops_a_word, sort_items
from .inputs import match_keys
from .network import lower_case
from .results import ScoreResult, SegmentScore, normalized_cross_entropy


def f32(x: float) -> float:
    """sclite reads STM times with ``TEXT_atof`` into a C float: compare with that rounding."""
    return float(np.float32(x))


@functools.lru_cache(maxsize=1 << 14)
def fold(s: str, case_sensitive: bool, language: str | None = None) -> str:
    return s if case_sensitive else lower_case(s, language)


def group_segments(segments: Sequence, case_sensitive: bool, language: str | None) -> OrderedDict:
    """STM segments by folded (file, channel), in order of first appearance, each sorted by start time."""
    chan_segs: OrderedDict[tuple, list] = OrderedDict()
    for seg in segments:
        key = (fold(seg.file, case_sensitive, language), fold(seg.channel, case_sensitive, language))
        chan_segs.setdefault(key, []).append(seg)
    for key in chan_segs:
        chan_segs[key].sort(key=lambda s: s.start)
    return chan_segs


def check_channels(hyp_chans, ref_chans, allow_missing: bool, hyp_name: str, ref_name: str, warnings: list) -> None:
    """CTM file/channels missing from the STM, or STM file/channels without CTM words, are an error
    unless ``allow_missing`` (then they are ignored / scored as deletions, as sclite does, with a
    warning)."""
    extra = [k for k in hyp_chans if k not in ref_chans]
    missing = [k for k in ref_chans if k not in hyp_chans]
    if not len(hyp_chans) and missing:
        # an empty hypothesis (a system that output nothing): sclite scores every reference word
        # as deleted; unambiguous, so it needs no option, only a warning
        warnings.append("the hypothesis has no words: every reference word is scored as a deletion (as sclite does)")
        return
    # the same file under other channel names on the two sides: a channel convention mismatch
    # (e.g. a CTM written with channel 1 against an STM with channel A), not missing data
    missing_files = {f: c for f, c in reversed(missing)}
    clash = [(f, c, missing_files[f]) for f, c in extra if f in missing_files]
    if clash:
        f, hc, rc = clash[0]
        msg = (f"channels disagree: file {f!r} has channel {hc!r} in the hypothesis and {rc!r} in the reference "
               f"({len(clash)} file(s)); rewrite the CTM with the reference's channel (--channel {rc} on the "
               f"command that wrote it)")
        if not allow_missing:
            raise MismatchError(msg, path=hyp_name or None)
        warnings.append(msg)
    match_keys(hyp_chans, ref_chans, allow_missing=allow_missing, warnings=warnings, hyp_what="CTM file/channel",
               ref_what="STM file/channel", hyp_name=hyp_name, ref_name=ref_name, ref_format="stm",
               show=lambda k: f"{k[0]} {k[1]}")


def side_items(ctm_items, chan_segs, *, case_sensitive: bool, case_language: str | None, allow_missing: bool,
               hyp_name: str, ref_name: str, warnings: list) -> OrderedDict:
    """CTM items grouped by (folded) file and channel, each side's in sclite's order
    (:func:`~lattice_tools.scoring.ctm_items.sort_items`), checked against the reference's sides
    (:func:`check_channels`), with sclite's warning for ALT blocks whose word it drops: what every STM/CTM
    scorer reads before it aligns."""
    chan_items: OrderedDict[tuple, list] = OrderedDict()
    for item in ctm_items:
        key = (fold(item.file, case_sensitive, case_language), fold(item.channel, case_sensitive, case_language))
        chan_items.setdefault(key, []).append(item)
    for key in chan_items:
        chan_items[key] = sort_items(chan_items[key])
    odd = [it for its in chan_items.values() for it in its if isinstance(it, CtmAltBlock) and sclite_drops_a_word(it)]
    if odd:
        warnings.append(drops_word_warning(len(odd), odd[0].lineno))
    check_channels(chan_items, chan_segs, allow_missing, hyp_name, ref_name, warnings)
    return chan_items


def drops_word_warning(n_blocks: int, first_line) -> str:
    """The warning about ALT blocks sclite would read wrongly (``ctm_items.sclite_drops_a_word``)."""
    return (f"{n_blocks} ALT block(s) (first at line {first_line}) have an empty alternative "
            "written without '@' before another alternative; sclite would drop that "
            "alternative's first word, they are scored as written")


def assign_items(mids: np.ndarray, segs: Sequence, keep: Sequence[bool] | None = None) -> list:
    """sclite's segment assignment on one file/channel: for each of its segments (sorted by start)
    the slice ``(first, stop)`` of its items (midpoints ``mids``, in scoring order), or None for a
    segment not kept (``keep``, sclite ``-m ref``: it takes nothing and the next kept one goes on)."""
    n_items = len(mids)
    if keep is None and (n_items < 2 or bool(np.all(mids[1:] >= mids[:-1]))):
        # midpoints in order (the usual case): each segment takes up to the first midpoint >= its end
        ends = np.array([seg.end for seg in segs], np.float32).astype(np.float64)
        takes = np.maximum.accumulate(np.searchsorted(mids, ends, side="left"))
        takes[-1] = n_items
        takes = takes.tolist()
        return list(zip([0, *takes[:-1]], takes, strict=True))
    mids_l = mids.tolist()
    spans: list = []
    pos = 0
    for i, seg in enumerate(segs):
        if keep is not None and not keep[i]:
            spans.append(None)
            continue
        if i == len(segs) - 1:
            take = n_items
        else:
            take = pos
            seg_end = f32(seg.end)
            while take < n_items and mids_l[take] < seg_end:
                take += 1
        spans.append((pos, take))
        pos = take
    return spans


def build_result(job_segs: list, alignments: list, counts: np.ndarray, confidences: list | None, *,
                 case_sensitive: bool, language: str | None, warnings: list, ref_name: str, hyp_name: str,
                 options: dict) -> ScoreResult:
    """The :class:`ScoreResult` of scored STM segments: segment ids ``(speaker-NNN)`` numbered per
    speaker in scoring order, per-speaker sums (speakers in order of first appearance), and, when
    ``confidences`` (per job, the (op, confidence) of its aligned hypothesis words) is given, sclite's
    NCE per speaker and overall.  ``counts[j]``: the :class:`ErrorCounts` fields of job ``j``."""
    scored = []
    n_of_speaker: dict = {}
    spk_of_job = []
    new = SegmentScore.__new__
    for seg, ali in zip(job_segs, alignments, strict=True):
        spk = fold(seg.speaker, case_sensitive, language)
        spk_of_job.append(spk)
        n = n_of_speaker.get(spk, 0)
        n_of_speaker[spk] = n + 1
        # (the frozen dataclass's __init__ without its per-field object.__setattr__: 20k segments)
        score = new(SegmentScore)
        score.__dict__.update(id=f"({spk}-{n:03d})", speaker=spk, file=fold(seg.file, case_sensitive, language),
                              channel=fold(seg.channel, case_sensitive, language), start=seg.start,
                              end=seg.end, ref_text=seg.text, alignment=ali,
                              labels=None if not seg.labels else fold(f"<{seg.labels}>", case_sensitive, language))
        scored.append(score)
    spk_index = {k: i for i, k in enumerate(n_of_speaker)}
    codes = np.fromiter(map(spk_index.__getitem__, spk_of_job), np.int64, count=len(spk_of_job))
    sums = np.zeros((len(spk_index), counts.shape[1]), np.int64)
    np.add.at(sums, codes, counts)
    speakers = OrderedDict((k, ErrorCounts(*sums[i].tolist())) for k, i in spk_index.items())
    total = ErrorCounts(*sums.sum(axis=0).tolist()) if len(spk_index) else ErrorCounts.sum([])
    nce, speaker_nce = None, {}
    if confidences is not None and job_segs:
        conf_pairs: OrderedDict[str, list] = OrderedDict()
        for spk, pairs in zip(spk_of_job, confidences, strict=True):
            conf_pairs.setdefault(spk, []).extend(pairs)
        speaker_nce = {k: normalized_cross_entropy(conf_pairs.get(k, []), c) for k, c in speakers.items()}
        nce = normalized_cross_entropy([x for v in conf_pairs.values() for x in v], total)
    return ScoreResult(tuple(scored), speakers, total, ref_name, hyp_name, tuple(warnings), options, nce, speaker_nce)
