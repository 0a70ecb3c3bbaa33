"""Exact N-best lists: the N most probable *distinct* word sequences of a lattice.

Algorithm: best-first search over word prefixes of a lazily explored log-semiring determinization
of the lattice (see :mod:`lattice_tools.alternatives._search`), ranked by an exact bound:

1. A* over determinized states (each expanded once, at the first prefix cost ``g`` it is popped
   with), with an admissible bound (the larger of :func:`best_word_bound`, the log-sum backward
   cost and :func:`suffix_bound`), expands the *region* of states with ``g + bound <= T``; ``T``
   starts ``margin`` nats past the first sequence found.
2. Inside the region every state gets its exact best completion (a successor outside counts with
   its bound).
3. A best-first search over word prefixes with that exact bound pops the sequences in exact order
   of their total posterior ``P(W) = sum over paths with words W / Z``; if it needs a state
   outside the region, ``T`` grows past it and 1-3 run again.

Each sequence's word times are those of its best single path.  Not sampled, not an
approximation: equal to enumerating every path and summing by word sequence (tests check this
against brute force, kaldifst ``shortest_path(n)`` on the log-determinized lattice and the phrase
search engine).  The loops are compiled C (``lattice_tools/_ext/nbest/``).

Anytime search (``best_effort=True``)
-------------------------------------
When a budget stops the search (the memory budget, ``max_states``, ``max_pops`` or ``time_limit``),
step 3 runs once more over the region built so far, and a prefix that needs a state outside the region
is *set aside* instead of growing it.  The set-aside prefixes are then completed into candidates until N
are listed: best first by an *estimate* (prefix cost + the log sum over its open partial paths of their
residual + the best single path's cost from their state), each popped prefix followed greedily by that
estimate to an end (expanding determinized states outside the region), the choices not taken waiting as
prefixes of their own.  Under a memory budget a best-effort search stops growing the region at three
quarters of the resident memory left when it starts, and the final pass and the candidates at nine
tenths (the compiled search reads ``/proc/self/statm``); under ``time_limit``, the final pass and the
candidates may take a quarter of the limit more (the first candidate is completed in any case).  What that returns is certified:

* Every sequence it lists is exact: its cost is the sum of the determinized transitions along its
  prefix (each the log sum of the lattice paths that read it), as in the complete search; and distinct
  (the prefixes set aside and those waiting stand for disjoint sets of sequences).
* Every heap entry of step 3 ("choice ``r`` of determinized state ``j`` after a prefix of cost ``g``")
  stands for the sequences through choices ``r, r+1, ...`` of ``j``; its key ``g + key(r)`` is a lower
  bound on all of their costs, because the choices are ranked by their keys and a key is either the
  exact best completion inside the region (itself a minimum over keys) or, for a successor outside
  it, an admissible bound: for a determinized state with members ``s`` and residual costs ``r_s``, a
  completion ``W`` costs ``-ln sum_s exp(-r_s) M_s(W) >= -ln sum_s exp(-r_s - h_s)``, the log sum over
  its open partial paths of (prefix mass + bound ``h_s`` on the best completion of ``s``), with
  ``h`` the admissible per-state bounds above.
* The entries still in the heap, the entries set aside and the sequences listed together account for
  every sequence of the lattice (a pop replaces its entry by its next choice and its successor's first
  choice; an end is listed).  So ``bound_cost``, the smallest key among the heap and the set-aside
  entries, is at most the cost of every sequence *not listed*: its posterior is at most
  ``exp(-(bound_cost - total))``.  (Completing set-aside prefixes into candidates lists some of their
  sequences; the key of the prefix still bounds the rest.)  So does the probability not listed,
  ``1 - sum of the listed posteriors`` (+ 1e-9 for rounding): ``bound_cost`` is the tighter of the two.

The sequences found inside the region come in order of cost (keys never decrease along the search
there); with the candidates, the list is sorted by cost.  Those with cost <= ``bound_cost`` are *proven* (no unlisted sequence is more probable, so they are the
top-k of the lattice, in order), the rest are candidates whose probabilities are exact but whose ranks are
not proven.  :class:`SearchCertificate` carries this; ``gap_nats`` = (cost of the last listed of the N) -
``bound_cost``, the log-posterior by which an unlisted sequence could beat it (<= 0: the list is the
exact N-best).  When the budget stops the search before the region reaches any end, nothing is listed
and the budget error stays.
"""
from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from ..algorithms.forward_backward import ForwardBackward
from ..core._budget import budget_limit, bytes_left, check_memory, refuse_growth
from ..core.alternatives_network import Alternative, Alternatives, Slot
from ..core.errors import BudgetExceededError
from ..core.lattice import Lattice
from ._common import dense_codes, prepare
from ._search import SequenceResult


