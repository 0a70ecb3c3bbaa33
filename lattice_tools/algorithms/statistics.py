"""Per-lattice statistics (what ``lattice-tools info`` prints): size, duration, depth, best path,
log-likelihood and a posterior sanity check, over lattices read from any input."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core._budget import DEFAULT_MAX_MEMORY, check_memory, memory_budget
from ..core.files import progress_bar
from ..core.lattice import Lattice
from ..io import read_lattice_inputs
from .pruning import lattice_depth
from .scores import arc_posteriors, best_path, total_log_prob


def posterior_sanity(lat: Lattice, posteriors: np.ndarray) -> float:
    """``max |sum of posteriors of arcs crossing a frame - 1|`` over the frames every path covers.

    Every complete path covers the frames from the start state's time to its final state's time,
    so in a consistent lattice the posteriors of the arcs spanning any such frame sum to 1.
    Frames are taken from the start time to the earliest final time.  NaN when times are unknown.
    """
    if not lat.has_times or lat.num_arcs == 0:
        return float("nan")
    live = lat.t1 > lat.t0
    if not live.any():
        return float("nan")
    start = int(lat.t0[lat.src == 0].min()) if np.any(lat.src == 0) else 0
    into_final = lat.is_final[lat.dst]
    end = int(lat.t1[into_final].min()) if into_final.any() else lat.num_frames
    if end <= start:
        return float("nan")
    n = lat.num_frames + 1
    diff = np.zeros(n + 1)
    np.add.at(diff, lat.t0[live], posteriors[live])
    np.add.at(diff, lat.t1[live], -posteriors[live])
    mass = np.cumsum(diff)[start:end]
    return float(np.abs(mass - 1.0).max())


def lattice_stats(lat: Lattice, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
                  word_penalty: float = 0.0) -> dict:
    """Statistics of one lattice (see :func:`lattice_info`)."""
    kw: dict[str, Any] = dict(acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
    duration = lat.duration if lat.has_times else float("nan")
    post = arc_posteriors(lat, **kw)
    return {
        "key": lat.key,
        "states": lat.num_states,
        "arcs": lat.num_arcs,
        "trimmed_arcs": lat.trimmed_arcs,
        "word_arcs": int(np.count_nonzero(lat.word)),
        "duration": duration,
        "arcs_per_second": lat.num_arcs / duration if duration and duration > 0 else float("nan"),
        "depth": lattice_depth(lat) if lat.has_times else float("nan"),
        "best_path": " ".join(lat.words(best_path(lat, **kw))),
        "log_likelihood": total_log_prob(lat, **kw),
        "posterior_sanity": posterior_sanity(lat, post),
    }


def lattice_info(inputs: Sequence[str], *, format: str | None = None, words: str | None = None,
                 frame_shift: float | None = None, frame_subsampling_factor: int | None = None,
                 acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
                 keys: str | None = None, max_memory: int | None = DEFAULT_MAX_MEMORY,
                 progress: bool | None = None) -> dict:
    """Per-lattice and total statistics of the lattices in ``inputs``.

    For each lattice: states, arcs, trimmed arcs (arcs of the file on no path from the start to a final
    state, which reading dropped: e.g. the dead ends of k2's pruned intersection), word arcs, duration (s), arcs per second, depth (Kaldi's
    ``lattice-depth``: frames covered by arcs / frames), best-path words (minimum cost under the
    scales), log-likelihood (log-sum over all paths of ``-cost``) and the posterior sanity value
    ``max |sum of posteriors crossing a frame - 1|`` (should be ~1e-12; larger means times or
    scores are inconsistent).  ``total`` sums counts and durations and gives overall ratios.
    Returns ``{"lattices": [...], "total": {...}}``.

    ``keys``: a file naming the lattices in input order (:func:`~lattice_tools.io.lattices.inputs.read_lattice_inputs`);
    ``max_memory``: bytes of resident memory reading and the statistics may use (None: no bound;
    BudgetExceededError naming the lattice past it).
    """
    rows = []
    with memory_budget(max_memory):
        lats = read_lattice_inputs(inputs, format=format, words=words, frame_shift=frame_shift,
                                   frame_subsampling_factor=frame_subsampling_factor, keys=keys)
        for lat in progress_bar(lats, desc="info", unit="lat", progress=progress):
            rows.append(lattice_stats(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale,
                                      word_penalty=word_penalty))
            check_memory("the lattice statistics", lat.key, advice="")
    total = {"lattices": len(rows), "states": sum(r["states"] for r in rows), "arcs": sum(r["arcs"] for r in rows),
             "trimmed_arcs": sum(r["trimmed_arcs"] for r in rows), "word_arcs": sum(r["word_arcs"] for r in rows)}
    durs = [r["duration"] for r in rows if not math.isnan(r["duration"])]
    total["duration"] = float(sum(durs)) if durs else float("nan")
    total["arcs_per_second"] = (sum(r["arcs"] for r in rows if not math.isnan(r["duration"])) / total["duration"]
                                if durs and total["duration"] > 0 else float("nan"))
    depth_rows = [r for r in rows if not math.isnan(r["depth"])]
    # overall depth = all covered frames / all frames, i.e. the duration-weighted mean
    total["depth"] = (sum(r["depth"] * r["duration"] for r in depth_rows) / sum(r["duration"] for r in depth_rows)
                      if depth_rows and sum(r["duration"] for r in depth_rows) > 0 else float("nan"))
    total["log_likelihood"] = float(sum(r["log_likelihood"] for r in rows))
    sanity = [r["posterior_sanity"] for r in rows if not math.isnan(r["posterior_sanity"])]
    total["posterior_sanity"] = max(sanity) if sanity else float("nan")
    return {"lattices": rows, "total": total}
