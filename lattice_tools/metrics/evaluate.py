"""Per-utterance evaluation of one system and per-(system, language) summaries with bootstrap CIs.

:func:`evaluate_system` scores every reference utterance (in reference order) and returns one
:class:`UtteranceResult` each.  An utterance without a hypothesis is **not covered**: it is kept,
counts against coverage and lands in the ``no_output`` failure category, and is left out of every
error-rate metric (never dropped, never scored as an empty hypothesis).  An *empty* hypothesis that
is present is an output and is scored (all deletions).

Text is normalized per language before WER/CER (``normalizer='auto'``: indic-nlp-library for Indic
languages, :class:`~lattice_tools.metrics.text.PlainNormalizer` otherwise); SFR is computed on the raw
hypothesis, the punctuation- and case-aware metrics (Kuhn et al., Beyond Levenshtein) on raw reference and hypothesis (they need case and
punctuation).

:func:`summarize` turns results into per-language and overall metrics, each a ratio of sums with a
bootstrap CI (:mod:`lattice_tools.metrics.stats`).  Failure taxonomy (Lin, BharatVoice-Bench, section 6.7):
``no_output``; ``script_collapse`` (SFR < 0.5 and another script dominates); ``high_wer``
(WER > 0.5, script not collapsed); ``ok``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..core.counts import ErrorCounts
from .codeswitch import CMI_BUCKETS, composite
from .evaluate_batch import evaluate_many
from .io import Annotation
from .results import (
    CATEGORIES,
    CmiBucket,
    CompositeRating,
    EvalConfig,
    MetricsSummary,
    MetricValue,
    SystemMetrics,
    UtteranceResult,
)
from .stats import bootstrap_many

DEFAULT_CONFIG = EvalConfig()   # frozen: one shared default

__all__ = ["CATEGORIES", "CompositeRating", "EvalConfig", "MetricValue", "MetricsSummary", "SystemMetrics",
           "UtteranceResult", "by_language", "composite_of", "evaluate_system", "summarize", "system_metrics"]


def evaluate_system(refs: dict[str, str], hyps: dict[str, str], annotations: dict[str, Annotation] | None = None,
                    config: EvalConfig = DEFAULT_CONFIG, progress: bool = False) -> list[UtteranceResult]:
    """Score every reference utterance, in reference order; ids missing from ``hyps`` are not
    covered.  The engine (:mod:`lattice_tools.metrics.evaluate_batch`) works a chunk of
    utterances at a time."""
    annotations = annotations or {}
    keys = list(refs)
    if not progress:
        return evaluate_many(refs, hyps, annotations, config, keys)
    from tqdm import tqdm
    with tqdm(total=len(keys), desc="metrics", unit="utt", leave=False) as bar:
        return evaluate_many(refs, hyps, annotations, config, keys, bar)


# ----------------------------------------------------------------------------------------------
# Summaries

def _counts(covered: Sequence[UtteranceResult], char: bool = False) -> list[ErrorCounts]:
    """The word (or character) counts of covered results, which all have them."""
    out = []
    for r in covered:
        counts = r.char if char else r.word
        assert counts is not None, "a covered utterance has word and character counts"
        out.append(counts)
    return out


def _utterance_ratios(r: UtteranceResult):
    """``(metric, numerator, denominator)`` of every metric that applies to covered result ``r``."""
    assert r.word is not None and r.char is not None, "a covered utterance has word and character counts"
    yield "wer", r.word.errors, r.word.ref_words
    yield "cer", r.char.errors, r.char.ref_words
    if r.sfr is not None:
        yield "sfr", r.sfr.expected, r.sfr.scripted
        yield "collapse_rate", int(r.sfr.collapse), 1
    if r.cs is not None:
        yield "wer_cs", r.word.errors, r.word.ref_words
        if r.switch is not None:
            yield "switch_f1", 2 * r.switch.tp, r.switch.ref + r.switch.hyp
    else:
        yield "wer_mono", r.word.errors, r.word.ref_words
    if r.entities is not None and r.entities.total:
        yield "ne_wer", r.entities.counts.errors, r.entities.counts.ref_words
        yield "ne_fnr", r.entities.total - r.entities.found, r.entities.total
    if r.orthography is not None:
        for name in ("punctuation", "capitalisation"):
            c = getattr(r.orthography, name)
            yield f"{name}_ser", c.substitutions + c.deletions + c.insertions, c.correct + c.substitutions + c.deletions
            yield f"{name}_f1", 2 * c.correct, 2 * c.correct + 2 * c.substitutions + c.deletions + c.insertions
        yield "orthographic_wer", r.orthography.words.errors, r.orthography.words.ref_words


def _ratio_arrays(results: Sequence[UtteranceResult]) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per metric, numerator/denominator arrays over the covered utterances (0/0 where the metric
    does not apply) and the mask of utterances it applies to."""
    covered = [r for r in results if r.covered]
    cols: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for pos, r in enumerate(covered):
        for name, num, den in _utterance_ratios(r):
            a = cols.get(name)
            if a is None:
                a = cols[name] = (np.zeros(len(covered)), np.zeros(len(covered)), np.zeros(len(covered), dtype=bool))
            a[0][pos] = num
            a[1][pos] = den
            a[2][pos] = True
    return cols