def arc_words_and_times(lat: Lattice) -> tuple[list, np.ndarray, np.ndarray, np.ndarray]:
    """Per arc, as arrays: ``(names, code, start, duration)`` -- the arc's word is
    ``names[code[a]]`` (``""`` for epsilon), its start and duration in seconds rounded to 1e-6
    (NaN when unknown)."""
    fs = lat.frame_shift
    known = (lat.t0 >= 0) & (lat.t1 >= 0)
    uniq, code = dense_codes(lat.word.astype(np.int64))
    names = [lat.symbols.word(int(w)) if w else "" for w in uniq.tolist()]
    start = np.where(lat.t0 >= 0, np.round(lat.t0 * fs, 6), np.nan)
    dur = np.where(known, np.round((lat.t1 - lat.t0) * fs, 6), np.nan)
    return names, code, start, dur


def alternative_from_path(lat: Lattice, labels, arcs: Iterable[int], posterior: float, _cache: dict | None = None
                          ) -> Alternative:
    """An :class:`Alternative` whose words and times are those of the lattice path ``arcs``
    (silence arcs skipped); every word's confidence is the alternative's ``posterior``.
    ``_cache`` (a dict kept by the caller for one lattice) avoids re-converting arrays."""
    if _cache is None:
        _cache = {}
    if not _cache:
        names, code, start, dur = arc_words_and_times(lat)
        _cache["labels"] = np.asarray(labels).tolist()
        _cache["word"] = [names[i] for i in code.tolist()]
        _cache["start"] = start.tolist()
        _cache["dur"] = dur.tolist()
    lab, wid, st, du = _cache["labels"], _cache["word"], _cache["start"], _cache["dur"]
    arcs = [a for a in arcs if lab[a] != 0]
    words = [wid[a] for a in arcs]
    starts = [st[a] for a in arcs]
    durs = [du[a] for a in arcs]
    return Alternative(tuple(words), tuple(starts), tuple(durs), posterior, (posterior,) * len(words))


class SearchCertificate(NamedTuple):
    """What an N-best search proved (see "Anytime search" in the module docstring).

    ``complete``: the list is the exact answer (the search finished, or a budget stopped it after it had
    proven all N it was asked for); every listed sequence is proven and ``bound_cost`` bounds the rest.
    ``stopped_by``: the budget that stopped it (``"memory"``, ``"states"``, ``"pops"``, ``"time"``) or None.
    ``proven``: the first ``proven`` sequences listed are the most probable of the lattice, in order; the
    others listed are exact candidates of unproven rank.  ``bound_cost``: a lower bound on the cost of every
    sequence not listed (``inf`` when none is left)."""

    complete: bool
    stopped_by: str | None
    proven: int
    found: int
    bound_cost: float

    def bound_log_posterior(self, total_cost: float) -> float:
        """The certified upper bound on the natural-log posterior of any sequence not listed."""
        return -(self.bound_cost - total_cost) if math.isfinite(self.bound_cost) else -math.inf

    def gap_nats(self, results: list) -> float:
        """How many nats more probable than the last listed sequence an unlisted one could be
        (``bound_cost`` below the last listed cost; <= 0: no unlisted sequence beats any listed one)."""
        if not results or not math.isfinite(self.bound_cost):
            return -math.inf if results else math.inf
        return results[-1].cost - self.bound_cost


