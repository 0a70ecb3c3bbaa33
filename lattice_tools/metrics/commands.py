"""Public functions behind ``lattice-tools metrics`` and ``lattice-tools leaderboard``.

Each takes exactly the parameters of its command and writes its outputs with ``atomic_write``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..core.alternatives_network import Alternative, Slot
from ..core.errors import LatticeToolsError, MismatchError
from ..core.files import atomic_write, json_text, write_json
from ..io.transcripts.altctm import read_alternatives_ctm
from .alternatives import alternative_coverage, oracle_path, plot_coverage
from .entities import entity_units
from .evaluate import EvalConfig, evaluate_system, summarize, system_metrics
from .io import read_annotations, read_hypotheses, read_references
from .leaderboard import LeaderboardReport, build_leaderboard, render_markdown
from .results import AlternativesMetrics, MetricsReport, normalizer_for
from .script import SPACELESS_LANGUAGES
from .text import normalize_language_code

DEFAULT_KS = (1, 2, 5, 10, None)


def _config(normalizer, lang, orthography) -> EvalConfig:
    return EvalConfig(normalizer=normalizer, default_lang=lang, orthography=orthography)


def load_alternatives(path: str, encoding: str = "utf-8"):
    """Read an alt-CTM into ``{key: Alternatives}`` with the toolkit's alt-CTM reader.

    The key is the CTM file id (one ``Alternatives`` per file/channel), which must be the
    utterance id of the reference transcript."""
    return {a.key: a for a in read_alternatives_ctm(path, encoding=encoding)}


def _normalized_network(alts, norm):
    slots = []
    for s in alts.slots:
        new = tuple(Alternative(tuple(norm(" ".join(a.words)).split()), posterior=a.posterior) for a in s.alternatives)
        slots.append(Slot(s.start, s.end, new))
    return replace(alts, slots=tuple(slots))


def metrics(ref: str, hyp: str, annotations: str | None = None, output: str = "-", per_utterance: str | None = None,
            fmt: str = "auto", normalizer: str = "auto", lang: str | None = None, orthography: bool = True,
            resamples: int = 10_000, seed: int = 42, ci_method: str = "percentile",
            alternatives: Sequence[tuple[str, str]] = (), ks: Sequence[int | None] = DEFAULT_KS,
            coverage_plot: str | None = None, progress: bool = False, encoding: str = "utf-8",
            glms: Sequence[str] = (), allow_missing: bool = False) -> MetricsReport:
    """Score one system: JSON summary (all + per language, CIs, composite; with ``alternatives``
    also the oracle summary and the alternative-coverage rows per representation) to ``output``,
    per-utterance JSON lines to ``per_utterance``, the alternative-coverage figure to
    ``coverage_plot`` (png/pdf/svg).  Returns the :class:`~lattice_tools.metrics.results.MetricsReport` (its
    ``to_dict()`` is the JSON written).

    ``ref`` and ``hyp`` are read as ``score`` reads them (:mod:`lattice_tools.metrics.io`): the same format
    detection (``fmt``: ``auto``, ``stm``, ``trn``, ``text``), the GLMs ``glms`` applied to both sides like
    csrfilt, and the same matching: an utterance on one side only is an error unless ``allow_missing``
    (then a hypothesis without reference is left out and a reference utterance without hypothesis is not
    covered; against an STM it is scored as all deletions); the summary's ``warnings`` say what was left out."""
    warnings: list[str] = []
    reference, refs = read_references(ref, fmt, glms=glms, encoding=encoding)
    hyps = read_hypotheses(hyp, reference, refs, fmt, glms=glms, encoding=encoding, allow_missing=allow_missing,
                           warnings=warnings)
    anns = read_annotations(annotations, encoding) if annotations else {}
    config = _config(normalizer, lang, orthography)
    results = evaluate_system(refs, hyps, anns, config, progress=progress)
    system = system_metrics(results, resamples=resamples, seed=seed, ci_method=ci_method)
    alternatives_metrics: dict[str, AlternativesMetrics] = {}
    if alternatives:
        alternatives_metrics = _alternatives_section(refs, hyps, anns, config, alternatives, ks, resamples, seed,
                                                     ci_method, encoding=encoding)
        if coverage_plot:
            plot_coverage([row for sec in alternatives_metrics.values() for row in sec.coverage], coverage_plot)
    report = MetricsReport(system.all, system.languages, system.composite, warnings=tuple(warnings),
                           alternatives=alternatives_metrics)
    # strict: undefined -> null
    write_json(output, report.to_dict(), indent=1, sort_keys=False, ensure_ascii=False)
    if per_utterance:
        with atomic_write(per_utterance) as f:
            for r in results:
                f.write(json_text(r.as_dict(), indent=None, sort_keys=False, ensure_ascii=False))
    return report


