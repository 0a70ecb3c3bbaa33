"""Epsilon removal of an acyclic automaton given by arc arrays: every state's closed row of word
arcs (with the log sum and the minimum of the epsilon-path costs) and closed exit weights.  Used
for the search's epsilon closures (see :mod:`~lattice_tools.alternatives._determinizer`)."""
from __future__ import annotations

import numpy as np

from ..algorithms._batches import state_levels
from ..algorithms.forward_backward import _segment_reduce
from ._search_arrays import GrowableColumns, run_starts


class EpsilonClosedRows:
    """Epsilon-removed view of an acyclic automaton given by arc arrays (local state ids): every
    state's *closed row* (the word arcs reachable through epsilon paths, in arc order, each with
    the log sum and the minimum of the epsilon-path-plus-arc costs) and its closed exit weights."""

    def __init__(self, m, src, dst, lab, cost, arc_ids, exit_lc, exit_bc, *, log=True, tropical=True):
        """``log``/``tropical``: which costs to compute (``w_lc``/``x_lc`` and ``w_bc``/``x_bc``;
        the other pair is None)."""
        self.m = m
        word = lab != 0
        x_lc, x_bc = exit_lc.copy(), exit_bc.copy()
        wa = np.flatnonzero(word)
        wa = wa[np.argsort(src[wa], kind="stable")]  # word arcs by source state, in arc order
        w_off = np.searchsorted(src[wa], np.arange(m + 1))
        ea = np.flatnonzero(~word)
        if len(ea):
            ea = ea[np.argsort(src[ea], kind="stable")]  # epsilon arcs by source state, in arc order
            es, ed, ec = src[ea], dst[ea], cost[ea]
            # each state's epsilon level: 0 if it has no epsilon arc, else 1 + the highest level
            # among its epsilon successors (longest-path levels of the reversed epsilon arcs)
            rev = np.argsort(ed, kind="stable")
            level = state_levels(m, ed[rev], es[rev])
            # closed exits and rows, one level at a time: all of a level's epsilon successors are
            # on lower levels, so their exits and rows are final.  A state's row is its own word
            # arcs followed by the rows of its epsilon successors (that arc's cost added), reduced
            # per arc (log sum, and minimum) in that order.  Segments reduce independently, so the
            # numbers are those of one state at a time.
            buf = GrowableColumns(len(wa) * 2 + 1024, (np.int64, np.float64, np.float64))
            buf.append(wa, cost[wa], cost[wa])
            row_lo = w_off[:-1].copy()
            row_len = np.diff(w_off)
            stored = len(wa)
            arc_level = level[es]
            by_level = np.argsort(arc_level, kind="stable")  # epsilon arcs by level, then source
            lv_off = np.searchsorted(arc_level[by_level], np.arange(int(level.max()) + 2))
            for lv in range(1, int(level.max()) + 1):
                arcs_l = by_level[lv_off[lv]:lv_off[lv + 1]]
                e_src, e_dst, e_cost = es[arcs_l], ed[arcs_l], ec[arcs_l]
                states = np.unique(e_src)
                owner = np.searchsorted(states, e_src)
                # exits: the state's own exit, then (cost + exit) through each epsilon arc
                piece_owner = np.r_[np.arange(len(states)), owner]
                po = np.argsort(piece_owner, kind="stable")
                seg = np.searchsorted(piece_owner[po], np.arange(len(states)))
                if log:
                    x_lc[states] = _segment_reduce(np.r_[x_lc[states], e_cost + x_lc[e_dst]][po], seg, True)
                if tropical:
                    x_bc[states] = np.minimum.reduceat(np.r_[x_bc[states], e_cost + x_bc[e_dst]][po], seg)
                # rows: the pieces of each state's row, in order (owner, source state, added cost)
                sources = np.r_[states, e_dst][po]
                adds = np.r_[np.zeros(len(states)), e_cost][po]
                owners = piece_owner[po]
                cnt = row_len[sources]
                total = int(cnt.sum())
                n_out = np.zeros(len(states), dtype=np.int64)
                if total:
                    arc_all, lc_all, bc_all = buf.arrays()
                    pos = np.repeat(row_lo[sources] - (np.cumsum(cnt) - cnt), cnt) + np.arange(total)
                    add = np.repeat(adds, cnt)  # + 0.0 leaves a state's own arcs' costs unchanged
                    arcs_ = arc_all[pos]
                    owner_ = np.repeat(owners, cnt)
                    key = owner_ * (int(arcs_.max()) + 1) + arcs_
                    order = np.argsort(key, kind="stable")
                    seg = run_starts(key[order])
                    new_arc = arcs_[order][seg]
                    unused = np.zeros(len(seg))  # the semiring not asked for
                    new_lc = _segment_reduce((lc_all[pos] + add)[order], seg, True) if log else unused
                    new_bc = np.minimum.reduceat((bc_all[pos] + add)[order], seg) if tropical else unused
                    n_out = np.bincount(owner_[order][seg], minlength=len(states))
                    buf.append(new_arc, new_lc, new_bc)
                row_lo[states] = stored + np.cumsum(n_out) - n_out
                row_len[states] = n_out
                stored += int(n_out.sum())
            arc_all, lc_all, bc_all = buf.arrays()
            cnt = row_len
            idx = np.repeat(row_lo - (np.cumsum(cnt) - cnt), cnt) + np.arange(int(cnt.sum()))
            self.w_arc = arc_all[idx]
            self.w_lc = lc_all[idx]
            self.w_bc = bc_all[idx]
            self.w_off = np.r_[0, np.cumsum(cnt)]
        else:
            self.w_arc = wa
            self.w_lc = cost[wa]
            self.w_bc = cost[wa]
            self.w_off = w_off
        self.w_lab = lab[self.w_arc]
        self.w_dst = dst[self.w_arc]
        self.w_id = arc_ids[self.w_arc]
        self.x_lc, self.x_bc = x_lc, x_bc
        if not log:
            self.w_lc = self.x_lc = None
        if not tropical:
            self.w_bc = self.x_bc = None