class NBestSearch(NamedTuple):
    """:func:`nbest_search`'s result: the sequences, the lattice's log-semiring total cost, the per-arc
    labels used and the certificate."""

    results: list
    total_cost: float
    labels: np.ndarray
    certificate: SearchCertificate


def nbest_sequences(lat: Lattice, n: int | None, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
                    word_penalty: float = 0.0, silence_words: Iterable[str] | None = None,
                    max_pops: int = 2_000_000, max_states: int = 1_000_000, resolution: float = 1e-9,
                    margin: float = 1.0, suffix_lists: int = 8):
    """``(results, total_cost, labels)``: the exact ``n`` best distinct sequences as
    :class:`~lattice_tools.alternatives._search.SequenceResult` (word ids, log cost, best-path
    cost and arcs), the log-semiring total cost of the lattice, and the per-arc labels used.
    :func:`nbest_search` without ``best_effort`` (same arguments)."""
    found = nbest_search(lat, n, acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty,
                         silence_words=silence_words, max_pops=max_pops, max_states=max_states,
                         resolution=resolution, margin=margin, suffix_lists=suffix_lists)
    return found.results, found.total_cost, found.labels


def nbest_search(lat: Lattice, n: int | None, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
                 word_penalty: float = 0.0, silence_words: Iterable[str] | None = None,
                 max_pops: int = 2_000_000, max_states: int = 1_000_000, time_limit: float | None = None,
                 best_effort: bool = False, resolution: float = 1e-9, margin: float = 1.0,
                 suffix_lists: int = 8) -> NBestSearch:
    """The exact ``n`` best distinct sequences of ``lat`` with what the search proved (:class:`NBestSearch`).

    Budgets: ``max_pops`` prefixes popped by the ranking search, ``max_states`` determinized states
    in the searched region, ``time_limit`` seconds (wall clock; None: none) and the memory budget of
    :func:`lattice_tools.core._budget.memory_budget`.  Past one, BudgetExceededError, unless
    ``best_effort``: then the sequences found so far with their certificate (module docstring, "Anytime
    search"; BudgetExceededError all the same when none was found).  ``resolution``: residual costs
    closer than this identify determinized states; ``margin``: how far past the best sequence (nats)
    the first searched region reaches; ``suffix_lists``: how many completions per state the bound lists
    (:func:`suffix_bound`; 0: :func:`best_word_bound` alone) -- both tuning only: the lists do not
    depend on them."""
    key = lat.key or None
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"time_limit must be > 0 seconds (got {time_limit})")
    check_memory("exact N-best search", key)
    labels, cost, final = prepare(lat, acoustic_scale, lm_scale, word_penalty, silence_words)
    fb = ForwardBackward(lat.num_states, lat.src, lat.dst, cost, final, log=True)
    with _kernel_budget(key):
        rows = _ClosedRows.build(lat.num_states, lat.src, lat.dst, labels, cost, final)
        h = np.maximum(_bound(rows), fb.beta)
        if suffix_lists > 0:
            h = np.maximum(h, _suffix_bound(rows, int(suffix_lists)))
    kernel = _kernels()
    src, dst, lab, cost, final = (np.ascontiguousarray(a, t) for a, t in ((lat.src, np.int64), (lat.dst, np.int64),
                                                                         (labels, np.int64), (cost, np.float64),
                                                                         (final, np.float64)))
    dlab = np.full(len(lab), -1, np.int64)  # the arcs' dense labels (those of the rows), -1: epsilon
    dlab[lab != 0] = np.searchsorted(rows.lab_values, lab[lab != 0])
    status, f_link, f_cost, t_parent, t_label, lower = kernel.bounded_search(
        rows.m, src, dst, dlab, cost, final, np.ascontiguousarray(h, np.float64), max(len(rows.lab_values), 1),
        -1 if n is None else int(n), int(max_pops), int(max_states), _member_budget(), float(margin),
        float(resolution), bool(best_effort), math.inf if time_limit is None else float(time_limit),
        _dive_guide(lat, cost, final, fb) if best_effort else None, _rss_limit(),
        # the byte budget stops the exact search at the budget itself; a best-effort search stops on its
        # resident memory instead (at three quarters of what is left), keeping the rest for its final pass
        -1 if best_effort else _max_bytes())
    f_link, t_parent, t_label = (np.frombuffer(a, np.int64) for a in (f_link, t_parent, t_label))
    f_cost = np.frombuffer(f_cost, np.float64)
    stopped_by = {kernel.TOO_MANY_POPS: "pops", kernel.TOO_MANY_STATES: "states", kernel.TOO_MANY_MEMBERS: "memory",
                  kernel.TOO_MANY_BYTES: "memory", kernel.TIME_LIMIT: "time"}.get(status)
    if stopped_by is not None and (not best_effort or not len(f_link)):
        found = f" ({len(f_link)} sequences found, none proven)" if best_effort else ""
        if status == kernel.TOO_MANY_POPS:
            raise BudgetExceededError(f"exact sequence search exceeded {max_pops} search nodes after {len(f_link)} "
                                      "sequences; lower N or prune the lattice", key=key)
        if status == kernel.TOO_MANY_STATES:
            raise BudgetExceededError(f"exact sequence search exceeded {max_states} determinized states{found}",
                                      key=key)
        if status == kernel.TIME_LIMIT:
            raise BudgetExceededError(f"exact sequence search exceeded its time limit of {time_limit:g} s{found}",
                                      key=key)
        refuse_growth("exact N-best search", key)
    check_memory("exact N-best search", key)
    if stopped_by is not None:  # the dives of a best-effort search list their candidates out of order
        order = np.argsort(f_cost, kind="stable")
        f_link, f_cost = f_link[order], f_cost[order]
    seqs = _trace_labels(f_link, t_parent, t_label, key)
    seq_off = np.r_[0, np.cumsum([len(q) for q in seqs])].astype(np.int64)
    seq_lab = np.concatenate(seqs) if seqs else np.zeros(0, np.int64)
    with _kernel_budget(key, "exact N-best search (best paths)"):
        best_cost, best_arcs = kernel.best_paths(rows.w_off, rows.w_dlab, rows.w_dst, rows.w_bc, rows.w_arc,
                                                 rows.x_bc, seq_off, seq_lab, rows.m, _max_bytes())
    best_cost, best_arcs = np.frombuffer(best_cost, np.float64), np.frombuffer(best_arcs, np.int64)
    names = rows.lab_values
    results = []
    for i, q in enumerate(seqs):
        if i % _CHECK_EVERY == 0:
            check_memory("exact N-best search (listing the sequences)", key)
        span = best_arcs[seq_off[i]:seq_off[i + 1]]
        arcs = tuple(span.tolist()) if len(span) and span[0] >= 0 else ()
        results.append(SequenceResult(tuple(names[q].tolist()), float(f_cost[i]), float(best_cost[i]), arcs))
    if stopped_by is not None and results:  # the mass not listed bounds every unlisted sequence too
        listed = math.fsum(math.exp(-(r.cost - fb.total)) for r in results)
        lower = max(lower, fb.total - math.log(max(1.0 - listed, 0.0) + _MASS_SLACK))
    proven = len(results)
    if stopped_by is not None:  # (the costs come in order: the proven ones are a prefix)
        proven = next((i for i, r in enumerate(results) if not r.cost <= lower), len(results))
    # a stopped search that proved all N it was asked for has the exact answer all the same
    complete = stopped_by is None or (n is not None and proven >= n)
    certificate = SearchCertificate(complete, stopped_by, proven, len(results), float(lower))
    return NBestSearch(results, fb.total, labels, certificate)



