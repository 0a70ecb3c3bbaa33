"""Keyword-search scoring identical to NIST F4DE ``KWSEval`` (occurrence-based): ATWV, MTWV, OTWV, STWV.

What is computed, and how (each rule checked against F4DE 3.5.0's code and golden tests):

* **Reference occurrences** of a term (``find_occurrences``): LEXEME records of one speaker, in time order;
  the first word is looked up exactly (lower-cased on both sides when the KWlist says
  ``compareNormalize="lowercase"``), each next word must be the speaker's next LEXEME, equal ignoring
  case, starting at most ``find_threshold`` (0.5 s) after the previous word ends (gap rounded to 0.1 ms).
  ``frag`` and ``fp`` words never start a term (and, not matching a term word, break one).  An
  occurrence counts when its first word lies inside an ECF excerpt.
* **Hits** count when ``[tbeg, tbeg + dur]`` lies inside an ECF excerpt.
* **Matching** per (term, file, channel): a hit may match an occurrence when its midpoint lies within
  ``[ref_begin - 0.5 s, ref_end + 0.5 s]``; the kernel value ``1 + 1e-8 * time_overlap/ref_dur +
  1e-6 * (score - min)/(max - min)`` ranks pairs; hits and occurrences are paired 1:1 by a maximum
  cardinality, maximum kernel-sum matching (:mod:`lattice_tools.kws.matching`).
* **Trials**: a matched hit is a target trial (correct when YES, a miss when NO), an unmatched occurrence
  a miss, an unmatched hit a non-target trial (false alarm when YES).  ``T`` = the ECF's total excerpt
  duration (``splitcts`` halves) / trials per second, rounded.
* **Measures** per keyword ``k`` with ``N_true(k) > 0`` (all keywords with ``include_no_targets``):
  ``P_miss = 1 - N_corr/N_true``, ``P_FA = N_FA / (T - N_true)``; ``TWV = 1 - mean P_miss - beta * mean P_FA``
  with ``beta = C/V * (1/P_target - 1) = 999.9``.  ATWV uses the system's decisions; MTWV the best single
  threshold among the distinct scores (every hit with score >= threshold is YES; the lowest threshold
  wins ties); OTWV the best threshold per keyword; STWV every hit YES and no false alarms (the
  keyword-averaged recall of the hit list).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..core.errors import MismatchError
from ..io.keyword_search.ecf import Ecf
from ..io.keyword_search.kwlist import KeywordTerm, KwList
from ..io.keyword_search.kwslist import KwsList
from ..io.keyword_search.rttm import RttmRecord
from .measures import KwsScore, Metric, OperatingPoint, TermResult, evaluate
from .occurrence_alignment import ExcerptTable, align_occurrences
from .occurrence_trials import alignment_rows, fill_blocks, positions_by_keyword
from .references import ReferenceIndex, char_split, f4de_kwtext, perl_num
from .segment_scoring import score_segments
from .trials import Block, Trials


@dataclass(frozen=True)
class AlignmentRow:
    """One line of F4DE's alignment CSV."""

    kwid: str
    text: str
    file: str
    channel: str
    ref_tbeg: str
    ref_tend: str
    sys_tbeg: str
    sys_tend: str
    sys_score: str
    sys_decision: str
    alignment: str


