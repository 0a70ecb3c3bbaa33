"""F4DE ``KWSEval -g``: segment-based scoring, whose trials are the speech and non-speech segments of the
ECF excerpts (F4DE's ``KWSSegAlign``)."""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from ..core.errors import MismatchError
from ..io.keyword_search.ecf import Ecf
from ..io.keyword_search.kwlist import KwList
from ..io.keyword_search.kwslist import Detection, KwsList
from ..io.keyword_search.rttm import RttmRecord
from .references import ReferenceIndex, RefWord, round4
from .trials import Block, Trials


@dataclass(eq=False)
class _Segment:
    type: str
    file: str
    chan: str
    bt: float
    et: float


def _segments_of(speakers: list[RttmRecord], by_spkr: dict, file: str, chan: str, bt: float, dur: float
                 ) -> list[_Segment]:
    """F4DE's ``segmentsFromTimeframe``: an excerpt cut into speech (merged speaker turns) and non-speech
    segments; each word of a turn is tagged with the segment holding it."""
    segs: list[_Segment] = []
    et = round4(bt + dur)

    def last_et():
        return segs[-1].et if segs else bt

    for sp in sorted(speakers, key=lambda r: r.tbeg):
        sp_bt, sp_et = sp.tbeg, round4(sp.tbeg + sp.dur)
        if sp_bt < bt or sp_et > et:
            continue
        if sp_bt > last_et():
            segs.append(_Segment("NONSPEECH", file, chan, last_et(), round4(sp_bt)))
        if last_et() == sp_bt:
            segs.append(_Segment("SPEECH", file, chan, sp_bt, sp_et))
        elif segs and segs[-1].type == "SPEECH" and sp_et > last_et():
            segs[-1].et = sp_et
        if segs:
            last = segs[-1]
            for tok in by_spkr.get((file, chan, sp.speaker), ()):
                if tok.bt >= last.bt and tok.et <= last.et:
                    tok.seg = last
    if last_et() < et:
        segs.append(_Segment("NONSPEECH", file, chan, last_et(), et))
    return segs


class _KeywordBlocks:
    """Where one keyword's trials go: its overall block (``Pooled`` when pooled) and its block in each of its
    term sets (``condition`` gives a set's trials), made at its first trial as F4DE's ``addTrial`` makes them."""

    def __init__(self, main: Trials, name: str, kwid: str, text: str, groups: list[str],
                 condition: Callable[[str], Trials]):
        self.main, self.name, self.kwid, self.text, self.groups, self.condition = main, name, kwid, text, groups, condition
        self.blocks: list[Block] = []

    def add(self, score: float | None, decision: bool | None, is_targ: bool) -> None:
        if not self.blocks:
            self.blocks = [self.main.block(self.name, self.text),
                           *(self.condition(g).block(self.kwid, self.text) for g in self.groups)]
        for b in self.blocks:
            b.add(score, decision, is_targ)