#: what the bound from the probability not listed (1 - the listed posteriors) adds for the rounding of the
#: posteriors' sum (N terms of relative error ~1e-16 each; the total's own error is of the same order)
_MASS_SLACK = 1e-9


def _dive_guide(lat: Lattice, cost, final, fb: ForwardBackward) -> np.ndarray:
    """Per lattice state the cost of its best single completion (tropical backward): what the candidates
    of a best-effort search estimate completions with (an estimate to rank them, never a bound)."""
    tropical = ForwardBackward(lat.num_states, lat.src, lat.dst, cost, final, log=False, plan=fb.plan)
    return np.ascontiguousarray(tropical.beta, np.float64)


def _kernels():
    """The compiled module (lattice_tools/_ext/nbest/)."""
    from .._ext import native

    return native("nbest")


def _trace_labels(links: np.ndarray, parent: np.ndarray, label: np.ndarray, key: str | None = None) -> list:
    """The dense labels along each trie node's chain of parents, root first."""
    out = []
    par, lab = parent.tolist(), label.tolist()
    for i, node in enumerate(links.tolist()):
        if i % _CHECK_EVERY == 0:
            check_memory("exact N-best search (listing the sequences)", key)
        seq = []
        while node > 0:
            seq.append(lab[node])
            node = par[node]
        seq.reverse()
        out.append(np.array(seq, dtype=np.int64))
    return out