@dataclass
class KwsEvaluation:
    """The result of :func:`score_kws`: the overall scores, the conditional ones, the alignment."""

    overall: KwsScore
    conditions: dict[str, KwsScore]
    # Makes the (kwid, file, channel, (first word, last word) or None, detection index or None, alignment label)
    # tuples of the alignment when asked for (most runs never print it).
    alignment_source: Callable[[], list[tuple]] | None = field(repr=False, default=None)
    language: str = ""
    system_id: str = ""
    kwslist: KwsList | None = field(repr=False, default=None)
    texts: dict[str, str] = field(repr=False, default_factory=dict)

    @cached_property
    def raw_alignment(self) -> list[tuple]:
        return self.alignment_source() if self.alignment_source is not None else []

    @property
    def alignment(self) -> list[AlignmentRow]:
        kws = self.kwslist
        raw = kws.raw if kws is not None else ()
        cols = kws.columns if kws is not None else None
        rows = []
        for kwid, file, chan, occ, i, label in self.raw_alignment:
            if occ is not None:
                ref_b, ref_e = occ[0].raw_bt, f"{occ[-1].et:.4f}"
            else:
                ref_b = ref_e = ""
            if i is not None:
                assert cols is not None, "a detection comes from the kwslist"
                # F4DE prints tbeg and score as written, the end as a Perl number.
                tbeg, dur, score = cols.tbeg[i], cols.dur[i], cols.score[i]
                tb, _du, sc = raw[i] if raw else (perl_num(tbeg), perl_num(dur), perl_num(score))
                sys_f = (tb, perl_num(tbeg + dur), sc, "YES" if cols.decision[i] else "NO")
            else:
                sys_f = ("", "", "", "")
            rows.append(AlignmentRow(kwid, self.texts[kwid], file, chan, ref_b, ref_e, *sys_f, label))
        return rows


