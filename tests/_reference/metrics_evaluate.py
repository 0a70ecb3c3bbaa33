"""All 1-best metrics of one utterance at a time: the oracle the batched engine
(lattice_tools.metrics.evaluate_batch, behind evaluate.evaluate_system) is tested against.

The plain definitions, one utterance at a time: normalize, align the words with kaldialign, count
graphemes, script fidelity, code-mixing and switch points, named entities, and the punctuation/case
orthographic counts (by the per-pair reference of tests/_reference/orthography.py).  It was the
package's implementation until the batched engine replaced it (same results:
tests/test_metrics_fast*.py).
"""
from __future__ import annotations

from _reference.orthography import score_orthography_reference
from lattice_tools.core.errors import LatticeToolsError
from lattice_tools.metrics.codeswitch import code_mixing_index, language_pair, switch_point_counts
from lattice_tools.metrics.entities import score_entities
from lattice_tools.metrics.io import Annotation
from lattice_tools.metrics.levenshtein import align, counts_from_alignment, error_counts
from lattice_tools.metrics.orthography_tokens import DEFAULT_NORMALIZERS
from lattice_tools.metrics.results import EvalConfig, UtteranceResult, normalizer_for
from lattice_tools.metrics.script import SPACELESS_LANGUAGES, expected_scripts, script_fidelity
from lattice_tools.metrics.text import graphemes, normalize_language_code

DEFAULT_CONFIG = EvalConfig()


def evaluate_utterance(key: str, ref_text: str, hyp_text: str | None, annotation: Annotation | None = None,
                       config: EvalConfig = DEFAULT_CONFIG, _cache: dict | None = None) -> UtteranceResult:
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
    norm = normalizer_for(config, lang, cache)
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
        ortho, _ = score_orthography_reference(ref_text, hyp_text,
                                               config.orthography_normalizers or DEFAULT_NORMALIZERS)
    return UtteranceResult(key, lang, True, ref, hyp, word, char, sfr, category, cs, cmi, switch, ents, ortho,
                           raw_hyp=hyp_text)


def evaluate_system_reference(refs: dict[str, str], hyps: dict[str, str],
                              annotations: dict[str, Annotation] | None = None,
                              config: EvalConfig = DEFAULT_CONFIG) -> list[UtteranceResult]:
    """:func:`evaluate_system` one :func:`evaluate_utterance` at a time: the reference the batched
    engine (:mod:`lattice_tools.metrics.evaluate_batch`) is tested against."""
    annotations = annotations or {}
    cache: dict = {}
    return [evaluate_utterance(k, refs[k], hyps.get(k), annotations.get(k), config, cache) for k in refs]