#: How many sequences the Python loops after the search handle between two reads of the memory budget
#: (a few hundred kilobytes apart on long utterances).
_CHECK_EVERY = 256


def _max_bytes() -> int:
    """What a compiled kernel may allocate (its outputs included): what the memory budget (if one is set)
    leaves above the process's resident memory now; -1: no budget.  The kernels count their allocations
    against it (lattice_tools/_ext/nbest/buffers.c), so the search stops at the budget itself, not at a
    node or state count that stands for it."""
    left = bytes_left()
    return -1 if left is None else left


@contextlib.contextmanager
def _kernel_budget(key: str | None, what: str = "exact N-best search"):
    """A kernel that stopped on its byte budget (:func:`_max_bytes`) raises the budget's error, naming
    ``what`` and the option that sets the budget (a MemoryError of the machine stays one)."""
    try:
        yield
    except MemoryError as exc:
        if str(exc) == _kernels().BUDGET_EXCEEDED:
            refuse_growth(what, key)
        raise


def _rss_limit() -> int:
    """The memory budget in bytes of resident memory, which the compiled search reads (/proc/self/statm)
    every 64 expansions (-1: none)."""
    limit = budget_limit()
    return -1 if limit is None else int(limit)


def _member_budget() -> int:
    """How many determinized-state members the search may store: the memory budget (if one is set)
    left after what the process holds, at 24 bytes per member and as much again for the rest."""
    left = bytes_left()
    return np.iinfo(np.int64).max if left is None else left // 48


