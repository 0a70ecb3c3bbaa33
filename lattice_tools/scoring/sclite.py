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
import math
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import MismatchError
from .align import Alignment, AlignOptions, align_batch
from .counts import ErrorCounts
from .network import IGNORE_TAGS, from_ctm_items, lower_case, parse_transcript


@dataclass(frozen=True)
class SegmentScore:
    """One scored segment (STM segment or trn utterance)."""

    id: str
    speaker: str
    file: str
    channel: str
    start: float | None
    end: float | None
    ref_text: str
    alignment: Alignment
    labels: str | None = None      # STM labels as sclite prints them, e.g. ``<o,f0,male>``

    @property
    def counts(self) -> ErrorCounts:
        return self.alignment.counts


@dataclass(frozen=True)
class ScoreResult:
    """Per-segment alignments, per-speaker and overall counts (speakers in order of appearance)."""

    segments: tuple
    speakers: OrderedDict[str, ErrorCounts]
    total: ErrorCounts
    ref_name: str = ""
    hyp_name: str = ""
    warnings: tuple = ()
    options: dict = field(default_factory=dict)
    nce: float | None = None                               # sclite's normalized cross-entropy of the
    speaker_nce: dict = field(default_factory=dict)        # CTM confidences (None: no confidences)


def normalized_cross_entropy(pairs_with_conf: list, counts: ErrorCounts) -> float:
    """sclite's NCE of hypothesis confidences: ``(H(C) + sum_correct log2 p + sum_wrong log2(1-p)) / H(C)``
    with ``H(C) = -(n log2 pc + (N-n) log2(1-pc))``, ``n`` correct and ``N`` hypothesis words, ``pc = n/N``;
    confidences are clipped to [1e-7, 1 - 1e-7].  ``pairs_with_conf``: (op, confidence) of every
    aligned pair that has a hypothesis word (rounded to C floats as sclite stores them).  0 when
    there are none (as sclite prints)."""
    if not pairs_with_conf:
        return 0.0
    s = 0.0
    # sclite keeps a CTM confidence in a C float (wtokstr1.h): round it the same way
    confs = np.asarray([c for _, c in pairs_with_conf], np.float32).astype(np.float64).tolist()
    for (op, _), conf in zip(pairs_with_conf, confs, strict=False):
        conf = min(max(conf, 0.0000001), 0.9999999)
        s += math.log2(conf) if op == "C" else math.log2(1.0 - conf)
    n, wrong = counts.correct, counts.substitutions + counts.insertions
    pc = n / (n + wrong)
    h = -((n * math.log2(pc) if n else 0.0) + (wrong * math.log2(1.0 - pc) if wrong else 0.0))
    return (h + s) / h if h else float("nan")


_COUNT_FIELDS = ("correct", "substitutions", "deletions", "insertions", "ref_words", "segments", "segment_errors",
                 "optional_correct", "optional_deleted")


def _sum_counts(counts: list) -> ErrorCounts:
    """ErrorCounts.sum without one intermediate object per term (many segments)."""
    return ErrorCounts(**{f: sum(getattr(c, f) for c in counts) for f in _COUNT_FIELDS})


def _f32(x: float) -> float:
    """sclite reads STM times with ``TEXT_atof`` into a C float: compare with that rounding."""
    return float(np.float32(x))


@functools.lru_cache(maxsize=1 << 14)
def _fold(s: str, case_sensitive: bool, language: str | None = None) -> str:
    return s if case_sensitive else lower_case(s, language)


def _is_ignore(text: str) -> bool:
    up = text.upper()
    return "IGNORE" in up and any(t in up for t in IGNORE_TAGS)


def _block_times(block) -> list:
    """(start, duration) of every word line of an ALT block, the ``@`` lines included: the CTM
    reader turns ``@`` into an empty alternative, but sclite still uses its times to place the
    block, so they are recovered from the block's source lines when available."""
    times = [((w.start or 0.0), (w.duration or 0.0)) for alt in block.alternatives for w in alt]
    for line in block.raw or ():
        if "@" not in line:
            continue
        parts = line.split()
        if len(parts) >= 5 and parts[4] == "@":
            try:
                times.append((float(parts[2]), float(parts[3])))
            except ValueError:
                pass
    return times


def _sclite_drops_a_word(block) -> bool:
    """True when a block's source has an empty alternative written as nothing (``<ALT>`` right after
    ``<ALT_BEGIN>`` or ``<ALT>``, not as ``@``) followed by another alternative: sclite's
    ``Network_create_from_WTOKE`` then silently skips the first word of that next alternative
    (checked with Debian sclite).  We score the block as written and warn."""
    tags = []
    for line in block.raw or ():
        parts = line.split()
        if len(parts) >= 5:
            tags.append(parts[4] if parts[4] in ("<ALT_BEGIN>", "<ALT>", "<ALT_END>") else "w")
    for prev, cur, nxt in zip(tags, tags[1:], tags[2:], strict=False):
        if prev in ("<ALT_BEGIN>", "<ALT>") and cur == "<ALT>" and nxt == "w":
            return True
    return False


