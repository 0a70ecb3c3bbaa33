"""The lazily built log-semiring determinization of the acyclic automata searched by
:func:`~lattice_tools.alternatives._fastsearch.search_many` (the phrases of a lattice): the state of
the search engine of :mod:`~lattice_tools.alternatives._search`.

A *determinized state* is a subset: a pair of arrays (automaton states in increasing order,
residual costs).  Each one is interned once (looked up by its states and rounded residuals) and
numbered across all automata; each automaton keeps its own table, so that a finished search's
records can be dropped at once.  *Expanding* a determinized state (one compiled call,
``Expander.expand`` of lattice_tools/_ext/search/: its members' closed entries --
the (word | end) entries of the states of each member's epsilon closure, precomputed once --
log-summed per word) turns it into its *choice record*: its end and one transition per next word,
sorted by their bound, with the members of each transition kept aside until the search takes that
choice (:meth:`Determinizer.resolve` then reads their arcs): most choices never are.
An expansion depends on nothing but the state, so every search finds
exactly what it would find alone.

A determinized state crosses into the compiled code as two bytes objects: its interning key (the
int64 states, then the int64 residuals rounded to the resolution) and its float64 residual costs.
The lazy searches (:meth:`Determinizer.lazy_search`) keep their records inside the compiled code,
one call per search; the exact-bound searches use the Python records built by
:meth:`Determinizer.expand` and :meth:`Determinizer.resolve` from the same compiled expansion.
"""
from __future__ import annotations

import math

import numpy as np

from .._ext import native
from ..algorithms.forward_backward import _segment_reduce
from ._best_paths import PrefixTrie
from ._common import dense_codes
from ._epsilon_closure import EpsilonClosedRows
from ._search import DEFAULT_TUNING, SearchTuning
from ._search_arrays import NOT_INTERNED, run_starts

INF = math.inf
_search = native("search")

# A choice record is a list of seven fields (a list, not an object: the best-first loop unpacks
# tens of thousands of them); the positions are:
BOUNDS, LABELS, COSTS, GROUPS, NEXTS, SUCCESSORS, AUTOMATON = range(7)


