"""The exact oracle dynamic programme: the cheapest alignment of a hypothesis network with a reference network.

The oracle is the path through the hypothesis network whose alignment against *some* path through
the reference network has the lowest total cost.  It is computed exactly -- never sampled -- by one
shortest-path dynamic programme over the product ``hypothesis states x reference states``:

* ``(q, r) -> (q', r')`` along a hypothesis arc ``q->q'`` and a reference arc ``r->r'``:
  correct or substitution (cost of the word pair);
* ``(q, r) -> (q', r)`` along a hypothesis arc alone: insertion (epsilon arcs of a lattice cost 0);
* ``(q, r) -> (q, r')`` along a reference arc alone: deletion (an optional word with ``-D``
  and the NULL word ``@`` of a GLM alternation have their own, smaller costs).

Semiring: tropical (min, +) over the integer costs of :mod:`lattice_tools.oracle.costs`, so ties
are exact.  Unlike Kaldi's ``lattice-oracle`` or k2's Levenshtein graphs the reference side is a
network, so GLM alternations ``{ I'M / I AM }``, ``@`` and optionally deletable words are handled
exactly.

Vectorization: hypothesis states are processed level by level (level = longest arc distance from
the start); all states of a level depend only on earlier levels, so one level is a handful of
numpy operations over ``(arcs of the level) x (reference states)``.  Deletions inside one
hypothesis state are a shortest-path closure over the (small, acyclic) reference network: a
running minimum for a linear reference, else a min-plus product with the all-pairs deletion
costs (short references) or one vectorized update per reference arc (long ones).  Arg-minimums
pack ``cost * k + index`` into one int64 so that a single reduction gives value and position.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from ..core.counts import ErrorCounts
from ..core.errors import LatticeError
from .costs import SCLITE_ORACLE_COSTS, OracleCosts, oracle_costs
from .graphs import (
    LABEL_EPSILON,
    LABEL_NULL,
    LABEL_WORD,
    HypGraph,
    RefGraph,
    ref_graph,
    reversed_hyp_graph,
    reversed_ref_graph,
)

# "Infinite" integer cost.  2^40 leaves room to pack (cost, index) pairs into one int64 key
# (cost * 2^20 + index) for single-pass arg-minimums; real totals stay far below it.
BIG = np.int64(1) << 40


# ----------------------------------------------------------------------------------------------
# Result types
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OracleAlignmentStep:
    """One step of an oracle alignment: ``op`` is ``C``, ``S``, ``D``, ``I`` (or ``N`` for a
    NULL ``@`` skipped, which is no error).  ``ref``/``hyp`` are the words as written (None where
    absent); ``start``/``duration`` the hypothesis word's time (NaN unknown); ``hyp_arc`` the index
    of the hypothesis arc (-1 for deletions); ``optional``: the reference word is optionally deletable.

    Not the scorer's :class:`lattice_tools.scoring.align.AlignedPair` (a column of sclite's
    alignment, indexing both networks): an oracle step carries the hypothesis word's time."""

    op: str
    ref: str | None
    hyp: str | None
    start: float = math.nan
    duration: float = math.nan
    hyp_arc: int = -1
    optional: bool = False


@dataclass(frozen=True)
class OracleResult:
    """The oracle path of one utterance.

    ``counts``: C/S/D/I and #Wrd of the oracle alignment (``segments=1``, ``segment_errors`` 0/1).
    ``cost``: its total cost in the mode's units (sclite weights or errors).  ``words``/``starts``/
    ``durations``: the oracle word sequence with times.  ``alignment``: the
    :class:`OracleAlignmentStep` steps.
    """

    key: str
    mode: str
    counts: ErrorCounts
    cost: float
    words: tuple
    starts: tuple
    durations: tuple
    alignment: tuple = field(repr=False, default=())


def counts_of_alignment(steps: Iterable[OracleAlignmentStep], costs: OracleCosts = SCLITE_ORACLE_COSTS) -> ErrorCounts:
    """C/S/D/I and #Wrd of an alignment.  An optional reference word that is deleted counts as
    correct (sclite ``-D``: it is in #Wrd and is no error); ``@`` steps count nothing."""
    c = s = d = i = oc = od = 0
    for st in steps:
        if st.op == "C":
            c += 1
            oc += st.optional
        elif st.op == "S":
            s += 1
        elif st.op == "D":
            if st.optional:
                c += 1
                od += 1
            else:
                d += 1
        elif st.op == "I":
            i += 1
    return ErrorCounts(correct=c, substitutions=s, deletions=d, insertions=i, ref_words=c + s + d, segments=1,
                       segment_errors=int(s + d + i > 0), optional_correct=oc, optional_deleted=od)