def _item_mid(item) -> float:
    """Midpoint sclite uses to place a CTM item: a word's ``t1 + dur/2``; for an ALT block the
    largest midpoint of its words (0 when it has none)."""
    from ..io.ctm import CtmAltBlock

    if isinstance(item, CtmAltBlock):
        mid = 0.0
        for t1, dur in _block_times(item):
            m = t1 + dur / 2.0
            if m > mid:
                mid = m
        return mid
    return (item.start or 0.0) + (item.duration or 0.0) / 2.0


def _sort_items(items: list) -> list:
    """Stable sort by start time; an item without any time keeps its place (it takes the time of
    the item before it).

    A file/channel with ALT blocks keeps its file order, as sclite always does (checked with Debian
    sclite): a block's place cannot be told from its words' times -- in a sausage, an alternative
    often starts before the previous slot's words, and empty alternatives have no time."""
    from ..io.ctm import CtmAltBlock

    if any(isinstance(it, CtmAltBlock) for it in items):
        return list(items)
    keys, last = [], float("-inf")
    for it in items:
        if isinstance(it, CtmAltBlock):
            times = _block_times(it)
            t = min(t1 for t1, _ in times) if times else None
        else:
            t = it.start
        if t is None:
            t = last
        keys.append(t)
        last = t
    order = sorted(range(len(items)), key=keys.__getitem__)
    return [items[i] for i in order]


def _item_t1(item) -> float:
    from ..io.ctm import CtmAltBlock

    if isinstance(item, CtmAltBlock):
        times = _block_times(item)
        return min(t1 for t1, _ in times) if times else 0.0
    return item.start or 0.0


def _item_span(item):
    """(t1, t2) of an item's words (for ``-m``); for blocks the per-word spans."""
    from ..io.ctm import CtmAltBlock

    if isinstance(item, CtmAltBlock):
        return [(t1, t1 + dur) for t1, dur in _block_times(item)]
    t1 = item.start or 0.0
    return [(t1, t1 + (item.duration or 0.0))]


def merge_single_segment(segments: Sequence, case_sensitive: bool = False, case_language: str | None = None):
    """Seed 001 section 2.4: one segment per file/channel/speaker spanning all its segments, text
    concatenated in time order.  ``IGNORE_TIME_SEGMENT_IN_SCORING`` segments are kept as they are
    (their words are removed before scoring by :func:`score_stm_ctm`)."""
    from ..io.stm import StmSegment

    groups: OrderedDict[tuple, list] = OrderedDict()
    ignored = []
    for seg in segments:
        if _is_ignore(seg.text):
            ignored.append(seg)
            continue
        key = (_fold(seg.file, case_sensitive, case_language), _fold(seg.channel, case_sensitive, case_language),
               _fold(seg.speaker, case_sensitive, case_language))
        groups.setdefault(key, []).append(seg)
    out = []
    for key, segs in groups.items():
        segs = sorted(segs, key=lambda s: s.start)
        text = " ".join(s.text.strip() for s in segs if s.text.strip())
        first = segs[0]
        out.append(StmSegment(first.file, first.channel, first.speaker, min(s.start for s in segs),
                              max(s.end for s in segs), first.labels, text, first.lineno))
    return out, ignored



def _check_channels(hyp_chans, ref_chans, allow_missing: bool, hyp_name: str, ref_name: str, warnings: list) -> None:
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
    if extra:
        msg = "CTM file/channel not in the STM: " + ", ".join(f"{f} {c}" for f, c in extra)
        if not allow_missing:
            raise MismatchError(msg + " (--allow-missing ignores them)", path=hyp_name or None)
        warnings.append(msg + " (ignored)")
    if missing:
        msg = "STM file/channel without CTM words: " + ", ".join(f"{f} {c}" for f, c in missing)
        if not allow_missing:
            raise MismatchError(msg + " (--allow-missing scores them as deletions)", path=ref_name or None)
        warnings.append(msg + " (scored as deletions)")

