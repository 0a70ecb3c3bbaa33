"""Forward/backward scores, total probability, arc posteriors and the best path.

Semirings
---------
All functions work on *scores* ``= -cost`` (natural-log probabilities), exactly like k2:

* log semiring (``log_semiring=True``): ``plus`` is log-sum-exp, ``times`` is ``+``;
* tropical semiring (``log_semiring=False``): ``plus`` is ``max``, ``times`` is ``+``.

The cost of an arc is ``lm_scale * graph_cost + acoustic_scale * acoustic_cost +
word_penalty * [word != 0]`` (:meth:`Lattice.arc_costs`); final costs are scaled the same way
(no word penalty).  With the default scales the scores equal k2's ``fsa.scores`` for a lattice
read with :func:`lattice_tools.io.lattices.k2file.read_k2_lattices`, so :func:`total_log_prob` equals
``fsa.get_tot_scores(use_double_scores=True, log_semiring=...)``.

Everything is computed in float64 with a level-by-level schedule (see ``_batches``), so the
work is vectorized over all the states of one level.
"""
from __future__ import annotations

import weakref

import numpy as np

from ..core.errors import LatticeError
from ..core.lattice import Lattice
from ._batches import schedule

NEG_INF = -np.inf


def _scores(lat: Lattice, acoustic_scale: float, lm_scale: float, word_penalty: float):
    arc_scores = -lat.arc_costs(acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
    final_scores = -lat.final_costs(acoustic_scale=acoustic_scale, lm_scale=lm_scale)
    if np.any(np.isnan(arc_scores)) or np.any(np.isnan(final_scores)):
        raise LatticeError(f"scales acoustic_scale={acoustic_scale}, lm_scale={lm_scale}, "
                           f"word_penalty={word_penalty} give NaN scores", key=lat.key or None)
    return arc_scores, final_scores


_BIG_LEVEL = 2048


def _logsumexp_segments(vals: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Segmented log-sum-exp, same result as ``np.logaddexp.reduceat(vals, starts)``.

    For long inputs the max-shifted form (one ``exp`` per element, one ``log`` per segment) is
    about twice as fast as the pairwise ``logaddexp`` reduction; for short ones the single
    reduceat call wins.  Both are stable: the per-segment maximum is subtracted first.
    """
    if len(vals) < _BIG_LEVEL:
        return np.logaddexp.reduceat(vals, starts)
    peak = np.maximum.reduceat(vals, starts)
    peak = np.where(peak == NEG_INF, 0.0, peak)  # all -inf segment: exp(-inf) = 0, log(0) = -inf
    seg_len = np.diff(starts, append=len(vals))
    with np.errstate(divide="ignore"):
        return peak + np.log(np.add.reduceat(np.exp(vals - np.repeat(peak, seg_len)), starts))


def _forward(lat: Lattice, arc_scores: np.ndarray, log_semiring: bool, track_best: bool = False):
    """Forward scores in schedule position order; optionally the best incoming arc per position."""
    sched = schedule(lat)
    alpha = np.full(lat.num_states, NEG_INF)
    alpha[sched.pos[0]] = 0.0
    reduce = _logsumexp_segments if log_semiring else np.maximum.reduceat
    best_in = np.full(lat.num_states, -1, dtype=np.int64) if track_best else None
    fwd_scores = arc_scores[sched.fwd_arcs]
    src_pos = sched.fwd_src_pos
    for a0, a1, s0, s1, starts in sched.fwd_levels:
        vals = alpha[src_pos[a0:a1]] + fwd_scores[a0:a1]
        alpha[s0:s1] = best = reduce(vals, starts)
        if best_in is not None:
            # Tie rule: the first arc in schedule order (= lowest arc index, the sort is stable)
            # among those reaching the maximum.
            seg_len = np.diff(starts, append=a1 - a0)
            cand = np.where(vals == np.repeat(best, seg_len), np.arange(a1 - a0), a1 - a0)
            best_in[s0:s1] = sched.fwd_arcs[a0 + np.minimum.reduceat(cand, starts)]
    return alpha, best_in


def _backward(lat: Lattice, arc_scores: np.ndarray, final_scores: np.ndarray, log_semiring: bool):
    """Backward scores (including final scores) in schedule position order."""
    sched = schedule(lat)
    n = lat.num_states
    beta = np.full(n + 1, NEG_INF)
    beta[n] = 0.0  # the pseudo super-final position; final scores sit on pseudo-arcs into it
    reduce = _logsumexp_segments if log_semiring else np.maximum.reduceat
    bwd_scores = np.concatenate([arc_scores, final_scores[sched.final_states]])[sched.bwd_arcs]
    dst_pos = sched.bwd_dst_pos
    for a0, a1, s0, s1, starts in sched.bwd_levels:
        beta[s0:s1] = reduce(beta[dst_pos[a0:a1]] + bwd_scores[a0:a1], starts)
    return beta[:n]


_SCORE_CACHE: weakref.WeakKeyDictionary[Lattice, dict] = weakref.WeakKeyDictionary()
_SCORE_CACHE_SIZE = 4


def _cached(lat: Lattice, kind: str, kwargs: tuple, compute):
    """Forward/backward results for the last few parameter settings of each lattice object
    (lattices are immutable, so the results cannot go stale).  Arrays are stored read-only;
    callers index them, which copies."""
    per_lat = _SCORE_CACHE.get(lat)
    if per_lat is None:
        per_lat = _SCORE_CACHE[lat] = {}
    key = (kind,) + kwargs
    if key in per_lat:
        return per_lat[key]
    value = compute()
    if len(per_lat) >= _SCORE_CACHE_SIZE:
        per_lat.pop(next(iter(per_lat)))
    value.setflags(write=False)
    per_lat[key] = value
    return value


def _alpha_beta(lat: Lattice, acoustic_scale, lm_scale, word_penalty, log_semiring, need_beta=True):
    """(arc_scores, final_scores, alpha_pos, beta_pos or None), with alpha/beta cached."""
    _check_semiring_kwargs(acoustic_scale, lm_scale, word_penalty)
    arc_scores, final_scores = _scores(lat, acoustic_scale, lm_scale, word_penalty)
    kw = (float(acoustic_scale), float(lm_scale), float(word_penalty), bool(log_semiring))
    alpha = _cached(lat, "alpha", kw, lambda: _forward(lat, arc_scores, log_semiring)[0])
    beta = (_cached(lat, "beta", kw, lambda: _backward(lat, arc_scores, final_scores, log_semiring))
            if need_beta else None)
    return arc_scores, final_scores, alpha, beta


def _check_semiring_kwargs(acoustic_scale, lm_scale, word_penalty):
    for name, value in (("acoustic_scale", acoustic_scale), ("lm_scale", lm_scale), ("word_penalty", word_penalty)):
        if not np.isfinite(value):
            raise LatticeError(f"{name} must be finite, got {value}")


def forward_scores(lat: Lattice, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
                   log_semiring: bool = True) -> np.ndarray:
    """Forward scores of all states.

    Args:
      lat: the lattice.
      acoustic_scale, lm_scale, word_penalty: see :meth:`Lattice.arc_costs`.
      log_semiring: log-sum-exp over paths if True (log semiring), max if False (tropical).

    Returns:
      float64 array ``[num_states]``: for state ``s`` the semiring sum, over all partial paths
      from the start state (0) to ``s``, of the path score ``-sum(cost)``.  The start state has
      0; states not reachable from the start have ``-inf``.  Final costs are not included.
    """
    _, _, alpha_pos, _ = _alpha_beta(lat, acoustic_scale, lm_scale, word_penalty, log_semiring, need_beta=False)
    return alpha_pos[schedule(lat).pos]


def backward_scores(lat: Lattice, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
                    log_semiring: bool = True) -> np.ndarray:
    """Backward scores of all states.

    Returns:
      float64 array ``[num_states]``: for state ``s`` the semiring sum, over all paths from ``s``
      to any final state, of ``-sum(cost) - final_cost``.  ``-inf`` where no final state can be
      reached.  ``backward_scores(lat)[0] == total_log_prob(lat)``.
    """
    _, _, _, beta_pos = _alpha_beta(lat, acoustic_scale, lm_scale, word_penalty, log_semiring)
    return beta_pos[schedule(lat).pos]


def total_log_prob(lat: Lattice, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
                   log_semiring: bool = True) -> float:
    """Total score of the lattice: the semiring sum over all complete paths of ``-cost``.

    Equals k2's ``get_tot_scores(use_double_scores=True, log_semiring=...)`` (log: the log of the
    total, unnormalized path probability; tropical: the best path's score).  ``-inf`` if there
    is no complete path.  Computed from the forward scores and the final scores.
    """
    _, final_scores, alpha_pos, _ = _alpha_beta(lat, acoustic_scale, lm_scale, word_penalty, log_semiring,
                                                need_beta=False)
    ends = alpha_pos[schedule(lat).pos] + final_scores
    if log_semiring:
        return float(np.logaddexp.reduce(ends)) if ends.size else NEG_INF
    return float(ends.max())


def arc_posteriors(lat: Lattice, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
                   log_semiring: bool = True) -> np.ndarray:
    """Posterior probability of every arc (the fraction of the total path mass through it).

    ``exp(alpha[src] - cost + beta[dst] - total)`` with forward ``alpha``, backward ``beta`` and
    ``total`` in the chosen semiring.  In the log semiring this is the usual posterior (k2
    ``exp(get_arc_post(True, True))``); in the tropical semiring it is ``exp`` of the best path
    through the arc minus the best path overall (1 on the best path), i.e. a max-marginal.

    Returns float64 ``[num_arcs]``; dead arcs (not on any complete path) get exactly 0, and all
    arcs get 0 if the lattice has no complete path.  Values are not clipped, so rounding can
    give ``1 + 1e-15``.
    """
    arc_scores, _, alpha_pos, beta_pos = _alpha_beta(lat, acoustic_scale, lm_scale, word_penalty, log_semiring)
    sched = schedule(lat)
    alpha = alpha_pos[sched.pos]
    beta = beta_pos[sched.pos]
    total = beta[0]
    if total == NEG_INF:
        return np.zeros(lat.num_arcs)
    log_post = alpha[lat.src] + arc_scores + beta[lat.dst] - total
    return np.exp(log_post)


def best_path(lat: Lattice, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
              log_semiring: bool = True) -> np.ndarray:
    """Arc indices, in path order, of the minimum-cost complete path (Viterbi, tropical semiring).

    Ties are broken deterministically: among equal-score partial paths into a state the one whose
    last arc has the lowest arc index wins, and among equal-score complete paths the one ending in
    the lowest-numbered final state.  ``log_semiring`` is accepted only so that the same keyword
    arguments can be passed to every function here; it is ignored (a best path is tropical).

    Returns an int64 array (empty if the start state is final and the empty path is best).
    Raises :class:`LatticeError` if there is no complete path.
    """
    del log_semiring  # always tropical, see the docstring
    _check_semiring_kwargs(acoustic_scale, lm_scale, word_penalty)
    arc_scores, final_scores = _scores(lat, acoustic_scale, lm_scale, word_penalty)
    sched = schedule(lat)
    alpha_pos, best_in_pos = _forward(lat, arc_scores, False, track_best=True)
    ends = alpha_pos[sched.pos] + final_scores
    state = int(np.argmax(ends))  # first maximum = lowest state id
    if ends[state] == NEG_INF:
        raise LatticeError("lattice has no complete path from the start to a final state", key=lat.key or None)
    best_in = best_in_pos[sched.pos]
    path = []
    while state != 0:
        arc = int(best_in[state])
        path.append(arc)
        state = int(lat.src[arc])
    return np.array(path[::-1], dtype=np.int64)
