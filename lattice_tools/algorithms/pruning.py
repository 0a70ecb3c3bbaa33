"""Posterior pruning and lattice depth."""
from __future__ import annotations

import numpy as np

from ..core.errors import LatticeError
from ..core.lattice import Lattice
from .scores import arc_posteriors


def prune(lat: Lattice, threshold: float, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
          word_penalty: float = 0.0, log_semiring: bool = True) -> Lattice:
    """Drop the arcs whose posterior is below ``threshold``, then keep only the connected part.

    Args:
      lat: the lattice (not modified).
      threshold: minimum arc posterior to keep, in ``[0, 1]``.  ``0`` keeps every arc that lies
        on some complete path (it is then just :func:`lattice_tools.core.lattice.connect`).
      acoustic_scale, lm_scale, word_penalty, log_semiring: how posteriors are computed (see
        :func:`arc_posteriors`; with ``log_semiring=False`` the tropical max-marginal is used,
        which is Kaldi ``lattice-prune``-like pruning with beam ``-ln(threshold)``).

    Returns:
      A new :class:`Lattice` (states renumbered; arcs keep their relative order).

    Caveats:
      In the log semiring, the arcs that survive need not form a complete path when the
      threshold is high (each arc of a path can be below ``threshold`` while the path is the
      best one); then :class:`LatticeError` is raised.  Arcs on the best path have tropical
      max-marginal 1, so tropical pruning with ``threshold <= 1`` always keeps the best path.
    """
    if not 0.0 <= threshold <= 1.0 or not np.isfinite(threshold):
        raise LatticeError(f"prune threshold must be in [0, 1], got {threshold}", key=lat.key or None)
    post = arc_posteriors(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty,
                          log_semiring=log_semiring)
    # Dead arcs have posterior exactly 0; never keep them, whatever the threshold.
    keep = (post >= threshold) & (post > 0.0)
    try:
        return lat.subset_arcs(keep)
    except LatticeError as exc:
        raise LatticeError(f"pruning at posterior {threshold} leaves no complete path ({exc.message})",
                           key=lat.key or None) from None


def lattice_depth(lat: Lattice) -> float:
    """Kaldi's lattice depth: the average number of arcs that cross a frame.

    ``sum over arcs of (t1 - t0) / num_frames``, where ``num_frames`` is the largest end frame
    (``lat.num_frames``).  This is Kaldi's ``CompactLatticeDepth`` (``lattice-depth``), which sums
    the frame counts of all arcs of a word-aligned lattice; for a frame-level lattice (k2, where
    every arc spans one frame) it is ``num_arcs / num_frames``.

    Caveats:
      Like Kaldi it counts every arc of the lattice as given, including dead arcs: pass
      ``connect(lat)`` to count only arcs on complete paths.  Needs times
      (:class:`LatticeError` if any arc time is unknown).  Kaldi returns 1 for an empty lattice
      (and divides by zero for a zero-frame one); here a lattice spanning zero frames gives 1.0.
    """
    if not lat.has_times:
        raise LatticeError("lattice_depth needs arc times (t0/t1), but some are unknown (-1)", key=lat.key or None)
    num_frames = lat.num_frames
    if num_frames == 0:
        return 1.0
    frames = (lat.t1.astype(np.int64) - lat.t0.astype(np.int64)).sum()
    return float(frames) / num_frames
