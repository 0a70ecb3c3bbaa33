"""Leaderboard over several systems and languages (Lin, BharatVoice-Bench, Tables 1-5): JSON and Markdown.

For every system: the summary over all utterances and per language (coverage, failure taxonomy,
every metric with a bootstrap CI, script confusion, WER by CMI bucket) and the composite rating.
For every pair of systems, metric (default WER and CER) and language (and ``all``): a paired
bootstrap test on the utterances *both* systems covered.
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .evaluate import UtteranceResult, by_language, system_metrics
from .results import MetricValue, SystemMetrics
from .stats import PairedTest, paired_bootstrap

TEST_METRICS = ("wer", "cer")


@dataclass(frozen=True, slots=True)
class PairedComparison:
    """The paired bootstrap test of systems ``a`` and ``b`` on one ``language`` group (or ``all``), on the
    utterances both covered."""

    a: str
    b: str
    language: str
    test: PairedTest

    def to_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "language": self.language, **self.test.as_dict()}


@dataclass(frozen=True)
class LeaderboardReport:
    """What :func:`build_leaderboard` found: the bootstrap settings, every system's :class:`SystemMetrics`
    (by name, in the order given), every language group of any system (sorted), the paired tests per metric
    (``wer``, ``cer``) and the ``warnings`` of reading the systems (what was left out under ``allow_missing``)."""

    resamples: int
    seed: int
    ci_method: str
    systems: Mapping[str, SystemMetrics]
    paired_tests: Mapping[str, tuple[PairedComparison, ...]]
    languages: tuple[str, ...]
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        """The report as JSON values (what ``lattice-tools leaderboard`` writes)."""
        out: dict = {"resamples": self.resamples, "seed": self.seed, "ci_method": self.ci_method,
                     "systems": {name: s.to_dict() for name, s in self.systems.items()},
                     "paired_tests": {m: [t.to_dict() for t in tests] for m, tests in self.paired_tests.items()},
                     "languages": list(self.languages)}
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


def _pairs(metric: str, res: Sequence[UtteranceResult]):
    out = {}
    for r in res:
        if not r.covered:
            continue
        c = r.word if metric == "wer" else r.char if metric == "cer" else None
        if c is None:
            raise ValueError(f"paired tests support wer and cer, not {metric!r}")
        out[r.key] = (c.errors, c.ref_words)
    return out


def build_leaderboard(systems: Mapping[str, Sequence[UtteranceResult]], *, resamples: int = 10_000, seed: int = 42,
                      ci_method: str = "percentile", test_metrics: Sequence[str] = TEST_METRICS) -> LeaderboardReport:
    """The leaderboard of the systems' utterance results (see the module docstring)."""
    reports = {name: system_metrics(res, resamples=resamples, seed=seed, ci_method=ci_method)
               for name, res in systems.items()}
    langs = sorted({lg for rep in reports.values() for lg in rep.languages})
    paired: dict[str, tuple[PairedComparison, ...]] = {}
    for metric in test_metrics:
        tests = []
        for a, b in itertools.combinations(systems, 2):
            ga = by_language(systems[a])
            gb = by_language(systems[b])
            for lg in ["all"] + sorted(set(ga) & set(gb)):
                ra = systems[a] if lg == "all" else ga[lg]
                rb = systems[b] if lg == "all" else gb[lg]
                pa, pb = _pairs(metric, ra), _pairs(metric, rb)
                keys = [k for k in pa if k in pb]
                if not keys:
                    continue
                arr = np.array([pa[k] + pb[k] for k in keys], dtype=np.float64)
                t = paired_bootstrap(arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3], resamples=resamples, seed=seed)
                assert t is not None, "keys is not empty"
                tests.append(PairedComparison(a, b, lg, t))
        paired[metric] = tuple(tests)
    return LeaderboardReport(resamples, seed, ci_method, reports, paired, tuple(langs))


def _fmt(m: MetricValue | None, pct: bool = False) -> str:
    if m is None or m.value is None:
        return "–"
    s = 100.0 if pct else 1.0
    v = f"{s * m.value:.2f}" if not pct else f"{s * m.value:.1f}"
    if m.ci:
        lo, hi = m.ci
        v += f" [{s * lo:.2f}, {s * hi:.2f}]" if not pct else f" [{s * lo:.1f}, {s * hi:.1f}]"
    return v


def _num(x) -> str:
    return "–" if x is None or x != x else f"{x:.3f}"


def _pfmt(p: float) -> str:
    return "–" if p is None or p != p else f"{p:.3f}{_stars(p)}"