def score_stm_ctm(stm, ctm_items: Iterable, *, optional_deletable: bool = False, fragments: bool = False,
                  case_sensitive: bool = False, mode: str = "sclite", single_segment: bool = False,
                  allow_missing: bool = False, reduce: Sequence[str] = (), case_language: str | None = None,
                  ref_name: str = "", hyp_name: str = "") -> ScoreResult:
    """Score CTM items (words and ALT blocks) against an STM, exactly as sclite does.

    Args:
      stm: an :class:`~lattice_tools.io.stm.Stm` or a sequence of ``StmSegment``.
      ctm_items: ``CtmWord``/``CtmAltBlock`` items (any order: they are grouped by file and
        channel and, within a file/channel without ALT blocks, sorted stably by start time, which
        is what sclite needs its input to be; with ALT blocks the file order is kept, as sclite does).
      optional_deletable: sclite ``-D``; fragments: sclite ``-F``; case_sensitive: sclite ``-s``.
      mode: ``"sclite"`` weights or ``"levenshtein"`` (1/1/1).
      single_segment: merge each file/channel/speaker's segments into one (seed 001 section 2.4);
        hypothesis words inside ``IGNORE_TIME_SEGMENT_IN_SCORING`` spans are dropped first.
      allow_missing: a CTM file/channel absent from the STM is ignored with a warning, an STM
        file/channel without CTM words is scored as all deletions (what sclite does, test16_*);
        otherwise both raise MismatchError.
      case_language: how case is folded (:func:`~lattice_tools.scoring.network.lower_case`):
        None = ASCII only, sclite's default; ``"turkish"`` = sclite ``-e utf-8 babel_turkish``, ...
      reduce: sclite ``-m``: ``"ref"`` drops reference segments outside the span of the
        hypothesis words of their file/channel, ``"hyp"`` drops hypothesis words outside the span
        of the (kept) reference segments.
    Returns:
      :class:`ScoreResult`.
    Raises:
      MismatchError as described above.
    """
    from ..io.ctm import CtmAltBlock

    segments = list(getattr(stm, "segments", stm))
    if ref_name == "":
        ref_name = str(getattr(stm, "path", "") or "")
    if hyp_name == "":
        hyp_name = str(getattr(ctm_items, "path", "") or "")
    reduce = tuple(reduce)
    for r in reduce:
        if r not in ("ref", "hyp"):
            raise ValueError(f"reduce items must be 'ref' or 'hyp', not {r!r}")
    if _fast_path_applies(segments, fragments, single_segment, reduce):
        from ._fast_score import items_from_objects

        if not isinstance(ctm_items, (list, tuple)):
            ctm_items = list(ctm_items)
        hyp = items_from_objects(ctm_items, functools.partial(_fold, case_sensitive=case_sensitive,
                                                              language=case_language))
        return _score_hyp_items(segments, hyp, optional_deletable=optional_deletable,
                                case_sensitive=case_sensitive, mode=mode, allow_missing=allow_missing,
                                case_language=case_language, ref_name=ref_name, hyp_name=hyp_name)
    warnings: list[str] = []

    # --- group the STM by file/channel (sclite folds the whole line's case unless -s)
    chan_segs: OrderedDict[tuple, list] = OrderedDict()
    ignored_spans: dict = {}
    if single_segment:
        merged, ignored = merge_single_segment(segments, case_sensitive, case_language)
        for seg in ignored:
            key = (_fold(seg.file, case_sensitive, case_language), _fold(seg.channel, case_sensitive, case_language))
            ignored_spans.setdefault(key, []).append((seg.start, seg.end))
        segments = merged
    for seg in segments:
        key = (_fold(seg.file, case_sensitive, case_language), _fold(seg.channel, case_sensitive, case_language))
        chan_segs.setdefault(key, []).append(seg)
    for key in chan_segs:
        chan_segs[key].sort(key=lambda s: s.start)

    chan_items: OrderedDict[tuple, list] = OrderedDict()
    for item in ctm_items:
        key = (_fold(item.file, case_sensitive, case_language), _fold(item.channel, case_sensitive, case_language))
        chan_items.setdefault(key, []).append(item)
    for key in chan_items:
        chan_items[key] = _sort_items(chan_items[key])

    odd = [it for its in chan_items.values() for it in its
           if isinstance(it, CtmAltBlock) and _sclite_drops_a_word(it)]
    if odd:
        warnings.append(f"{len(odd)} ALT block(s) (first at line {odd[0].lineno}) have an empty alternative "
                        "written without '@' before another alternative; sclite would drop that "
                        "alternative's first word, they are scored as written")
    _check_channels(chan_items, chan_segs, allow_missing, hyp_name, ref_name, warnings)

    jobs = []  # (segment, items)
    for key, segs in chan_segs.items():
        items = chan_items.get(key, [])
        if key in ignored_spans:
            spans = ignored_spans[key]
            items = [it for it in items if not any(s <= _item_mid(it) < e for s, e in spans)]
        keep = [True] * len(segs)
        if "ref" in reduce and items:
            h_t1 = _item_t1(items[0])
            last = items[-1]
            h_t2 = max(t2 for _, t2 in _item_span(last)) if _item_span(last) else 0.0
            for i, seg in enumerate(segs):
                if h_t1 >= _f32(seg.end) or h_t2 <= _f32(seg.start):
                    keep[i] = False
        if "hyp" in reduce:
            kept = [s for s, k in zip(segs, keep, strict=False) if k]
            if kept:
                # sclite keeps these bounds in C floats
                bt = _f32(min(_f32(s.start) for s in kept))
                et = _f32(max(_f32(s.end) for s in kept))
                new_items = []
                for it in items:
                    if isinstance(it, CtmAltBlock):
                        usable = any(not (t1 > et or t2 < bt) for t1, t2 in _item_span(it))
                        if usable:
                            new_items.append(it)
                    else:
                        (t1, t2), = _item_span(it)
                        if not (t1 > et or t2 < bt):
                            new_items.append(it)
                items = new_items
        pos = 0
        n_items = len(items)
        mids = [_item_mid(it) for it in items]
        for i, seg in enumerate(segs):
            if not keep[i]:
                continue
            if i == len(segs) - 1:
                take = n_items
            else:
                take = pos
                seg_end = _f32(seg.end)
                while take < n_items and mids[take] < seg_end:
                    take += 1
            seg_items = items[pos:take]
            pos = take
            if _is_ignore(seg.text):
                continue
            jobs.append((seg, seg_items))

    refs = [parse_transcript(seg.text, case_sensitive=case_sensitive, language=case_language,
                             where=f"{ref_name}:{seg.lineno}" if ref_name else None) for seg, _ in jobs]
    hyps = [from_ctm_items(items, case_sensitive=case_sensitive, language=case_language) for _, items in jobs]
    options = AlignOptions(mode=mode, optional_deletable=optional_deletable, fragments=fragments)
    alignments = align_batch(refs, hyps, options)

    scored = []
    per_speaker: OrderedDict[str, list] = OrderedDict()
    # sclite reports NCE when any word of the CTM has a confidence (one without counts as 0) and
    # leaves null words out of it
    has_conf = any(h.num_arcs for h in hyps) and any(not np.isnan(h.confidence).all() for h in hyps if h.num_arcs)
    conf_pairs: OrderedDict[str, list] = OrderedDict()
    for (seg, _), ali, hnet in zip(jobs, alignments, hyps, strict=False):
        spk = _fold(seg.speaker, case_sensitive, case_language)
        n = len(per_speaker.setdefault(spk, []))
        per_speaker[spk].append(ali.counts)
        if has_conf:
            conf_pairs.setdefault(spk, []).extend(
                (p.op, float(np.nan_to_num(hnet.confidence[p.hyp_arc], nan=0.0))) for p in ali.pairs
                if p.hyp_arc >= 0 and hnet.words[p.hyp_arc] is not None)
        scored.append(SegmentScore(f"({spk}-{n:03d})", spk, _fold(seg.file, case_sensitive, case_language),
                                   _fold(seg.channel, case_sensitive, case_language), seg.start, seg.end, seg.text, ali,
                                   None if not seg.labels else _fold(f"<{seg.labels}>", case_sensitive, case_language)))
    speakers = OrderedDict((k, _sum_counts(v)) for k, v in per_speaker.items())
    total = _sum_counts(list(speakers.values()))
    nce, speaker_nce = None, {}
    if has_conf:
        speaker_nce = {k: normalized_cross_entropy(conf_pairs.get(k, []), c) for k, c in speakers.items()}
        nce = normalized_cross_entropy([x for v in conf_pairs.values() for x in v], total)
    return ScoreResult(tuple(scored), speakers, total, ref_name, hyp_name,
                       tuple(warnings), dict(optional_deletable=optional_deletable, fragments=fragments,
                                             case_sensitive=case_sensitive, mode=mode,
                                             single_segment=single_segment, case_language=case_language),
                       nce, speaker_nce)