# ----------------------------------------------------------------------------------------------
# Costs of one hypothesis label against one reference arc
# ----------------------------------------------------------------------------------------------
# pair_op codes of _pair_costs
PAIR_CORRECT, PAIR_SUBSTITUTION, PAIR_WORD_NULL, PAIR_NULL_WORD, PAIR_NULL_NULL = 0, 1, 2, 3, 4


def _pair_costs(hyp: HypGraph, ref: RefGraph, costs: OracleCosts) -> tuple[np.ndarray, np.ndarray]:
    """``pair[h, e]``: cost of hypothesis label ``h`` against reference arc ``e``; ``op[h, e]``:
    0 correct, 1 substitution, 2 word vs @ (insertion), 3 @ vs word (deletion), 4 @ vs @."""
    H, E = len(hyp.labels), ref.num_arcs
    pair = np.full((H, E), BIG, dtype=np.int64)
    op = np.full((H, E), -1, dtype=np.int8)
    kinds = hyp.kind
    word_rows = np.nonzero(kinds == LABEL_WORD)[0]
    null_rows = np.nonzero(kinds == LABEL_NULL)[0]
    ref_is_null = np.array([w is None for w in ref.words], dtype=bool)
    ref_word_cols = np.nonzero(~ref_is_null)[0]
    ref_null_cols = np.nonzero(ref_is_null)[0]
    null_pair = BIG if costs.null_pair is None else costs.null_pair
    if len(word_rows):
        pair[np.ix_(word_rows, ref_word_cols)] = costs.sub
        op[np.ix_(word_rows, ref_word_cols)] = PAIR_SUBSTITUTION
        pair[np.ix_(word_rows, ref_null_cols)] = null_pair
        op[np.ix_(word_rows, ref_null_cols)] = PAIR_WORD_NULL
        row_of = {hyp.labels[h]: h for h in word_rows.tolist()}
        for e in ref_word_cols.tolist():
            w = ref.words[e]
            h = row_of.get(w)
            if h is not None:
                pair[h, e] = 0
                op[h, e] = PAIR_CORRECT
            if ref.fragment[e]:
                for h2 in word_rows.tolist():
                    if _fragment_match(w, hyp.labels[h2]):
                        pair[h2, e] = 0
                        op[h2, e] = PAIR_CORRECT
    if len(null_rows):
        pair[np.ix_(null_rows, ref_word_cols)] = null_pair
        op[np.ix_(null_rows, ref_word_cols)] = PAIR_NULL_WORD
        pair[np.ix_(null_rows, ref_null_cols)] = null_pair
        op[np.ix_(null_rows, ref_null_cols)] = PAIR_NULL_NULL
    return pair, op


def _fragment_match(frag: str, word: str) -> bool:
    """sclite ``-F``: ``pla-`` matches any word starting ``pla``, ``-tion`` any word ending ``tion``."""
    if len(frag) > 1 and frag.endswith("-"):
        return word.startswith(frag[:-1])
    if len(frag) > 1 and frag.startswith("-"):
        return word.endswith(frag[1:])
    return frag == word


# ----------------------------------------------------------------------------------------------
# The reference side of one DP step: pairing with reference arcs, and the deletion closure.
# A single chain (a plain transcript, the common case) makes both a column shift and a running
# minimum; any other network takes segmented reductions and an all-pairs deletion table.
# ----------------------------------------------------------------------------------------------
class _ChainReference:
    """A reference whose arc ``e`` goes ``e -> e+1``."""

    def __init__(self, ref: RefGraph, del_by_arc: np.ndarray):
        R = ref.num_states
        self.num_arcs = ref.num_arcs
        self.cum_del = np.concatenate(([0], np.cumsum(del_by_arc))).astype(np.int64)     # (R,)
        self.rev_r = (R - 1 - np.arange(R)).astype(np.int64)

    def pair(self, Dsrc: np.ndarray, pair_rows: np.ndarray, cand: np.ndarray, cand_ref: np.ndarray) -> None:
        """Lower ``cand`` (A, R) by pairing each arc's label with reference arc e = r -> r+1."""
        E = self.num_arcs
        if not E:
            return
        pc = Dsrc[:, :-1] + pair_rows                # (A, E)
        better = pc < cand[:, 1:]
        cand[:, 1:] = np.where(better, pc, cand[:, 1:])
        cand_ref[:, 1:] = np.where(better, np.arange(E, dtype=np.int32)[None, :], -1)

    def close(self, block: np.ndarray, bdel: np.ndarray) -> None:
        """In-place deletion closure; ``bdel``: the last deletion arc into each state (-1 none)."""
        R = block.shape[1]
        # D'[r'] = min_{r <= r'} D[r] + cum[r'] - cum[r]; key ties to the largest r (fewest deletions)
        packed = (np.minimum(block, BIG) - self.cum_del) * R + self.rev_r
        acc = np.minimum.accumulate(packed, axis=1)
        frm = (R - 1) - (acc % R)
        block[:] = acc // R + self.cum_del
        moved = frm < np.arange(R)
        bdel[:] = np.where(moved, np.arange(R) - 1, -1)