def _alternatives_section(refs, hyps, anns, config, alternatives, ks, resamples, seed, ci_method,
                          encoding="utf-8") -> dict[str, AlternativesMetrics]:
    cache: dict = {}
    out = {}
    for label, path in alternatives:
        nets_raw = load_alternatives(path, encoding)
        unknown = [k for k in nets_raw if k not in refs]
        if unknown:
            raise MismatchError(f"{len(unknown)} alternative keys are not reference ids, e.g. {unknown[0]!r}", path=path)
        nets, ref_units, spaceless, one_best = {}, {}, {}, {}
        ents: dict[str, Sequence[Sequence[str]]] = {}
        for key, net in nets_raw.items():
            ann = anns.get(key)
            lg = (ann.lang if ann else None) or config.default_lang
            norm = normalizer_for(config, lg, cache)
            nets[key] = _normalized_network(net, norm)
            ref_units[key] = norm(refs[key]).split()
            sp = bool(lg) and normalize_language_code(lg) in SPACELESS_LANGUAGES
            spaceless[key] = sp
            if key in hyps:
                one_best[key] = norm(hyps[key]).split()
            if ann and ann.entities:
                ents[key] = [entity_units(norm(e), sp) for e in ann.entities]
        rows = alternative_coverage(label, ref_units, nets, ks, ents, one_best, spaceless)
        oracle_hyps = {k: " ".join(oracle_path(ref_units[k], nets[k], None)[1]) for k in nets}
        oracle_results = evaluate_system({k: refs[k] for k in nets}, oracle_hyps, anns,
                                         replace(config, orthography=False))
        out[label] = AlternativesMetrics(tuple(rows), summarize(oracle_results, resamples=resamples, seed=seed,
                                                                ci_method=ci_method))
    return out


def leaderboard(ref: str, systems: Sequence[tuple[str, str]], annotations: str | None = None,
                markdown: str | None = None, output: str = "-", fmt: str = "auto", normalizer: str = "auto",
                lang: str | None = None, orthography: bool = True, resamples: int = 10_000, seed: int = 42,
                ci_method: str = "percentile", progress: bool = False, encoding: str = "utf-8",
                glms: Sequence[str] = (), allow_missing: bool = False) -> LeaderboardReport:
    """Score several systems against one reference; JSON report to ``output``, Markdown to
    ``markdown``.  Returns the :class:`~lattice_tools.metrics.leaderboard.LeaderboardReport` (its ``to_dict()`` is
    the JSON written).  The transcripts are read, GLM-filtered and matched as
    :func:`metrics` reads them (``glms``, ``allow_missing``)."""
    if len(systems) < 1:
        raise LatticeToolsError("leaderboard needs at least one --system NAME=PATH")
    names = [n for n, _ in systems]
    if len(set(names)) != len(names):
        raise LatticeToolsError(f"system names must be unique, got {names}")
    reference, refs = read_references(ref, fmt, glms=glms, encoding=encoding)
    anns = read_annotations(annotations, encoding) if annotations else {}
    config = _config(normalizer, lang, orthography)
    results = {}
    warnings: list[str] = []
    for name, path in systems:
        hyps = read_hypotheses(path, reference, refs, fmt, glms=glms, encoding=encoding, allow_missing=allow_missing,
                               warnings=warnings)
        results[name] = evaluate_system(refs, hyps, anns, config, progress=progress)
    report = replace(build_leaderboard(results, resamples=resamples, seed=seed, ci_method=ci_method),
                     warnings=tuple(warnings))
    write_json(output, report.to_dict(), indent=1, sort_keys=False, ensure_ascii=False)  # strict: undefined -> null
    if markdown:
        with atomic_write(markdown) as f:
            f.write(render_markdown(report))
    return report