def score_kws(ecf: Ecf, references: Sequence[RttmRecord], kwlist: KwList | Sequence[KeywordTerm],
              kwslist: KwsList, *, find_threshold: float = 0.5, similarity_threshold: float = 0.5,
              include_no_targets: bool = False, just_system_terms: bool = False,
              trials_per_second: float = 1.0, prob_of_term: float = 0.0001, cost: float = 0.1, value: float = 1.0,
              char_split_text: bool = False, not_ascii: bool = False, delete_hyphens: bool = False,
              lowercase: bool | None = None, source_type_groups: dict[str, list[str]] | None = None,
              attribute_queries: Sequence[str] = (), term_sets: dict[str, list[str]] | None = None,
              file_channels: Sequence[str] = (), pooled: bool = False, outside_ecf: str = "error",
              segment_based: bool = False, xml_correct: bool = False) -> KwsEvaluation:
    """Score a system's detections like F4DE's ``KWSEval.pl`` (occurrence alignment, or segment alignment
    with ``segment_based``).

    Args:
      ecf, references, kwlist, kwslist: the evaluation's ECF, the reference LEXEMEs (from an RTTM or a CTM),
        the keyword list and the system output.
      find_threshold: largest gap (s) between consecutive words of a reference occurrence (F4DE ``-F``).
      similarity_threshold: a hit may match an occurrence when its midpoint is at most this far (s) outside
        it (F4DE ``-S``).
      include_no_targets: average over keywords without reference occurrences too (F4DE ``-inc``).
      just_system_terms: only score keywords present in the kwslist (F4DE ``-j``).
      trials_per_second, prob_of_term, cost, value: F4DE ``-n``, ``-p``, ``-k``, ``-K``.
      char_split_text, not_ascii, delete_hyphens: F4DE's ``-x charsplit|notASCII|deleteHyphens``.
      lowercase: compare lower-cased first words (default: the KWlist's ``compareNormalize``).
      source_type_groups: conditional scores per group of ECF source types (F4DE ``-Y NAME:type,type``).
      attribute_queries: conditional scores per value of KWlist ``kwinfo`` attributes (F4DE ``-q``).
      term_sets: conditional scores per named set of keyword ids, ``{name: [kwid regex, ...]}`` (F4DE ``-T``;
        each regex matches a whole kwid, ignoring case).  Its T is the overall one.  As in F4DE, a keyword
        with neither hits nor occurrences is added (as an empty block) to every set, which counts with
        ``include_no_targets``.  At most one of ``source_type_groups``, ``attribute_queries``, ``term_sets``.
      file_channels: score only these recordings: regular expressions over ``FILE/CHANNEL`` (F4DE ``-N``; each
        matches the whole string, ignoring case).  T counts only their excerpts; occurrences elsewhere do not
        count; a hit elsewhere is dropped when its keyword has a reference occurrence on its channel and, as
        in F4DE, counted (a false alarm when YES) when it has none there.
      pooled: F4DE ``-P``: all keywords' trials in one block (``Pooled``): occurrence-weighted rates
        ``P_miss = N_miss/N_true`` and ``P_FA = N_FA/(T - N_true)`` over all keywords, and the DET curve of
        those (instead of keyword-averaged ones).  Conditional scores stay per keyword.
      outside_ecf: ``"error"`` (default): a hit for a file/channel the ECF does not name is an error;
        ``"ignore"``: such hits are dropped, as F4DE does silently.
      segment_based: F4DE ``-g``: the trials are the speech/non-speech segments of the ECF excerpts (from the
        RTTM's SPEAKER turns, which ``references`` must then include); a keyword is a target of a segment
        holding a whole occurrence; the best-scoring hit whose midpoint falls in a segment is its detection.
        T is the number of segments.  ``term_sets``, ``file_channels`` and ``pooled`` work as F4DE's segment
        alignment makes them (:func:`~lattice_tools.kws.segment_scoring.score_segments`): the filter keeps the
        segments of the matching recordings; with ``pooled`` every keyword is also an empty block (counted with
        ``include_no_targets``), and pooled trials with as many targets as segments are a MismatchError.  Not
        with ``source_type_groups`` or ``attribute_queries``.
      xml_correct: read the texts as the XML and Unicode standards say instead of as F4DE does (the default,
        for the numbers people publish): a ``<kwtext>``'s entities decoded (F4DE keeps ``&amp;`` as it is,
        :func:`~lattice_tools.kws.references.f4de_kwtext`) and Python's lowercasing (F4DE's Perl ``lc`` makes
        a final capital sigma σ, not ς).  The kwslist's file names are read by
        :func:`~lattice_tools.io.keyword_search.kwslist.read_kwslist` (its ``xml_correct``; :func:`score_kws_files` passes it).
    Raises:
      MismatchError for kwslist keywords missing from the KWlist or hits outside the ECF's files;
      FormatError for decisions no single threshold explains, or an empty term.
    """
    if outside_ecf not in ("error", "ignore"):
        raise ValueError("outside_ecf must be 'error' or 'ignore'")
    if sum(bool(x) for x in (source_type_groups, attribute_queries, term_sets)) > 1:
        raise MismatchError("give at most one of source-type groups, attribute queries and term sets "
                            "(one condition at a time, as in F4DE)")
    channel_patterns = [_anchored(p, "file/channel filter") for p in file_channels]
    term_patterns = {name: [_anchored(p, f"term set {name!r}") for p in ids]
                     for name, ids in (term_sets or {}).items()}
    if isinstance(kwlist, KwList):
        kwl = kwlist
    else:
        kwl = KwList(tuple(kwlist))
    if lowercase is None:
        lowercase = kwl.compare_normalize == "lowercase"
    texts: dict[str, str] = {}
    for t in kwl.terms:
        if t.kwid in texts:
            raise MismatchError(f"duplicate keyword id {t.kwid!r} in the keyword list", key=t.kwid)
        text = t.text if xml_correct else f4de_kwtext(t.text)
        if char_split_text:
            text = char_split(text, not_ascii, delete_hyphens)
        texts[t.kwid] = text
    refs = ReferenceIndex(references, lowercase=lowercase, char_split_text=char_split_text, not_ascii=not_ascii,
                          delete_hyphens=delete_hyphens, unicode_lowercase=xml_correct)
    excerpts = ExcerptTable(ecf)
    kws_path = kwslist.path
    cols = kwslist.columns
    if outside_ecf == "error":
        _check_inside_ecf(ecf, kwslist, excerpts)
    channel_kept = None
    scored_ecf = ecf
    if channel_patterns:
        channel_kept = np.zeros(excerpts.n_channels, dtype=bool)
        for (file, chan), code in excerpts.code.items():
            if code >= 0:
                channel_kept[code] = any(p.fullmatch(f"{file}/{chan}") for p in channel_patterns)
        if not channel_kept.any():
            some = next(iter(sorted(ecf.channels())), ("FILE", "1"))
            raise MismatchError(f"the file/channel filter ({', '.join(file_channels)}) matches none of the ECF's "
                                f"recordings: each pattern must match a whole FILE/CHANNEL, e.g. "
                                f"'{some[0]}/{some[1]}'", path=ecf.path or None)
        scored_ecf = Ecf(tuple(e for e in ecf.excerpts if any(p.fullmatch(f"{e.file}/{e.channel}")
                                                              for p in channel_patterns)),
                         ecf.source_signal_duration, ecf.language, ecf.version, ecf.path)
    tot_dur = scored_ecf.total_duration()
    metric_args = (cost, value, prob_of_term)
    if segment_based:
        if source_type_groups or attribute_queries:
            raise MismatchError("source-type groups and attribute queries are not supported with segment-based "
                                "scoring")
        main, cond = score_segments(ecf, references, kwl, kwslist, refs, texts, find_threshold, include_no_targets,
                                    just_system_terms, term_sets=term_patterns, channel_patterns=channel_patterns,
                                    pooled=pooled)
        if pooled:
            _check_trials(main, ecf, "segments")
        params = {"cost": cost, "value": value, "prob_of_term": prob_of_term, "trials_per_second": trials_per_second}
        overall = evaluate(main, Metric(main.tot_trials, *metric_args), kws_path)
        conditions = {g: evaluate(cond[g], Metric(cond[g].tot_trials, *metric_args), kws_path) for g in sorted(cond)}
        for sc in [overall, *conditions.values()]:
            sc.params = params
            sc.segment_based = True
        return KwsEvaluation(overall, conditions, None, kwl.language, kwslist.system_id, kwslist, texts)
    main = Trials("Occurrence", tot_dur, trials_per_second, include_no_targets)
    conds = _Conditions(ecf, kwl, source_type_groups, attribute_queries, trials_per_second, include_no_targets,
                        term_sets=term_patterns, scored_ecf=scored_ecf)
    order = _keyword_order(kwslist.kwids, cols.kwid, texts, kwl, just_system_terms, kws_path)
    min_max = ((kwslist.min_score, kwslist.max_score)
               if kwslist.min_score is not None and kwslist.max_score is not None else None)
    al = align_occurrences(order, texts, kwslist, refs, excerpts, find_threshold=find_threshold,
                           similarity_threshold=similarity_threshold, min_max=min_max, channel_kept=channel_kept)
    fill_blocks(main, al, texts, cols)
    if pooled:
        main.blocks = _pooled_blocks(main.blocks)
    if conds.active:
        conds.add_all(al, texts, cols, refs, pooled=pooled)

    for tr in [main, *conds.trials.values()]:
        _check_trials(tr, ecf, "occurrences")
    cond = conds.trials
    overall = evaluate(main, Metric(main.tot_trials, *metric_args), kws_path)
    conditions = {g: evaluate(cond[g], Metric(cond[g].tot_trials, *metric_args), kws_path) for g in sorted(cond)}
    params = {"cost": cost, "value": value, "prob_of_term": prob_of_term, "trials_per_second": trials_per_second}
    overall.params = params
    for c in conditions.values():
        c.params = params
    return KwsEvaluation(overall, conditions, lambda: alignment_rows(al, cols, refs), kwl.language,
                         kwslist.system_id, kwslist, texts)


