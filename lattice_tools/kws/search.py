"""Search a keyword list in a term index: detections with normalized scores and YES/NO decisions.

For each term (its words split on white space, matched exactly as the index spells them):

1. **Look-up**: the term's hits (one index search; :mod:`lattice_tools.kws.store`).  A term with a
   word outside the index's vocabulary is reported *out of vocabulary*; a term longer than the
   index's ``max_length`` is reported *too long* (the index cannot answer it; rebuild with a larger
   ``--max-length``); an in-vocabulary term without hits is reported *no hits*.  None is silent.
2. **Raw score**: the hit's posterior, capped at 1 (a hit is an expected count, which exceeds 1
   only when two occurrences on one path fall in the same time clusters; Kaldi's kws-search clamps
   its -log score at 0 the same way).
3. **Duplicate removal** (``duptime`` seconds, 0.5 by default; 0 = off): among the hits of one term in
   one file/channel, the highest-scoring hit is kept and every hit whose start is less than
   ``duptime`` from the start of a kept hit is removed (ties: earlier start first).  This is the
   intent of Kaldi's ``kwslist_post_process.pl --remove-dup``, which keeps the best of runs of hits
   sorted by start.
4. **Normalization** (per term, over its remaining hits):

   * ``none``: the raw posterior;
   * ``kst``: Kaldi's keyword-specific thresholding (egs/babel/s5d/local/search/normalize_results_kst.pl):
     ``N_true = ntrue_scale * sum(posteriors)``, ``thr = beta * N_true / (T + (beta - 1) * N_true)``
     (``T`` = ``duration``, the searched audio in seconds; ``beta`` = 999.9; ``thr = 0.001`` if 0),
     and every score becomes ``p ** (log(threshold) / log(thr))``, which maps the term's own
     ATWV-optimal threshold ``thr`` onto the global ``threshold``.  Kaldi drops the hits of a term
     whose ``thr >= 0.9999``; here they keep their raw scores and the term is listed in
     ``SearchResult.kst_unnormalized``;
   * ``sum-to-one``: ``p / sum(p)`` over the term's hits (Mamou et al.'s STO normalization).
5. **Decision**: ``YES`` when the normalized score is ``>= threshold`` (one global threshold).

:func:`tune_ntrue_scale` picks the KST ``ntrue_scale`` that maximizes a dev-set metric (ATWV from
the scorer) over a grid.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ..errors import MismatchError
from ..io.kwlist import KeywordTerm
from ..io.kwslist import Detection
from .index import IndexHit
from .store import TermIndex

NORMALIZATIONS = ("none", "kst", "sum-to-one")
DEFAULT_BETA = 999.9


@dataclass
class SearchResult:
    """Detections (grouped by term, in keyword-list order, best first) and what could not be found."""

    detections: list[Detection] = field(default_factory=list)
    oov: list[str] = field(default_factory=list)          # kwids with a word outside the vocabulary
    too_long: list[str] = field(default_factory=list)     # kwids longer than the index's max_length
    no_hits: list[str] = field(default_factory=list)      # in-vocabulary kwids without any hit
    kst_unnormalized: list[str] = field(default_factory=list)
    oov_words: dict = field(default_factory=dict)         # kwid -> its out-of-vocabulary words

    def summary(self) -> dict:
        return {"detections": len(self.detections), "yes": sum(d.decision for d in self.detections),
                "oov": len(self.oov), "too_long": len(self.too_long), "no_hits": len(self.no_hits)}


def remove_duplicates(hits: Sequence[IndexHit], duptime: float) -> list[IndexHit]:
    """The duplicate-removal rule of the module docstring (step 3), for the hits of one term."""
    if duptime <= 0:
        return list(hits)
    kept: dict[tuple[str, str], list[float]] = {}
    out = []
    for h in sorted(hits, key=lambda h: (-h.score, h.tbeg)):
        starts = kept.setdefault((h.file, h.channel), [])
        if any(abs(h.tbeg - t) < duptime for t in starts):
            continue
        starts.append(h.tbeg)
        out.append(h)
    return out


def kst_threshold(posteriors: Iterable[float], duration: float, *, ntrue_scale: float = 1.0,
                  beta: float = DEFAULT_BETA) -> float:
    """Kaldi's keyword-specific threshold of one term (module docstring, step 4)."""
    ntrue = ntrue_scale * math.fsum(posteriors)
    thr = beta * ntrue / (duration + ntrue * (beta - 1))
    return 0.001 if thr == 0 else thr