def score_segments(ecf: Ecf, references: Sequence[RttmRecord], kwl: KwList, kwslist: KwsList,
                    refs: ReferenceIndex, texts: dict[str, str], find_threshold: float, include_no_targets: bool,
                    just_system_terms: bool, *, term_sets: dict[str, list[re.Pattern]] | None = None,
                    channel_patterns: Sequence[re.Pattern] = (), pooled: bool = False
                    ) -> tuple[Trials, dict[str, Trials]]:
    """F4DE's ``KWSSegAlign::alignSegments`` (``-g``): the overall trials and those of each term set.

    ``channel_patterns`` (F4DE ``-N``) keep the segments of the recordings whose ``FILE/CHANNEL`` one of them
    matches (whole string): T is the number of those segments, hits elsewhere fall into no segment, and
    reference occurrences elsewhere do not count.  (F4DE 3.5.0 means to filter the occurrences so but dies
    there -- "Not a HASH reference" -- whenever a keyword has a reference occurrence: its filter reads a
    file name from the list of an occurrence's words.  The result equals F4DE's on an ECF that names only
    those recordings.)

    ``term_sets`` (F4DE ``-T``): each trial of a keyword also goes to the sets whose patterns match its id
    (whole string, any case); each set's T is the overall one.  A keyword that got no overall block (no trial
    at all; with ``pooled``: every keyword) is added as an empty block to every set, unless
    ``just_system_terms``.

    ``pooled`` (F4DE ``-P``): every keyword's trials go into one block ``Pooled`` (without text).  As F4DE's
    segment alignment does (unlike its occurrence alignment), every keyword of the KWlist is then also an empty
    overall block unless ``just_system_terms``: these count in the keyword averages with
    ``include_no_targets``.  Term-set trials stay per keyword.
    """
    speakers: dict[tuple[str, str], list[RttmRecord]] = {}
    for r in references:
        if r.type == "SPEAKER":
            speakers.setdefault((r.file, r.channel), []).append(r)
    segments: list[_Segment] = []
    for e in ecf.excerpts:
        segments += _segments_of(speakers.get((e.file, e.channel), []), refs.by_spkr, e.file, e.channel, e.tbeg,
                                 e.dur)
    if not segments:
        raise MismatchError("segment-based scoring found no segment in the ECF excerpts")
    kept_channel: dict[tuple[str, str], bool] = {}

    def kept(file: str, chan: str) -> bool:
        k = kept_channel.get((file, chan))
        if k is None:
            k = kept_channel[file, chan] = (not channel_patterns
                                            or any(p.fullmatch(f"{file}/{chan}") for p in channel_patterns))
        return k

    segments = [sg for sg in segments if kept(sg.file, sg.chan)]
    if not segments:
        raise MismatchError("the file/channel filter leaves no segment of the ECF excerpts to score",
                            path=ecf.path or None)
    seg_lookup: dict[tuple[str, str], list[_Segment]] = {}
    for sg in segments:
        seg_lookup.setdefault((sg.file, sg.chan), []).append(sg)
    main = Trials("Segment", 0.0, 1.0, include_no_targets, tot_trials=len(segments))
    sets = term_sets or {}
    conditions: dict[str, Trials] = {}

    def condition(group: str) -> Trials:   # made when first needed, as F4DE does
        tr = conditions.get(group)
        if tr is None:
            tr = conditions[group] = Trials(group, 0.0, 1.0, include_no_targets, tot_trials=len(segments))
        return tr

    dets_by_kw: dict[str, list[Detection]] = {}
    for d in kwslist.detections:
        dets_by_kw.setdefault(d.kwid, []).append(d)
    order = list(dict.fromkeys([*kwslist.kwids, *dets_by_kw]))   # first appearance; no list scan per keyword
    for kwid in order:
        if kwid not in texts:
            raise MismatchError(f"keyword {kwid!r} of the system output is not in the KWlist",
                                path=kwslist.path or None, key=kwid)
    # Unlike the occurrence alignment, F4DE's segment alignment scores the keywords missing from the
    # system output even with -j (which then only leaves out their empty blocks).
    seen = set(order)
    order += [t.kwid for t in kwl.terms if t.kwid not in seen]
    for kwid in order:
        text = "" if pooled else texts[kwid]
        groups = [g for g, patterns in sets.items() if any(p.fullmatch(kwid) for p in patterns)]
        add = _KeywordBlocks(main, "Pooled" if pooled else kwid, kwid, text, groups, condition).add

        best: dict[int, tuple[_Segment, Detection]] = {}
        for d in dets_by_kw.get(kwid, ()):
            mid = d.tbeg + d.dur / 2.0
            seg = next((sg for sg in seg_lookup.get((d.file, d.channel), ()) if sg.bt <= mid <= sg.et), None)
            if seg is None:
                continue
            if id(seg) not in best or d.score > best[id(seg)][1].score:
                best[id(seg)] = (seg, d)
        sys_by_chan: dict[tuple[str, str], list[tuple[_Segment, Detection]]] = {}
        for seg, d in best.values():
            sys_by_chan.setdefault((d.file, d.channel), []).append((seg, d))
        occ_by_chan: dict[tuple[str, str], list[list[RefWord]]] = {}
        for occ in refs.find_occurrences(texts[kwid], find_threshold):
            occ_by_chan.setdefault((occ[0].file, occ[0].chan), []).append(occ)
        for key, occs in occ_by_chan.items():
            if not kept(*key):
                occs = []     # (F4DE's channel filter of the occurrences; their hits are in no kept segment)
            # (a reference word's seg is a _Segment here: this module set it)
            ref_segs = {id(o[0].seg): cast(_Segment, o[0].seg) for o in occs if o[0].seg is not None and o[0].seg is o[-1].seg}
            # F4DE's _seg_aligner: a hit whose midpoint lies in a target segment is no false alarm; each target
            # segment keeps one of its hits (F4DE: the last in hash order; here: the best-scoring) and further
            # hits matching it vanish from the trials.  Only overlapping ECF excerpts (whose segments overlap)
            # can give a target segment two hits.
            mapped: dict[int, Detection] = {}
            for _seg, d in sys_by_chan.get(key, ()):
                mid = d.tbeg + d.dur / 2.0
                hit = [rid for rid, rs in ref_segs.items() if rs.bt <= mid <= rs.et]
                if not hit:
                    add(d.score, d.decision, False)
                for rid in hit:
                    if rid not in mapped or d.score > mapped[rid].score:
                        mapped[rid] = d
            for rid in ref_segs:
                best_hit = mapped.get(rid)
                if best_hit is None:
                    add(None, None, True)
                else:
                    add(best_hit.score, best_hit.decision, True)
        for key, pairs in sys_by_chan.items():
            if key in occ_by_chan:
                continue
            for _seg, d in pairs:
                add(d.score, d.decision, False)
    if not just_system_terms:
        # F4DE adds an empty block for each keyword without an overall block (pooled: every keyword), to the
        # overall trials and to every term set.
        for t in kwl.terms:
            if t.kwid in main.blocks:
                continue
            text = "" if pooled else texts[t.kwid]
            main.block(t.kwid, text)
            for g in sets:
                condition(g).block(t.kwid, text)
    return main, conditions


__all__ = ["score_segments"]