class _ClosedRows(NamedTuple):
    """Every state's closed row (``closed_rows`` in lattice_tools/_ext/nbest/closed_rows.c: the word arcs reachable
    through epsilon paths, log sum and minimum of the path costs) with dense word labels."""

    m: int
    w_off: np.ndarray
    w_arc: np.ndarray
    w_dlab: np.ndarray
    w_dst: np.ndarray
    w_lc: np.ndarray
    w_bc: np.ndarray
    x_lc: np.ndarray
    x_bc: np.ndarray
    lab_values: np.ndarray

    @classmethod
    def build(cls, num_states, src, dst, labels, cost, final) -> _ClosedRows:
        src = np.ascontiguousarray(src, dtype=np.int64)
        dst = np.ascontiguousarray(dst, dtype=np.int64)
        lab = np.ascontiguousarray(labels, dtype=np.int64)
        cost = np.ascontiguousarray(cost, dtype=np.float64)
        final = np.ascontiguousarray(final, dtype=np.float64)
        out = _kernels().closed_rows(int(num_states), src, dst, lab, cost, final, _max_bytes())
        w_off, w_arc = (np.frombuffer(a, np.int64) for a in out[:2])
        w_lc, w_bc, x_lc, x_bc = (np.frombuffer(a, np.float64) for a in out[2:])
        lab_values, w_dlab = dense_codes(lab[w_arc]) if len(w_arc) else (np.zeros(0, np.int64),
                                                                           np.zeros(0, np.int64))
        return cls(int(num_states), w_off, w_arc, np.ascontiguousarray(w_dlab, np.int64), dst[w_arc], w_lc, w_bc,
                   x_lc, x_bc, lab_values)


def _bound(rows: _ClosedRows) -> np.ndarray:
    h = _kernels().best_word_bound(rows.m, rows.w_off, rows.w_dlab, rows.w_dst, rows.w_lc, rows.x_lc,
                                   max(len(rows.lab_values), 1), _max_bytes())
    return np.frombuffer(h, np.float64)


def _suffix_bound(rows: _ClosedRows, k: int) -> np.ndarray:
    """The suffix-list bound (``suffix_list_bound`` in lattice_tools/_ext/nbest/bounds.c), lowered by a margin
    far above its rounding errors (sums of up to a few thousand terms per state, relative error ~1e-13
    per level), so that it stays a bound: the search ranks by exact costs, the bound only decides what
    it explores."""
    h = np.frombuffer(_kernels().suffix_list_bound(rows.m, rows.w_off, rows.w_dlab, rows.w_dst, rows.w_lc,
                                                   rows.x_lc, max(len(rows.lab_values), 1), k, _max_bytes()),
                      np.float64)
    finite = np.isfinite(h)
    h[finite] -= 1e-6 * (1.0 + np.abs(h[finite]))
    return h


def suffix_bound(num_states: int, src, dst, labels, cost, final, k: int = 8) -> np.ndarray:
    """Per state a lower bound on the cost of its most probable completion (the quantity that
    :func:`best_word_bound` bounds), at least as tight as that one: each state lists ``k``
    completions with an upper bound on the probability of each and a bound on every completion
    it does not list, and a completion's bound sums the paths of its next word *for that
    completion* (see ``suffix_list_bound`` in lattice_tools/_ext/nbest/bounds.c).  On the bench's 31.5 s lattice
    the best-next-word bound of the start is 8.58 nats, this one 11.05 (k = 8), the best
    sequence costs 29.36: the search expands 41 % fewer determinized states (15,393 instead of
    26,053 at N = 100).  Admissible, not
    consistent.  Same requirements as :func:`best_word_bound`."""
    return _suffix_bound(_ClosedRows.build(num_states, src, dst, labels, cost, final), k)


def best_word_bound(num_states: int, src, dst, labels, cost, final) -> np.ndarray:
    """Per state ``s``, a lower bound ``h[s]`` on the cost ``-ln max_W M_s(W)`` of the most probable
    completion from ``s``, where ``M_s(W)`` sums the paths from ``s`` reading exactly ``W``
    (epsilons skipped, exit weight included).

    The log-semiring backward cost ``-ln sum_W M_s(W)`` bounds it too, but it counts *every*
    completion: on a long utterance that mass is spread over astronomically many sequences, so it
    is far below the cost of any one of them.  This bound takes, at every state, only the best next
    word, while still summing the paths of that word (and its epsilon variants)::

        h[s] = min( exit(s), min_w (+)_{closed word arcs a of s with label w} (cost(a) + h[dst(a)]) )

    (``(+)`` the log sum; closed arcs: reached through epsilon paths, their costs included).  For
    every ``W``, ``M_s(W) <= exp(-h[s])`` by induction in reverse topological order, so it is
    admissible; and ``h[s]`` is at most the bound of each of ``s``'s choices, so it is consistent
    (priorities never decrease along the search tree), which the search needs.  Requires
    ``src < dst`` (topologically numbered states) and ``src`` sorted.
    """
    return _bound(_ClosedRows.build(num_states, src, dst, labels, cost, final))


