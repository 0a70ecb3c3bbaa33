"""Lattice weights from given arc posteriors (for decoders that publish posteriors, not LM scores)."""
from __future__ import annotations

import numpy as np

from .errors import LatticeError
from .lattice import Lattice, connect


def weights_from_posteriors(lat: Lattice, posteriors, *, min_posterior: float = 0.0,
                            zero_floor: float = 1e-10) -> Lattice:
    """A copy of ``lat`` whose weights make its arc posteriors equal ``posteriors``.

    pocketsphinx writes SLF links with the acoustic score ``a=`` and the link posterior ``p=`` that it
    computed with its language model, but no LM score ``l=``: the acoustic scores alone do not
    describe the decoder's distribution.  Given consistent arc posteriors ``g`` (probability flow:
    at every state the flow in equals the flow out plus the flow that ends there), the Markov chain
    that leaves state ``s`` by arc ``e`` with probability ``g(e) / F(s)`` -- ``F(s)`` being the
    flow out of ``s``, ending included -- has exactly these arc posteriors and total probability 1.

    Semiring: log.  The new weights are put in ``graph_cost`` (``-ln(g(e)/F(src))``); the
    ``acoustic_cost`` becomes 0 and the original acoustic and graph costs are kept in
    ``attrs['orig_acoustic_cost']``/``attrs['orig_graph_cost']``.  Arcs with posterior
    ``<= min_posterior`` (and always those with posterior 0, which no probable path uses) are
    removed first.  Final weights: ``-ln(phi(s)/F(s))`` with ``phi(s)`` = inflow - outflow at a
    final state (at least a tiny positive value, so that rounding in the file never makes a final
    state unusable).

    Caveats: posteriors printed with few digits are slightly inconsistent; the chain still has
    total probability 1 and its posteriors equal the given ones to within that rounding.  When
    removing the zero-posterior arcs would leave no complete path (pocketsphinx sometimes writes
    ``p=0`` on links of its only path), they are kept instead with the posterior ``zero_floor``.
    """
    try:
        return _reweight(lat, posteriors, min_posterior, None)
    except LatticeError as exc:
        if "no complete path" not in str(exc):
            raise
        return _reweight(lat, posteriors, min_posterior, zero_floor)


def posterior_flow_error(lat: Lattice, posteriors) -> tuple[float, int]:
    """``(excess, state)``: how far the largest flow through one state -- the sum of the posteriors of
    the arcs entering it, or of those leaving it -- exceeds 1, and that state.  Arc posteriors that a
    decoder computed never pass more than probability 1 through a state, up to their printed digits
    (pocketsphinx: at most 1.0014 on 23 lattices of 2k-150k links); pocketsphinx's ``p=1`` on every
    link, which it writes when its lattice is taken before its hypothesis, passes hundreds.  (A
    ``p=0`` on a link of the only path, which pocketsphinx also writes, breaks conservation but not
    this bound.)"""
    g = np.asarray(posteriors, dtype=np.float64)
    n = lat.num_states
    if not n or not len(g):
        return 0.0, 0
    flow = np.maximum(np.bincount(lat.dst, weights=g, minlength=n), np.bincount(lat.src, weights=g, minlength=n))
    state = int(np.argmax(flow))
    return max(float(flow[state]) - 1.0, 0.0), state


def _reweight(lat: Lattice, posteriors, min_posterior: float, floor: float | None) -> Lattice:
    g = np.asarray(posteriors, dtype=np.float64)
    if g.shape != (lat.num_arcs,):
        raise LatticeError(f"expected {lat.num_arcs} posteriors, got shape {g.shape}", key=lat.key or None)
    if np.any(~np.isfinite(g)) or np.any(g < 0):
        raise LatticeError("posteriors must be finite and >= 0", key=lat.key or None)
    if floor is not None:
        g = np.maximum(g, floor)
    keep = g > max(min_posterior, 0.0)
    sub = lat._select(np.nonzero(keep)[0])
    g = g[keep]
    n = sub.num_states
    inflow = np.bincount(sub.dst, weights=g, minlength=n)
    outflow = np.bincount(sub.src, weights=g, minlength=n)
    inflow[0] = max(inflow[0], 1.0) if n else 0.0   # the start state receives all the flow
    ends = np.where(sub.is_final, np.maximum(inflow - outflow, 0.0), 0.0)
    # a final state with no measurable ending flow but no way out still has to end somewhere
    tiny = 1e-12
    ends = np.where(sub.is_final & (ends <= 0) & (outflow <= 0), tiny, ends)
    total_out = outflow + ends
    with np.errstate(divide="ignore"):
        arc_cost = -np.log(g / total_out[sub.src])
    # only states that end get a final weight; computing the ratio elsewhere would divide by a subnormal flow
    final_cost = np.full(n, np.inf)
    ending = ends > 0
    final_cost[ending] = -np.log(ends[ending] / total_out[ending])
    attrs = dict(sub.attrs)
    attrs["orig_graph_cost"] = sub.graph_cost
    attrs["orig_acoustic_cost"] = sub.acoustic_cost
    out = Lattice(num_states=n, src=sub.src, dst=sub.dst, word=sub.word, ilabel=sub.ilabel, t0=sub.t0, t1=sub.t1,
                  graph_cost=arc_cost, acoustic_cost=np.zeros(sub.num_arcs), final_graph_cost=final_cost,
                  final_acoustic_cost=np.where(np.isfinite(final_cost), 0.0, np.inf), symbols=sub.symbols,
                  frame_shift=sub.frame_shift, key=sub.key, word_aligned=sub.word_aligned, attrs=attrs)
    return connect(out)
