"""The results of sclite-exact scoring: one :class:`SegmentScore` per scored segment, gathered in a
:class:`ScoreResult`; sclite's normalized cross-entropy of CTM confidences."""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from ..core.counts import ErrorCounts
from .align import Alignment


@dataclass(frozen=True)
class SegmentScore:
    """One scored segment (STM segment or trn utterance)."""

    id: str
    speaker: str
    file: str
    channel: str
    start: float | None
    end: float | None
    ref_text: str
    alignment: Alignment
    labels: str | None = None      # STM labels as sclite prints them, e.g. ``<o,f0,male>``

    @property
    def counts(self) -> ErrorCounts:
        return self.alignment.counts


@dataclass(frozen=True)
class ScoreResult:
    """Per-segment alignments, per-speaker and overall counts (speakers in order of appearance)."""

    segments: tuple
    speakers: OrderedDict[str, ErrorCounts]
    total: ErrorCounts
    ref_name: str = ""
    hyp_name: str = ""
    warnings: tuple = ()
    options: dict = field(default_factory=dict)
    nce: float | None = None                               # sclite's normalized cross-entropy of the
    speaker_nce: dict = field(default_factory=dict)        # CTM confidences (None: no confidences)


def normalized_cross_entropy(pairs_with_conf: list, counts: ErrorCounts) -> float:
    """sclite's NCE of hypothesis confidences: ``(H(C) + sum_correct log2 p + sum_wrong log2(1-p)) / H(C)``
    with ``H(C) = -(n log2 pc + (N-n) log2(1-pc))``, ``n`` correct and ``N`` hypothesis words, ``pc = n/N``;
    confidences are clipped to [1e-7, 1 - 1e-7].  ``pairs_with_conf``: (op, confidence) of every
    aligned pair that has a hypothesis word (rounded to C floats as sclite stores them).  0 when
    there are none (as sclite prints)."""
    if not pairs_with_conf:
        return 0.0
    s = 0.0
    # sclite keeps a CTM confidence in a C float (wtokstr1.h): round it the same way
    confs = np.asarray([c for _, c in pairs_with_conf], np.float32).astype(np.float64).tolist()
    for (op, _), conf in zip(pairs_with_conf, confs, strict=False):
        conf = min(max(conf, 0.0000001), 0.9999999)
        s += math.log2(conf) if op == "C" else math.log2(1.0 - conf)
    n, wrong = counts.correct, counts.substitutions + counts.insertions
    pc = n / (n + wrong)
    h = -((n * math.log2(pc) if n else 0.0) + (wrong * math.log2(1.0 - pc) if wrong else 0.0))
    return (h + s) / h if h else float("nan")