def _stars(p: float) -> str:
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def render_markdown(report: LeaderboardReport) -> str:
    """Markdown tables: composite leaderboard, per-language WER/CER/SFR with CIs, coverage and
    taxonomy, orthography and entity metrics, paired tests."""
    systems = report.systems
    langs = report.languages
    order = sorted(systems, key=lambda s: -(systems[s].composite.value or -1))
    L = [f"# Leaderboard\n\n{report.resamples} bootstrap resamples, seed {report.seed}, "
         f"{report.ci_method} 95% intervals.\n"]
    L.append("## Composite  (1 − WER) · SFR · (1 − WER_CS)\n")
    L.append("| System | Composite | factors | WER | SFR | WER_CS | coverage |")
    L.append("|---|---|---|---|---|---|---|")
    for s in order:
        m = systems[s].all.metrics
        c = systems[s].composite
        cov = systems[s].all.coverage
        cv = "–" if c.value is None else f"{c.value:.3f}"
        L.append(f"| {s} | {cv} | "
                 f"{','.join(c.factors)} | {_fmt(m.get('wer_mono') or m.get('wer'))} | {_fmt(m.get('sfr'))} | "
                 f"{_fmt(m.get('wer_cs'))} | {cov:.2f} |")
    for metric, title in (("wer", "WER"), ("cer", "CER"), ("sfr", "Script Fidelity Rate")):
        L.append(f"\n## {title} per language (95% CI)\n")
        L.append("| System | " + " | ".join(langs) + " |")
        L.append("|---|" + "---|" * len(langs))
        for s in order:
            groups = systems[s].languages
            cells = [_fmt(groups[lg].metrics.get(metric) if lg in groups else None) for lg in langs]
            L.append(f"| {s} | " + " | ".join(cells) + " |")
    L.append("\n## Coverage and failure taxonomy (utterances)\n")
    L.append("| System | language | coverage | ok | high WER | script collapse | no output | dominant scripts |")
    L.append("|---|---|---|---|---|---|---|---|")
    for s in order:
        for lg in langs:
            g = systems[s].languages.get(lg)
            if g is None:
                continue
            t = g.taxonomy
            dom = ", ".join(f"{k} {v}" for k, v in (g.script_dominant or {}).items())
            L.append(f"| {s} | {lg} | {g.coverage:.2f} | {t['ok']} | {t['high_wer']} | {t['script_collapse']} | "
                     f"{t['no_output']} | {dom} |")
    extra = [("ne_wer", "NE-WER"), ("ne_fnr", "NE-FNR"), ("switch_f1", "switch-point F1"),
             ("punctuation_ser", "punct. SER"), ("punctuation_f1", "punct. F1"),
             ("capitalisation_ser", "cap. SER"), ("capitalisation_f1", "cap. F1")]

    def defined(m: MetricValue | None) -> bool:
        return m is not None and m.value is not None

    present = [(k, t) for k, t in extra if any(defined(systems[s].all.metrics.get(k)) for s in systems)]
    if present:
        L.append("\n## Entities, code-switching, punctuation and capitalisation (all languages)\n")
        L.append("| System | " + " | ".join(t for _, t in present) + " |")
        L.append("|---|" + "---|" * len(present))
        for s in order:
            m = systems[s].all.metrics
            L.append(f"| {s} | " + " | ".join(_fmt(m.get(k)) for k, _ in present) + " |")
    cmi_rows = [(s, lg, g.wer_by_cmi) for s in order for lg, g in systems[s].languages.items()
                if g.wer_by_cmi is not None]
    if cmi_rows:
        L.append("\n## WER by code-mixing index bucket (low [0,15), mid [15,35), high ≥ 35)\n")
        L.append("| System | language | low | mid | high |")
        L.append("|---|---|---|---|---|")
        for s, lg, b in cmi_rows:
            cell = lambda k, b=b: f"{b[k].wer:.2f} (n={b[k].utterances})" if k in b else "–"  # noqa: E731
            L.append(f"| {s} | {lg} | {cell('low')} | {cell('mid')} | {cell('high')} |")
    for metric, tests in report.paired_tests.items():
        if not tests:
            continue
        L.append(f"\n## Paired bootstrap tests, {metric.upper()} (two-sided p; * p<0.05, ** p<0.01, *** p<0.001)\n")
        L.append("| A | B | language | n | A | B | p |")
        L.append("|---|---|---|---|---|---|---|")
        for pair in tests:
            L.append(f"| {pair.a} | {pair.b} | {pair.language} | {pair.test.n} | {_num(pair.test.value_a)} | "
                     f"{_num(pair.test.value_b)} | {_pfmt(pair.test.p_value)} |")
    return "\n".join(L) + "\n"