def summarize(results: Sequence[UtteranceResult], *, resamples: int = 10_000, seed: int = 42,
              ci_method: str = "percentile") -> MetricsSummary:
    """Metrics of a set of utterance results (one system, one language or all); ``to_dict()`` of the
    result is its JSON."""
    n = len(results)
    covered = [r for r in results if r.covered]
    cats = {c: 0 for c in CATEGORIES}
    for r in results:
        cats[r.category] += 1
    metrics = {}
    cols = _ratio_arrays(results)
    # one set of bootstrap replicates (over covered utterances) shared by all metrics
    cis = bootstrap_many({k: v[:2] for k, v in cols.items()}, resamples=resamples, seed=seed,
                         method=ci_method) if resamples else {}
    for name, (num, den, mask) in cols.items():
        ci = cis.get(name)
        value = float(num.sum() / den.sum()) if den.sum() > 0 else None
        metrics[name] = MetricValue(value, int(mask.sum()), None if ci is None or value is None else (ci.low, ci.high))
    # counts behind WER / CER
    word_counts = ErrorCounts.sum(_counts(covered)) if covered else None
    char_counts = ErrorCounts.sum(_counts(covered, char=True)) if covered else None
    # cross-script confusion: characters and dominant script per utterance
    chars: dict[str, int] = {}
    dom: dict[str, int] = {}
    for r in covered:
        if r.sfr is None:
            continue
        for s, c in r.sfr.counts:
            chars[s] = chars.get(s, 0) + c
        key = r.sfr.dominant or "none"
        dom[key] = dom.get(key, 0) + 1
    # WER by CMI bucket (code-switched utterances only)
    buckets = {}
    for name, lo, hi in CMI_BUCKETS:
        sel = [r for r in covered if r.cs is not None and r.cmi is not None and lo <= r.cmi < hi]
        if sel:
            words = ErrorCounts.sum(_counts(sel))
            buckets[name] = CmiBucket(words.wer, len(sel), words.ref_words)
    cls: dict[str, int] = {}
    for r in covered:
        if r.orthography is not None:
            for k, v in r.orthography.classes:
                cls[k] = cls.get(k, 0) + v
    confusion = bool(chars or dom)
    return MetricsSummary(utterances=n, covered=len(covered), coverage=len(covered) / n if n else None,
                          taxonomy=cats, metrics=metrics, word_counts=word_counts, char_counts=char_counts,
                          script_characters=dict(sorted(chars.items())) if confusion else None,
                          script_dominant=dict(sorted(dom.items())) if confusion else None,
                          wer_by_cmi=buckets or None, substitution_classes=dict(sorted(cls.items())) or None)


def composite_of(metrics: Mapping[str, MetricValue]) -> CompositeRating:
    """Lin's (BharatVoice-Bench) composite ``(1-WER)*SFR*(1-WER_CS)`` from a summary's metrics.  WER is the
    monolingual (non code-switched) WER when there are such utterances; a factor whose metric is
    undefined is left out and ``factors`` says which were used."""
    def val(k):
        m = metrics.get(k)
        return None if m is None else m.value
    wer = val("wer_mono") if val("wer_mono") is not None else val("wer")
    sfr, wcs = val("sfr"), val("wer_cs")
    factors = tuple(n for n, v in (("wer", wer), ("sfr", sfr), ("wer_cs", wcs)) if v is not None)
    if wer is None:
        return CompositeRating(None, factors)
    return CompositeRating(composite(wer, 1.0 if sfr is None else sfr, 0.0 if wcs is None else wcs), factors)


def system_metrics(results: Sequence[UtteranceResult], *, resamples: int = 10_000, seed: int = 42,
                   ci_method: str = "percentile") -> SystemMetrics:
    """One system's :class:`SystemMetrics`: :func:`summarize` over all ``results`` and over each language group
    (:func:`by_language`, sorted), and the composite rating of all."""
    overall = summarize(results, resamples=resamples, seed=seed, ci_method=ci_method)
    languages = {lg: summarize(g, resamples=resamples, seed=seed, ci_method=ci_method)
                 for lg, g in sorted(by_language(results).items())}
    return SystemMetrics(overall, languages, composite_of(overall.metrics))


def by_language(results: Sequence[UtteranceResult]) -> dict[str, list[UtteranceResult]]:
    """Group results by language; code-switched utterances form the group of their pair
    (``hin-eng``), as the separate "Hi-En CS" column of Lin, BharatVoice-Bench, Table 3.  No language: ``-``."""
    groups: dict[str, list[UtteranceResult]] = {}
    for r in results:
        groups.setdefault(r.cs or r.lang or "-", []).append(r)
    return groups