def _check_trials(tr: Trials, ecf: Ecf, kind: str) -> None:
    """MismatchError for an evaluated block with at least T targets: P_FA = N_FA / (T - N_true) is meaningless
    there (F4DE dies dividing by zero, or prints a negative rate).  With occurrence scoring T counts trials per
    second of the excerpts; with segment scoring (checked for the pooled block only: one keyword has at most
    one target per segment, so its P_FA is undefined only when it occurs in every segment, which F4DE prints
    as NA) T is the number of segments."""
    for b in tr.blocks.values():
        if b.n_true >= tr.tot_trials and (tr.include or b.n_true > 0):
            if kind == "occurrences":
                raise MismatchError(f"keyword {b.kwid!r} has {b.n_true} reference occurrences in the ECF excerpts, "
                                    f"not fewer than the number of trials T = {tr.tot_trials} (total excerpt "
                                    f"duration x trials per second); give a longer ECF or more trials per second",
                                    path=ecf.path or None, key=b.kwid)
            raise MismatchError(f"the pooled trials have {b.n_true} target segments (over all keywords), not fewer "
                                f"than the number of trials T = {tr.tot_trials} (segments of the ECF excerpts): the "
                                f"pooled false-alarm rate N_FA / (T - N_true) is meaningless (F4DE prints a negative "
                                f"or undefined rate); score without pooling", path=ecf.path or None, key=b.kwid)