def _fast_path_applies(segments, fragments, single_segment, reduce) -> bool:
    """The chain-reference engine (:mod:`._fast_score`) covers everything but ``-F``,
    ``single_segment``, ``reduce`` and references with alternations."""
    if fragments or single_segment or reduce:
        return False
    return not any("{" in seg.text or "}" in seg.text for seg in segments)


def _score_hyp_items(segments, hyp, *, optional_deletable, case_sensitive, mode, allow_missing, case_language,
                     ref_name, hyp_name) -> ScoreResult:
    """:func:`score_stm_ctm` on :class:`~._fast_score.HypItems` with chain references (same
    assignment of items to segments, warnings and errors as the general code above)."""
    from ._fast_score import score_chain_jobs, sorted_item_order

    warnings: list[str] = []
    chan_segs: OrderedDict[tuple, list] = OrderedDict()
    for seg in segments:
        key = (_fold(seg.file, case_sensitive, case_language), _fold(seg.channel, case_sensitive, case_language))
        chan_segs.setdefault(key, []).append(seg)
    for key in chan_segs:
        chan_segs[key].sort(key=lambda s: s.start)
    chan_order = dict(zip(hyp.chans, sorted_item_order(hyp), strict=False))
    if hyp.drops_word.any():
        first = next(int(hyp.lineno[idx[hyp.drops_word[idx]][0]]) for idx in chan_order.values()
                     if hyp.drops_word[idx].any())
        n_odd = int(hyp.drops_word.sum())
        warnings.append(f"{n_odd} ALT block(s) (first at line {first}) have an empty alternative "
                        "written without '@' before another alternative; sclite would drop that "
                        "alternative's first word, they are scored as written")
    _check_channels(chan_order, chan_segs, allow_missing, hyp_name, ref_name, warnings)

    empty = np.zeros(0, np.int64)
    job_segs, job_items = [], []
    for key, segs in chan_segs.items():
        items = chan_order.get(key, empty)
        mids_a = hyp.mid[items]
        n_items = len(mids_a)
        if n_items < 2 or bool(np.all(mids_a[1:] >= mids_a[:-1])):
            # midpoints in order (the usual case): each segment takes up to the first midpoint >= its end
            ends = np.array([seg.end for seg in segs], np.float32).astype(np.float64)
            takes = np.maximum.accumulate(np.searchsorted(mids_a, ends, side="left"))
            takes[-1] = n_items
            takes = takes.tolist()
        else:
            mids = mids_a.tolist()
            takes, take = [], 0
            for seg in segs[:-1]:
                seg_end = _f32(seg.end)
                while take < n_items and mids[take] < seg_end:
                    take += 1
                takes.append(take)
            takes.append(n_items)
        pos = 0
        for seg, take in zip(segs, takes, strict=False):
            seg_items = items[pos:take]
            pos = take
            if _is_ignore(seg.text):
                continue
            job_segs.append(seg)
            job_items.append(seg_items)
    ref_tokens = [seg.text.split() for seg in job_segs]
    alignments, conf, counts = score_chain_jobs(ref_tokens, job_items, hyp, optional_deletable=optional_deletable,
                                                case_sensitive=case_sensitive, language=case_language, mode=mode)
    scored = []
    n_of_speaker: dict = {}
    spk_of_job = []
    new = SegmentScore.__new__
    for seg, ali in zip(job_segs, alignments, strict=False):
        spk = _fold(seg.speaker, case_sensitive, case_language)
        spk_of_job.append(spk)
        n = n_of_speaker.get(spk, 0)
        n_of_speaker[spk] = n + 1
        # (the frozen dataclass's __init__ without its per-field object.__setattr__: 20k segments)
        score = new(SegmentScore)
        score.__dict__.update(id=f"({spk}-{n:03d})", speaker=spk, file=_fold(seg.file, case_sensitive, case_language),
                              channel=_fold(seg.channel, case_sensitive, case_language), start=seg.start,
                              end=seg.end, ref_text=seg.text, alignment=ali,
                              labels=None if not seg.labels else _fold(f"<{seg.labels}>", case_sensitive,
                                                                         case_language))
        scored.append(score)
    # per-speaker sums (speakers in order of first appearance) on the counts matrix
    spk_index = {k: i for i, k in enumerate(n_of_speaker)}
    codes = np.fromiter(map(spk_index.__getitem__, spk_of_job), np.int64, count=len(spk_of_job))
    sums = np.zeros((len(spk_index), counts.shape[1]), np.int64)
    np.add.at(sums, codes, counts)
    speakers = OrderedDict((k, ErrorCounts(*sums[i].tolist())) for k, i in spk_index.items())
    total = ErrorCounts(*sums.sum(axis=0).tolist()) if len(spk_index) else _sum_counts([])
    nce, speaker_nce = None, {}
    if conf is not None and job_segs:
        conf_pairs: OrderedDict[str, list] = OrderedDict()
        for spk, pairs in zip(spk_of_job, conf, strict=False):
            conf_pairs.setdefault(spk, []).extend(pairs)
        speaker_nce = {k: normalized_cross_entropy(conf_pairs.get(k, []), c) for k, c in speakers.items()}
        nce = normalized_cross_entropy([x for v in conf_pairs.values() for x in v], total)
    return ScoreResult(tuple(scored), speakers, total, ref_name, hyp_name,
                       tuple(warnings), dict(optional_deletable=optional_deletable, fragments=False,
                                             case_sensitive=case_sensitive, mode=mode,
                                             single_segment=False, case_language=case_language),
                       nce, speaker_nce)


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
              ref_name: str = "", hyp_name: str = "") -> ScoreResult:
    """Score trn hypotheses against trn references, exactly as ``sclite ... trn -i <id_type>``.

    Utterances are matched by id (case folded unless ``case_sensitive``); they are scored in
    hypothesis order, speakers come from the ids (:func:`trn_speaker`).  A hypothesis id without
    reference raises MismatchError (sclite exits); a reference without hypothesis raises
    MismatchError unless ``allow_missing`` (then it is skipped, as sclite does).  Both sides may
    contain alternations, optional words and ``@``.
    """
    ref_utts = list(ref_utts)
    hyp_utts = list(hyp_utts)
    refs: dict = {}
    for u in ref_utts:
        uid = _fold(u.utt_id, case_sensitive, case_language)
        first = refs.setdefault(uid, u)
        # sclite refuses a repeated id; a repeat with the same words cannot change a count
        if first is not u and first.text != u.text:
            raise MismatchError(f"utterance id '{u.utt_id}' appears twice in the reference with different "
                                f"words (lines {first.lineno} and {u.lineno})", path=ref_name or None, key=u.utt_id)
    jobs = []
    seen: dict = {}
    for u in hyp_utts:
        uid = _fold(u.utt_id, case_sensitive, case_language)
        if uid not in refs:
            raise MismatchError(f"no reference transcript for utterance '{u.utt_id}'", path=hyp_name or None,
                                line=u.lineno or None)
        if uid in seen:
            # it would be scored twice (sclite refuses it)
            raise MismatchError(f"utterance id '{u.utt_id}' appears twice in the hypothesis (lines "
                                f"{seen[uid].lineno} and {u.lineno})", path=hyp_name or None, key=u.utt_id)
        seen[uid] = u
        jobs.append((uid, refs[uid], u))
    missing = [u.utt_id for k, u in refs.items() if k not in seen]
    warnings = []
    if missing:
        msg = f"{len(missing)} reference utterance(s) without hypothesis, e.g. '{missing[0]}'"
        if not allow_missing:
            raise MismatchError(msg + " (--allow-missing skips them)", path=ref_name or None)
        warnings.append(msg + " (skipped, as sclite does)")
    rnets = [parse_transcript(r.text, case_sensitive=case_sensitive, language=case_language,
                              where=f"{ref_name}:{r.lineno}" if ref_name else None) for _, r, _ in jobs]
    hnets = [parse_transcript(h.text, case_sensitive=case_sensitive, language=case_language,
                              where=f"{hyp_name}:{h.lineno}" if hyp_name else None) for _, _, h in jobs]
    options = AlignOptions(mode=mode, optional_deletable=optional_deletable, fragments=fragments)
    alignments = align_batch(rnets, hnets, options)
    scored = []
    per_speaker: OrderedDict[str, list] = OrderedDict()
    for (uid, r, h), ali in zip(jobs, alignments, strict=False):
        spk = trn_speaker(uid, id_type)
        per_speaker.setdefault(spk, []).append(ali.counts)
        scored.append(SegmentScore(f"({uid})", spk, "", "", None, None, r.text, ali))
    speakers = OrderedDict((k, _sum_counts(v)) for k, v in per_speaker.items())
    return ScoreResult(tuple(scored), speakers, _sum_counts(list(speakers.values())), ref_name, hyp_name,
                       tuple(warnings), dict(optional_deletable=optional_deletable, fragments=fragments,
                                             case_sensitive=case_sensitive, mode=mode, id_type=id_type,
                                             case_language=case_language))