class _NetworkReference:
    """Any acyclic reference network (alternations, ``@``), arcs sorted by source state."""

    def __init__(self, ref: RefGraph, del_by_arc: np.ndarray):
        R, E = ref.num_states, ref.num_arcs
        self.ref, self.del_by_arc = ref, del_by_arc
        # Reference arcs grouped by destination (stable: listed order kept), for a segmented min.
        self.by_dst = np.lexsort((ref.rank, ref.dst))
        dst_sorted = ref.dst[self.by_dst]
        self.dst_starts = (np.flatnonzero(np.concatenate(([True], dst_sorted[1:] != dst_sorted[:-1]))) if E
                           else np.zeros(0, np.int64))
        self.dst_cols = dst_sorted[self.dst_starts] if E else np.zeros(0, np.int64)
        # All-pairs cheapest deletion paths inside the reference network (it is small and acyclic):
        # del_star[r, r'] and the last arc of that path, del_last[r, r'] (-1 when r == r').
        self.del_star = np.full((R, R), BIG, dtype=np.int64)
        np.fill_diagonal(self.del_star, 0)
        self.del_last = np.full((R, R), -1, dtype=np.int32)
        for e in range(E):  # arcs sorted by src: column src(e) is final when it is used
            c = self.del_star[:, ref.src[e]] + del_by_arc[e]
            better = c < self.del_star[:, ref.dst[e]]
            self.del_star[better, ref.dst[e]] = c[better]
            self.del_last[better, ref.dst[e]] = e
        self.matrix_chunk = max(1, (1 << 22) // max(1, R * R))

    def pair(self, Dsrc: np.ndarray, pair_rows: np.ndarray, cand: np.ndarray, cand_ref: np.ndarray) -> None:
        """Lower ``cand`` (A, R) by pairing each arc's label with every reference arc."""
        E = self.ref.num_arcs
        if not E:
            return
        pc = Dsrc[:, self.ref.src] + pair_rows       # (A, E)
        pc = np.minimum(pc[:, self.by_dst], BIG)
        # first reference arc (listed order) achieving the minimum, in one packed reduction
        packed = pc * (E + 1) + np.arange(E)[None, :]
        kmin = np.minimum.reduceat(packed, self.dst_starts, axis=1)          # (A, U)
        mins = kmin // (E + 1)
        arg = self.by_dst[kmin % (E + 1)]                                    # (A, U) reference arc ids
        cur = cand[:, self.dst_cols]
        better = mins < cur
        cand[:, self.dst_cols] = np.where(better, mins, cur)
        cand_ref[:, self.dst_cols] = np.where(better, arg, cand_ref[:, self.dst_cols])

    def close(self, block: np.ndarray, bdel: np.ndarray) -> None:
        """In-place deletion closure over the reference network (rows = hypothesis states).

        Records in ``bdel`` the last deletion arc into each reference state (-1: none).  Either a
        dense min-plus product with ``del_star`` (S x R x R; cheap for short references) or one
        vectorized update per reference arc in topological order (long references)."""
        S, R = block.shape
        E = self.ref.num_arcs
        if S * R * R <= E * (S + 2000) * 4:
            step = self.matrix_chunk
            for lo in range(0, S, step):
                sub = block[lo:lo + step]
                tot = sub[:, :, None] + self.del_star[None, :, :]          # (s, r_from, r_to)
                frm = np.argmin(tot, axis=1)                                # first (lowest) r_from wins ties
                new = np.take_along_axis(tot, frm[:, None, :], axis=1)[:, 0, :]
                moved = new < sub
                block[lo:lo + step] = np.where(moved, new, sub)
                bdel[lo:lo + step] = np.where(moved, self.del_last[frm, np.arange(R)[None, :]], -1)
            return
        ref_src, ref_dst = self.ref.src, self.ref.dst
        for e in range(E):  # arcs sorted by src, states topological: src column is final when used
            cand = block[:, ref_src[e]] + self.del_by_arc[e]
            col = ref_dst[e]
            better = cand < block[:, col]
            if better.any():
                block[better, col] = cand[better]
                bdel[better, col] = e


# ----------------------------------------------------------------------------------------------
# The dynamic programme
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OracleTables:
    """The filled DP of one hypothesis network against one reference network.

    ``cost[q, r]``: cheapest alignment of some path to hypothesis state ``q`` with some path to
    reference state ``r`` (after the deletion closure).  Back-pointers: ``bp_del[q, r]`` the
    deletion arc taken into ``(q, r)`` (-1 none); else ``bp_arc`` the hypothesis arc and ``bp_ref``
    the reference arc it was paired with (-1 = insertion, ``r`` unchanged).  ``pair``/``pair_op``:
    label x reference-arc costs and operations; ``ins_by_label``: insertion cost per label.
    ``end_state``/``total``: the final hypothesis state of the optimum and its cost.
    """

    hyp: HypGraph
    ref: RefGraph
    costs: OracleCosts
    cost: np.ndarray
    bp_del: np.ndarray
    bp_arc: np.ndarray
    bp_ref: np.ndarray
    pair: np.ndarray
    pair_op: np.ndarray
    ins_by_label: np.ndarray
    end_state: int
    total: int


def _levels(num_states: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Longest-path depth of every state (arcs sorted by src, states topological)."""
    level = np.zeros(num_states, dtype=np.int64)
    if len(src) == 0:
        return level
    # Vectorized relaxation per source-state block would still need a sequential order; a plain
    # loop over Python ints is ~10 ms per 100k arcs, negligible next to the DP itself.
    lv = [0] * num_states
    for s, d in zip(src.tolist(), dst.tolist(), strict=False):
        v = lv[s] + 1
        if v > lv[d]:
            lv[d] = v
    level[:] = lv
    return level


def _arcs_by_level(hyp: HypGraph) -> list[np.ndarray]:
    """The hypothesis arcs in DP order: by level of their destination, then destination, then
    listed order; one array per level."""
    arc_level = _levels(hyp.num_states, hyp.src, hyp.dst)[hyp.dst]
    rank = np.arange(len(hyp.src)) if hyp.rank is None else hyp.rank
    arc_order = np.lexsort((rank, hyp.dst, arc_level))
    if not len(arc_order):
        return []
    lv_sorted = arc_level[arc_order]
    bounds = np.flatnonzero(np.concatenate(([True], lv_sorted[1:] != lv_sorted[:-1], [True])))
    return [arc_order[bounds[b]:bounds[b + 1]] for b in range(len(bounds) - 1)]


def oracle_tables(hyp: HypGraph, ref: RefGraph, costs: OracleCosts, *, key: str = "") -> OracleTables:
    """Fill the DP of ``hyp`` against ``ref`` (see the module docstring).

    Raises :class:`~lattice_tools.core.errors.LatticeError` when the hypothesis network has no final
    state or no complete path.  Memory is ``O(num_hyp_states x num_ref_states)``."""
    R, Q = ref.num_states, hyp.num_states
    if Q == 0 or not hyp.final.any():
        raise LatticeError("hypothesis network has no final state", key=key or None)
    pair, pair_op = _pair_costs(hyp, ref, costs)
    kind = hyp.kind
    ins_by_label = np.where(kind == LABEL_EPSILON, 0,
                            np.where(kind == LABEL_NULL, costs.null_skip, costs.ins)).astype(np.int64)
    ref_is_null = np.array([w is None for w in ref.words], dtype=bool)
    del_by_arc = np.where(ref_is_null, costs.null_skip, np.where(ref.optional, costs.opt_del, costs.dele)).astype(np.int64)
    side = _ChainReference(ref, del_by_arc) if ref.is_chain else _NetworkReference(ref, del_by_arc)

    D = np.full((Q, R), BIG, dtype=np.int64)
    bp_del = np.full((Q, R), -1, dtype=np.int32)
    bp_arc = np.full((Q, R), -1, dtype=np.int64)
    bp_ref = np.full((Q, R), -1, dtype=np.int32)
    row0 = np.full((1, R), BIG, dtype=np.int64)
    row0[0, 0] = 0
    bd0 = np.full((1, R), -1, dtype=np.int32)
    side.close(row0, bd0)
    D[0], bp_del[0] = row0[0], bd0[0]

    cols = np.arange(R)[None, :]
    for arcs in _arcs_by_level(hyp):
        A = len(arcs)
        labs = hyp.label[arcs]
        Dsrc = D[hyp.src[arcs]]                          # (A, R)
        cand = Dsrc + ins_by_label[labs][:, None]        # insertion: reference state unchanged
        cand_ref = np.full((A, R), -1, dtype=np.int32)
        side.pair(Dsrc, pair[labs], cand, cand_ref)
        # Segmented min over the arcs entering the same hypothesis state; ties -> first arc in
        # (listed) order, packed as cost * (A + 1) + position in one reduction.
        dsts = hyp.dst[arcs]
        starts = np.flatnonzero(np.concatenate(([True], dsts[1:] != dsts[:-1])))
        states = dsts[starts]
        packed = np.minimum(cand, BIG) * (A + 1) + np.arange(A, dtype=np.int64)[:, None]
        kmin = np.minimum.reduceat(packed, starts, axis=0)                  # (S, R)
        block = kmin // (A + 1)
        which = kmin % (A + 1)                                           # (S, R) row index into arcs
        bdel = np.full(block.shape, -1, dtype=np.int32)
        side.close(block, bdel)
        D[states] = block
        bp_del[states] = bdel
        bp_arc[states] = arcs[which]
        bp_ref[states] = cand_ref[which, cols]

    finals = np.nonzero(hyp.final)[0]
    end_costs = D[finals, R - 1]
    k = int(np.argmin(end_costs))
    total = int(end_costs[k])
    if total >= BIG:
        raise LatticeError("no complete path through the hypothesis network", key=key or None)
    return OracleTables(hyp=hyp, ref=ref, costs=costs, cost=D, bp_del=bp_del, bp_arc=bp_arc, bp_ref=bp_ref,
                        pair=pair, pair_op=pair_op, ins_by_label=ins_by_label, end_state=int(finals[k]), total=total)


_STEP_OF_PAIR = {PAIR_CORRECT: "C", PAIR_SUBSTITUTION: "S", PAIR_WORD_NULL: "I", PAIR_NULL_WORD: "D",
                 PAIR_NULL_NULL: "N"}


def _hyp_step(t: OracleTables, a: int, e: int) -> OracleAlignmentStep | None:
    """The step of hypothesis arc ``a`` paired with reference arc ``e`` (-1: inserted alone);
    None for an epsilon arc (nothing to record)."""
    hyp, ref = t.hyp, t.ref
    lab = int(hyp.label[a])
    start, dur = float(hyp.start[a]), float(hyp.duration[a])
    if e < 0:
        hk = int(hyp.kind[lab])
        if hk == LABEL_WORD:
            return OracleAlignmentStep("I", None, hyp.shown[lab], start, dur, a)
        if hk == LABEL_NULL:
            return OracleAlignmentStep("N", None, "@", start, dur, a)
        return None
    op = _STEP_OF_PAIR[int(t.pair_op[lab, e])]
    ref_word = "@" if op in ("I", "N") else ref.shown[e]
    hyp_word = "@" if op in ("D", "N") else hyp.shown[lab]
    optional = bool(ref.optional[e]) if op in ("C", "S", "D") else False
    return OracleAlignmentStep(op, ref_word, hyp_word, start, dur, a, optional)


def traceback(t: OracleTables, key: str = "") -> OracleResult:
    """The optimal path of filled tables as an :class:`OracleResult`."""
    hyp, ref, costs = t.hyp, t.ref, t.costs
    steps: list[OracleAlignmentStep] = []
    q, r = t.end_state, ref.num_states - 1
    while q != 0 or r != 0:
        e = int(t.bp_del[q, r])
        if e >= 0:  # deletion of reference arc e, hypothesis state unchanged
            if ref.words[e] is None:
                steps.append(OracleAlignmentStep("N", "@", None))
            else:
                steps.append(OracleAlignmentStep("D", ref.shown[e], None, optional=bool(ref.optional[e])))
            r = int(ref.src[e])
            continue
        a = int(t.bp_arc[q, r])
        if a < 0:
            raise AssertionError(f"oracle traceback broke at ({q}, {r})")  # pragma: no cover
        e = int(t.bp_ref[q, r])
        step = _hyp_step(t, a, e)
        if step is not None:
            steps.append(step)
        if e >= 0:
            r = int(ref.src[e])
        q = int(hyp.src[a])
    steps.reverse()
    counts = counts_of_alignment(steps, costs)
    spoken = [s for s in steps if s.hyp is not None and s.hyp != "@"]
    return OracleResult(key=key, mode=costs.name, counts=counts, cost=t.total / costs.scale,
                        words=tuple(s.hyp for s in spoken), starts=tuple(s.start for s in spoken),
                        durations=tuple(s.duration for s in spoken), alignment=tuple(steps))


def oracle_graph(hyp: HypGraph, reference, *, mode: str | OracleCosts = "sclite", key: str = "",
                 case_sensitive: bool = False, optional_deletable: bool = False,
                 fragments: bool = False) -> OracleResult:
    """Exact oracle of a hypothesis network against a reference network (see module docstring).

    Args:
      hyp: a :class:`~lattice_tools.oracle.graphs.HypGraph` (``hyp_graph_from_lattice``,
        ``hyp_graph_from_alternatives``, ...).
      reference: anything :func:`~lattice_tools.oracle.graphs.ref_graph` accepts.
      mode: ``"sclite"`` (sclite weights; the oracle is what sclite would pick from an ALT network)
        or ``"levenshtein"`` (fewest errors).
    Returns:
      :class:`OracleResult`.  Among equal-cost paths, earlier hypothesis arcs, insertions before
      matches, and first-listed reference alternatives win (deterministic, not sclite's exact
      tie order; counts of tied paths can differ only in sclite mode).
    Caveats:
      Memory is ``O(num_hyp_states x num_ref_states)`` for back-pointers.
    """
    ref = ref_graph(reference, case_sensitive=case_sensitive, optional_deletable=optional_deletable,
                    fragments=fragments)
    return traceback(oracle_tables(hyp, ref, oracle_costs(mode), key=key), key)


def optimal_arcs(hyp: HypGraph, reference, *, mode: str | OracleCosts = "sclite", case_sensitive: bool = False,
                 optional_deletable: bool = False, fragments: bool = False) -> tuple[OracleResult, np.ndarray]:
    """The oracle and a mask of the hypothesis arcs that lie on *some* optimal path.

    Forward costs ``F[q, r]`` come from :func:`oracle_tables`; backward costs ``B[q, r]`` from the
    same DP on both networks reversed.  Arc ``q -> q'`` is on an optimal path iff
    ``min_r F[q, r] + ins + B[q', r]`` or ``min_e F[q, src e] + pair(e) + B[q', dst e]`` equals the
    optimum.  Needs a single final hypothesis state (true for alternatives networks).
    """
    costs = oracle_costs(mode)
    ref = ref_graph(reference, case_sensitive=case_sensitive, optional_deletable=optional_deletable,
                    fragments=fragments)
    fwd = oracle_tables(hyp, ref, costs)
    res = traceback(fwd)
    finals = np.nonzero(hyp.final)[0]
    Q, R = hyp.num_states, ref.num_states
    if len(finals) != 1 or finals[0] != Q - 1:
        raise LatticeError("optimal_arcs needs the last state to be the only final state")
    F = fwd.cost
    B = oracle_tables(reversed_hyp_graph(hyp), reversed_ref_graph(ref), costs).cost[::-1, ::-1]
    mask = np.zeros(len(hyp.src), dtype=bool)
    chunk = max(1, (1 << 22) // max(1, R + ref.num_arcs))
    for lo in range(0, len(hyp.src), chunk):
        a = np.arange(lo, min(lo + chunk, len(hyp.src)))
        fs, bd, lab = F[hyp.src[a]], B[hyp.dst[a]], hyp.label[a]
        best = (fs + bd).min(axis=1) + fwd.ins_by_label[lab]
        if ref.num_arcs:
            via = (fs[:, ref.src] + fwd.pair[lab] + bd[:, ref.dst]).min(axis=1)
            best = np.minimum(best, via)
        mask[a] = best == fwd.total
    return res, mask
