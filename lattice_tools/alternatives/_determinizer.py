"""The lazily built log-semiring determinization of several acyclic automata searched side by side
(the phrases of a lattice): the state of the search engine of :mod:`~lattice_tools.alternatives._search`.

A *determinized state* is a subset: a pair of arrays (automaton states, residual costs).  Each one
is interned once (looked up by its states and rounded residuals) and numbered across all automata;
each automaton keeps its own table, so that a finished search's records can be dropped at once.
*Expanding* a batch of determinized states (one numpy pass for all of them) turns each into its
*choice record*: its end and one transition per next word, sorted by their bound, with the
successor subsets kept aside until the search takes that choice (:meth:`Determinizer.resolve`):
most choices never are.

The per-state work is done by numpy: a subset is first closed under epsilon paths (gathering
precomputed epsilon-closure rows and reducing them per state), then the word arcs (and exit weights)
of the closed states are gathered and reduced by ``(word, destination)`` pair, grouped with numpy's
radix sort on dense pair numbers.  Segmented reductions do not depend on what else is in the
batch, so every search finds exactly what it would find alone.
"""
from __future__ import annotations

import math

import numpy as np

from ._common import dense_codes
from ._epsilon_closure import EpsilonClosedRows
from ._search import DEFAULT_TUNING, SearchTuning
from ._search_arrays import (
    NOT_INTERNED,
    radix_halves,
    run_starts,
    segment_logsum,
    segment_logsum_shifted,
    stable_order,
    typed_array,
)

INF = math.inf

# A choice record is a list of seven fields (a list, not an object: the best-first loop unpacks
# tens of thousands of them); the positions are:
BOUNDS, LABELS, COSTS, GROUPS, NEXTS, SUCCESSORS, AUTOMATON = range(7)


class AutomataUnion:
    """The disjoint union of the automata (:class:`~lattice_tools.alternatives._fastsearch.SearchProblem`):
    automaton ``i``'s state ``s`` is union state ``offset[i] + s``; arc arrays ``src, dst, lab, cost``
    (and ``arc_ids``), exit costs ``exit_lc`` / ``exit_bc`` (log / tropical), the bound ``beta``, and
    each automaton's sorted initial states with their costs (``roots``)."""

    def __init__(self, problems: list):
        self.num_automata = len(problems)
        self.sizes = np.array([int(p.num_states) for p in problems], dtype=np.int64)
        self.offset = np.r_[0, np.cumsum(self.sizes)]
        self.num_states = M = int(self.offset[-1])
        self.arc_offset = np.r_[0, np.cumsum([len(p.src) for p in problems])].astype(np.int64)
        join = self._joiner(problems)
        self.exit_lc = np.full(M, INF)
        self.exit_bc = np.full(M, INF)
        self.exit_lc[join("exit_states", np.int64, True)] = join("exit_lc", np.float64)
        self.exit_bc[join("exit_states", np.int64, True)] = join("exit_bc", np.float64)
        self.src, self.dst = join("src", np.int64, True), join("dst", np.int64, True)
        self.lab, self.cost = join("lab", np.int64), join("cost", np.float64)
        self.arc_ids = join("arc_ids", np.int64)
        self.beta = join("beta", np.float64)
        self.roots = []
        for i, p in enumerate(problems):
            keep = np.asarray(p.init_lc) < INF
            rs = np.asarray(p.init_states, dtype=np.int64)[keep]
            o = np.argsort(rs)
            self.roots.append((rs[o] + self.offset[i], np.asarray(p.init_lc, dtype=np.float64)[keep][o],
                               np.asarray(p.init_bc, dtype=np.float64)[keep][o]))

    def _joiner(self, problems):
        offset = self.offset

        def join(field, dtype, shift=False):
            parts = [np.asarray(getattr(p, field), dtype=dtype) for p in problems]
            if shift:
                parts = [a + offset[i] for i, a in enumerate(parts)]
            return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

        return join


