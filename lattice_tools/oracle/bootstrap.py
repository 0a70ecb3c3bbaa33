"""Utterance-level bootstrap confidence intervals for WER and oracle WER.

The unit of resampling is the utterance (the scoring unit), as in Bisani & Ney (2004),
"Bootstrap estimates for confidence intervals in ASR performance evaluation": draw ``U`` utterances
with replacement, ``replications`` times, and recompute ``sum(errors) / sum(ref_words)`` each time.
Intervals are percentile intervals.  All systems (1-best, every oracle) are resampled with the
*same* index draws, so their intervals and the paired differences are comparable.

Vectorized: one ``(replications, U)`` index matrix; per system a gather and two row sums.  With
1000 replications and 10k utterances that is 10M gathers per system (~50 ms).
"""
from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from ..core.counts import ErrorCounts
from ..core.errors import LatticeToolsError


@dataclass(frozen=True)
class Interval:
    """A point estimate and its ``level`` bootstrap percentile interval (fractions, not %)."""

    value: float
    low: float
    high: float
    level: float = 0.95
    replications: int = 1000

    def as_dict(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high, "level": self.level,
                "replications": self.replications}


def resample_indices(num_items: int, replications: int = 1000, seed: int = 0,
                     max_elements: int = 50_000_000) -> np.ndarray:
    """The ``(replications, num_items)`` matrix of bootstrap draws (fixed ``seed``: reproducible)."""
    if num_items <= 0:
        raise LatticeToolsError("bootstrap needs at least one utterance")
    if replications <= 0:
        raise LatticeToolsError(f"bootstrap replications must be positive, got {replications}")
    if replications * num_items > max_elements:
        raise LatticeToolsError(f"bootstrap of {num_items} items x {replications} replications exceeds "
                                f"{max_elements} draws; lower the replications")
    rng = np.random.default_rng(seed)
    return rng.integers(0, num_items, size=(replications, num_items), dtype=np.int64)


def _ratio_interval(num: np.ndarray, den: np.ndarray, idx: np.ndarray, level: float) -> Interval:
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    point = float(num.sum() / den.sum()) if den.sum() > 0 else (0.0 if num.sum() == 0 else float("inf"))
    n_b = num[idx].sum(axis=1)
    d_b = den[idx].sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(d_b > 0, n_b / np.where(d_b > 0, d_b, 1), np.where(n_b > 0, np.inf, 0.0))
    alpha = (1.0 - level) / 2
    lo, hi = np.quantile(ratios, [alpha, 1 - alpha])
    return Interval(point, float(lo), float(hi), level, idx.shape[0])


def bootstrap_wer(per_utterance: Sequence[ErrorCounts], *, replications: int = 1000, seed: int = 0,
                  level: float = 0.95, indices: np.ndarray | None = None) -> dict[str, Interval]:
    """Bootstrap intervals of WER, precision and recall over utterances.

    Args:
      per_utterance: one :class:`ErrorCounts` per utterance (the resampling unit).
      indices: reuse a draw matrix from :func:`resample_indices` (paired comparisons).
    Returns:
      ``{"wer": Interval, "precision": Interval, "recall": Interval}`` (fractions).
    """
    counts = list(per_utterance)
    if indices is None:
        indices = resample_indices(len(counts), replications, seed)
    arr = np.array([(c.errors, c.ref_words, c.correct, c.hyp_words) for c in counts], dtype=np.float64)
    return {"wer": _ratio_interval(arr[:, 0], arr[:, 1], indices, level),
            "precision": _ratio_interval(arr[:, 2], arr[:, 3], indices, level),
            "recall": _ratio_interval(arr[:, 2], arr[:, 1], indices, level)}


SystemName = TypeVar("SystemName", bound=Hashable)  # a system's name or key, e.g. (representation, N)


def bootstrap_systems(systems: Mapping[SystemName, Sequence[ErrorCounts]], *, replications: int = 1000, seed: int = 0,
                      level: float = 0.95) -> dict[SystemName, dict[str, Interval]]:
    """:func:`bootstrap_wer` for several systems scored on the same utterances, with one shared
    draw matrix (paired bootstrap).  Every system must list the utterances in the same order."""
    sizes = {name: len(v) for name, v in systems.items()}
    if len(set(sizes.values())) > 1:
        raise LatticeToolsError(f"systems have different numbers of utterances: {sizes}")
    if not systems:
        return {}
    idx = resample_indices(next(iter(sizes.values())), replications, seed)
    return {name: bootstrap_wer(v, indices=idx, level=level) for name, v in systems.items()}