def _anchored(pattern: str, what: str) -> re.Pattern:
    """A case-insensitive regular expression (matched against whole strings); MismatchError when invalid."""
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise MismatchError(f"invalid regular expression {pattern!r} in the {what}: {exc}", key=pattern) from None


def _pooled_blocks(blocks: dict[str, Block]) -> dict[str, Block]:
    """F4DE's pooled trials (``-P``): every keyword's trials in one block named ``Pooled`` (none when no
    keyword has a trial; keywords without trials add nothing)."""
    real = [b for b in blocks.values() if b.n_true or b.n_sys]
    if not real:
        return {}
    yes = [b.min_yes for b in real if b.min_yes is not None]
    no = [b.max_no for b in real if b.max_no is not None]
    pooled = Block("Pooled", "", sorted(s for b in real for s in b.targ), sorted(s for b in real for s in b.nontarg),
                   sum(b.yes_targ for b in real), sum(b.no_targ for b in real), sum(b.omitted for b in real),
                   sum(b.yes_nontarg for b in real), sum(b.no_nontarg for b in real),
                   min(yes) if yes else None, max(no) if no else None)
    return {"Pooled": pooled}


def _keyword_order(listed_kwids: Sequence[str], detected_kwids: Sequence[str], texts: dict, kwl: KwList,
                   just_system_terms: bool, kws_path: str) -> list[str]:
    """The keywords in F4DE's scoring order: the system output's keyword lists, then keywords that only
    have detections (first detection first), then -- unless ``just_system_terms`` -- the KWlist's other
    terms.  A system keyword missing from the KWlist (``texts``) is a :class:`MismatchError`."""
    order = list(listed_kwids)
    seen = set(order)
    order += [kwid for kwid in dict.fromkeys(detected_kwids) if kwid not in seen]
    for kwid in order:
        if kwid not in texts:
            raise MismatchError(f"keyword {kwid!r} of the system output is not in the KWlist",
                                path=kws_path or None, key=kwid)
    if not just_system_terms:
        seen = set(order)
        order += [t.kwid for t in kwl.terms if t.kwid not in seen]
    return order


def _check_inside_ecf(ecf: Ecf, kwslist: KwsList, excerpts: ExcerptTable) -> None:
    """MismatchError naming the first hit (in file order) for a file/channel the ECF does not name."""
    cols = kwslist.columns
    for pair in dict.fromkeys(zip(cols.file, cols.channel, strict=True)):
        if excerpts.code[pair] < 0:
            i = next(j for j, p in enumerate(zip(cols.file, cols.channel, strict=True)) if p == pair)
            line = kwslist.lines[i] if kwslist.lines else None
            raise MismatchError(f"hit of {cols.kwid[i][:80]!r} in file {pair[0][:80]!r} channel {pair[1][:40]!r}, "
                                f"which the ECF ({ecf.path or 'in memory'}) does not name; F4DE drops such hits "
                                f"silently (e.g. when a subset of the data is scored): pass outside_ecf='ignore' / "
                                f"--ignore-outside-ecf to drop them too", path=kwslist.path or None, line=line)