def _ctm_words(item) -> list:
    from ..io.ctm import CtmAltBlock

    return [w for alt in item.alternatives for w in alt] if isinstance(item, CtmAltBlock) else [item]


def _map_ctm_words(items, fn):
    """``items`` with every word ``w`` replaced by ``fn(w)`` (None drops it); items and blocks that
    ``fn`` leaves alone are kept as they are (blocks keep their source lines, ``@`` times included)."""
    from ..io.ctm import CtmAltBlock, CtmItems

    out = []
    for it in items:
        if isinstance(it, CtmAltBlock):
            alts = tuple(tuple(x for x in (fn(w) for w in alt) if x is not None) for alt in it.alternatives)
            same = all(len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=False)) for a, b in zip(alts, it.alternatives, strict=False))
            out.append(it if same else CtmAltBlock(it.file, it.channel, alts, it.lineno))
        else:
            w = fn(it)
            if w is not None:
                out.append(w)
    return CtmItems(out, list(getattr(items, "comments", [])) if len(out) == len(items) else [],
                    getattr(items, "path", ""))


def select_ctm_types(items, types: Sequence[str] = ()):
    """NIST RT CTM token types: keep the words whose type is in ``types`` (a word without a type
    counts as ``lex``); ``()`` keeps everything, as sclite does (it ignores the type field).
    ``("lex",)`` is what ``hubscr.pl -h rt-stt`` scores.  Returns (items, note): the note says how
    many non-lexical tokens were scored or dropped (None when there were none)."""
    counts: dict = {}
    for it in items:
        for w in _ctm_words(it):
            if w.type is not None and w.type != "lex":
                counts[w.type] = counts.get(w.type, 0) + 1
    if not types:
        if not counts:
            return items, None
        what = ", ".join(f"{n} {t}" for t, n in sorted(counts.items()))
        return items, (f"the CTM has non-lexical tokens ({what}); they are scored as words, as sclite does "
                       "(hubscr -h rt-stt scores only 'lex' tokens: --ctm-type lex)")
    dropped = sum(1 for it in items for w in _ctm_words(it) if (w.type or "lex") not in types)
    if not dropped:
        return items, None
    kept = _map_ctm_words(items, lambda w: w if (w.type or "lex") in types else None)
    return kept, f"{dropped} CTM token(s) not of type {'/'.join(types)} left out"


