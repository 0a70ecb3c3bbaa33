"""Results of the 1-best metrics and the options that produce them.

:class:`UtteranceResult` is what :func:`lattice_tools.metrics.evaluate.evaluate_system` returns per
reference utterance; :class:`EvalConfig` holds its options; :class:`MetricsSummary` is what
:func:`~lattice_tools.metrics.evaluate.summarize` finds over a set of them; :class:`SystemMetrics` one system's
summaries (all utterances, per language, composite) and :class:`MetricsReport` what
:func:`lattice_tools.metrics.commands.metrics` reports.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.counts import ErrorCounts
from ..core.errors import LatticeToolsError
from .alternatives import CoverageRow
from .codeswitch import ScriptTagger, SwitchPointCounts, cmi_bucket
from .entities import EntityCounts
from .orthography_rules import OrthographicCounts
from .script import ScriptFidelity
from .text import INDIC_NLP_LANGUAGES, make_normalizer, normalize_language_code

CATEGORIES = ("ok", "high_wer", "script_collapse", "no_output")


@dataclass(frozen=True)
class MetricValue:
    """One metric of a :class:`MetricsSummary`: a ratio of sums over the utterances where it is defined
    (``value`` None when it is defined on none), ``n`` those utterances, ``ci`` its bootstrap interval
    ``(low, high)`` (None without resampling or without a value)."""

    value: float | None
    n: int
    ci: tuple[float, float] | None = None

    def to_dict(self) -> dict:
        return {"value": self.value, "n": self.n, "ci": None if self.ci is None else list(self.ci)}


@dataclass(frozen=True)
class CmiBucket:
    """The WER of the code-switched utterances whose code-mixing index falls in one bucket."""

    wer: float
    utterances: int
    ref_words: int

    def to_dict(self) -> dict:
        return {"wer": self.wer, "utterances": self.utterances, "ref_words": self.ref_words}


@dataclass(frozen=True)
class MetricsSummary:
    """What :func:`lattice_tools.metrics.evaluate.summarize` found for a set of utterance results.

    ``utterances``, ``covered`` (with a hypothesis) and ``coverage`` (their share, None without
    utterances); ``taxonomy``: utterances per failure category (:data:`CATEGORIES`); ``metrics``: every
    metric by name.  The rest is None when no utterance gives it: ``word_counts``/``char_counts`` (the
    covered utterances' counts behind WER and CER), ``script_characters`` (characters per script) and
    ``script_dominant`` (utterances per dominant script), ``wer_by_cmi`` (per code-mixing bucket),
    ``substitution_classes`` (the orthographic substitution classes)."""

    utterances: int
    covered: int
    coverage: float | None
    taxonomy: Mapping[str, int]
    metrics: Mapping[str, MetricValue]
    word_counts: ErrorCounts | None = None
    char_counts: ErrorCounts | None = None
    script_characters: Mapping[str, int] | None = None
    script_dominant: Mapping[str, int] | None = None
    wer_by_cmi: Mapping[str, CmiBucket] | None = None
    substitution_classes: Mapping[str, int] | None = None

    def to_dict(self) -> dict:
        """The summary as JSON values (what ``lattice-tools metrics`` and ``leaderboard`` write)."""
        out: dict = {"utterances": self.utterances, "covered": self.covered, "coverage": self.coverage,
                     "taxonomy": dict(self.taxonomy), "metrics": {k: m.to_dict() for k, m in self.metrics.items()}}
        if self.word_counts is not None and self.char_counts is not None:
            out["word_counts"] = self.word_counts.as_dict()
            out["char_counts"] = self.char_counts.as_dict()
        if self.script_characters is not None and self.script_dominant is not None:
            out["script_confusion"] = {"characters": dict(self.script_characters),
                                       "dominant": dict(self.script_dominant)}
        if self.wer_by_cmi is not None:
            out["wer_by_cmi"] = {k: b.to_dict() for k, b in self.wer_by_cmi.items()}
        if self.substitution_classes is not None:
            out["substitution_classes"] = dict(self.substitution_classes)
        return out


@dataclass(frozen=True, slots=True)
class CompositeRating:
    """Lin's (BharatVoice-Bench) composite ``(1-WER)*SFR*(1-WER_CS)`` (:func:`~lattice_tools.metrics.evaluate.composite_of`):
    ``value`` (None without a WER) and the ``factors`` it used (``wer``, ``sfr``, ``wer_cs``: those defined)."""

    value: float | None
    factors: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"value": self.value, "factors": list(self.factors)}


@dataclass(frozen=True)
class SystemMetrics:
    """One system's metrics: the summary over ``all`` utterances, one per language group (``languages``, by
    :func:`~lattice_tools.metrics.evaluate.by_language`, sorted) and the composite rating of ``all``."""

    all: MetricsSummary
    languages: Mapping[str, MetricsSummary]
    composite: CompositeRating

    def to_dict(self) -> dict:
        return {"all": self.all.to_dict(), "languages": {lg: s.to_dict() for lg, s in self.languages.items()},
                "composite": self.composite.to_dict()}


@dataclass(frozen=True, slots=True)
class AlternativesMetrics:
    """What one system's alternatives (an alt-CTM) recover: the alternative-coverage ``coverage`` rows (one per
    depth k) and the ``oracle`` summary (the metrics of the oracle path through every network)."""

    coverage: tuple[CoverageRow, ...]
    oracle: MetricsSummary

    def to_dict(self) -> dict:
        return {"coverage": [r.as_dict() for r in self.coverage], "oracle": self.oracle.to_dict()}


@dataclass(frozen=True)
class MetricsReport(SystemMetrics):
    """What :func:`lattice_tools.metrics.commands.metrics` found for one system: its :class:`SystemMetrics`,
    the ``warnings`` of reading it (what was left out under ``allow_missing``) and, per label of
    ``alternatives``, an :class:`AlternativesMetrics` (empty without alternatives)."""

    warnings: tuple[str, ...] = ()
    alternatives: Mapping[str, AlternativesMetrics] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The report as JSON values (what ``lattice-tools metrics`` writes)."""
        out = super().to_dict()
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.alternatives:
            out["alternatives"] = {label: a.to_dict() for label, a in self.alternatives.items()}
        return out