class _Conditions:
    """F4DE's conditional scores: the trials of each group of ECF source types (``-Y``), each value of
    KWlist ``kwinfo`` attributes (``-q``) or each set of keyword ids (``-T``), created as trials reach them."""

    def __init__(self, ecf: Ecf, kwl: KwList, source_type_groups: dict[str, list[str]] | None,
                 attribute_queries: Sequence[str], trials_per_second: float, include_no_targets: bool, *,
                 term_sets: dict[str, list[re.Pattern]] | None = None, scored_ecf: Ecf | None = None):
        # ``ecf`` gives a trial's source type; ``scored_ecf`` (the file/channel filter's excerpts) the durations.
        self.ecf, self.scored_ecf, self.kwl = ecf, scored_ecf or ecf, kwl
        self.source_type_groups: dict[str, list[str]] = source_type_groups or {}
        self.attribute_queries = attribute_queries
        self.term_sets = term_sets or {}
        self.trials_per_second, self.include_no_targets = trials_per_second, include_no_targets
        self.active = bool(source_type_groups or attribute_queries or term_sets)
        self.trials: dict[str, Trials] = {}
        self.excerpt_types: dict[tuple[str, str], list[tuple[float, float, str]]] = {}
        for e in ecf.excerpts:
            self.excerpt_types.setdefault((e.file, e.channel), []).append((e.tbeg, e.tend, e.source_type))

    def source_groups(self, file, chan, bt, et) -> list[str]:
        st = None
        for tb, te, s in self.excerpt_types.get((file, chan), ()):
            if bt >= tb and et <= te:
                st = s
                break
        if st is None:
            return []
        return [g for g, types in self.source_type_groups.items()
                if any(re.fullmatch(x, st, flags=re.I) for x in types)]

    def attribute_groups(self, kwid) -> list[str]:
        out = []
        attrs = self.kwl.info.get(kwid, {})
        for q in self.attribute_queries:
            parts = re.split(r"\s+&&\s+", q)
            got = []
            for p in parts:
                m = re.match(r"^(.+):regex=(.+)$", p)
                name, rx = (m.group(1), m.group(2)) if m else (p, None)
                v = attrs.get(name)
                if v is not None and (rx is None or re.search(rx, v)):
                    got.append(f"{name}-{v}")
            if len(got) == len(parts):
                out.append(" X ".join(got))
        return out

    def term_groups(self, kwid) -> list[str]:
        return [g for g, patterns in self.term_sets.items() if any(p.fullmatch(kwid) for p in patterns)]

    def group_duration(self, group: str) -> float:
        if self.source_type_groups:
            return self.scored_ecf.total_duration(self.source_type_groups[group])
        return self.scored_ecf.total_duration()

    def group_trials(self, group: str) -> Trials:
        tr = self.trials.get(group)
        if tr is None:
            tr = self.trials[group] = Trials(group, self.group_duration(group), self.trials_per_second,
                                             self.include_no_targets)
        return tr

    def groups_of(self, kwid, file, chan, bt, et) -> list[str]:
        if self.source_type_groups:
            return self.source_groups(file, chan, bt, et)
        if self.attribute_queries:
            return self.attribute_groups(kwid)
        if self.term_sets:
            return self.term_groups(kwid)
        return []

    def add(self, kwid, text, score, decision, is_targ, file, chan, bt, et) -> None:
        """A trial of keyword ``kwid`` in every condition it belongs to."""
        if self.active:
            for g in self.groups_of(kwid, file, chan, bt, et):
                self.group_trials(g).block(kwid, text).add(score, decision, is_targ)

    def add_all(self, al, texts: dict[str, str], cols, refs: ReferenceIndex, pooled: bool = False) -> None:
        """The trials of an :class:`OccurrenceAlignment`, keyword by keyword in alignment order.

        With ``pooled`` (F4DE ``-P``) the overall trials have no per-keyword block, so F4DE treats every
        keyword as one without trials: each is added (empty, if it has no trials there) to every condition
        it could belong to, and the blocks carry no text."""
        hits_of = positions_by_keyword(al.h_kw[al.h_in], np.nonzero(al.h_in)[0], len(al.order))
        occs_of = positions_by_keyword(al.o_kw[al.o_in], np.nonzero(al.o_in)[0], len(al.order))
        for k, kwid in enumerate(al.order):
            text = "" if pooled else texts[kwid]
            for o in occs_of[k]:
                w = refs.word(al.o_first[o])
                i = al.o_match[o]
                if i >= 0:
                    self.add(kwid, text, cols.score[i], cols.decision[i], True, w.file, w.chan, w.bt, w.et)
                else:
                    self.add(kwid, text, None, None, True, w.file, w.chan, w.bt, w.et)
            for i in hits_of[k]:
                if al.h_match[i] < 0:
                    self.add(kwid, text, cols.score[i], cols.decision[i], False, cols.file[i], cols.channel[i],
                             cols.tbeg[i], cols.tbeg[i] + cols.dur[i])
            if pooled or (not occs_of[k] and not hits_of[k]):
                self.add_empty(kwid, text)

    def add_empty(self, kwid, text) -> None:
        """F4DE adds a keyword without trials to every condition it could belong to."""
        possible: list[str] = []
        if self.source_type_groups:
            possible = list(self.source_type_groups)
        elif self.attribute_queries:
            possible = self.attribute_groups(kwid)
        elif self.term_sets:
            possible = list(self.term_sets)   # F4DE adds an empty keyword to every term set
        for g in possible:
            if g not in self.trials and self.group_duration(g) == 0:
                continue   # F4DE: "No ECF segments available for group"
            self.group_trials(g).block(kwid, text)