class Determinizer:
    """The determinized states of the automata of an :class:`AutomataUnion`, built on demand.

    ``records[j]``: the choice record of determinized state ``j`` once expanded (None before, and
    after its automaton is released); ``subsets[j]``: its (states, residual costs) until then.
    Everything that depends only on the automata (closure rows, word rows, dense pair numbers) is
    computed once here: per-expansion numpy call overhead matters.
    """

    def __init__(self, union: AutomataUnion, resolution: float = 1e-9, tuning: SearchTuning = DEFAULT_TUNING):
        self.union, self.resolution, self.tuning = union, resolution, tuning
        self.keys: list = [{} for _ in range(union.num_automata)]  # per automaton: subset key -> id
        self.subsets: list = []
        self.records: list = []
        self._closure_rows()
        self._word_rows()
        self._owner_rank = np.full(union.num_automata, -1, dtype=np.int64)
        self._ramp = np.arange(max(len(self._w_lc), union.num_states, len(self._c_dst)) + 1, dtype=np.int64)

    def _closure_rows(self) -> None:
        """Every state's epsilon closure: the states reachable through epsilon paths, itself
        included, in state order, each with the log-sum cost of those paths (the closed rows of a
        "self" pseudo-arc per state)."""
        u = self.union
        M = u.num_states
        eps = np.flatnonzero(u.lab == 0)
        selfs = np.arange(M, dtype=np.int64)
        closed = EpsilonClosedRows(M, np.r_[u.src[eps], selfs], np.r_[u.dst[eps], selfs],
                                   np.r_[np.zeros(len(eps), dtype=np.int64), np.ones(M, dtype=np.int64)],
                                   np.r_[u.cost[eps], np.zeros(M)], np.r_[np.zeros(len(eps), dtype=np.int64), selfs],
                                   np.full(M, INF), np.full(M, INF), tropical=False)
        self._c_off, self._c_dst, self._c_lc = closed.w_off, closed.w_dst, closed.w_lc
        self._c_cnt = np.diff(self._c_off)
        self._c_key16, self._c_key_hi = radix_halves(self._c_dst, M, self.tuning)

    def _word_rows(self) -> None:
        """Every state's own word arcs, preceded by one *end entry* when the state is final, so that
        one grouped reduction gives an expansion's end weight along with its transitions.

        An entry's key is its *pair*: (automaton, label, destination), numbered densely in that
        order, with the end label first and each automaton's end entries sharing a dummy
        destination ``M + i`` (completion cost 0); a *group* is an (automaton, label).  So an
        expansion batch's groups are runs of its sorted pairs, and each request's pairs and groups
        are contiguous.  Dense keys often fit in 16 or 32 bits, so the stable grouping sort can be
        numpy's radix sort."""
        u = self.union
        M, P = u.num_states, u.num_automata
        word = np.flatnonzero(u.lab != 0)
        self.word_arcs = word
        self.lab_values, self.word_dlab = dense_codes(u.lab[word])  # word arcs' labels, renumbered densely
        self._lab_out = np.r_[-1, self.lab_values].astype(np.int64)  # dense label + 1 -> label (-1: the end)
        owner_of = np.repeat(np.arange(P, dtype=np.int64), u.sizes)
        end_states = np.flatnonzero(u.exit_lc < INF)
        L1 = len(self.lab_values) + 1
        entry_key = np.r_[owner_of[end_states] * L1 * (M + P) + M + owner_of[end_states],
                          (owner_of[u.src[word]] * L1 + self.word_dlab + 1) * (M + P) + u.dst[word]]
        pair_key, entry_pair = np.unique(entry_key, return_inverse=True)
        row_state = np.r_[end_states, u.src[word]]
        rows = np.argsort(row_state, kind="stable")
        self._w_key = entry_pair.reshape(-1)[rows]
        self._w_lc = np.r_[u.exit_lc[end_states], u.cost[word]][rows]
        self._w_cnt = np.bincount(row_state, minlength=M)
        self._w_off = np.r_[0, np.cumsum(self._w_cnt)]
        self._w_key16, self._w_key_hi = radix_halves(self._w_key, len(pair_key), self.tuning)
        self._pair_group = pair_key // (M + P)  # (automaton, label): nondecreasing in pair order
        self._pair_dst = pair_key % (M + P)
        self._pair_owner, self._pair_lab = self._pair_group // L1, self._pair_group % L1
        self._beta_x = np.r_[u.beta, np.zeros(P)]  # the end entries' dummy destinations complete with cost 0
        self._num_pairs = len(pair_key)
        self._num_groups = int(self._pair_group.max()) + 1 if self._num_pairs else 1

    def intern(self, automaton: int, states: np.ndarray, resid: np.ndarray) -> int:
        """The id of the determinized state (``states``, residual costs ``resid``) of ``automaton``."""
        k = (states.tobytes(), np.rint(resid / self.resolution).astype(np.int64).tobytes())
        table = self.keys[automaton]
        j = table.get(k)
        if j is None:
            j = table[k] = len(self.subsets)
            self.subsets.append((states, resid))
            self.records.append(None)
        return j

    def release(self, automaton: int) -> None:
        """Drop the determinized states of ``automaton`` (its search is over)."""
        subsets, records = self.subsets, self.records
        for j in self.keys[automaton].values():
            subsets[j] = records[j] = None
        self.keys[automaton] = {}

    def resolve(self, rec: list, i: int) -> int:
        """Interned id of the successor of choice ``i`` of a choice record (the same key as
        :meth:`intern`: the int64 bytes of the states and of the rounded residuals)."""
        ud, resid, e8, ud_bytes, rq_bytes, base8, copy = rec[SUCCESSORS]
        g = rec[GROUPS][i]
        a8, b8 = e8[g] - base8, e8[g + 1] - base8
        k = (ud_bytes[a8:b8], rq_bytes[a8:b8])
        keys = self.keys[rec[AUTOMATON]]
        nj = keys.get(k)
        if nj is None:
            nj = keys[k] = len(self.subsets)
            a, b = a8 >> 3, b8 >> 3
            self.subsets.append((ud[a:b].copy(), resid[a:b].copy()) if copy else (ud[a:b], resid[a:b]))
            self.records.append(None)
        rec[NEXTS][i] = nj
        return nj

    def expand(self, js: list, owners: list, keyed: bool = False) -> None:
        """Expand determinized states ``js`` into their choice records, most promising first: for
        each a list ``[bounds, labels, costs, groups, nexts, successors, automaton]`` -- parallel
        typed arrays of the bound of all completions through the choice (``cost + h(next)``), its
        label (-1 for the end), the cost of that transition (for the end: the exact total cost of
        ending here), the index of its successor among the batch's groups, and the successor's
        interned id (-1 until :meth:`resolve` looks it up); then the batch's shared successor data
        and the state's automaton.  ``owners``: the automaton of each state, in increasing order;
        ``keyed``: several states may belong to one automaton, so entries are keyed by request as
        well (else pairs alone keep the requests apart)."""
        keyed = keyed and len(js) > 1  # requests may share states and pairs
        if not keyed and len(js) > 1:
            self._owner_rank[owners] = np.arange(len(js))  # automaton -> request
        states, resid, request = self._close(js, keyed)
        for j in js:
            self.subsets[j] = None
        cnt = self._w_cnt[states]
        if not int(cnt.sum()):
            for j, o in zip(js, owners, strict=True):
                self.records[j] = [[], [], [], [], [], None, o]
            return
        self._store_choices(js, owners, keyed, *self._reduce_pairs(states, resid, request, cnt, len(js), keyed))

    def _close(self, js: list, keyed: bool):
        """The batch's subsets closed under epsilon paths: (states, residuals, request of each
        state or None), per request in state order."""
        M, subsets = self.union.num_states, self.subsets
        B = len(js)
        if B == 1:
            S, R = subsets[js[0]]
        else:
            S = np.concatenate([subsets[j][0] for j in js])
            R = np.concatenate([subsets[j][1] for j in js])
        cc_ = self._c_cnt[S]
        t1 = int(cc_.sum())
        ramp1 = self._ramp[:t1] if t1 < len(self._ramp) else np.arange(t1)
        idx1 = np.repeat(self._c_off[S] - (np.cumsum(cc_) - cc_), cc_) + ramp1
        e = self._c_dst[idx1]
        if keyed:
            e = np.repeat(np.repeat(np.arange(B, dtype=np.int64), [len(subsets[j][0]) for j in js]), cc_) * M + e
            o1 = stable_order(e, ramp1, *radix_halves(e, B * M, self.tuning), ramp1, self.tuning)
        else:
            o1 = stable_order(e, idx1, self._c_key16, self._c_key_hi, ramp1, self.tuning)
        es = e[o1]
        s1 = run_starts(es)
        R = segment_logsum_shifted((np.repeat(R, cc_) + self._c_lc[idx1])[o1], s1)
        S = es[s1]
        request = None
        if keyed:
            request = S // M
            S = S - request * M
        return S, R, request

    def _reduce_pairs(self, S, R, request, cnt, B: int, keyed: bool):
        """The word-arc and end rows of the closed states ``S`` reduced per (request,) pair, then per
        group: returns (choice order, group ends, group labels, group costs, group bounds, pair
        destinations, pair residuals, request of each group or None)."""
        tuning, num_pairs = self.tuning, self._num_pairs
        total = int(cnt.sum())
        ramp_t = self._ramp[:total] if total < len(self._ramp) else np.arange(total)
        idx = np.repeat(self._w_off[S] - (np.cumsum(cnt) - cnt), cnt) + ramp_t
        v = np.repeat(R, cnt) + self._w_lc[idx]
        k2 = self._w_key[idx]
        if keyed:
            k2 = np.repeat(request, cnt) * num_pairs + k2
            order = stable_order(k2, ramp_t, *radix_halves(k2, B * num_pairs, tuning), ramp_t, tuning)
        else:
            order = stable_order(k2, idx, self._w_key16, self._w_key_hi, ramp_t, tuning)
        k2s = k2[order]
        seg = run_starts(k2s)
        val = segment_logsum_shifted(v[order], seg)  # per pair
        up = k2s[seg]
        group_request = None
        if keyed:
            req_u = up // num_pairs
            up = up - req_u * num_pairs
            lseg = run_starts(req_u * self._num_groups + self._pair_group[up])
            group_request = req_u[lseg]
        else:
            lseg = run_starts(self._pair_group[up])
            if B > 1:
                group_request = self._owner_rank[self._pair_owner[up[lseg]]]
        ends = np.empty(len(lseg) + 1, dtype=np.int64)
        ends[:-1] = lseg
        ends[-1] = len(up)
        lens = ends[1:] - lseg
        ud = self._pair_dst[up]
        wsum = segment_logsum_shifted(val, lseg, lens)  # per group: the transition's cost
        bound = segment_logsum(val + self._beta_x[ud], lseg, lens)  # per group: the log-sum of its completions
        ch = np.argsort(bound, kind="stable")  # groups are in label order: ties go by label, end first
        ch = ch[:int(np.count_nonzero(bound < INF))]  # no finite completion: never an output
        resid = val - wsum.repeat(lens)
        return ch, ends, self._pair_lab[up[lseg]], wsum, bound, ud, resid, group_request

    def _store_choices(self, js, owners, keyed, ch, ends, group_label, wsum, bound, ud, resid, group_request):
        """The choice records of the batch's states.  Successor data: the states and residuals of
        every group, the byte offsets of the groups (``e8``) and the key bytes.  A request's groups
        and pairs are contiguous; requests of different automata get copies of their own part (a
        search that ends releases its records, which then must not keep the other searches' parts
        alive).  Records are typed arrays: 8 bytes per entry instead of a Python object."""
        B = len(js)
        e8 = typed_array("q", ends * 8)
        ud_bytes, rq_bytes = ud.tobytes(), np.rint(resid / self.resolution).astype(np.int64).tobytes()
        if B > 1:
            ch = ch[np.argsort(group_request[ch], kind="stable")]  # by request, then bound, then label
            cuts = np.searchsorted(group_request[ch], np.arange(B + 1)).tolist()
            pair_cut = ends[np.searchsorted(group_request, np.arange(B + 1))].tolist()
        else:
            cuts, pair_cut = [0, len(ch)], [0, len(ud)]
        b_l, l_l, c_l, g_l = (typed_array("d", bound[ch]), typed_array("q", self._lab_out[group_label[ch]]),
                              typed_array("d", wsum[ch]), typed_array("q", ch))
        # (keyed batches belong to the exact-bound search, which resolves every successor at once,
        # mostly to states it already has: a new state copies its part, not to pin the batch)
        shared = (ud, resid, e8, ud_bytes, rq_bytes, 0, keyed)
        records = self.records
        for r, (j, o) in enumerate(zip(js, owners, strict=True)):
            a, b = cuts[r], cuts[r + 1]
            if keyed or B == 1:  # one automaton: its records are released together
                succ = shared
            else:
                p0, p1 = pair_cut[r], pair_cut[r + 1]
                succ = (ud[p0:p1].copy(), resid[p0:p1].copy(), e8, ud_bytes[8 * p0:8 * p1], rq_bytes[8 * p0:8 * p1],
                        8 * p0, False)
            records[j] = [b_l[a:b], l_l[a:b], c_l[a:b], g_l[a:b], NOT_INTERNED * (b - a), succ, o]

    def expander_for(self, automaton: int):
        """``expand(js)`` for a batch of states all of ``automaton`` (the exact-bound searches)."""
        return lambda js: self.expand(js, [automaton] * len(js), keyed=True)