@dataclass(frozen=True)
class EvalConfig:
    """Options of :func:`evaluate_system` (all have the CLI's defaults)."""

    normalizer: str = "auto"            # auto | none | plain | indic | whisper-basic
    default_lang: str | None = None     # language of utterances without an annotation
    orthography: bool = True            # punctuation/capitalisation metrics
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
    orthography: OrthographicCounts | None = None
    raw_hyp: str | None = field(default=None, repr=False)

    def as_dict(self) -> dict:
        d: dict[str, Any] = {"id": self.key, "lang": self.lang, "covered": self.covered, "category": self.category,
             "ref": self.ref, "hyp": self.hyp}
        if self.word is not None:
            assert self.char is not None, "a covered utterance has word and character counts"
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


def normalizer_for(config: EvalConfig, lang: str | None, cache: dict):
    """The text normalizer of an utterance in ``lang`` (one per (name, language) in ``cache``)."""
    name = config.normalizer
    if name == "auto":
        name = "indic" if lang and normalize_language_code(lang) in INDIC_NLP_LANGUAGES else "plain"
    k = (name, lang)
    if k not in cache:
        cache[k] = make_normalizer(name, lang)
    return cache[k]


def with_key(exc: LatticeToolsError, key: str) -> LatticeToolsError:
    """``exc`` naming utterance ``key`` when it names none (e.g. an unknown language code)."""
    if exc.key is None:
        return type(exc)(exc.message, path=exc.path, line=exc.line, key=key)
    return exc
