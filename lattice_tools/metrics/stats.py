"""Bootstrap confidence intervals and paired bootstrap tests (Lin, BharatVoice-Bench, sections 4.1 and 6.6).

Every corpus metric here is a *ratio of sums* over utterances, ``sum(num) / sum(den)`` (WER:
errors / reference words; SFR: expected-script characters / scripted characters; a per-utterance
mean: values / 1).  A bootstrap replicate resamples utterances with replacement (Bisani & Ney 2004,
as Kaldi's ``compute-wer-bootci`` and kaldialign's ``bootstrap_wer_ci``) and recomputes the ratio.

* :func:`bootstrap_ci` -- percentile interval (default) or ``method='normal'``: mean of the
  replicates +- 1.96 standard deviations, which is exactly kaldialign's/Kaldi's interval.
* :func:`paired_bootstrap` -- both systems are resampled with the *same* utterance indices;
  two-sided p-value ``min(1, 2 * min(P(d <= 0), P(d >= 0)))`` with ``d`` the replicate difference
  ``metric(A) - metric(B)``, and kaldialign's one-sided ``P(B improves on A) = P(d > 0)``.

Replicates are drawn as multinomial counts per utterance in blocks, so memory is
``block x n_utterances`` whatever the number of resamples, and each block is one matrix product.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 42


def _replicate_weights(n: int, resamples: int, rng: np.random.Generator, block: int):
    """Yield ``(k, n)`` matrices of resampling counts: row ``r`` counts how often each utterance
    was drawn in replicate ``r`` (``n`` uniform draws with replacement; rows sum to ``n``)."""
    done = 0
    while done < resamples:
        k = min(block, resamples - done)
        idx = rng.integers(0, n, size=(k, n))
        idx += (np.arange(k) * n)[:, None]     # row r counts into bins [r*n, (r+1)*n)
        yield np.bincount(idx.ravel(), minlength=k * n).reshape(k, n).astype(np.float64)
        done += k


def _ratios(num: np.ndarray, den: np.ndarray, weights: np.ndarray) -> np.ndarray:
    top = weights @ num
    bot = weights @ den
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(bot > 0, top / np.where(bot > 0, bot, 1), np.nan)


def _block(n: int) -> int:
    return max(1, min(2000, 2_000_000 // max(n, 1)))


@dataclass(frozen=True)
class BootstrapCI:
    value: float          # the metric on the full sample
    low: float
    high: float
    mean: float           # mean of the replicates
    std: float
    resamples: int
    method: str

    def as_dict(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high, "mean": self.mean, "std": self.std,
                "resamples": self.resamples, "method": self.method}


def bootstrap_ci(num, den=None, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                 confidence: float = 0.95, method: str = "percentile") -> BootstrapCI | None:
    """Bootstrap CI of ``sum(num)/sum(den)`` over utterances (``den`` = ones: mean of ``num``).

    Returns None for an empty sample.  Replicates whose denominator is 0 are ignored (NaN).
    """
    num = np.asarray(num, dtype=np.float64)
    den = np.ones_like(num) if den is None else np.asarray(den, dtype=np.float64)
    n = len(num)
    if n == 0:
        return None
    value = float(num.sum() / den.sum()) if den.sum() > 0 else float("nan")
    rng = np.random.default_rng(seed)
    reps = np.concatenate([_ratios(num, den, w) for w in _replicate_weights(n, resamples, rng, _block(n))])
    reps = reps[~np.isnan(reps)]
    if len(reps) == 0:
        return BootstrapCI(value, float("nan"), float("nan"), float("nan"), float("nan"), resamples, method)
    mean, std = float(reps.mean()), float(reps.std())
    alpha = 1.0 - confidence
    if method == "percentile":
        low, high = np.quantile(reps, [alpha / 2, 1 - alpha / 2])
    elif method == "normal":
        from statistics import NormalDist
        z = NormalDist().inv_cdf(1 - alpha / 2)
        low, high = mean - z * std, mean + z * std
    else:
        raise ValueError(f"method must be 'percentile' or 'normal', got {method!r}")
    return BootstrapCI(value, float(low), float(high), mean, std, resamples, method)


@dataclass(frozen=True)
class PairedTest:
    value_a: float
    value_b: float
    p_value: float              # two-sided
    p_b_better: float           # kaldialign's p_s2_improv_over_s1 = P(metric_A - metric_B > 0)
    resamples: int
    n: int

    def as_dict(self) -> dict:
        nn = lambda x: None if x != x else x  # noqa: E731  (NaN -> null: strict JSON)
        return {"value_a": nn(self.value_a), "value_b": nn(self.value_b), "p_value": nn(self.p_value),
                "p_b_better": nn(self.p_b_better), "resamples": self.resamples, "n": self.n}


def paired_bootstrap(num_a, den_a, num_b, den_b, *, resamples: int = DEFAULT_RESAMPLES,
                     seed: int = DEFAULT_SEED) -> PairedTest | None:
    """Paired bootstrap test of ``ratio(A) - ratio(B)`` on the same utterances (arrays aligned)."""
    num_a, den_a, num_b, den_b = (np.asarray(x, dtype=np.float64) for x in (num_a, den_a, num_b, den_b))
    n = len(num_a)
    if n == 0:
        return None
    rng = np.random.default_rng(seed)
    le = ge = gt = total = 0
    for w in _replicate_weights(n, resamples, rng, _block(n)):
        d = _ratios(num_a, den_a, w) - _ratios(num_b, den_b, w)
        d = d[~np.isnan(d)]
        le += int((d <= 0).sum())
        ge += int((d >= 0).sum())
        gt += int((d > 0).sum())
        total += len(d)
    va = float(num_a.sum() / den_a.sum()) if den_a.sum() else float("nan")
    vb = float(num_b.sum() / den_b.sum()) if den_b.sum() else float("nan")
    if total == 0 or n < 2:
        # one utterance: every replicate is the sample itself, a p-value would be meaningless
        return PairedTest(va, vb, float("nan"), float("nan"), resamples, n)
    p = min(1.0, 2.0 * min(le, ge) / total)
    return PairedTest(va, vb, p, gt / total, resamples, n)


def bootstrap_many(columns: dict[str, tuple[np.ndarray, np.ndarray]], *, resamples: int = DEFAULT_RESAMPLES,
                   seed: int = DEFAULT_SEED, confidence: float = 0.95,
                   method: str = "percentile") -> dict[str, BootstrapCI | None]:
    """:func:`bootstrap_ci` of several ratio metrics over the *same* ``n`` items, sharing the
    replicates (one weight matrix per block, one matrix product for all metrics).  A metric that
    does not apply to an item has ``num = den = 0`` there, so a replicate's ratio is taken over the
    drawn items it applies to.  For a metric that applies to every item this is exactly
    :func:`bootstrap_ci` with the same seed."""
    names = list(columns)
    if not names:
        return {}
    n = len(columns[names[0]][0])
    if n == 0:
        return {k: None for k in names}
    M = np.column_stack([np.asarray(columns[k][j], dtype=np.float64) for k in names for j in (0, 1)])
    rng = np.random.default_rng(seed)
    reps = []
    for w in _replicate_weights(n, resamples, rng, _block(n)):
        s = w @ M
        top, bot = s[:, 0::2], s[:, 1::2]
        with np.errstate(divide="ignore", invalid="ignore"):
            reps.append(np.where(bot > 0, top / np.where(bot > 0, bot, 1), np.nan))
    R = np.concatenate(reps)
    out: dict[str, BootstrapCI | None] = {}
    alpha = 1.0 - confidence
    for c, name in enumerate(names):
        num, den = M[:, 2 * c], M[:, 2 * c + 1]
        value = float(num.sum() / den.sum()) if den.sum() > 0 else float("nan")
        r = R[:, c]
        r = r[~np.isnan(r)]
        if len(r) == 0:
            out[name] = BootstrapCI(value, float("nan"), float("nan"), float("nan"), float("nan"), resamples, method)
            continue
        mean, std = float(r.mean()), float(r.std())
        if method == "percentile":
            low, high = np.quantile(r, [alpha / 2, 1 - alpha / 2])
        elif method == "normal":
            from statistics import NormalDist
            z = NormalDist().inv_cdf(1 - alpha / 2)
            low, high = mean - z * std, mean + z * std
        else:
            raise ValueError(f"method must be 'percentile' or 'normal', got {method!r}")
        out[name] = BootstrapCI(value, float(low), float(high), mean, std, resamples, method)
    return out
