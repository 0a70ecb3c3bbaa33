"""Bootstrap CIs and paired tests against kaldialign's bootstrap_wer_ci (Kaldi compute-wer-bootci)."""
# The imports after require_metrics_extras() need the metrics extras: the module is skipped first without them.
# ruff: noqa: E402
from _metrics_helpers import require_metrics_extras

require_metrics_extras()

import random

import kaldialign
import numpy as np
import pytest

from lattice_tools.metrics.levenshtein import error_counts
from lattice_tools.metrics.stats import bootstrap_ci, paired_bootstrap


def _corpus(n=300, seed=0, p_sub=0.2):
    rng = random.Random(seed)
    refs = [[rng.choice("abcdefgh") for _ in range(rng.randint(3, 15))] for _ in range(n)]
    hyps = [[w if rng.random() > p_sub else "z" for w in r if rng.random() > 0.1] for r in refs]
    return refs, hyps


def _arrays(refs, hyps):
    cs = [error_counts(r, h) for r, h in zip(refs, hyps, strict=False)]
    return np.array([c.errors for c in cs]), np.array([c.ref_words for c in cs])


def test_normal_interval_matches_kaldialign_within_noise():
    refs, hyps = _corpus()
    e, n = _arrays(refs, hyps)
    ours = bootstrap_ci(e, n, method="normal", resamples=10_000, seed=42)
    ka = kaldialign.bootstrap_wer_ci(refs, hyps, replications=10_000, seed=42)
    assert ours.value == pytest.approx(e.sum() / n.sum())
    assert ours.mean == pytest.approx(ka["wer"], abs=5e-4)                 # Monte-Carlo noise
    assert (ours.high - ours.low) / 2 == pytest.approx(ka["ci95"], rel=0.05)
    pct = bootstrap_ci(e, n, method="percentile", resamples=10_000, seed=42)
    assert pct.low == pytest.approx(ka["ci95min"], abs=2e-3) and pct.high == pytest.approx(ka["ci95max"], abs=2e-3)


def test_paired_test_matches_kaldialign_improvement_probability():
    refs, hyps = _corpus(seed=1)
    _, hyps2 = _corpus(seed=1, p_sub=0.15)
    e1, n = _arrays(refs, hyps)
    e2, _ = _arrays(refs, hyps2)
    t = paired_bootstrap(e1, n, e2, n, resamples=10_000, seed=42)
    ka = kaldialign.bootstrap_wer_ci(refs, hyps, hyps2, replications=10_000, seed=42)
    assert t.p_b_better == pytest.approx(ka["p_s2_improv_over_s1"], abs=0.02)
    assert 0 <= t.p_value <= 1


def test_identical_systems_are_not_significant_and_different_ones_are():
    refs, hyps = _corpus(seed=2)
    e, n = _arrays(refs, hyps)
    t = paired_bootstrap(e, n, e, n, resamples=2000)
    assert t.p_value == 1.0
    worse = e + 2
    t = paired_bootstrap(e, n, worse, n, resamples=2000)
    assert t.p_value < 0.001 and t.p_b_better == 0.0


def test_seed_reproducible_and_coverage_of_true_value():
    rng = np.random.default_rng(0)
    hits = 0
    for trial in range(60):
        x = rng.binomial(1, 0.3, size=200)
        ci = bootstrap_ci(x, resamples=1000, seed=trial)
        hits += ci.low <= 0.3 <= ci.high
    assert hits >= 51       # nominal 95%: at least 85% of 60 intervals cover the truth
    a = bootstrap_ci([1, 2, 3], [3, 3, 3], resamples=500, seed=7)
    b = bootstrap_ci([1, 2, 3], [3, 3, 3], resamples=500, seed=7)
    assert a == b
    assert bootstrap_ci([], []) is None
    assert paired_bootstrap([1], [2], [1], [2]).p_value != paired_bootstrap([1], [2], [1], [2]).p_value  # NaN: n=1