def _without_rt_fields(items):
    """CTM items with the type and speaker fields of NIST RT lines dropped (and an ``NA``
    confidence left out), as ``hubscr.pl`` cuts them before csrfilt: csrfilt would filter those
    fields as words."""
    if not any(w.type or w.speaker for it in items for w in _ctm_words(it)):
        return items
    return _map_ctm_words(items, lambda w: dataclasses.replace(w, type=None, speaker=None, raw=None)
                          if w.type or w.speaker else w)


def score_files(ref: str, hyp: str, *, glms: Sequence[str] = (), ref_format: str | None = None,
                hyp_format: str | None = None, optional_deletable: bool = False, fragments: bool = False,
                case_sensitive: bool = False, mode: str = "sclite", single_segment: bool = False,
                allow_missing: bool = False, reduce: Sequence[str] = (), id_type: str = "spu_id",
                case_language: str | None = None, nested_alternatives: str = "flatten",
                ctm_types: Sequence[str] = (), encoding: str = "utf-8") -> ScoreResult:
    """Read, GLM-filter and score files (what ``lattice-tools score`` does).

    Args:
      ref: an STM, trn or Kaldi ``text`` file; hyp: a CTM (with or without ALT blocks), trn or Kaldi
        ``text`` file.  Formats come from ``ref_format``/``hyp_format``, else from a ``.stm``/``.trn``/
        ``.ctm`` extension, else from the content
        (:func:`lattice_tools.io.detect.detect_transcript_format`; ambiguous content is refused).
      glms: GLM files applied in order to both sides, exactly like ``csrfilt.sh`` (see
        :mod:`lattice_tools.scoring.glm`).
      nested_alternatives: a GLM rule with an alternation that rewrites a word inside an ALT block
        makes csrfilt write a nested ALT block, which sclite mis-scores: ``"flatten"`` (default)
        flattens it (:func:`~lattice_tools.io.ctm.flatten_nested_block`: alternatives in listed
        order, so sclite's ties still favour the earlier one) and warns, ``"error"`` refuses.
      encoding: text encoding of the reference, hypothesis and GLM files (e.g. ``latin-1``,
        ``gb2312``); reports written by :func:`~lattice_tools.scoring.reports.write_reports` use it
        too and pad their columns by its bytes, as sclite (which works on bytes) does.
      ctm_types: NIST RT CTM token types to score (:func:`select_ctm_types`); ``()`` scores every
        token, as sclite does, with a warning when some are not ``lex``.
      the other arguments: as :func:`score_stm_ctm` / :func:`score_trn`.
    Raises:
      FormatError for unreadable inputs, MismatchError for inputs that do not correspond.
    """
    from ..errors import FormatError
    from ..io.ctm import read_ctm
    from ..io.detect import detect_transcript_format
    from ..io.kaldi_data import read_kaldi_text
    from ..io.stm import read_stm
    from ..io.trn import read_trn

    if nested_alternatives not in ("flatten", "error"):
        raise ValueError(f"nested_alternatives must be 'flatten' or 'error', not {nested_alternatives!r}")
    _check_encoding(encoding)
    rfmt = detect_transcript_format(ref, ref_format, allowed=("stm", "trn", "text"), role="reference",
                                    option="--ref-format", encoding=encoding)
    hfmt = detect_transcript_format(hyp, hyp_format, allowed=("ctm", "trn", "text"), role="hypothesis",
                                    option="--hyp-format", empty="ctm" if rfmt == "stm" else "trn", encoding=encoding)
    if rfmt == "stm" and hfmt != "ctm":
        raise FormatError(f"an STM reference needs a CTM hypothesis (got {hfmt}; --hyp-format overrides the "
                          "detected format)", path=hyp)
    if rfmt != "stm" and hfmt == "ctm":
        raise FormatError(f"a {rfmt} reference needs a trn or text hypothesis (got ctm; --ref-format overrides "
                          "the detected format)", path=hyp)
    # Kaldi text is trn without the parentheses: read as trn utterances, scored and filtered as trn
    ref_obj = (read_stm(ref, encoding) if rfmt == "stm" else read_trn(ref, encoding) if rfmt == "trn"
               else read_kaldi_text(ref, encoding))
    if not len(ref_obj.segments if rfmt == "stm" else ref_obj):
        # (sclite crashes on an empty trn reference; a WER of 0 over nothing would look like a result)
        raise FormatError(f"expected at least one {'segment' if rfmt == 'stm' else 'utterance'} in the "
                          "reference, found none", path=str(ref))
    if rfmt == "stm" and not glms and _fast_path_applies(list(ref_obj.segments), fragments, single_segment, reduce):
        # columnar CTM reading (no object per line); None when the file needs the exact reader
        import os

        from ._fast_ctm import read_ctm_columns
        from ._fast_score import heap_reuse

        try:
            big = os.path.getsize(hyp) > (16 << 20)
        except OSError:
            big = False
        with heap_reuse(big):
            hyp_items = read_ctm_columns(hyp, functools.partial(_fold, case_sensitive=case_sensitive,
                                                                language=case_language), encoding)
            if hyp_items is not None:
                result = _score_hyp_items(list(ref_obj.segments), hyp_items, optional_deletable=optional_deletable,
                                          case_sensitive=case_sensitive, mode=mode, allow_missing=allow_missing,
                                          case_language=case_language, ref_name=str(ref), hyp_name=str(hyp))
                return dataclasses.replace(result, options={**result.options, "encoding": encoding})
    hyp_obj = (read_ctm(hyp, encoding) if hfmt == "ctm" else read_trn(hyp, encoding) if hfmt == "trn"
               else read_kaldi_text(hyp, encoding))
    glm_warnings = []
    if hfmt == "ctm":
        hyp_obj, note = select_ctm_types(hyp_obj, ctm_types)
        if note:
            glm_warnings.append(note)
        if glms:
            # csrfilt reads every field after the fifth as words: give it what hubscr gives it
            hyp_obj = _without_rt_fields(hyp_obj)
    if glms:
        from .glm import GlmFilterOptions, apply_glm

        ref_options = GlmFilterOptions(purpose="ref", encoding=encoding)
        hyp_options = GlmFilterOptions(purpose="hyp", encoding=encoding)
        for g in glms:
            ref_obj = apply_glm(g, ref_obj, fmt="trn" if rfmt == "text" else rfmt, options=ref_options)
            try:
                hyp_obj = apply_glm(g, hyp_obj, fmt="trn" if hfmt == "text" else hfmt, options=hyp_options,
                                    nested=nested_alternatives)
            except FormatError as exc:
                if "nested <ALT_BEGIN>" not in str(exc):
                    raise
                raise FormatError(f"the GLM {g} made a nested ALT block in the hypothesis (line {exc.line} of "
                                  "its filtered CTM), which sclite mis-scores; expected no nesting, or "
                                  "--nested-alternatives flatten to flatten them", path=str(hyp)) from None
            n_nested = getattr(hyp_obj, "nested_blocks", 0)
            if n_nested:
                glm_warnings.append(f"the GLM {g} made {n_nested} nested ALT block(s) in the hypothesis; "
                                    "they were flattened (alternatives in listed order, so ties still favour "
                                    "the earlier one); sclite would mis-score them")
    common = dict(optional_deletable=optional_deletable, fragments=fragments, case_sensitive=case_sensitive,
                  mode=mode, allow_missing=allow_missing, case_language=case_language, ref_name=str(ref),
                  hyp_name=str(hyp))
    if rfmt == "stm":
        result = score_stm_ctm(ref_obj, hyp_obj, single_segment=single_segment, reduce=reduce, **common)
    else:
        if single_segment or reduce:
            raise ValueError("single_segment and reduce apply to STM/CTM scoring only")
        result = score_trn(ref_obj, hyp_obj, id_type=id_type, **common)
    return dataclasses.replace(result, warnings=tuple(glm_warnings) + result.warnings,
                               options={**result.options, "encoding": encoding})


def _check_encoding(encoding: str) -> None:
    import codecs

    try:
        codecs.lookup(encoding)
    except LookupError:
        from ..errors import LatticeToolsError

        raise LatticeToolsError(f"unknown text encoding {encoding!r} (--encoding); e.g. utf-8, latin-1, gb2312") from None
