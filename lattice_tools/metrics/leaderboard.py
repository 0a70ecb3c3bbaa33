"""Leaderboard over several systems and languages (Lin, BharatVoice-Bench, Tables 1-5): JSON and Markdown.

For every system: the summary over all utterances and per language (coverage, failure taxonomy,
every metric with a bootstrap CI, script confusion, WER by CMI bucket) and the composite rating.
For every pair of systems, metric (default WER and CER) and language (and ``all``): a paired
bootstrap test on the utterances *both* systems covered.
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np

from .evaluate import UtteranceResult, by_language, composite_of, summarize
from .stats import paired_bootstrap

TEST_METRICS = ("wer", "cer")


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
                      ci_method: str = "percentile", test_metrics: Sequence[str] = TEST_METRICS) -> dict:
    """The leaderboard report as a JSON-ready dict."""
    report: dict = {"resamples": resamples, "seed": seed, "ci_method": ci_method, "systems": {}, "paired_tests": {}}
    langs: set[str] = set()
    for name, res in systems.items():
        groups = by_language(res)
        langs |= set(groups)
        overall = summarize(res, resamples=resamples, seed=seed, ci_method=ci_method).to_dict()
        report["systems"][name] = {
            "all": overall,
            "languages": {lg: summarize(g, resamples=resamples, seed=seed, ci_method=ci_method).to_dict()
                          for lg, g in sorted(groups.items())},
            "composite": composite_of(overall["metrics"]),
        }
    report["languages"] = sorted(langs)
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
                tests.append({"a": a, "b": b, "language": lg, **t.as_dict()})
        report["paired_tests"][metric] = tests
    return report


def _fmt(m: dict | None, pct: bool = False) -> str:
    if not m or m.get("value") is None:
        return "–"
    s = 100.0 if pct else 1.0
    v = f"{s * m['value']:.2f}" if not pct else f"{s * m['value']:.1f}"
    if m.get("ci"):
        lo, hi = m["ci"]
        v += f" [{s * lo:.2f}, {s * hi:.2f}]" if not pct else f" [{s * lo:.1f}, {s * hi:.1f}]"
    return v


def _num(x) -> str:
    return "–" if x is None else f"{x:.3f}"


def _pfmt(p: float) -> str:
    return "–" if p is None or p != p else f"{p:.3f}{_stars(p)}"


def _stars(p: float) -> str:
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def render_markdown(report: dict) -> str:
    """Markdown tables: composite leaderboard, per-language WER/CER/SFR with CIs, coverage and
    taxonomy, orthography and entity metrics, paired tests."""
    systems = report["systems"]
    langs = report["languages"]
    order = sorted(systems, key=lambda s: -(systems[s]["composite"]["value"] or -1))
    L = [f"# Leaderboard\n\n{report['resamples']} bootstrap resamples, seed {report['seed']}, "
         f"{report['ci_method']} 95% intervals.\n"]
    L.append("## Composite  (1 − WER) · SFR · (1 − WER_CS)\n")
    L.append("| System | Composite | factors | WER | SFR | WER_CS | coverage |")
    L.append("|---|---|---|---|---|---|---|")
    for s in order:
        m = systems[s]["all"]["metrics"]
        c = systems[s]["composite"]
        cov = systems[s]["all"]["coverage"]
        cv = "–" if c["value"] is None else f"{c['value']:.3f}"
        L.append(f"| {s} | {cv} | "
                 f"{','.join(c['factors'])} | {_fmt(m.get('wer_mono') or m.get('wer'))} | {_fmt(m.get('sfr'))} | "
                 f"{_fmt(m.get('wer_cs'))} | {cov:.2f} |")
    for metric, title in (("wer", "WER"), ("cer", "CER"), ("sfr", "Script Fidelity Rate")):
        L.append(f"\n## {title} per language (95% CI)\n")
        L.append("| System | " + " | ".join(langs) + " |")
        L.append("|---|" + "---|" * len(langs))
        for s in order:
            cells = [_fmt(systems[s]["languages"].get(lg, {}).get("metrics", {}).get(metric)) for lg in langs]
            L.append(f"| {s} | " + " | ".join(cells) + " |")
    L.append("\n## Coverage and failure taxonomy (utterances)\n")
    L.append("| System | language | coverage | ok | high WER | script collapse | no output | dominant scripts |")
    L.append("|---|---|---|---|---|---|---|---|")
    for s in order:
        for lg in langs:
            g = systems[s]["languages"].get(lg)
            if not g:
                continue
            t = g["taxonomy"]
            dom = ", ".join(f"{k} {v}" for k, v in g.get("script_confusion", {}).get("dominant", {}).items())
            L.append(f"| {s} | {lg} | {g['coverage']:.2f} | {t['ok']} | {t['high_wer']} | {t['script_collapse']} | "
                     f"{t['no_output']} | {dom} |")
    extra = [("ne_wer", "NE-WER"), ("ne_fnr", "NE-FNR"), ("switch_f1", "switch-point F1"),
             ("punctuation_ser", "punct. SER"), ("punctuation_f1", "punct. F1"),
             ("capitalisation_ser", "cap. SER"), ("capitalisation_f1", "cap. F1")]
    present = [(k, t) for k, t in extra if any(systems[s]["all"]["metrics"].get(k, {}).get("value") is not None
                                               for s in systems)]
    if present:
        L.append("\n## Entities, code-switching, punctuation and capitalisation (all languages)\n")
        L.append("| System | " + " | ".join(t for _, t in present) + " |")
        L.append("|---|" + "---|" * len(present))
        for s in order:
            m = systems[s]["all"]["metrics"]
            L.append(f"| {s} | " + " | ".join(_fmt(m.get(k)) for k, _ in present) + " |")
    cmi_rows = [(s, lg, g["wer_by_cmi"]) for s in order for lg, g in systems[s]["languages"].items()
                if "wer_by_cmi" in g]
    if cmi_rows:
        L.append("\n## WER by code-mixing index bucket (low [0,15), mid [15,35), high ≥ 35)\n")
        L.append("| System | language | low | mid | high |")
        L.append("|---|---|---|---|---|")
        for s, lg, b in cmi_rows:
            cell = lambda k, b=b: f"{b[k]['wer']:.2f} (n={b[k]['utterances']})" if k in b else "–"  # noqa: E731
            L.append(f"| {s} | {lg} | {cell('low')} | {cell('mid')} | {cell('high')} |")
    for metric, tests in report["paired_tests"].items():
        if not tests:
            continue
        L.append(f"\n## Paired bootstrap tests, {metric.upper()} (two-sided p; * p<0.05, ** p<0.01, *** p<0.001)\n")
        L.append("| A | B | language | n | A | B | p |")
        L.append("|---|---|---|---|---|---|---|")
        for t in tests:
            L.append(f"| {t['a']} | {t['b']} | {t['language']} | {t['n']} | {_num(t['value_a'])} | {_num(t['value_b'])} | "
                     f"{_pfmt(t['p_value'])} |")
    return "\n".join(L) + "\n"
