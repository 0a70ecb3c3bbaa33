"""Per-utterance evaluation of one system and per-(system, language) summaries with bootstrap CIs.

:func:`evaluate_system` scores every reference utterance (in reference order) and returns one
:class:`UtteranceResult` each.  An utterance without a hypothesis is **not covered**: it is kept,
counts against coverage and lands in the ``no_output`` failure category, and is left out of every
error-rate metric (never dropped, never scored as an empty hypothesis).  An *empty* hypothesis that
is present is an output and is scored (all deletions).

Text is normalized per language before WER/CER (``normalizer='auto'``: indic-nlp-library for Indic
languages, :class:`~lattice_tools.metrics.text.PlainNormalizer` otherwise); SFR is computed on the raw
hypothesis, the seed-004 orthographic metrics on raw reference and hypothesis (they need case and
punctuation).

:func:`summarize` turns results into per-language and overall metrics, each a ratio of sums with a
bootstrap CI (:mod:`lattice_tools.metrics.stats`).  Failure taxonomy (seed 002 section 6.7):
``no_output``; ``script_collapse`` (SFR < 0.5 and another script dominates); ``high_wer``
(WER > 0.5, script not collapsed); ``ok``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import LatticeToolsError
from ..scoring.counts import ErrorCounts
from .codeswitch import (
    CMI_BUCKETS,
    ScriptTagger,
    SwitchPointCounts,
    cmi_bucket,
    code_mixing_index,
    composite,
    language_pair,
    switch_point_counts,
)
from .entities import EntityCounts, score_entities
from .io import Annotation
from .levenshtein import align, counts_from_alignment, error_counts, sum_counts
from .script import SPACELESS_LANGUAGES, ScriptFidelity, script_fidelity
from .text import INDIC_NLP_LANGUAGES, graphemes, make_normalizer, normalize_language_code

CATEGORIES = ("ok", "high_wer", "script_collapse", "no_output")


@dataclass(frozen=True)
class EvalConfig:
    """Options of :func:`evaluate_system` (all have the CLI's defaults)."""

    normalizer: str = "auto"            # auto | none | plain | indic | whisper-basic
    default_lang: str | None = None     # language of utterances without an annotation
    orthography: bool = True            # seed-004 punctuation/capitalisation metrics
    orthography_normalizers: tuple[str, ...] | None = None
    high_wer: float = 0.5
    collapse_threshold: float = 0.5
    switch_tolerance: int = 1
    tagger_factory: Callable[[Sequence[str]], Callable] = ScriptTagger


@dataclass(frozen=True)
class UtteranceResult:
    key: str
    lang: str | None
    covered: bool
    ref: str                                   # normalized reference
    hyp: str | None                            # normalized hypothesis (None = no output)
    word: ErrorCounts | None = None
    char: ErrorCounts | None = None
    sfr: ScriptFidelity | None = None
    category: str = "no_output"
    cs: str | None = None
    cmi: float | None = None
    switch: SwitchPointCounts | None = None
    entities: EntityCounts | None = None
    orthography: object | None = None          # punctuation.OrthographicCounts
    raw_hyp: str | None = field(default=None, repr=False)

    def as_dict(self) -> dict:
        d = {"id": self.key, "lang": self.lang, "covered": self.covered, "category": self.category,
             "ref": self.ref, "hyp": self.hyp}
        if self.word is not None:
            d.update(wer=self.word.wer, word=self.word.as_dict(), cer=self.char.wer, char=self.char.as_dict())
        if self.sfr is not None:
            d.update(sfr=self.sfr.sfr, script_collapse=self.sfr.collapse, dominant_script=self.sfr.dominant,
                     scripts=dict(self.sfr.counts))
        if self.cs is not None:
            d.update(cs=self.cs, cmi=self.cmi, cmi_bucket=cmi_bucket(self.cmi) if self.cmi is not None else None)
            if self.switch is not None:
                d.update(switch_points={"tp": self.switch.tp, "ref": self.switch.ref, "hyp": self.switch.hyp,
                                        "f1": self.switch.f1})
        if self.entities is not None:
            d.update(entities={"total": self.entities.total, "found_exact": self.entities.found,
                               "ne_wer": self.entities.ne_wer, "ne_fnr": self.entities.ne_fnr})
        if self.orthography is not None:
            o = self.orthography.as_dict()
            d.update(orthography={k: o[k] for k in ("wer", "punctuation_ser", "punctuation_f1", "capitalisation_ser",
                                                    "capitalisation_f1", "classes", "normalizations")})
        return d


def _normalizer_for(config: EvalConfig, lang: str | None, cache: dict):
    name = config.normalizer
    if name == "auto":
        name = "indic" if lang and normalize_language_code(lang) in INDIC_NLP_LANGUAGES else "plain"
    k = (name, lang)
    if k not in cache:
        cache[k] = make_normalizer(name, lang)
    return cache[k]


def evaluate_utterance(key: str, ref_text: str, hyp_text: str | None, annotation: Annotation | None = None,
                       config: EvalConfig = EvalConfig(), _cache: dict | None = None) -> UtteranceResult:
    """All 1-best metrics of one utterance (see module docstring)."""
    try:
        return _evaluate_utterance(key, ref_text, hyp_text, annotation, config, _cache)
    except LatticeToolsError as exc:
        if exc.key is None:   # say which utterance (e.g. an unknown language code)
            raise type(exc)(exc.message, path=exc.path, line=exc.line, key=key) from None
        raise


def _evaluate_utterance(key, ref_text, hyp_text, annotation, config, _cache):
    cache = {} if _cache is None else _cache
    ann = annotation or Annotation()
    lang = ann.lang or config.default_lang
    norm = _normalizer_for(config, lang, cache)
    ref = norm(ref_text)
    cs = ann.cs
    tagger = None
    ref_tokens = ref.split()
    cmi = None
    if cs:
        tk = ("tagger", cs)
        if tk not in cache:
            cache[tk] = config.tagger_factory(language_pair(cs))
        tagger = cache[tk]
        ref_tags = [tagger(t) for t in ref_tokens]
        cmi = code_mixing_index(ref_tags)
    if hyp_text is None:
        return UtteranceResult(key, lang, False, ref, None, cs=cs, cmi=cmi)
    hyp = norm(hyp_text)
    hyp_tokens = hyp.split()
    pairs = align(ref_tokens, hyp_tokens)
    word = counts_from_alignment(pairs)
    char = error_counts(graphemes(ref), graphemes(hyp))
    sfr = None
    if cs:
        # a code-switched utterance is expected in the scripts of every language of its pair
        from .script import expected_scripts
        scripts = frozenset().union(*(expected_scripts(x) for x in language_pair(cs)))
        if lang:
            scripts |= expected_scripts(lang)
        sfr = script_fidelity(hyp_text, scripts=scripts, threshold=config.collapse_threshold)
    elif lang:
        sfr = script_fidelity(hyp_text, lang, threshold=config.collapse_threshold)
    if sfr is not None and sfr.collapse:
        category = "script_collapse"
    elif word.wer > config.high_wer:
        category = "high_wer"
    else:
        category = "ok"
    switch = None
    if tagger is not None:
        switch = switch_point_counts(ref_tags, [tagger(t) for t in hyp_tokens], pairs, config.switch_tolerance)
    ents = None
    if ann.entities:
        spaceless = bool(lang) and normalize_language_code(lang) in SPACELESS_LANGUAGES
        ents, _ = score_entities(ann.entities, hyp_text, spaceless=spaceless, normalizer=norm)
    ortho = None
    if config.orthography:
        from .punctuation import DEFAULT_NORMALIZERS, score_orthography
        ortho, _ = score_orthography(ref_text, hyp_text, config.orthography_normalizers or DEFAULT_NORMALIZERS)
    return UtteranceResult(key, lang, True, ref, hyp, word, char, sfr, category, cs, cmi, switch, ents, ortho,
                           raw_hyp=hyp_text)


def evaluate_system(refs: dict[str, str], hyps: dict[str, str], annotations: dict[str, Annotation] | None = None,
                    config: EvalConfig = EvalConfig(), progress: bool = False) -> list[UtteranceResult]:
    """Score every reference utterance; ids missing from ``hyps`` are not covered.

    Runs the batched fast path (:mod:`lattice_tools.metrics.fast`), which equals
    :func:`evaluate_system_reference` result for result."""
    from .fast import evaluate_many

    annotations = annotations or {}
    keys = list(refs)
    if not progress:
        return evaluate_many(refs, hyps, annotations, config, keys)
    from tqdm import tqdm
    with tqdm(total=len(keys), desc="metrics", unit="utt", leave=False) as bar:
        return evaluate_many(refs, hyps, annotations, config, keys, bar)


def evaluate_system_reference(refs: dict[str, str], hyps: dict[str, str],
                              annotations: dict[str, Annotation] | None = None,
                              config: EvalConfig = EvalConfig()) -> list[UtteranceResult]:
    """:func:`evaluate_system` one :func:`evaluate_utterance` at a time: the reference the batched
    fast path (:mod:`lattice_tools.metrics.fast`) is tested against."""
    annotations = annotations or {}
    cache: dict = {}
    return [evaluate_utterance(k, refs[k], hyps.get(k), annotations.get(k), config, cache) for k in refs]


# ----------------------------------------------------------------------------------------------
# Summaries

def _ratio_arrays(results: Sequence[UtteranceResult]) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per metric, numerator/denominator arrays over the covered utterances (0/0 where the metric
    does not apply) and the mask of utterances it applies to."""
    covered = [r for r in results if r.covered]
    cols: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    pos = 0

    def add(name, num, den):
        if name not in cols:
            cols[name] = (np.zeros(len(covered)), np.zeros(len(covered)), np.zeros(len(covered), dtype=bool))
        a = cols[name]
        a[0][pos] = num
        a[1][pos] = den
        a[2][pos] = True

    for pos, r in enumerate(covered):
        add("wer", r.word.errors, r.word.ref_words)
        add("cer", r.char.errors, r.char.ref_words)
        if r.sfr is not None:
            add("sfr", r.sfr.expected, r.sfr.scripted)
            add("collapse_rate", int(r.sfr.collapse), 1)
        if r.cs is not None:
            add("wer_cs", r.word.errors, r.word.ref_words)
            if r.switch is not None:
                add("switch_f1", 2 * r.switch.tp, r.switch.ref + r.switch.hyp)
        else:
            add("wer_mono", r.word.errors, r.word.ref_words)
        if r.entities is not None and r.entities.total:
            add("ne_wer", r.entities.counts.errors, r.entities.counts.ref_words)
            add("ne_fnr", r.entities.total - r.entities.found, r.entities.total)
        if r.orthography is not None:
            for name in ("punctuation", "capitalisation"):
                c = getattr(r.orthography, name)
                add(f"{name}_ser", c.substitutions + c.deletions + c.insertions, c.correct + c.substitutions + c.deletions)
                add(f"{name}_f1", 2 * c.correct, 2 * c.correct + 2 * c.substitutions + c.deletions + c.insertions)
            add("orthographic_wer", r.orthography.words.errors, r.orthography.words.ref_words)
    return cols


def summarize(results: Sequence[UtteranceResult], *, resamples: int = 10_000, seed: int = 42,
              ci_method: str = "percentile") -> dict:
    """Metrics of a set of utterance results (one system, one language or all)."""
    from .stats import bootstrap_many

    n = len(results)
    covered = [r for r in results if r.covered]
    out: dict = {"utterances": n, "covered": len(covered), "coverage": len(covered) / n if n else None}
    cats = {c: 0 for c in CATEGORIES}
    for r in results:
        cats[r.category] += 1
    out["taxonomy"] = cats
    metrics = {}
    cols = _ratio_arrays(results)
    # one set of bootstrap replicates (over covered utterances) shared by all metrics
    cis = bootstrap_many({k: v[:2] for k, v in cols.items()}, resamples=resamples, seed=seed,
                         method=ci_method) if resamples else {}
    for name, (num, den, mask) in cols.items():
        ci = cis.get(name)
        value = float(num.sum() / den.sum()) if den.sum() > 0 else None
        metrics[name] = {"value": value, "n": int(mask.sum()),
                         "ci": None if ci is None or value is None else [ci.low, ci.high]}
    out["metrics"] = metrics
    # counts behind WER / CER
    if covered:
        out["word_counts"] = sum_counts(r.word for r in covered).as_dict()
        out["char_counts"] = sum_counts(r.char for r in covered).as_dict()
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
    if chars or dom:
        out["script_confusion"] = {"characters": dict(sorted(chars.items())), "dominant": dict(sorted(dom.items()))}
    # WER by CMI bucket (code-switched utterances only)
    buckets = {}
    for name, lo, hi in CMI_BUCKETS:
        sel = [r for r in covered if r.cs is not None and r.cmi is not None and lo <= r.cmi < hi]
        if sel:
            c = sum_counts(r.word for r in sel)
            buckets[name] = {"wer": c.wer, "utterances": len(sel), "ref_words": c.ref_words}
    if buckets:
        out["wer_by_cmi"] = buckets
    cls: dict[str, int] = {}
    for r in covered:
        if r.orthography is not None:
            for k, v in r.orthography.classes:
                cls[k] = cls.get(k, 0) + v
    if cls:
        out["substitution_classes"] = dict(sorted(cls.items()))
    return out


def composite_of(metrics: dict) -> dict:
    """Seed 002's composite ``(1-WER)*SFR*(1-WER_CS)`` from summary metrics.  WER is the
    monolingual (non code-switched) WER when there are such utterances; a factor whose metric is
    undefined is left out and ``factors`` says which were used."""
    def val(k):
        m = metrics.get(k)
        return None if m is None else m["value"]
    wer = val("wer_mono") if val("wer_mono") is not None else val("wer")
    sfr, wcs = val("sfr"), val("wer_cs")
    factors = [n for n, v in (("wer", wer), ("sfr", sfr), ("wer_cs", wcs)) if v is not None]
    if wer is None:
        return {"value": None, "factors": factors}
    return {"value": composite(wer, 1.0 if sfr is None else sfr, 0.0 if wcs is None else wcs), "factors": factors}


def by_language(results: Sequence[UtteranceResult]) -> dict[str, list[UtteranceResult]]:
    """Group results by language; code-switched utterances form the group of their pair
    (``hin-eng``), as the separate "Hi-En CS" column of seed 002 Table 3.  No language: ``-``."""
    groups: dict[str, list[UtteranceResult]] = {}
    for r in results:
        groups.setdefault(r.cs or r.lang or "-", []).append(r)
    return groups
