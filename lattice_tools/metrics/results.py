"""Per-utterance results of the 1-best metrics and the options that produce them.

:class:`UtteranceResult` is what :func:`lattice_tools.metrics.evaluate.evaluate_system` returns per
reference utterance; :class:`EvalConfig` holds its options.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.counts import ErrorCounts
from ..core.errors import LatticeToolsError
from .codeswitch import ScriptTagger, SwitchPointCounts, cmi_bucket
from .entities import EntityCounts
from .orthography_rules import OrthographicCounts
from .script import ScriptFidelity
from .text import INDIC_NLP_LANGUAGES, make_normalizer, normalize_language_code

CATEGORIES = ("ok", "high_wer", "script_collapse", "no_output")


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