def nbest(lat: Lattice, n: int | None, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
          word_penalty: float = 0.0, silence_words: Iterable[str] | None = None,
          max_pops: int = 2_000_000, max_states: int = 1_000_000, time_limit: float | None = None,
          best_effort: bool = False) -> Alternatives:
    """Exact N-best list of ``lat`` as an :class:`Alternatives` with one slot (``kind="nbest"``).

    Semiring: log.  Each alternative's ``posterior`` is the total probability of all lattice
    paths with exactly that word sequence (silence and fillers are epsilons, see
    :func:`~lattice_tools.alternatives._common.is_silence`), divided by the lattice total, under
    ``lm_scale * graph + acoustic_scale * acoustic + word_penalty * #words``.  Word times come from
    the best single path with that word sequence; NaN when the lattice has no times.  ``n=None``
    lists every sequence (bounded by ``max_pops`` search nodes, else BudgetExceededError).

    ``time_limit`` (seconds) and ``best_effort``: as in :func:`nbest_search`.  When a budget stopped a
    best-effort search, ``meta["search"]`` holds its certificate (:func:`certificate_summary`); a complete
    search has ``meta["search"]["complete"]`` True.

    Frame-level lattices are word-aligned first (:func:`word_align`).
    """
    if not lat.word_aligned:
        from .word_alignment import word_align
        lat = word_align(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale)
    results, total, labels, certificate = nbest_search(
        lat, n, acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty,
        silence_words=silence_words, max_pops=max_pops, max_states=max_states, time_limit=time_limit,
        best_effort=best_effort)
    search = certificate_summary(certificate, results, total, n)
    cache: dict = {}
    alts = []
    for i, r in enumerate(results):
        # N alternatives of a long utterance hold ~100 bytes per word as Python objects: more than the search
        if i % _CHECK_EVERY == 0:
            check_memory("exact N-best search (building the alternatives)", lat.key or None)
        alts.append(alternative_from_path(lat, labels, r.best_arcs, math.exp(-(r.cost - total)), cache))
    del results
    end = lat.duration if lat.has_times else math.nan
    if not alts:  # pragma: no cover - a valid lattice always has a sequence
        alts = [Alternative((), posterior=1.0)]
    return Alternatives(key=lat.key, slots=(Slot(0.0, end, tuple(alts)),), kind="nbest",
                        meta={"total_cost": total, "requested_n": n, "search": search})


def certificate_summary(certificate: SearchCertificate, results: list, total_cost: float, n: int | None) -> dict:
    """The certificate as plain numbers (what the alt-CTM comment and the JSON report): ``complete``,
    ``stopped_by``, ``requested`` (N), ``found``, ``proven``, ``bound_log_posterior`` (natural log; every
    sequence not listed has at most this log-posterior) and ``gap_nats`` (how far that bound lies above
    the log-posterior of the last listed sequence; <= 0: the listed ones are the exact top, in order); both
    None when no sequence is left unlisted."""
    gap, bound = certificate.gap_nats(results), certificate.bound_log_posterior(total_cost)
    return {"complete": certificate.complete, "stopped_by": certificate.stopped_by,
            "requested": "inf" if n is None else n, "found": certificate.found, "proven": certificate.proven,
            "bound_log_posterior": bound if math.isfinite(bound) else None,
            "gap_nats": gap if math.isfinite(gap) else None}