def normalize_scores(scores: Sequence[float], normalization: str, *, threshold: float = 0.5,
                     duration: float | None = None, ntrue_scale: float = 1.0, beta: float = DEFAULT_BETA
                     ) -> tuple[list[float], bool]:
    """Normalized scores of one term's hits; the flag is False when KST left them raw (thr >= 0.9999)."""
    if normalization == "none" or not scores:
        return list(scores), True
    if normalization == "sum-to-one":
        total = math.fsum(scores)
        return ([s / total for s in scores] if total > 0 else list(scores)), True
    if normalization == "kst":
        if duration is None or duration <= 0:
            raise ValueError("KST normalization needs the duration of the searched audio (seconds, > 0)")
        thr = kst_threshold(scores, duration, ntrue_scale=ntrue_scale, beta=beta)
        if thr >= 0.9999:
            return list(scores), False
        q = math.log(threshold) / math.log(thr)
        return [s ** q for s in scores], True
    raise ValueError(f"unknown normalization {normalization!r} (expected one of {', '.join(NORMALIZATIONS)})")


def search(index: TermIndex | str, terms: Sequence[KeywordTerm], *, normalization: str = "none",
           threshold: float = 0.5, duration: float | None = None, ntrue_scale: float = 1.0,
           beta: float = DEFAULT_BETA, duptime: float = 0.5) -> SearchResult:
    """Search every term of ``terms`` in ``index`` (a :class:`TermIndex` or a path); see the module
    docstring for the steps.  Raises MismatchError on duplicate keyword ids or empty terms."""
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"unknown normalization {normalization!r} (expected one of {', '.join(NORMALIZATIONS)})")
    if not 0 < threshold < 1 and normalization == "kst":
        raise ValueError(f"the KST threshold must be in (0, 1), got {threshold}")
    seen = set()
    for t in terms:
        if t.kwid in seen:
            raise MismatchError(f"duplicate keyword id {t.kwid!r}", key=t.kwid)
        if not t.words:
            raise MismatchError(f"keyword {t.kwid!r} has an empty term", key=t.kwid)
        seen.add(t.kwid)
    own = isinstance(index, (str, bytes)) or hasattr(index, "__fspath__")
    idx = TermIndex(index) if own else index
    try:
        result = SearchResult()
        for t in terms:
            oov = [w for w in dict.fromkeys(t.words) if not idx.in_vocabulary(w)]
            if oov:
                result.oov.append(t.kwid)
                result.oov_words[t.kwid] = oov
                continue
            if len(t.words) > idx.max_length:
                result.too_long.append(t.kwid)
                continue
            hits = remove_duplicates(idx.lookup(t.words), duptime)
            if not hits:
                result.no_hits.append(t.kwid)
                continue
            raw = [min(1.0, h.score) for h in hits]
            scores, ok = normalize_scores(raw, normalization, threshold=threshold, duration=duration,
                                          ntrue_scale=ntrue_scale, beta=beta)
            if not ok:
                result.kst_unnormalized.append(t.kwid)
            for h, s in sorted(zip(hits, scores, strict=False), key=lambda x: (-x[1], x[0].file, x[0].channel, x[0].tbeg)):
                result.detections.append(Detection(t.kwid, h.file, h.channel, h.tbeg, h.dur, s, s >= threshold,
                                                     utterance=h.utterance))
        return result
    finally:
        if own:
            idx.close()


def tune_ntrue_scale(index: TermIndex | str, terms: Sequence[KeywordTerm], metric: Callable[[list[Detection]], float],
                     *, duration: float, scales: Sequence[float] | None = None, threshold: float = 0.5,
                     beta: float = DEFAULT_BETA, duptime: float = 0.5) -> tuple[float, list[tuple[float, float]]]:
    """The KST ``ntrue_scale`` that maximizes ``metric(detections)`` (e.g. the ATWV of the dev set's
    reference) over ``scales`` (default: 0.1 .. 10 in 25 geometric steps); ties go to the scale
    closest to 1.  Returns ``(best scale, [(scale, metric), ...])``."""
    if scales is None:
        scales = [10 ** (k / 12) for k in range(-12, 13)]
    own = isinstance(index, (str, bytes)) or hasattr(index, "__fspath__")
    idx = TermIndex(index) if own else index
    try:
        table = []
        for s in scales:
            res = search(idx, terms, normalization="kst", threshold=threshold, duration=duration, ntrue_scale=s,
                         beta=beta, duptime=duptime)
            table.append((float(s), float(metric(res.detections))))
    finally:
        if own:
            idx.close()
    best = max(table, key=lambda x: (x[1], -abs(math.log(x[0]))))
    return best[0], table


def atwv_metric(ecf: str, kwlist: str, *, rttm: str | None = None, ctm: str | None = None,
                **score_options) -> Callable[[list[Detection]], float]:
    """``metric(detections)`` = the ATWV of a dev set (the F4DE-exact scorer,
    :func:`lattice_tools.kws.score.score_kws_files`), for :func:`tune_ntrue_scale`."""
    import os
    import tempfile

    from ..io.kwslist import write_kwslist
    from .score import score_kws_files

    def metric(detections: list[Detection]) -> float:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "dev.kwslist.xml")
            write_kwslist(out, detections, kwlist_filename=os.path.basename(kwlist))
            return float(score_kws_files(ecf, kwlist, out, rttm=rttm, ctm=ctm, **score_options).overall.atwv.twv)

    return metric