__all__ = ["score_kws", "score_kws_files", "KwsEvaluation", "KwsScore", "OperatingPoint", "TermResult", "AlignmentRow", "Block",
           "ReferenceIndex", "char_split", "perl_num"]


def score_kws_files(ecf: str, kwlist: str, kwslist: str, *, rttm: str | None = None, ctm: str | None = None,
                    encoding: str = "utf-8", check_reference_overlaps: bool = True, **options) -> KwsEvaluation:
    """Read the files of an evaluation and :func:`score_kws` them.  The reference occurrences come from
    ``rttm`` (LEXEME lines) or from ``ctm`` (reference word times, one speaker per file/channel).  With
    ``check_reference_overlaps``, two overlapping words of one speaker are an error (FormatError)."""
    from ..io.keyword_search.ecf import read_ecf
    from ..io.keyword_search.kwlist import read_kwlist_file
    from ..io.keyword_search.kwslist import read_kwslist
    from ..io.keyword_search.rttm import RttmTable, check_overlaps, lexemes_from_ctm, read_rttm_table

    if (rttm is None) == (ctm is None):
        raise MismatchError("give the reference as exactly one of an RTTM or a CTM")
    enc = None if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
    e = read_ecf(ecf, encoding=enc)
    kwl = read_kwlist_file(kwlist, encoding=encoding)
    kws = read_kwslist(kwslist, encoding=enc, xml_correct=options.get("xml_correct", False))
    refs: RttmTable | list[RttmRecord]
    if rttm is not None:
        refs = read_rttm_table(rttm, encoding=encoding,
                               types=("LEXEME", "SPEAKER") if options.get("segment_based") else ("LEXEME",))
        path = rttm
    else:
        assert ctm is not None  # exactly one of them: checked above
        refs = lexemes_from_ctm(ctm, encoding=encoding)
        path = ctm
    if check_reference_overlaps:
        check_overlaps(refs, path)
    return score_kws(e, refs, kwl, kws, **options)