def _int64s(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


def _float64s(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


def row_scaling(off: np.ndarray, cost: np.ndarray):
    """``(row_min, row_scaled)`` of CSR rows for the expansion: each row's smallest cost (inf when
    empty) and ``exp(row_min - cost)`` per entry."""
    lengths = np.diff(off)
    row_min = np.full(len(lengths), INF)
    nonempty = lengths > 0
    if len(cost):
        row_min[nonempty] = np.minimum.reduceat(cost, off[:-1][nonempty])
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.exp(np.repeat(row_min, lengths) - cost)
    return row_min, np.nan_to_num(scaled, nan=0.0)


class AutomataUnion:
    """The disjoint union of the automata (:class:`~lattice_tools.alternatives._fastsearch.SearchProblem`):
    automaton ``i``'s state ``s`` is union state ``offset[i] + s``; arc arrays ``src, dst, lab, cost``
    (and ``arc_ids``), exit costs ``exit_lc`` / ``exit_bc`` (log / tropical), the bound ``beta``, and
    each automaton's sorted initial states with their costs (``roots``).  ``word_bound``: tighten the
    bound with the best-next-word bound (:meth:`_best_word_bound`; ~0.1 s on a 140k-arc lattice, so
    it is computed only for searches that need it)."""

    def __init__(self, problems: list, word_bound: bool = False):
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
        if word_bound:
            self.beta = np.maximum(self.beta, self._best_word_bound())
        self.roots = []
        for i, p in enumerate(problems):
            keep = np.asarray(p.init_lc) < INF
            rs = np.asarray(p.init_states, dtype=np.int64)[keep]
            o = np.argsort(rs)
            self.roots.append((rs[o] + self.offset[i], np.asarray(p.init_lc, dtype=np.float64)[keep][o],
                               np.asarray(p.init_bc, dtype=np.float64)[keep][o]))

    def _best_word_bound(self) -> np.ndarray:
        """Per union state, the best-next-word bound of :func:`~lattice_tools.alternatives.nbest_lists.best_word_bound`
        on the automata's own arcs and exits: a lower bound on the cost of the most probable single
        completion.  The log-sum backward cost ``beta`` bounds it too, but it sums *every*
        completion, and on a long phrase of a dense lattice that mass is spread over so many
        sequences that the search expands hundreds of thousands of prefixes before its bound
        reaches the ``n``-th sequence.  The search takes the larger (tighter) of the two per
        state; both are admissible and consistent, and so is their maximum, so the sequences and
        costs found are the same (only the order of exactly equal costs could differ)."""
        from .nbest_lists import best_word_bound

        if not len(self.src):
            return np.full(self.num_states, -INF)
        order = np.argsort(self.src, kind="stable")
        return best_word_bound(self.num_states, self.src[order], self.dst[order], self.lab[order], self.cost[order],
                               self.exit_lc)

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
        self._closed_entries()
        cost_min, cost_scaled = row_scaling(self._a_off, self._a_cost)
        compl_min, compl_scaled = row_scaling(self._a_off, self._a_compl)
        i, f = _int64s, _float64s
        self._expander = _search.Expander(
            i(self._a_off), i(self._a_group), i(self._group_label), f(self._a_cost), f(cost_min), f(cost_scaled),
            f(self._a_compl), f(compl_min), f(compl_scaled), i(self._part_off), f(self._part_base),
            i(self._part_entry), i(self._arc_off), f(self._e_cost), i(self._arc_dst), f(self._arc_cost),
            f(self._arc_scaled), float(resolution))

    def _closure_rows(self) -> None:
        """Every state's epsilon closure: the states reachable through epsilon paths, itself
        included, in state order, each with the log-sum (``_c_lc``) and the minimum (``_c_bc``, for
        the word times) of the costs of those paths (the closed rows of a "self" pseudo-arc per
        state)."""
        u = self.union
        M = u.num_states
        eps = np.flatnonzero(u.lab == 0)
        selfs = np.arange(M, dtype=np.int64)
        closed = EpsilonClosedRows(M, np.r_[u.src[eps], selfs], np.r_[u.dst[eps], selfs],
                                   np.r_[np.zeros(len(eps), dtype=np.int64), np.ones(M, dtype=np.int64)],
                                   np.r_[u.cost[eps], np.zeros(M)], np.r_[np.zeros(len(eps), dtype=np.int64), selfs],
                                   np.full(M, INF), np.full(M, INF))
        self._c_off, self._c_dst, self._c_lc, self._c_bc = closed.w_off, closed.w_dst, closed.w_lc, closed.w_bc

    def _word_rows(self) -> None:
        """Every state's *entries*: one per next word (the log-sum of the state's arcs with that word,
        and of their completions, cost plus the destination's bound ``beta``), preceded by one *end
        entry* when the state is final (its exit cost, twice), so that one grouped reduction gives an
        expansion's end weight along with its transitions.

        An entry's *group* is its (automaton, label), numbered densely in that order with the end
        label first.  The word arcs are kept sorted by (source, label, arc) so that each entry's arcs
        are one range (``_arc_off``), read only when the search takes that entry's group."""
        u = self.union
        M, P = u.num_states, u.num_automata
        word = np.flatnonzero(u.lab != 0)
        self.word_arcs = word
        self.lab_values, self.word_dlab = dense_codes(u.lab[word])  # word arcs' labels, renumbered densely
        lab_out = np.r_[-1, self.lab_values].astype(np.int64)  # dense label + 1 -> label (-1: the end)
        owner_of = np.repeat(np.arange(P, dtype=np.int64), u.sizes)
        L1 = len(self.lab_values) + 1
        dlab = np.asarray(self.word_dlab, dtype=np.int64) + 1
        by_entry = np.lexsort((dlab, u.src[word]))  # stable: arc order within an entry
        a_src, a_lab = u.src[word][by_entry], dlab[by_entry]
        self._arc_order = word[by_entry]  # union arc index: the order of the word-time tie-breaks
        self._arc_dst, self._arc_cost = u.dst[word][by_entry], u.cost[word][by_entry]
        firsts = run_starts(a_src * L1 + a_lab)
        counts = np.diff(np.r_[firsts, len(by_entry)]).astype(np.int64)
        if len(firsts):
            w_cost = _segment_reduce(self._arc_cost, firsts, True, counts)
            w_compl = _segment_reduce(self._arc_cost + u.beta[self._arc_dst], firsts, True, counts)
        else:
            w_cost = w_compl = np.zeros(0)
        with np.errstate(invalid="ignore", over="ignore"):
            self._arc_scaled = np.nan_to_num(np.exp(np.repeat(w_cost, counts) - self._arc_cost), nan=0.0)
        end_states = np.flatnonzero(u.exit_lc < INF)
        e_src = np.r_[end_states, a_src[firsts]].astype(np.int64)
        e_lab = np.r_[np.zeros(len(end_states), dtype=np.int64), a_lab[firsts]]
        rows = np.lexsort((e_lab, e_src))  # by state, the end first, then by label (the arcs' order)
        e_src, e_lab = e_src[rows], e_lab[rows]
        self._e_cost = np.r_[u.exit_lc[end_states], w_cost][rows]
        self._e_compl = np.r_[u.exit_lc[end_states], w_compl][rows]
        self._arc_off = np.r_[0, np.cumsum(np.r_[np.zeros(len(end_states), dtype=np.int64), counts][rows])]
        self._e_off = np.searchsorted(e_src, np.arange(M + 1))
        group_key, e_group = np.unique(owner_of[e_src] * L1 + e_lab, return_inverse=True)
        self._e_group = e_group.reshape(-1).astype(np.int64)
        self._group_label = lab_out[group_key % L1]
        self._num_groups = len(group_key)
        self._e_label = self._group_label[self._e_group]

    def _closed_entries(self) -> None:
        """Every state's *closed entries* (what an expansion sums): the entries of the states of its epsilon closure, one closed entry per group, with the
        log-sums over their epsilon paths and entries (``_a_cost``, ``_a_compl``); a closed entry's
        parts (``_part_off``) are those entries with the log-sum cost of the epsilon paths to their
        state (``_part_base``).  ``_t_off``/``_t_entry``: the same (state, closure state, entry)
        triples unsorted, in closure order (the word times)."""
        M = self.union.num_states
        per_closure = np.diff(self._e_off)[self._c_dst]
        total = int(per_closure.sum())
        starts = np.repeat(self._e_off[self._c_dst] - (np.cumsum(per_closure) - per_closure), per_closure)
        self._t_entry = starts + np.arange(total, dtype=np.int64)
        owner = np.repeat(np.repeat(np.arange(M, dtype=np.int64), np.diff(self._c_off)), per_closure)
        self._t_off = np.searchsorted(owner, np.arange(M + 1))
        base = np.repeat(self._c_lc, per_closure)
        group = self._e_group[self._t_entry]
        by_group = np.lexsort((group, owner))  # stable: closure order within a closed entry
        owner, group = owner[by_group], group[by_group]
        self._part_base, self._part_entry = base[by_group], self._t_entry[by_group]
        firsts = run_starts(owner * max(self._num_groups, 1) + group)
        lengths = np.diff(np.r_[firsts, total]).astype(np.int64)
        self._part_off = np.r_[firsts, total].astype(np.int64)
        self._a_group = group[firsts]
        self._a_off = np.searchsorted(owner[firsts], np.arange(M + 1))
        if total:
            self._a_cost = _segment_reduce(self._part_base + self._e_cost[self._part_entry], firsts, True, lengths)
            self._a_compl = _segment_reduce(self._part_base + self._e_compl[self._part_entry], firsts, True, lengths)
        else:
            self._a_cost = self._a_compl = np.zeros(0)

    def word_time_tables(self):
        """The tables of the word-time Viterbi (``WordTimes`` of lattice_tools/_ext/search/; union
        state numbers): every state's closed entries sorted by label, with the minimum cost of the
        epsilon paths to the entry's state; the entries' arcs; every state's exit cost through its
        best epsilon path."""
        u = self.union
        per_closure = np.diff(self._e_off)[self._c_dst]
        label = self._e_label[self._t_entry]
        by_label = np.lexsort((label, np.repeat(np.arange(u.num_states), np.diff(self._t_off))))
        eps = np.flatnonzero(u.lab == 0)
        eps = eps[np.argsort(u.src[eps], kind="stable")]
        i, f = _int64s, _float64s
        exits = np.frombuffer(_search.closed_exits(
            f(u.exit_bc), i(np.searchsorted(u.src[eps], np.arange(u.num_states + 1))), i(u.dst[eps]),
            f(u.cost[eps])), dtype=np.float64)
        return _search.WordTimes(
            i(self._t_off), i(label[by_label]), f(np.repeat(self._c_bc, per_closure)[by_label]),
            i(self._t_entry[by_label]), i(self._arc_off), i(self._arc_dst), f(self._arc_cost), i(self._arc_order),
            i(u.arc_ids[self._arc_order]), exits)

    def intern(self, automaton: int, states: np.ndarray, resid: np.ndarray) -> int:
        """The id of the determinized state (``states``, residual costs ``resid``) of ``automaton``."""
        resid = _float64s(resid)
        k = np.r_[states, np.rint(resid / self.resolution).astype(np.int64)].tobytes()
        table = self.keys[automaton]
        j = table.get(k)
        if j is None:
            j = table[k] = len(self.subsets)
            self.subsets.append((k, resid.tobytes()))
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
        :meth:`intern`: the int64 bytes of the states followed by the rounded residuals)."""
        k, resid = self._expander.successor(rec[SUCCESSORS], rec[GROUPS][i])
        keys = self.keys[rec[AUTOMATON]]
        nj = keys.get(k)
        if nj is None:
            nj = keys[k] = len(self.subsets)
            self.subsets.append((k, resid))
            self.records.append(None)
        rec[NEXTS][i] = nj
        return nj

    def lazy_search(self, j0: int, n: int, max_pops: int, check) -> tuple | None:
        """The lazy best-first search (log-sum bound) from determinized state ``j0``, in one compiled
        call (``Expander.lazy_search``: the loop of
        :func:`~lattice_tools.alternatives._fastsearch._best_first` over its own records and
        interning table, which it drops when it returns; ``check()`` runs every 4096 pops).  Returns
        ``(found, trie)`` -- the first ``n`` ends popped as ``[(prefix node, cost)]`` and the
        :class:`~lattice_tools.alternatives._best_paths.PrefixTrie` of their prefixes -- or None when
        the search needed more than ``max_pops`` pops."""
        key, resid = self.subsets[j0]
        status, links, costs, parent, label, depth = self._expander.lazy_search(key, resid, n, max_pops, check)
        if status:
            return None
        trie = PrefixTrie()
        trie.parent, trie.label, trie.depth = (np.frombuffer(b, dtype=np.int64).tolist() for b in (parent, label, depth))
        found = list(zip(np.frombuffer(links, dtype=np.int64).tolist(), np.frombuffer(costs, dtype=np.float64).tolist(),
                         strict=True))
        return found, trie

    def expand(self, js: list, owners: list) -> None:
        """Expand determinized states ``js`` (of automata ``owners``) into their choice records,
        most promising first: for each a list ``[bounds, labels, costs, groups, nexts, successors,
        automaton]`` -- parallel typed arrays of the bound of all completions through the choice
        (``cost + h(next)``), its label (-1 for the end), the cost of that transition (for the end:
        the exact total cost of ending here), the index of its successor among the state's groups,
        and the successor's interned id (-1 until :meth:`resolve` looks it up: most successors are
        never visited, so they are only interned when the search reaches them); then the
        successor data (opaque bytes for ``Expander.successor``) and the state's automaton.  Each state
        is expanded on its own (one ``Expander.expand`` call)."""
        subsets, records, expand = self.subsets, self.records, self._expander.expand
        for j, o in zip(js, owners, strict=True):
            key, resid = subsets[j]
            subsets[j] = None
            bounds, labels, costs, groups, successors = expand(key, resid)
            records[j] = [bounds, labels, costs, groups, NOT_INTERNED * len(bounds), successors, o]

    def expander_for(self, automaton: int):
        """``expand(js)`` for a batch of states all of ``automaton`` (the exact-bound searches)."""
        return lambda js: self.expand(js, [automaton] * len(js))
