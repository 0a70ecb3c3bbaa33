"""Metrics beyond WER (the papers by Lin (BharatVoice-Bench), Wang et al. (ContextASR-Bench) and Kuhn et al. (Beyond Levenshtein)): CER on grapheme clusters, Indic normalization, Script
Fidelity Rate, code-switching (CMI, switch-point F1, composite), named entities (NE-WER, NE-FNR),
punctuation- and case-aware alignment, bootstrap CIs and paired tests, oracle metrics and
alternative coverage over alt-CTM alternatives.  See docs/metrics.md.

Submodules are imported lazily by their users; importing this package is cheap.
"""
from __future__ import annotations

__all__ = ["text", "script", "codeswitch", "entities", "punctuation", "stats", "levenshtein", "evaluate", "results",
           "leaderboard", "alternatives", "io", "commands"]
